package tokens

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// The whole test binary runs with the network shut: http.DefaultTransport (which
// pkoukk/tiktoken-go's default loader would use to download a vocabulary) is replaced by
// one that refuses and counts every request, the proxy variables point at an unroutable
// address (TEST-NET-1) in case anything builds its own transport, and TIKTOKEN_CACHE_DIR
// is an empty directory that must stay empty. TestMain fails the run if any request was
// attempted. For the production code none of this matters: it reads its vocabulary from
// data embedded in the binary and has no network code (TestProductionHasNoNetworkCode).

var (
	netAttempts atomic.Int64
	tiktokenDir string
	// environ is the environment before TestMain shut the network, for subprocesses.
	environ []string
)

type noNetwork struct{}

func (noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	netAttempts.Add(1)
	return nil, fmt.Errorf("tokens tests must not use the network: %s %s", r.Method, r.URL)
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tiktoken-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tiktokenDir = dir
	environ = os.Environ()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		os.Setenv(k, "http://192.0.2.1:9")
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		os.Unsetenv(k)
	}
	os.Setenv("TIKTOKEN_CACHE_DIR", dir)
	os.Setenv("DATA_GYM_CACHE_DIR", dir)
	http.DefaultTransport = noNetwork{}

	code := m.Run()

	if n := netAttempts.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d network request(s) attempted\n", n)
		code = 1
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d file(s) written to TIKTOKEN_CACHE_DIR\n", len(entries))
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// pkoukk is github.com/pkoukk/tiktoken-go's o200k_base encoding, loaded once with the
// offline loader (vocabulary embedded in github.com/pkoukk/tiktoken-go-loader).
var pkoukk = sync.OnceValues(func() (*tiktoken.Tiktoken, error) {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	return tiktoken.GetEncoding(Encoding)
})

// pkoukkCount counts s with pkoukk/tiktoken-go, as tiktoken's encode_ordinary.
func pkoukkCount(tb testing.TB, s string) int {
	tb.Helper()
	enc, err := pkoukk()
	if err != nil {
		tb.Fatalf("pkoukk/tiktoken-go offline loader: %v", err)
	}
	return len(enc.EncodeOrdinary(s))
}

func TestNoNetwork(t *testing.T) {
	before := netAttempts.Load()
	if got := pkoukkCount(t, "hello world"); got != 2 {
		t.Errorf("pkoukk count = %d, want 2", got)
	}
	if got := NewCounter().CountString("hello world"); got != 2 {
		t.Errorf("Counter count = %d, want 2", got)
	}
	if n := netAttempts.Load() - before; n != 0 {
		t.Errorf("%d network request(s) while loading and counting", n)
	}
	if entries, _ := os.ReadDir(tiktokenDir); len(entries) != 0 {
		t.Errorf("TIKTOKEN_CACHE_DIR has %d entries, want none", len(entries))
	}
}

// TestNoNetworkTrap shows the trap works: pkoukk/tiktoken-go's default loader tries to
// download, and the attempt is seen and refused.
func TestNoNetworkTrap(t *testing.T) {
	before := netAttempts.Load()
	_, err := tiktoken.NewDefaultBpeLoader().LoadTiktokenBpe(
		"https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken")
	if err == nil {
		t.Fatal("default loader succeeded without network, want an error")
	}
	if n := netAttempts.Load() - before; n != 1 {
		t.Fatalf("trap saw %d request(s), want 1", n)
	}
	netAttempts.Add(-1) // this one was on purpose
}

// TestVocabularyIsTheLoaders: the embedded vocabulary is the o200k_base.tiktoken that
// github.com/pkoukk/tiktoken-go-loader ships (the one pkoukk/tiktoken-go counts with in
// these tests), and has the SHA-256 tiktoken checks.
func TestVocabularyIsTheLoaders(t *testing.T) {
	t.Parallel()
	theirs, err := assets.Assets.ReadFile(vocabFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(vocabData, theirs) {
		t.Errorf("embedded %s (%d bytes) differs from tiktoken-go-loader's (%d bytes)", vocabFile, len(vocabData), len(theirs))
	}
	if sum := sha256.Sum256(vocabData); hex.EncodeToString(sum[:]) != vocabSHA256 {
		t.Errorf("embedded %s has SHA-256 %x, want %s", vocabFile, sum, vocabSHA256)
	}
}

// TestProductionHasNoNetworkCode checks that the package, outside its tests, imports no
// network code, no tokenizer library and no package of vocabularies: only the one
// embedded vocabulary file.
func TestProductionHasNoNetworkCode(t *testing.T) {
	gobin := filepath.Join(goroot(t), "bin", "go")
	cmd := exec.Command(gobin, "list", "-deps", ".")
	cmd.Env = environ // the go command may need the module proxy
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages, too few to be right:\n%s", len(deps), out)
	}
	for _, dep := range deps {
		if dep == "net" || strings.HasPrefix(dep, "net/") || dep == "github.com/pkoukk/tiktoken-go" ||
			strings.HasPrefix(dep, "github.com/tiktoken-go/") || strings.HasPrefix(dep, "github.com/pkoukk/") {
			t.Errorf("production code depends on %s", dep)
		}
	}
}

var gorootOnce = sync.OnceValues(func() (string, error) {
	if dir := os.Getenv("GOROOT"); dir != "" {
		return dir, nil
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	return strings.TrimSpace(string(out)), err
})

// goroot returns the Go installation running the tests, or skips.
func goroot(tb testing.TB) string {
	tb.Helper()
	dir, err := gorootOnce()
	if err != nil || dir == "" {
		tb.Skipf("no GOROOT (go env GOROOT: %v)", err)
	}
	return dir
}
