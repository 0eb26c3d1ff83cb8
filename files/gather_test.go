package files

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// writeTree writes files (slash paths -> contents) under a new temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("cannot make symbolic links here: %v", err)
	}
}

func TestSymlinks(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret.go": "package outside", "dir/x.go": "package x"})
	root := writeTree(t, map[string]string{"real/a.go": "package real", "b.go": "package b"})
	in := func(p string) string { return filepath.Join(root, filepath.FromSlash(p)) }

	symlink(t, "real/a.go", in("link-in.go"))                          // file inside: read under the link's path
	symlink(t, filepath.Join(outside, "secret.go"), in("link-out.go")) // file outside
	symlink(t, "real", in("dir-in"))                                   // directory inside: not followed
	symlink(t, filepath.Join(outside, "dir"), in("dir-out"))           // directory outside
	symlink(t, "missing.go", in("dangling.go"))                        // dangling
	symlink(t, "loop-b.go", in("loop-a.go"))                           // a -> b -> a
	symlink(t, "loop-a.go", in("loop-b.go"))
	symlink(t, ".", in("self"))                   // dir -> .
	symlink(t, "..", in("real/up"))               // dir -> parent, a loop through the root
	symlink(t, "../b.go", in("real/via-dots.go")) // a relative link that stays inside

	got := gather(t, Options{Root: root, Pattern: "**/*.go"})
	checkGathered(t, got,
		[]string{"b.go", "link-in.go", "real/a.go", "real/via-dots.go"},
		[]Skip{
			{Reason: Outside, Count: 2, Examples: []string{"dir-out/", "link-out.go"}},
			{Reason: Unreadable, Count: 3, Examples: []string{"dangling.go", "loop-a.go", "loop-b.go"}},
		})
	for _, f := range got.Files {
		if f.Path == "link-in.go" && string(f.Content) != "package real" {
			t.Errorf("link-in.go content = %q, want the target's", f.Content)
		}
	}

	t.Run("ignored or excluded directory links", func(t *testing.T) {
		root := writeTree(t, map[string]string{".gitignore": "/ign-link\n", "a.go": ""})
		symlink(t, outside, filepath.Join(root, "ign-link"))
		symlink(t, outside, filepath.Join(root, "excl-link"))
		got := gather(t, Options{Root: root, Pattern: "**/*.go", Exclude: "excl-link"})
		checkGathered(t, got, []string{"a.go"}, []Skip{
			{Reason: Ignored, Count: 1, Examples: []string{"ign-link/"}},
			{Reason: ExcludedByPattern, Count: 1, Examples: []string{"excl-link/"}},
		})
	})
	t.Run("root is a symlink", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "root-link")
		symlink(t, root, link)
		if got, want := paths(gather(t, Options{Root: link, Pattern: "real/*.go"})), []string{"real/a.go", "real/via-dots.go"}; !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("base through a symlink is not followed", func(t *testing.T) {
		got := gather(t, Options{Root: root, Pattern: "dir-out/*.go"})
		checkGathered(t, got, nil, []Skip{{Reason: Outside, Count: 1, Examples: []string{"dir-out/"}}})
		got = gather(t, Options{Root: root, Pattern: "dir-in/*.go"})
		checkGathered(t, got, nil, nil)
	})
}

func TestProcFiles(t *testing.T) {
	// Files in /proc say they are empty; their content must be read anyway, up to the cap.
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	got := gather(t, Options{Root: "/proc/self", Pattern: "status"})
	if len(got.Files) != 1 || !bytes.Contains(got.Files[0].Content, []byte("Name:")) {
		t.Fatalf("got %+v, want /proc/self/status with its content", got)
	}
	got = gather(t, Options{Root: "/proc/self", Pattern: "status", MaxFileBytes: 10})
	checkGathered(t, got, nil, []Skip{{Reason: TooLarge, Count: 1, Examples: []string{"status"}}})
}

func TestBinary(t *testing.T) {
	text := strings.Repeat("x", SniffBytes)
	root := writeTree(t, map[string]string{
		"nul-first.dat":    "\x00abc",
		"big-binary.dat":   "\x00" + strings.Repeat("b", 100_000), // refused after sniffing 8 KiB
		"nul-in-sniff.dat": text[:SniffBytes-1] + "\x00",
		"nul-after.dat":    text + "\x00", // outside the sniffed window: text, as git decides
		"utf8.txt":         "héllo wörld ✓",
		"empty.txt":        "",
	})
	got := gather(t, Options{Root: root, Pattern: "**"})
	checkGathered(t, got, []string{"empty.txt", "nul-after.dat", "utf8.txt"},
		[]Skip{{Reason: Binary, Count: 3, Examples: []string{"big-binary.dat", "nul-first.dat", "nul-in-sniff.dat"}}})
}

func TestPrivateKeyContent(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
	pkcs8Key := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
	serviceAccount, _ := json.Marshal(map[string]string{"type": "service_account", "private_key": pkcs8Key})
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	pemPub := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))

	root := writeTree(t, map[string]string{
		"config/tls.txt":       pemKey,
		"example_test.go":      "package x\n\nvar key = []byte(`" + pemKey + "`)\n",
		"sa.json":              string(serviceAccount), // newlines escaped as \n
		"public.txt":           pemPub,
		"parser.go":            "package pem\n\nconst begin = \"-----BEGIN RSA PRIVATE KEY-----\"\n\nfunc parsePrivateKeyFromBlockWithAVeryLongNameIndeed() {}\n",
		"after-the-window.txt": strings.Repeat("x\n", SniffBytes) + pemKey,
	})
	got := gather(t, Options{Root: root, Pattern: "**"})
	// A key anywhere in a file holds it back, not only in its first 8 KiB.
	checkGathered(t, got, []string{"parser.go", "public.txt"},
		[]Skip{{Reason: Secret, Count: 4, Examples: []string{"after-the-window.txt", "config/tls.txt", "example_test.go"}}})
	var withheld []string
	for _, w := range got.Withheld {
		withheld = append(withheld, w.Path+": "+w.Why)
	}
	want := []string{"after-the-window.txt: holds a private key", "config/tls.txt: holds a private key",
		"example_test.go: holds a private key", "sa.json: holds a private key"}
	if !slices.Equal(withheld, want) {
		t.Errorf("withheld = %q, want %q", withheld, want)
	}
}

// TestTokensRedacted: a useful file with a hard-coded token is sent with the token replaced
// and the kind recorded; the file's other content is kept. Options.Kept sees what is kept,
// as it is kept: redacted, in path order, and nothing left out (the binary file).
func TestTokensRedacted(t *testing.T) {
	t.Parallel()
	token := githubToken()
	root := writeTree(t, map[string]string{
		"client.go": "package client\n\nconst token = \"" + token + "\"\n\nfunc Use() {}\n",
		"clean.go":  "package clean\n",
		"data.go":   "\x00binary",
	})
	var kept [][]byte
	got := gather(t, Options{Root: root, Pattern: "**/*.go", Kept: func(b []byte) { kept = append(kept, b) }})
	if len(got.Files) != 2 {
		t.Fatalf("files = %v", paths(got))
	}
	if len(kept) != 2 || &kept[0][0] != &got.Files[0].Content[0] || &kept[1][0] != &got.Files[1].Content[0] {
		t.Errorf("Kept saw %q; want the kept contents, in order: %q, %q", kept, got.Files[0].Content, got.Files[1].Content)
	}
	f := got.Files[1]
	if f.Path != "client.go" || strings.Contains(string(f.Content), token) || !strings.Contains(string(f.Content), "[REDACTED GitHub token]") ||
		!strings.Contains(string(f.Content), "func Use() {}") {
		t.Errorf("client.go sent as:\n%s", f.Content)
	}
	if !slices.Equal(f.Redacted, []string{"GitHub token"}) || f.Size != consult.Bytes(len(f.Content)) {
		t.Errorf("redacted = %v, size %d for %d bytes", f.Redacted, f.Size, len(f.Content))
	}
	if got.Files[0].Redacted != nil {
		t.Errorf("clean.go redacted %v", got.Files[0].Redacted)
	}
}

// githubToken is a made-up GitHub token: the prefix and 36 random characters.
func githubToken() string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	token := "ghp_"
	for range 36 {
		token += string(alnum[mathrand.IntN(len(alnum))])
	}
	return token
}

// TestDigests: with Options.Digests each file carries the SHA-256 of its content as
// gathered (a redacted file's of its redacted content), and a content found clean is
// remembered by it and not scanned again: a content marked clean here beforehand goes out
// as it is, token and all, while a gathering without digests scans it. Without, no digest.
func TestDigests(t *testing.T) {
	t.Parallel()
	token := githubToken()
	trusted := "package trusted // " + t.Name() + "\nconst token = \"" + token + "\"\n"
	root := writeTree(t, map[string]string{
		"client.go":  "package client // " + t.Name() + "\nconst token = \"" + token + "\"\n",
		"clean.go":   "package clean // " + t.Name() + "\n",
		"trusted.go": trusted,
	})
	scannedClean.Lock()
	scannedClean.m[sha256.Sum256([]byte(trusted))] = true
	scannedClean.Unlock()
	got := gather(t, Options{Root: root, Pattern: "**/*.go", Digests: true})
	if len(got.Files) != 3 {
		t.Fatalf("files = %v", paths(got))
	}
	for _, f := range got.Files {
		if f.Digest != sha256.Sum256(f.Content) {
			t.Errorf("%s: digest %x, want the SHA-256 of its content", f.Path, f.Digest)
		}
		if want := f.Path == "clean.go" || f.Path == "trusted.go"; scannedCleanHas(f.Digest) != want {
			t.Errorf("%s: remembered as clean %v, want %v", f.Path, !want, want)
		}
	}
	clean, client, marked := got.Files[0], got.Files[1], got.Files[2] // in path order
	if client.Redacted == nil || strings.Contains(string(client.Content), token) {
		t.Errorf("client.go sent as:\n%s", client.Content)
	}
	if string(marked.Content) != trusted || marked.Redacted != nil {
		t.Errorf("trusted.go, marked clean, was scanned: sent as\n%s", marked.Content)
	}
	again := gather(t, Options{Root: root, Pattern: "**/*.go"})
	for _, f := range again.Files {
		if f.Digest != ([sha256.Size]byte{}) {
			t.Errorf("%s: a digest without Options.Digests", f.Path)
		}
	}
	if string(again.Files[0].Content) != string(clean.Content) || strings.Contains(string(again.Files[2].Content), token) {
		t.Errorf("without digests, trusted.go was not scanned: sent as\n%s", again.Files[2].Content)
	}
}

func TestTooLargeNotRead(t *testing.T) {
	root := writeTree(t, map[string]string{
		"big.txt":   strings.Repeat("x", 101),
		"exact.txt": strings.Repeat("x", 100),
	})
	got := gather(t, Options{Root: root, Pattern: "**", MaxFileBytes: 100})
	checkGathered(t, got, []string{"exact.txt"}, []Skip{{Reason: TooLarge, Count: 1, Examples: []string{"big.txt"}}})
}

// TestCapsDeterministic checks that the caps keep a prefix of the files in path order, the
// same one on every run, whatever the scheduling, and count every file after it (binary
// ones too) as over the cap, with the first as examples: those the readers had in hand
// when the cap was reached and those the walk came to after it.
func TestCapsDeterministic(t *testing.T) {
	rng := mathrand.New(mathrand.NewPCG(1, 2))
	files := map[string]string{}
	for i := range 300 {
		name := fmt.Sprintf("d%d/f%03d.txt", rng.IntN(7), i)
		if rng.IntN(10) == 0 {
			name = fmt.Sprintf("d%d/sub/bin%03d.txt", rng.IntN(3), i)
			files[name] = "\x00binary"
			continue
		}
		files[name] = strings.Repeat("y", rng.IntN(2000))
	}
	root := writeTree(t, files)
	var all []string
	for name := range files {
		all = append(all, name)
	}
	slices.Sort(all)

	for _, tc := range []struct {
		name     string
		maxTotal consult.Bytes
		maxFiles int
	}{
		{"total", 100_000, 0},
		{"count", 0, 50},
		{"both", 60_000, 70},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The expected result: walk the sorted list, keep until the next would not fit.
			var want, overPaths []string
			var total consult.Bytes
			for _, name := range all {
				if len(overPaths) > 0 {
					overPaths = append(overPaths, name)
					continue
				}
				if strings.Contains(name, "bin") {
					continue
				}
				size := consult.Bytes(len(files[name]))
				if (tc.maxTotal > 0 && total+size > tc.maxTotal) || (tc.maxFiles > 0 && len(want) == tc.maxFiles) {
					overPaths = append(overPaths, name)
					continue
				}
				want = append(want, name)
				total += size
			}
			over := len(overPaths)
			if over <= 2*window { // past the readers' window the walk counts what is over itself
				t.Fatalf("fixture has %d files past the cap, want more than %d", over, 2*window)
			}
			for run := range 8 {
				prev := runtime.GOMAXPROCS(1 + run%4)
				got := gather(t, Options{Root: root, Pattern: "**", MaxTotalBytes: tc.maxTotal, MaxFiles: tc.maxFiles})
				runtime.GOMAXPROCS(prev)
				if g := paths(got); !slices.Equal(g, want) {
					t.Fatalf("run %d: kept %d files, want %d; first difference at %q", run, len(g), len(want), firstDiff(g, want))
				}
				if s := got.Skipped[len(got.Skipped)-1]; s.Reason != OverTotal || s.Count != over || !slices.Equal(s.Examples, overPaths[:SkipExamples]) {
					t.Fatalf("run %d: skipped %v, want %d OverTotal, the first %v", run, got.Skipped, over, overPaths[:SkipExamples])
				}
				checkInvariants(t, got)
			}
		})
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i]
		}
	}
	return "(end)"
}

func TestRepeatable(t *testing.T) {
	root := writeTree(t, map[string]string{"a/x.go": "1", "b/y.go": "2", ".env": "K=v", "c.lock/yarn.lock": ""})
	first := gather(t, Options{Root: root, Pattern: "**"})
	for range 20 {
		if got := gather(t, Options{Root: root, Pattern: "**"}); !reflect.DeepEqual(got, first) {
			t.Fatalf("got %+v, want %+v", got, first)
		}
	}
}

func TestCancel(t *testing.T) {
	files := map[string]string{}
	for i := range 2000 {
		files[fmt.Sprintf("d%02d/e%02d/f%04d.txt", i%40, i%17, i)] = strings.Repeat("z", 4000)
	}
	root := writeTree(t, files)

	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Gather(ctx, Options{Root: root, Pattern: "**"}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("mid-walk", func(t *testing.T) {
		// The whole walk, measured here so that a busy machine slows it as it slows the
		// cancelled ones: a walk that noticed the cancel only at its end would return about
		// that long after the cancel. A load that changes between the two can break the
		// ratio: it is asserted in `make bench` (testrun.Timed), logged here.
		var walks []time.Duration
		for range 3 {
			start := time.Now()
			if _, err := Gather(context.Background(), Options{Root: root, Pattern: "**"}); err != nil {
				t.Fatal(err)
			}
			walks = append(walks, time.Since(start))
		}
		slices.Sort(walks)
		whole := walks[1]
		before := runtime.NumGoroutine()
		for _, after := range []time.Duration{0, time.Millisecond, 3 * time.Millisecond} {
			ctx, cancel := context.WithCancel(context.Background())
			var cancelled time.Time
			timer := time.AfterFunc(after, func() { cancelled = time.Now(); cancel() })
			g, err := Gather(ctx, Options{Root: root, Pattern: "**"})
			done := time.Now()
			timer.Stop()
			cancel()
			if err == nil {
				t.Logf("finished (%d files) before the cancel at %v", len(g.Files), after)
				continue
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			lag := done.Sub(cancelled)
			t.Logf("cancelled at %v: returned %v after the cancel (the whole walk: %v)", after, lag, whole)
			if lag > whole/2 && testrun.Timed() {
				t.Errorf("returned %v after the cancel, over half the whole walk (%v)", lag, whole)
			}
		}
		// All goroutines of the cancelled walks are gone (20 s: a hang guard).
		deadline := time.Now().Add(20 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			t.Errorf("%d goroutines left, %d before", n, before)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		time.Sleep(2 * time.Millisecond)
		if _, err := Gather(ctx, Options{Root: root, Pattern: "**"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
	})
}

func TestGatherErrors(t *testing.T) {
	root := writeTree(t, map[string]string{"a.go": ""})
	for _, tc := range []struct {
		name   string
		opt    Options
		badPat bool
	}{
		{"bad pattern", Options{Root: root, Pattern: "../*.go"}, true},
		{"bad exclude", Options{Root: root, Pattern: "**", Exclude: "/abs/**"}, true},
		{"empty pattern", Options{Root: root}, true},
		{"missing root", Options{Root: filepath.Join(root, "nope"), Pattern: "**"}, false},
		{"root is a file", Options{Root: filepath.Join(root, "a.go"), Pattern: "**"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Gather(context.Background(), tc.opt)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, ErrBadPattern); got != tc.badPat {
				t.Errorf("errors.Is(%v, ErrBadPattern) = %v, want %v", err, got, tc.badPat)
			}
		})
	}
}

func TestReasonString(t *testing.T) {
	seen := map[string]bool{}
	for r := Ignored; r <= ExcludedByPattern; r++ {
		s := r.String()
		if s == "" || strings.HasPrefix(s, "Reason(") || seen[s] {
			t.Errorf("Reason(%d).String() = %q", int(r), s)
		}
		seen[s] = true
	}
	if got, want := Reason(0).String(), "Reason(0)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSkipCounter(t *testing.T) {
	var a, b skipCounter
	for _, p := range []string{"m", "c", "x", "a", "k"} {
		a.add(Secret, p)
	}
	for _, p := range []string{"b", "z"} {
		b.add(Secret, p)
	}
	b.add(Binary, "bin")
	a.merge(&b)
	got := a.list()
	want := []Skip{
		{Reason: Binary, Count: 1, Examples: []string{"bin"}},
		{Reason: Secret, Count: 7, Examples: []string{"a", "b", "c"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestCompareEntries(t *testing.T) {
	// Sorting names this way must give the order of the full paths.
	type ent struct {
		name string
		dir  bool
	}
	ents := []ent{{"a", true}, {"a.txt", false}, {"a0", false}, {"a-b", true}, {"ab", false}, {"A", false}, {"a", false}}
	for range 20 {
		mathrand.Shuffle(len(ents), func(i, j int) { ents[i], ents[j] = ents[j], ents[i] })
		slices.SortFunc(ents, func(x, y ent) int { return compareEntries(x.name, x.dir, y.name, y.dir) })
		var got []string
		for _, e := range ents {
			p := e.name
			if e.dir {
				p += "/x"
			}
			got = append(got, p)
		}
		if !slices.IsSorted(got) {
			t.Fatalf("entry order %q is not path order", got)
		}
	}
}

func scannedCleanHas(d [sha256.Size]byte) bool {
	scannedClean.Lock()
	defer scannedClean.Unlock()
	return scannedClean.m[d]
}
