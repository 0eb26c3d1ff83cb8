package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	consult "github.com/consultmcp/consult"
)

// Part is a stretch of a record's answer, read without the rest of it.
type Part struct {
	// Offset is where Text starts in the answer, in bytes.
	Offset int
	// Text is the answer's bytes from Offset on, as many as were asked for (fewer at the
	// end of the answer).
	Text string
	// Total is the answer's length in bytes.
	Total int
}

// Bounds of a part read.
const (
	// maxPartMeta bounds what LoadPart keeps of a record besides the part: every field but
	// the answer, the question, the thread and the digests, with the summary less the
	// answer it repeats. The summary's lists of withheld and redacted files are the large
	// part of that; 4 MiB holds tens of thousands of them.
	maxPartMeta = 4 << 20
	// partBuffer is the read buffer of a part read.
	partBuffer = 32 << 10
)

// partSkipped are the record fields a part read passes over without keeping: the answer
// it streams, and the large fields a page does not show.
var partSkipped = map[string]bool{"exclude": true, "question": true, "thread": true, "digests": true}

// LoadPart returns the record with this id and the part of its answer that starts at byte
// offset, at most n bytes of it, reading the record's file as a stream: the memory it takes
// is the part and the record's small fields, whatever the answer's size. The record comes
// without Answer, Exclude, Question, Thread and Digests (the file is not read past the
// answer and the summary), and with its Summary less the "answer" member it repeats. An
// offset past the answer's end gives an empty Text (check it against Total). The errors
// are Load's (with the record and ErrExpired for an expired one), and ErrCorrupt for a
// record whose small fields pass maxPartMeta.
func (s *Store) LoadPart(id string, offset, n int) (Record, Part, error) {
	root, err := s.dirOf(id)
	if err != nil {
		return Record{}, Part{}, err
	}
	defer root.Close()
	f, fi, err := s.open(root, id)
	if err != nil {
		return Record{}, Part{}, err
	}
	defer f.Close()
	sc := &scanner{r: bufio.NewReaderSize(io.LimitReader(f, int64(s.maxRecord())+1), partBuffer), room: maxPartMeta}
	r, part, err := sc.record(max(offset, 0), max(n, 0))
	if err != nil {
		return Record{}, Part{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, id, err)
	}
	if err := check(r, id); err != nil {
		return Record{}, Part{}, err
	}
	if exp := s.expiry(r); exp.Before(s.now()) {
		_ = removeIfSame(root, recordName(id), fi)
		return r, Part{}, fmt.Errorf("%w: %s (last written %s, kept until %s)",
			ErrExpired, id, r.Updated.Format(time.RFC3339), exp.Format(time.RFC3339))
	}
	return r, part, nil
}

// scanner reads a record file's JSON as a stream. What it keeps of the members it captures
// (the record's small fields) is bounded by room.
type scanner struct {
	r    *bufio.Reader
	room int // bytes that captures may still keep
}

// errTooMuch: the record's small fields are larger than a part read keeps.
var errTooMuch = fmt.Errorf("its fields besides the answer pass %v", consult.Bytes(maxPartMeta))

// record reads a record object: its small fields into a Record, the part of the answer
// from offset (at most n bytes), the summary less its answer. It stops reading once it has
// both the answer and the summary: the fields after them are not needed.
func (sc *scanner) record(offset, n int) (Record, Part, error) {
	part := Part{Offset: offset}
	var (
		head    bytes.Buffer // the kept members, as a JSON object
		text    []byte
		answer  bool
		summary bool
	)
	head.WriteByte('{')
	err := sc.object(func(key string) error {
		switch {
		case key == "answer":
			answer = true
			total, err := sc.str(func(p []byte, at int) {
				// p is the answer's bytes at..at+len(p); keep those in [offset, offset+n).
				lo, hi := max(offset, at), min(offset+n, at+len(p))
				if lo < hi {
					text = append(text, p[lo-at:hi-at]...)
				}
			})
			part.Total = total
			return err
		case key == "summary":
			summary = true
			sum, err := sc.summary()
			if err == nil && sum != nil {
				err = sc.keep(&head, key, sum)
			}
			return err
		case partSkipped[key]:
			return sc.skip()
		}
		raw, err := sc.capture()
		if err == nil {
			err = sc.keep(&head, key, raw)
		}
		return err
	}, func() bool { return answer && summary })
	if err != nil {
		return Record{}, Part{}, err
	}
	head.WriteByte('}')
	var r Record
	if err := json.Unmarshal(head.Bytes(), &r); err != nil {
		return Record{}, Part{}, err
	}
	part.Text = string(text)
	return r, part, nil
}

// keep adds the member key: raw to the object being built in b (which holds "{" and any
// members before).
func (sc *scanner) keep(b *bytes.Buffer, key string, raw []byte) error {
	k, _ := json.Marshal(key)
	if sc.room -= len(k) + 2; sc.room < 0 {
		return errTooMuch
	}
	if b.Len() > 1 {
		b.WriteByte(',')
	}
	b.Write(k)
	b.WriteByte(':')
	b.Write(raw)
	return nil
}

// summary reads the summary member's value: an object, returned without its "answer"
// member, or null (nil).
func (sc *scanner) summary() ([]byte, error) {
	c, err := sc.peek()
	if err != nil {
		return nil, err
	}
	if c != '{' {
		raw, err := sc.capture()
		if err != nil || string(raw) == "null" {
			return nil, err
		}
		return nil, fmt.Errorf("summary is %.20s, not an object", raw)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	err = sc.object(func(key string) error {
		if key == "answer" {
			return sc.skip()
		}
		raw, err := sc.capture()
		if err == nil {
			err = sc.keep(&b, key, raw)
		}
		return err
	}, nil)
	b.WriteByte('}')
	return b.Bytes(), err
}

// object reads an object, calling member for each member's key with the reader at its
// value, which member must consume. When enough reports true after a member, the rest of
// the object is not read.
func (sc *scanner) object(member func(key string) error, enough func() bool) error {
	if err := sc.expect('{'); err != nil {
		return err
	}
	if c, err := sc.peek(); err != nil {
		return err
	} else if c == '}' {
		_, err := sc.r.ReadByte()
		return err
	}
	for {
		var key bytes.Buffer
		if _, err := sc.str(func(p []byte, _ int) {
			if key.Len() < maxKey {
				key.Write(p)
			}
		}); err != nil {
			return err
		}
		if key.Len() >= maxKey {
			return errors.New("a member name is too long")
		}
		if err := sc.expect(':'); err != nil {
			return err
		}
		if err := member(key.String()); err != nil {
			return err
		}
		if enough != nil && enough() {
			return nil
		}
		c, err := sc.next()
		switch {
		case err != nil:
			return err
		case c == '}':
			return nil
		case c != ',':
			return fmt.Errorf("%q after a member, want , or }", c)
		}
	}
}

// maxKey bounds a member name: a record's are a few characters.
const maxKey = 64

// peek is the next byte that is not white space, left unread.
func (sc *scanner) peek() (byte, error) {
	for {
		c, err := sc.r.ReadByte()
		if err != nil {
			return 0, unexpected(err)
		}
		if !isSpace(c) {
			return c, sc.r.UnreadByte()
		}
	}
}

// next reads the next byte that is not white space.
func (sc *scanner) next() (byte, error) {
	c, err := sc.peek()
	if err == nil {
		_, err = sc.r.ReadByte()
	}
	return c, err
}

// expect reads the next byte that is not white space, which must be want.
func (sc *scanner) expect(want byte) error {
	c, err := sc.next()
	if err == nil && c != want {
		err = fmt.Errorf("%q where %q belongs", c, want)
	}
	return err
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// unexpected turns the end of the file into an error that says so.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// str reads a string (the next value must be one) and calls emit with its decoded bytes in
// order, each run with its position in the decoded string, without holding more than the
// reader's buffer; it returns the decoded length. The decoding is encoding/json's: \uXXXX
// escapes are UTF-8, with U+FFFD for a lone surrogate and for each byte of invalid UTF-8.
func (sc *scanner) str(emit func(p []byte, at int)) (int, error) {
	if err := sc.expect('"'); err != nil {
		return 0, err
	}
	n := 0
	out := func(p []byte) {
		if emit != nil && len(p) > 0 {
			emit(p, n)
		}
		n += len(p)
	}
	var esc [utf8.UTFMax]byte
	for {
		if sc.r.Buffered() == 0 {
			if _, err := sc.r.Peek(1); err != nil {
				return n, unexpected(err)
			}
		}
		buf, _ := sc.r.Peek(sc.r.Buffered())
		i := 0
		for i < len(buf) {
			c := buf[i]
			if c == '"' || c == '\\' || c < 0x20 {
				break
			}
			if c < utf8.RuneSelf {
				i++
				continue
			}
			if !utf8.FullRune(buf[i:]) {
				break // the rest of the character is not read yet
			}
			r, size := utf8.DecodeRune(buf[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		out(buf[:i])
		_, _ = sc.r.Discard(i)
		if i == len(buf) {
			continue
		}
		if buf[i] >= utf8.RuneSelf { // a character cut by the buffer's end, or invalid UTF-8
			b, _ := sc.r.Peek(utf8.UTFMax)
			if r, size := utf8.DecodeRune(b); r != utf8.RuneError || size > 1 {
				out(b[:size])
				_, _ = sc.r.Discard(size)
				continue
			}
			out(esc[:utf8.EncodeRune(esc[:], utf8.RuneError)]) // as encoding/json decodes it
			_, _ = sc.r.Discard(1)
			continue
		}
		c, _ := sc.r.ReadByte()
		switch {
		case c == '"':
			return n, nil
		case c < 0x20:
			return n, fmt.Errorf("control character %#x in a string", c)
		}
		e, err := sc.r.ReadByte()
		if err != nil {
			return n, unexpected(err)
		}
		switch e {
		case '"', '\\', '/':
			esc[0] = e
		case 'b':
			esc[0] = '\b'
		case 'f':
			esc[0] = '\f'
		case 'n':
			esc[0] = '\n'
		case 'r':
			esc[0] = '\r'
		case 't':
			esc[0] = '\t'
		case 'u':
			r, err := sc.hex4()
			if err != nil {
				return n, err
			}
			if utf16.IsSurrogate(r) {
				r = sc.lowSurrogate(r)
			}
			out(esc[:utf8.EncodeRune(esc[:], r)])
			continue
		default:
			return n, fmt.Errorf("escape \\%c in a string", e)
		}
		out(esc[:1])
	}
}

// hex4 reads the four hex digits of a \u escape.
func (sc *scanner) hex4() (rune, error) {
	var r rune
	for range 4 {
		c, err := sc.r.ReadByte()
		if err != nil {
			return 0, unexpected(err)
		}
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, fmt.Errorf("%q in a \\u escape", c)
		}
		r = r*16 + rune(c)
	}
	return r, nil
}

// lowSurrogate completes the surrogate high: with the \uXXXX low surrogate that follows,
// the character the pair encodes; else U+FFFD, the following bytes left unread (as
// encoding/json decodes a lone surrogate).
func (sc *scanner) lowSurrogate(high rune) rune {
	if b, err := sc.r.Peek(6); err == nil && b[0] == '\\' && b[1] == 'u' {
		var low rune
		ok := true
		for _, c := range b[2:] {
			switch {
			case '0' <= c && c <= '9':
				low = low*16 + rune(c-'0')
			case 'a' <= c && c <= 'f':
				low = low*16 + rune(c-'a'+10)
			case 'A' <= c && c <= 'F':
				low = low*16 + rune(c-'A'+10)
			default:
				ok = false
			}
		}
		if r := utf16.DecodeRune(high, low); ok && r != utf8.RuneError {
			_, _ = sc.r.Discard(6)
			return r
		}
	}
	return utf8.RuneError
}

// skip reads a value of any kind and keeps nothing of it.
func (sc *scanner) skip() error { return sc.value(nil) }

// capture reads a value of any kind and returns its JSON, within room.
func (sc *scanner) capture() ([]byte, error) {
	var b bytes.Buffer
	err := sc.value(&b)
	return b.Bytes(), err
}

// value reads a value of any kind, copying its JSON to b unless b is nil; what it copies
// counts against room. Nesting is bounded as encoding/json bounds it.
func (sc *scanner) value(b *bytes.Buffer) error {
	var open []byte // the containers the value is inside, innermost last: '{' or '['
values:
	for {
		c, err := sc.peek()
		if err != nil {
			return err
		}
		switch c {
		case '"':
			if err := sc.rawString(b); err != nil {
				return err
			}
		case '{', '[':
			if len(open) >= maxDepth {
				return errors.New("nested too deep")
			}
			_, _ = sc.r.ReadByte()
			if err := sc.write(b, c); err != nil {
				return err
			}
			end, err := sc.peek()
			if err != nil {
				return err
			}
			if end != c+2 { // not empty: '{'+2 is '}', '['+2 is ']'
				open = append(open, c)
				if c == '{' {
					if err := sc.memberName(b); err != nil {
						return err
					}
				}
				continue values
			}
			_, _ = sc.r.ReadByte()
			if err := sc.write(b, end); err != nil {
				return err
			}
		default:
			if err := sc.literal(b); err != nil {
				return err
			}
		}
		// A value has ended: close the containers it ends, up to the next value.
		for len(open) > 0 {
			c, err := sc.next()
			if err != nil {
				return err
			}
			if err := sc.write(b, c); err != nil {
				return err
			}
			top := open[len(open)-1]
			switch {
			case c == ',':
				if top == '{' {
					if err := sc.memberName(b); err != nil {
						return err
					}
				}
				continue values
			case c == top+2:
				open = open[:len(open)-1]
			default:
				return fmt.Errorf("%q after a value, want , or %q", c, top+2)
			}
		}
		return nil
	}
}

// maxDepth bounds the nesting of a value, as encoding/json does.
const maxDepth = 10000

// memberName reads a member name and its colon, copying both to b (unless b is nil).
func (sc *scanner) memberName(b *bytes.Buffer) error {
	if c, err := sc.peek(); err != nil {
		return err
	} else if c != '"' {
		return fmt.Errorf("%q where a member name belongs", c)
	}
	if err := sc.rawString(b); err != nil {
		return err
	}
	if err := sc.expect(':'); err != nil {
		return err
	}
	return sc.write(b, ':')
}

// rawString reads a string and copies it, quotes and escapes as they are, to b (unless b
// is nil). Its escapes are checked when what b holds is decoded.
func (sc *scanner) rawString(b *bytes.Buffer) error {
	if b == nil {
		_, err := sc.str(nil)
		return err
	}
	if err := sc.expect('"'); err != nil {
		return err
	}
	if err := sc.write(b, '"'); err != nil {
		return err
	}
	for {
		if sc.r.Buffered() == 0 {
			if _, err := sc.r.Peek(1); err != nil {
				return unexpected(err)
			}
		}
		buf, _ := sc.r.Peek(sc.r.Buffered())
		i := 0
		for i < len(buf) && buf[i] != '"' && buf[i] != '\\' {
			i++
		}
		if err := sc.write(b, buf[:i]...); err != nil {
			return err
		}
		_, _ = sc.r.Discard(i)
		if i == len(buf) {
			continue
		}
		c, _ := sc.r.ReadByte()
		if err := sc.write(b, c); err != nil {
			return err
		}
		if c == '"' {
			return nil
		}
		e, err := sc.r.ReadByte() // the escaped byte: never the string's end
		if err != nil {
			return unexpected(err)
		}
		if err := sc.write(b, e); err != nil {
			return err
		}
	}
}

// literal reads a number, true, false or null.
func (sc *scanner) literal(b *bytes.Buffer) error {
	var lit []byte
	for {
		c, err := sc.r.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if isSpace(c) || c == ',' || c == '}' || c == ']' || c == ':' {
			_ = sc.r.UnreadByte()
			break
		}
		if lit = append(lit, c); len(lit) > maxLiteral {
			return errLongLiteral
		}
	}
	if !json.Valid(lit) || len(lit) == 0 || lit[0] == '"' || lit[0] == '{' || lit[0] == '[' {
		return fmt.Errorf("%.20q is not a JSON value", lit)
	}
	return sc.write(b, lit...)
}

// maxLiteral bounds a number or literal: a record's are a few digits.
const maxLiteral = 4096

// errLongLiteral: a number longer than maxLiteral, which no record holds.
var errLongLiteral = errors.New("a number or literal is too long")

// write adds p to b (when b is not nil), within room.
func (sc *scanner) write(b *bytes.Buffer, p ...byte) error {
	if b == nil {
		return nil
	}
	if sc.room -= len(p); sc.room < 0 {
		return errTooMuch
	}
	b.Write(p)
	return nil
}
