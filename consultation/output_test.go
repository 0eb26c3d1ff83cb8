package consultation

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestWriteNewNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "answer.md")
	if err := os.WriteFile(target, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := writeNew(target, []byte("new answer"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "answer-1.md"); got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("existing file changed to %q", b)
	}
	if b, _ := os.ReadFile(got); string(b) != "new answer" {
		t.Errorf("new file holds %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want 2 (no temporary file left)", len(entries))
	}
}

func TestWriteNewConcurrentNamesAreDistinct(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "a.txt")
	var wg sync.WaitGroup
	names := make([]string, 8)
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := writeNew(target, []byte{byte('a' + i)})
			if err != nil {
				t.Error(err)
			}
			names[i] = n
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("two writers got the same file %q", n)
		}
		seen[n] = true
	}
}

func TestWriteNewMissingDirectory(t *testing.T) {
	if _, err := writeNew(filepath.Join(t.TempDir(), "no", "x.md"), []byte("x")); err == nil {
		t.Error("want an error for a missing directory")
	}
}
