package tokens

import (
	"bytes"
	"container/heap"
	"crypto/sha256"
	_ "embed" // the vocabulary
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// This file is an o200k_base tokenizer that only counts: tiktoken's pre-tokenizer regular
// expression, written out by hand, and tiktoken's byte-pair merge.
//
// Why not a library: github.com/pkoukk/tiktoken-go is exact but runs its regular
// expression through an interpreter, slower than the target of BenchmarkCountAll; and
// github.com/tiktoken-go/tokenizer v0.10.0, whose expression is compiled to Go, miscounts
// two things: it drops U+007F (its ASCII bitmap leaves out bit 127), and it backtracks
// `\s*[\r\n]+` to the first newline instead of the last, so "\n    \n" (an indented blank
// line, in most Python files) is two tokens instead of one. TestAwkwardWhitespace holds
// the texts it got wrong.
//
// This one agrees with Python's regex module on the pieces of 3,000 random texts built
// from every character class the expression tells apart (TestPiecesMatchRegex), and with
// pkoukk/tiktoken-go on the counts of a varied corpus (TestMatchesPkoukk), of fuzzed
// input (FuzzMatchesPkoukk) and of whole directory trees (TestMatchesPkoukkOnTree).
//
// The vocabulary is tiktoken's o200k_base.tiktoken file, embedded in the binary from this
// directory; its SHA-256 is checked when it is loaded.

// vocabData is tiktoken's o200k_base.tiktoken (https://github.com/openai/tiktoken, MIT
// licence, copyright OpenAI and Shantanu Jain; see o200k_base.LICENSE), the copy shipped
// in github.com/pkoukk/tiktoken-go-loader v0.0.2 (assets/o200k_base.tiktoken), which
// TestVocabularyIsTheLoaders compares it with. Only this vocabulary is embedded. It is not
// compressed: decompressing it would cost more than the load itself, to save a small part
// of the binary.
//
//go:embed o200k_base.tiktoken
var vocabData []byte

// vocabFile is the name of the embedded vocabulary, and vocabSHA256 its hash as tiktoken
// itself checks it (tiktoken_ext/openai_public.py).
const (
	vocabFile   = "o200k_base.tiktoken"
	vocabSHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
	vocabSize   = 199998 // ranks 0..199997; the special tokens are not in the file
)

// noRank marks a pair of parts that is not a token.
const noRank = math.MaxUint32

// bpe counts o200k_base tokens. It is read-only once built, so safe for concurrent use.
type bpe struct {
	ranks map[string]uint32
}

// loadBPE loads the embedded vocabulary and checks its hash.
func loadBPE() (*bpe, error) {
	if sum := sha256.Sum256(vocabData); hex.EncodeToString(sum[:]) != vocabSHA256 {
		return nil, fmt.Errorf("tokens: %s has SHA-256 %x, want %s", vocabFile, sum, vocabSHA256)
	}
	return parseVocab(vocabData, vocabSize)
}

// parseVocab parses a tiktoken vocabulary, a line "base64(token) rank" per token, which
// must hold size tokens.
//
// The tokens are decoded into one buffer that the map's keys share, rather than one
// allocation per token (BenchmarkLoadVocabulary measures the load).
func parseVocab(data []byte, size int) (*bpe, error) {
	ranks := make(map[string]uint32, size)
	// Decoded, each token is at most 3/4 of its base64, so the buffer never grows and
	// the keys that point into it stay valid.
	arena := make([]byte, 0, base64.StdEncoding.DecodedLen(len(data)))
	for line := range bytes.Lines(data) {
		tok, num, ok := bytes.Cut(bytes.TrimSuffix(line, []byte("\n")), []byte(" "))
		if !ok {
			return nil, fmt.Errorf("tokens: vocabulary: bad line %q", line)
		}
		start := len(arena)
		buf := arena[start : start+base64.StdEncoding.DecodedLen(len(tok))]
		n, err := base64.StdEncoding.Decode(buf, tok)
		if err == nil && n == 0 {
			err = errors.New("empty token")
		}
		if err != nil {
			return nil, fmt.Errorf("tokens: vocabulary: line %q: %w", line, err)
		}
		rank, err := strconv.ParseUint(string(num), 10, 32)
		if err != nil || rank >= noRank {
			return nil, fmt.Errorf("tokens: vocabulary: line %q: bad rank", line)
		}
		arena = arena[:start+n]
		ranks[unsafe.String(&arena[start], n)] = uint32(rank)
	}
	if len(ranks) != size {
		return nil, fmt.Errorf("tokens: vocabulary has %d tokens, want %d", len(ranks), size)
	}
	return &bpe{ranks: ranks}, nil
}

// count returns the number of tokens in s, which must be valid UTF-8.
func (b *bpe) count(s string) int {
	n := 0
	for p := 0; p < len(s); {
		q := nextPiece(s, p)
		n += b.pieceCount(s[p:q])
		p = q
	}
	return n
}

// pieceCount returns the number of tokens byte-pair encoding makes of piece.
func (b *bpe) pieceCount(piece string) int {
	if len(piece) == 1 {
		return 1 // every byte is a token
	}
	if _, ok := b.ranks[piece]; ok {
		return 1
	}
	if len(piece) < mergeHeapThreshold {
		return b.mergeScan(piece)
	}
	return b.mergeHeap(piece)
}

func (b *bpe) rank(s string) uint32 {
	if r, ok := b.ranks[s]; ok {
		return r
	}
	return noRank
}

// mergeHeapThreshold is the piece length, in bytes, from which pieceCount merges with a
// heap, O(n log n), instead of a scan, O(n²) but faster on the short pieces of real text.
const mergeHeapThreshold = 64

type part struct {
	start int32
	rank  uint32 // rank of the token made by merging this part with the next
}

// mergeScan is tiktoken's _byte_pair_merge: merge the adjacent pair of parts with the
// lowest rank, the leftmost on ties, until no pair is a token; return the parts left.
func (b *bpe) mergeScan(piece string) int {
	var buf [mergeHeapThreshold + 1]part
	parts := buf[:0]
	for i := 0; i < len(piece)-1; i++ {
		parts = append(parts, part{int32(i), b.rank(piece[i : i+2])})
	}
	parts = append(parts, part{int32(len(piece) - 1), noRank}, part{int32(len(piece)), noRank})
	// rankAfter is the rank of parts i..i+2 (two parts, once i+1 and i+2 are merged).
	rankAfter := func(i int) uint32 {
		if i+3 < len(parts) {
			return b.rank(piece[parts[i].start:parts[i+3].start])
		}
		return noRank
	}
	for len(parts) > 2 {
		low, at := uint32(noRank), -1
		for i, p := range parts[:len(parts)-1] {
			if p.rank < low {
				low, at = p.rank, i
			}
		}
		if at < 0 {
			break
		}
		parts[at].rank = rankAfter(at)
		if at > 0 {
			parts[at-1].rank = rankAfter(at - 1)
		}
		parts = append(parts[:at+1], parts[at+2:]...)
	}
	return len(parts) - 1
}

// mergeHeap gives the same result as mergeScan in O(n log n), for long pieces: a run of
// ten thousand spaces or a line of base64.
func (b *bpe) mergeHeap(piece string) int {
	type node struct {
		prev, next int32
		rank       uint32
	}
	n := int32(len(piece))
	nodes := make([]node, n+1)
	for i := range nodes {
		nodes[i] = node{prev: int32(i) - 1, next: int32(i) + 1, rank: noRank}
	}
	nodes[n].next = -1
	rankAt := func(i int32) uint32 {
		j := nodes[i].next
		if j < 0 {
			return noRank
		}
		k := nodes[j].next
		if k < 0 {
			return noRank
		}
		return b.rank(piece[i:k])
	}
	h := make(mergeHeap, 0, n)
	for i := int32(0); i+2 <= n; i++ {
		if r := rankAt(i); r != noRank {
			nodes[i].rank = r
			h = append(h, candidate{r, i})
		}
	}
	heap.Init(&h)
	parts := int(n)
	for len(h) > 0 {
		top := heap.Pop(&h).(candidate)
		i := top.at
		// A candidate is stale when its node was merged away or its pair has grown since:
		// a grown pair is a longer string, so it never has its old rank again.
		if nodes[i].rank != top.rank {
			continue
		}
		j := nodes[i].next
		k := nodes[j].next
		nodes[j].rank = noRank
		nodes[i].next = k
		if k >= 0 {
			nodes[k].prev = i
		}
		parts--
		for _, m := range [2]int32{i, nodes[i].prev} {
			if m < 0 {
				continue
			}
			if nodes[m].rank = rankAt(m); nodes[m].rank != noRank {
				heap.Push(&h, candidate{nodes[m].rank, m})
			}
		}
	}
	return parts
}

type candidate struct {
	rank uint32
	at   int32
}

// mergeHeap is a min-heap (container/heap) of candidates by rank, then position, so that
// among equal ranks the leftmost pair merges first, as in mergeScan.
type mergeHeap []candidate

func (h mergeHeap) Len() int      { return len(h) }
func (h mergeHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h mergeHeap) Less(a, b int) bool {
	return h[a].rank < h[b].rank || h[a].rank == h[b].rank && h[a].at < h[b].at
}
func (h *mergeHeap) Push(c any) { *h = append(*h, c.(candidate)) }
func (h *mergeHeap) Pop() any {
	last := len(*h) - 1
	c := (*h)[last]
	*h = (*h)[:last]
	return c
}

// The pre-tokenizer. o200k_base splits text into pieces with this expression (tiktoken,
// tiktoken_ext/openai_public.py), leftmost alternative first, with backtracking:
//
//	0  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	1  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	2  \p{N}{1,3}
//	3   ?[^\s\p{L}\p{N}]+[\r\n/]*
//	4  \s*[\r\n]+
//	5  \s+(?!\S)
//	6  \s+
//
// nextPiece does the same without a regular expression engine. Every character is a
// letter, a mark, a number, a space or something else, so some alternative always
// matches and pieces tile the text.

// Character classes, as bits.
const (
	cUpper   = 1 << iota // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cLower               // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	cLetter              // \p{L}
	cNumber              // \p{N}
	cSpace               // \s: unicode.IsSpace, as in regexp2 and Go's \s-like classes
	cNewline             // [\r\n]
)

// classTable holds the class of every rune in the Basic Multilingual Plane: 64 KiB,
// filled when the vocabulary loads, so the splitter does one lookup per character.
var classTable [1 << 16]uint8

func fillClassTable() {
	for r := range rune(len(classTable)) {
		classTable[r] = classify(r)
	}
}

func classify(r rune) uint8 {
	switch {
	case r == '\r' || r == '\n':
		return cSpace | cNewline
	case unicode.Is(unicode.Ll, r):
		return cLower | cLetter
	case unicode.Is(unicode.Lu, r) || unicode.Is(unicode.Lt, r):
		return cUpper | cLetter
	case unicode.Is(unicode.Lm, r) || unicode.Is(unicode.Lo, r):
		return cUpper | cLower | cLetter
	case unicode.Is(unicode.M, r):
		return cUpper | cLower
	case unicode.Is(unicode.N, r):
		return cNumber
	case unicode.IsSpace(r):
		return cSpace
	}
	return 0
}

// classAt returns the class and byte size of the rune at s[i], and size 0 at the end.
func classAt(s string, i int) (class uint8, size int) {
	if i >= len(s) {
		return 0, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return classTable[c], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	if r < rune(len(classTable)) {
		return classTable[r], size
	}
	return classify(r), size
}

// nextPiece returns the end of the piece that starts at s[p], p < len(s).
func nextPiece(s string, p int) int {
	c0, n0 := classAt(s, p)

	// Alternatives 0 and 1, each first with the optional leading character, then without.
	prefixed := c0&(cLetter|cNumber|cNewline) == 0
	if prefixed {
		if e := matchLower(s, p+n0); e >= 0 {
			return e
		}
	}
	if e := matchLower(s, p); e >= 0 {
		return e
	}
	if prefixed {
		if e := matchUpper(s, p+n0); e >= 0 {
			return e
		}
	}
	if e := matchUpper(s, p); e >= 0 {
		return e
	}

	// 2: \p{N}{1,3}
	if c0&cNumber != 0 {
		e := p + n0
		for range 2 {
			c, n := classAt(s, e)
			if n == 0 || c&cNumber == 0 {
				break
			}
			e += n
		}
		return e
	}

	// 3: ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
	const notOther = cSpace | cLetter | cNumber
	start := p
	if s[p] == ' ' {
		if c, n := classAt(s, p+1); n > 0 && c&notOther == 0 {
			start = p + 1
		}
	}
	if c, n := classAt(s, start); n > 0 && c&notOther == 0 {
		e := start + n
		for {
			c, n := classAt(s, e)
			if n == 0 || c&notOther != 0 {
				break
			}
			e += n
		}
		for e < len(s) && (s[e] == '\r' || s[e] == '\n' || s[e] == '/') {
			e++
		}
		return e
	}

	// 4, 5, 6 on the run of spaces from p.
	if c0&cSpace != 0 {
		e, last, lastNewline := p, p, -1
		for {
			c, n := classAt(s, e)
			if n == 0 || c&cSpace == 0 {
				break
			}
			if c&cNewline != 0 {
				lastNewline = e
			}
			last = e
			e += n
		}
		switch {
		case lastNewline >= 0: // 4: \s* backtracks to the last newline
			return lastNewline + 1
		case e == len(s): // 5: (?!\S) holds at the end of the text
			return e
		case last > p: // 5: give back the last space, so that (?!\S) holds
			return last
		default: // 6: a single space before a non-space
			return e
		}
	}
	return p + n0 // unreachable: every class is covered above
}

// matchLower matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+ and an
// optional contraction at s[q], returning the end or -1.
func matchLower(s string, q int) int {
	// The greedy first loop takes the whole run of cUpper; if the next character is not
	// cLower, it gives characters back until one is: the last cLower in the run (Lm, Lo
	// or M), which the second loop then takes alone.
	e, lastLowerEnd := q, -1
	for {
		c, n := classAt(s, e)
		if n == 0 || c&cUpper == 0 {
			break
		}
		e += n
		if c&cLower != 0 {
			lastLowerEnd = e
		}
	}
	if c, n := classAt(s, e); n > 0 && c&cLower != 0 {
		e += n
		for {
			c, n := classAt(s, e)
			if n == 0 || c&cLower == 0 {
				break
			}
			e += n
		}
	} else if lastLowerEnd >= 0 {
		e = lastLowerEnd
	} else {
		return -1
	}
	return e + contraction(s, e)
}

// matchUpper matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]* and an
// optional contraction at s[q], returning the end or -1.
func matchUpper(s string, q int) int {
	e := q
	for {
		c, n := classAt(s, e)
		if n == 0 || c&cUpper == 0 {
			break
		}
		e += n
	}
	if e == q {
		return -1
	}
	for {
		c, n := classAt(s, e)
		if n == 0 || c&cLower == 0 {
			break
		}
		e += n
	}
	return e + contraction(s, e)
}

// contraction returns the length of (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[i], or 0.
// Case-insensitive here means Unicode simple case folding, as in tiktoken's regex engine
// (Rust's regex crate) and Python's regex module: "'ſ" (long s) is a contraction.
// (pkoukk/tiktoken-go's regexp2 compares lower-cased runes and does not match "'ſ";
// TestLongS shows this costs it nothing in counts.)
func contraction(s string, i int) int {
	if i >= len(s) || s[i] != '\'' {
		return 0
	}
	r1, n1 := utf8.DecodeRuneInString(s[i+1:])
	switch fold(r1) {
	case 's', 't', 'm', 'd':
		return 1 + n1
	case 'r', 'v':
		if r2, n2 := utf8.DecodeRuneInString(s[i+1+n1:]); fold(r2) == 'e' {
			return 1 + n1 + n2
		}
	case 'l':
		if r2, n2 := utf8.DecodeRuneInString(s[i+1+n1:]); fold(r2) == 'l' {
			return 1 + n1 + n2
		}
	}
	return 0
}

// fold maps r to the lower-case ASCII letter in its simple case-folding orbit, if any.
func fold(r rune) rune {
	switch {
	case 'a' <= r && r <= 'z':
		return r
	case 'A' <= r && r <= 'Z':
		return r + 'a' - 'A'
	case r == '\u017F': // LATIN SMALL LETTER LONG S folds to s
		return 's'
	case r == '\u212A': // KELVIN SIGN folds to k
		return 'k'
	}
	return r
}
