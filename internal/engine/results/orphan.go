package results

import (
	"io"
	"os"
	"strings"
)

// orphanExt names the marker of a background consultation whose client stopped waiting
// without asking for it to stop (a cancel without a reason, a client that quit): nobody
// may hold its id. The marker holds the consultation's owner; the owner's next result names
// the consultation once (TakeOrphan), and `consult results` shows it.
const orphanExt = ".orphan"

// maxOwnerBytes bounds what an orphan marker holds: an owner, a digest.
const maxOwnerBytes = 256

// Orphan is a consultation whose client stopped waiting, and its owner.
type Orphan struct {
	ID, Owner string
}

// WriteOrphan leaves the orphan marker of id, naming its owner; a marker already there is
// kept. It is created exclusively, never through a link.
func (s *Store) WriteOrphan(id, owner string) error {
	return kept(s.writeAux(id, orphanExt, owner))
}

// Orphans lists the orphan markers in the directory; a missing directory has none.
func (s *Store) Orphans() ([]Orphan, error) {
	root, entries, err := s.readDir()
	if root == nil {
		return nil, err
	}
	defer root.Close()
	var out []Orphan
	for _, e := range entries {
		id, ok := auxID(e.Name())
		if !ok || !strings.HasSuffix(e.Name(), orphanExt) || !e.Type().IsRegular() {
			continue
		}
		f, _, err := openIn(root, e.Name(), os.O_RDONLY, 0)
		if err != nil {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(f, maxOwnerBytes))
		f.Close()
		if err == nil {
			out = append(out, Orphan{ID: id, Owner: string(b)})
		}
	}
	return out, nil
}

// IsOrphan reports whether id has an orphan marker.
func (s *Store) IsOrphan(id string) bool { return s.hasAux(id, orphanExt) }

// TakeOrphan removes id's orphan marker and reports whether this call removed it: of
// several servers that see it, one names the consultation.
func (s *Store) TakeOrphan(id string) bool { return s.takeAux(id, orphanExt) == nil }
