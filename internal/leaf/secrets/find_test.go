package secrets

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestScanAtEveryOffset moves tokens, anchors and a key across the start and end of the
// content, and checks Scan and Redact against the reference (every rule run over the whole
// content, and PrivateKey) at each offset.
func TestScanAtEveryOffset(t *testing.T) {
	t.Parallel()
	var pieces []string
	for _, tc := range tokens() {
		pieces = append(pieces, tc.token)
	}
	pieces = append(pieces, "-", "k", "A", "_", "w", "W", "$", "Z", "Q", "2", "J", "ok", "AK", "p_", "--", "-----BEGIN ", "xoxb-",
		"password=", "PASSWORD: ", "secret_key=", "SecretAccessKey", ":$6$", ecKeyAfterToken)
	for _, p := range pieces {
		for _, at := range []int{0, 1, 2, 3, 7, 64, 65} {
			for _, tail := range []string{"", "x", "\n", `\"`, padding[:70]} {
				checkReference(t, []byte(padding[:at]+p+tail))
			}
		}
	}
	// The anchors and tokens of issue 28's rules, at fewer offsets.
	pieces = []string{"@", "~", "G", "z", "M", "://", `:\/\/`, "Q~", "sha256~", "SG.", "Authorization: Bearer ",
		"AUTHORIZATION: basic ", ";Password=", "&pwd=", "AccountKey=", "LS0t", "MII", " -u ", "curl -u ",
		"https://u:" + rnd(alnum, 12) + "@", "redis://:" + rnd(alnum, 12) + "@h", "https://" + rnd(hexDigits, 40) + "@"}
	for _, row := range shapeRows(t) {
		if strings.HasPrefix(row.name, "vendor/") && !strings.Contains(row.name[7:], "/") {
			pieces = append(pieces, strings.TrimSuffix(strings.TrimPrefix(row.content, "export TOKEN="), "\n"))
		}
	}
	for _, p := range pieces {
		for _, at := range []int{0, 1, 65} {
			for _, tail := range []string{"", "x", `\"`} {
				checkReference(t, []byte(padding[:at]+p+tail))
			}
		}
	}
	// Random text dense in anchors and in the bytes beside them.
	const alphabet = "-kA_oKSBC3IpusrmbwWd$:=\"ZQJ2 \n@/~.zGM"
	for range 200 {
		checkReference(t, []byte(rnd(alphabet, rand.IntN(300))))
	}
}

// ecKeyAfterToken is a Slack token whose trailing dashes run into a private key's marker.
const ecKeyAfterToken = "xoxb-1234567890-1234567890abc-----BEGIN EC PRIVATE KEY-----\n" +
	"MHcCAQEEIBqP3xK9aYvQ7mZr2LtWn8HcJ5sFdE4uGbN1oRkT6yVwoAoGCCqGSM49AwEHoUQDQgAE\n" +
	"-----END EC PRIVATE KEY-----\n"

// TestScanFindsKeyInsideToken: a private key whose marker a token's pattern runs into is
// still found (the key check is not passed over with the token).
func TestScanFindsKeyInsideToken(t *testing.T) {
	t.Parallel()
	in := []byte(ecKeyAfterToken)
	if !PrivateKey(in) {
		t.Fatal("PrivateKey misses the key")
	}
	if out, kinds, held := Scan(in); held == 0 {
		t.Errorf("Scan = %q %v, nothing held; want the key found", out, kinds)
	}
}

// TestCandidates checks the pass over the content against what a candidate is: a probe's
// byte with one of its near bytes at rel (none when rel is out of the content), or a dash
// before a dash. The contents are short (every length across the pass's seven-pair
// windows and its tail) and dense in probes and near bytes; each probe's candidates,
// from the hitList and from a pass of the probe's own, must be those.
func TestCandidates(t *testing.T) {
	t.Parallel()
	var alphabet []byte
	probeOf := map[byte]*probe{}
	for r, p := range allProbes() {
		if probeOf[p.b] != nil || rankOf[p.b] != r || r >= numProbes {
			t.Fatalf("two probes for %q, or more than numProbes", p.b)
		}
		probeOf[p.b] = p
		alphabet = append(alphabet, p.b)
		for b := range 256 {
			if p.near[b] && b >= ' ' && b < 0x7f && rand.IntN(3) == 0 {
				alphabet = append(alphabet, byte(b))
			}
		}
	}
	for n := range 3000 {
		c := []byte(rnd(string(alphabet), n%40))
		var want []int
		for i := range c {
			p, ok := probeOf[c[i]]
			if !ok {
				continue
			}
			if j := i + p.rel; j >= 0 && j < len(c) && p.near[c[j]] || c[i] == '-' && i+1 < len(c) && c[i+1] == '-' {
				want = append(want, i)
			}
		}
		var got []int
		candidates(c, 0, func(i int) bool { got = append(got, i); return true })
		if !slices.Equal(got, want) {
			t.Fatalf("candidates(%q) = %v, want %v", c, got, want)
		}
		var found, byProbe [4]int32 // grown past four
		hits := collect(c, found[:0], byProbe[:0])
		for _, p := range probeOf {
			wantOf := slices.DeleteFunc(slices.Clone(want), func(i int) bool { return c[i] != p.b })
			own := slices.Collect((&hitList{}).of(c, p.b))
			listed := slices.Collect(hits.of(c, p.b))
			if !slices.Equal(own, wantOf) || !slices.Equal(listed, wantOf) {
				t.Fatalf("%q: candidates of %q: own pass %v, list %v, want %v", c, p.b, own, listed, wantOf)
			}
		}
	}
}

// TestScanPastMaxHits: a file with more candidates than a hitList keeps ("ok" is one, for
// the webhook check) is scanned probe by probe, and its secrets are still found.
func TestScanPastMaxHits(t *testing.T) {
	t.Parallel()
	noise := strings.Repeat("ok ", maxHits)
	if h := collect([]byte(noise), nil, nil); h.at != nil {
		t.Fatalf("%d candidates kept, want more than maxHits", len(h.at))
	}
	token := "ghp_" + rnd(alnum, 36)
	out, kinds := Redact([]byte(noise + "key = \"" + token + "\"\n" + noise))
	if bytes.Contains(out, []byte(token)) || !slices.Equal(kinds, []string{kindGitHub}) {
		t.Errorf("Redact left the token or found %v, want it redacted as %q", kinds, kindGitHub)
	}
	if _, _, held := Scan([]byte(noise + ecKeyAfterToken + noise)); held != HeldPrivateKey {
		t.Errorf("Scan held %v, want HeldPrivateKey", held)
	}
}

// TestEncodedAnchors checks the near bytes of each encodedAnchor: those beside it (after it
// at offset 0, else before it) in the encodings encodedAt looks for, those of tokenStarts
// and "eyJ" (`{"`), so that the pass leaves out only what encodedAt would.
func TestEncodedAnchors(t *testing.T) {
	t.Parallel()
	encodings := []string{"eyJ"}
	for s := range tokenStarts {
		encodings = append(encodings, base64.StdEncoding.EncodeToString([]byte(s)))
	}
	for _, a := range encodedAnchors {
		rel := -1
		if a.off == 0 {
			rel = +1
		}
		var want [256]bool
		for _, e := range encodings {
			if e[a.off] == a.b {
				want[e[a.off+rel]] = true
			}
		}
		if a.rel != rel || *a.near != want {
			t.Errorf("%q at %d: rel %d near %q, want rel %d near %q", a.b, a.off, a.rel, set(a.near), rel, set(&want))
		}
	}
}

func set(t *[256]bool) (s string) {
	for b, in := range t {
		if in {
			s += string(rune(b))
		}
	}
	return s
}
