package results

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// An id is "YYYYMMDD-hhmmss-" (its creation time in UTC, to the second) followed by 8
// lowercase hex digits from crypto/rand: readable, sorted by creation time, and with 2^32
// possibilities per second, unguessable enough for a server that listens on no network.
const (
	idTimeLayout = "20060102-150405"
	idRandHex    = 8
	idLen        = len(idTimeLayout) + 1 + idRandHex
	idExample    = "20261123-104628-1a2b3c4d"
	// idQuoteMax bounds how much of a malformed id an error message quotes: ids come from
	// tool calls, and a message need not repeat a megabyte of junk.
	idQuoteMax = 40
)

// NewID returns a fresh consultation id, like "20261123-104628-1a2b3c4d": now in UTC to
// the second, then 8 random lowercase hex digits.
func NewID(now time.Time) string {
	var b [idRandHex / 2]byte
	rand.Read(b[:]) // never fails: crypto/rand crashes the program rather than return an error
	return now.UTC().Format(idTimeLayout) + "-" + hex.EncodeToString(b[:])
}

// ParseID checks that id has the form NewID gives and returns its creation time (UTC, to
// the second). Any other string, including one holding a path separator, a dot or a
// calendar date that does not exist, is an error wrapping ErrBadID, so an id that passes
// can always be used as a file name inside the results directory.
func ParseID(id string) (time.Time, error) {
	if !wellFormed(id) {
		return time.Time{}, badID(id)
	}
	t, err := time.Parse(idTimeLayout, id[:len(idTimeLayout)])
	if err != nil || t.Format(idTimeLayout) != id[:len(idTimeLayout)] {
		return time.Time{}, badID(id)
	}
	return t, nil
}

// wellFormed checks the id's shape byte by byte: digits and dashes in the time part, a
// dash, lowercase hex digits.
func wellFormed(id string) bool {
	if len(id) != idLen {
		return false
	}
	for i := range len(id) {
		c := id[i]
		switch {
		case i == 8 || i == len(idTimeLayout):
			if c != '-' {
				return false
			}
		case i < len(idTimeLayout):
			if c < '0' || c > '9' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// badID is the error for a malformed id: it quotes the id (shortened if long) and shows
// the expected form.
func badID(id string) error {
	q := id
	if len(q) > idQuoteMax {
		q = truncateUTF8(q, idQuoteMax) + "..."
	}
	return fmt.Errorf("%w %q: want the form %q (creation time, then 8 hex digits)", ErrBadID, q, idExample)
}
