package results

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strings"
	"time"
)

// An id is "YYYYMMDD-hhmmss-" (its creation time in UTC, to the second) followed by 26
// characters of lowercase base32 (RFC 4648 alphabet, no padding) encoding 128 bits from
// crypto/rand: readable, sorted by creation time, and unguessable. The id is what lets a
// later session of the same owner collect a consultation, so knowing an id is the proof of
// having started it (or of having been told it).
const (
	idTimeLayout = "20060102-150405"
	idRandBytes  = 16                      // 128 bits
	idRandChars  = (idRandBytes*8 + 4) / 5 // 26 base32 characters
	idLen        = len(idTimeLayout) + 1 + idRandChars
	idAlphabet   = "abcdefghijklmnopqrstuvwxyz234567"
	// idQuoteMax bounds how much of a malformed id an error message quotes: ids come from
	// tool calls, and a message need not repeat a megabyte of junk.
	idQuoteMax = 50
)

// IDExample is an id of the form NewID gives, for messages that show the form.
const IDExample = "20261123-104628-3odgtjfrmcwwmsykgjuuzsloly"

// idEncoding writes the random part of an id, and of a temporary file's name.
var idEncoding = base32.NewEncoding(idAlphabet).WithPadding(base32.NoPadding)

// NewID returns a fresh consultation id, like "20261123-104628-3odgtjfrmcwwmsykgjuuzsloly":
// now in UTC to the second, then 128 random bits as 26 lowercase base32 characters.
func NewID(now time.Time) string {
	var b [idRandBytes]byte
	rand.Read(b[:]) // never fails: crypto/rand crashes the program rather than return an error
	return now.UTC().Format(idTimeLayout) + "-" + idEncoding.EncodeToString(b[:])
}

// ParseID checks that id has the form NewID gives and returns its creation time (UTC, to
// the second). Any other string, including one holding a path separator, a dot or a
// calendar date that does not exist, is an error wrapping ErrBadID, so an id that passes
// can always be used as a file name inside the results directory.
func ParseID(id string) (time.Time, error) {
	if len(id) != idLen || id[len(idTimeLayout)] != '-' || strings.Trim(id[len(idTimeLayout)+1:], idAlphabet) != "" {
		return time.Time{}, badID(id)
	}
	// Formatting the time back gives the digits and dashes of the time part only when they
	// were all there, each in its place.
	stamp := id[:len(idTimeLayout)]
	t, err := time.Parse(idTimeLayout, stamp)
	if err != nil || t.Format(idTimeLayout) != stamp {
		return time.Time{}, badID(id)
	}
	return t, nil
}

// badID is the error for a malformed id: it quotes the id (shortened if long) and shows
// the expected form.
func badID(id string) error {
	q := id
	if len(q) > idQuoteMax {
		q = truncateUTF8(q, idQuoteMax) + "..."
	}
	return fmt.Errorf("%w %q: want the form %q (creation time, then 26 lowercase letters and digits 2-7)", ErrBadID, q, IDExample)
}
