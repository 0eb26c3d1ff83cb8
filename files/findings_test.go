package files

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// treeFindings gathers every file of root under the per-file cap (no total caps) and
// returns the withheld files with their reasons and the redacted ones with their kinds,
// one "path: why" line each.
func treeFindings(t *testing.T, root, pattern string) (withheld, redacted []string, files int) {
	t.Helper()
	g, err := Gather(context.Background(), Options{Root: root, Pattern: pattern, MaxTotalBytes: 1 << 40, MaxFiles: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range g.Withheld {
		withheld = append(withheld, w.Path+": "+w.Why)
	}
	for _, f := range g.Files {
		if f.Redacted != nil {
			redacted = append(redacted, f.Path+": "+strings.Join(f.Redacted, ", "))
		}
	}
	return withheld, redacted, len(g.Files) + len(g.Withheld)
}

// TestGOROOTSecretFindings gathers the .go files of $GOROOT/src as a consultation would and
// checks what is held back and redacted against the findings read by eye: the EC key of
// crypto/tls/example_test.go, the bare RSA key of crypto/x509/x509_test.go, and the git
// credential helper fixtures of
// cmd/go/internal/auth/gitauth_test.go ("password=secr3t"). A finding outside these lists
// fails the test: a false positive to fix, or a real secret to add once read. Another Go
// release may lack one of them.
//
// With CONSULT_SECRETS_TREE set to a directory, it lists every finding in that tree instead
// (all files, pattern "**"), to measure the false positives on a large tree (-v).
func TestGOROOTSecretFindings(t *testing.T) {
	if root := os.Getenv("CONSULT_SECRETS_TREE"); root != "" {
		// One top-level directory at a time, so that a large tree is not held in memory
		// whole; paths are relative to that directory.
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		var all, withheld, redacted int
		for _, e := range entries {
			dir, pattern := root, e.Name()
			if e.IsDir() {
				dir, pattern = filepath.Join(root, e.Name()), "**"
			}
			prefix := ""
			if e.IsDir() {
				prefix = e.Name() + "/"
			}
			w, r, n := treeFindings(t, dir, pattern)
			for _, f := range w {
				t.Logf("withheld %s%s", prefix, f)
			}
			for _, f := range r {
				t.Logf("redacted %s%s", prefix, f)
			}
			all, withheld, redacted = all+n, withheld+len(w), redacted+len(r)
		}
		t.Logf("%s: %d files matched, %d withheld, %d redacted", root, all, withheld, redacted)
		return
	}
	if testing.Short() {
		t.Skip("reads $GOROOT/src")
	}
	root := testrun.GOROOTSrc(t)
	withheld, redacted, n := treeFindings(t, root, "**/*.go")
	checked := map[string][]string{
		"withheld": {"crypto/tls/example_test.go: holds a private key",
			// A PKCS #8 RSA test key's body in base64, without a PEM block (utf8KeyStr).
			"crypto/x509/x509_test.go: holds a private key in base64"},
		"redacted": {"cmd/go/internal/auth/gitauth_test.go: password"},
	}
	for what, got := range map[string][]string{"withheld": withheld, "redacted": redacted} {
		for _, f := range got {
			if !slices.Contains(checked[what], f) {
				t.Errorf("%s %s, not among the findings checked by eye %q", what, f, checked[what])
			}
		}
	}
	t.Logf("%d files, withheld %q, redacted %q", n, withheld, redacted)
}
