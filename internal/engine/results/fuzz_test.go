package results

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzParseID: an id that passes can only ever name a plain file inside the results
// directory, and round-trips through NewID's form; anything else wraps ErrBadID.
func FuzzParseID(f *testing.F) {
	for _, seed := range []string{IDExample, "", "../../etc/passwd", "20261123-104628-1a2b3c4d", "20261123-104628-3odgtjfrmcwwmsykgjuuzslol",
		"20261131-104628-3odgtjfrmcwwmsykgjuuzsloly", "20261123-246028-3odgtjfrmcwwmsykgjuuzsloly", "20261123-104628-3ODGTJFRMCWWMSYKGJUUZSLOLY",
		"20261123-104628-3odgtjfrmcwwmsykgjuuzslol1", "20261123/104628-3odgtjfrmcwwmsykgjuuzsloly", "20261123-104628-3odgtjfrmcwwmsykgjuuzsloly.json",
		"２0261123-104628-3odgtjfrmcwwmsykgjuuzsloly"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		created, err := ParseID(id)
		if err != nil {
			if !errors.Is(err, ErrBadID) {
				t.Fatalf("ParseID(%q) error %v does not wrap ErrBadID", id, err)
			}
			if len(err.Error()) > 450 { // a quoted 50-byte prefix may escape to 4 bytes a byte
				t.Fatalf("message for %d-byte id is %d bytes", len(id), len(err.Error()))
			}
			return
		}
		if strings.ContainsAny(id, `/\.`) || filepath.Base(id) != id || len(id) != idLen {
			t.Fatalf("ParseID accepted %q, which is not a plain file name", id)
		}
		if created.Location() != time.UTC || created.Format(idTimeLayout) != id[:len(idTimeLayout)] {
			t.Fatalf("ParseID(%q) = %v, which does not print back", id, created)
		}
		if again := NewID(created); again[:len(idTimeLayout)] != id[:len(idTimeLayout)] {
			t.Fatalf("NewID(%v) = %q, a different time part from %q", created, again, id)
		}
	})
}
