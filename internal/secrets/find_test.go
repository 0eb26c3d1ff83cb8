package secrets

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// findResult is what a find leaves: whether it found a private key and, when not, the
// secrets it recorded, in order.
func findResult(in []byte, keys bool, find func(*scan) bool) (bool, []span) {
	s := scan{content: in, keys: keys}
	if find(&s) {
		return true, nil
	}
	slices.SortFunc(s.spans, func(a, b span) int {
		return cmp.Or(a.start-b.start, a.end-b.end, cmp.Compare(a.kind, b.kind))
	})
	return false, s.spans
}

// checkFind fails t when a one-pass find (see finders) and findEach (a bytes.IndexByte
// pass per anchor) disagree on in.
func checkFind(t *testing.T, in []byte) {
	t.Helper()
	for _, keys := range []bool{false, true} {
		wantKey, want := findResult(in, keys, (*scan).findEach)
		for name, find := range finders() {
			gotKey, got := findResult(in, keys, find)
			if gotKey != wantKey || !slices.Equal(got, want) {
				t.Fatalf("keys %v: %s = %v %v, findEach = %v %v on %q", keys, name, gotKey, got, wantKey, want, in)
			}
		}
	}
}

// FuzzFind: the one-pass find finds what findEach finds.
func FuzzFind(f *testing.F) {
	for _, tc := range tokens() {
		f.Add([]byte("key = \"" + tc.token + "\"\n"))
		f.Add([]byte(padding[:61] + tc.token + "-----BEGIN "))
	}
	f.Add([]byte(ecKeyAfterToken))
	f.Fuzz(func(t *testing.T, in []byte) { checkFind(t, in) })
}

// TestFindAtEveryOffset moves tokens, anchors and a key across the edges of find's 64-byte
// blocks and of its 4 KiB calls, and checks find against findEach at each offset.
func TestFindAtEveryOffset(t *testing.T) {
	t.Parallel()
	var pieces []string
	for _, tc := range tokens() {
		pieces = append(pieces, tc.token)
	}
	pieces = append(pieces, "-", "k", "A", "_", "ok", "AK", "p_", "--", "-----BEGIN ", "xoxb-", ecKeyAfterToken)
	for _, p := range pieces {
		for _, at := range []int{0, 1, 2, 61, 62, 63, 64, 65, 127, 4094, 4095, 4096, 4097} {
			for _, tail := range []string{"", "x", "\n", padding[:70]} {
				in := []byte(padding[:at] + p + tail)
				checkFind(t, in)
			}
		}
	}
	// Random text dense in anchors and in the bytes beside them.
	const alphabet = "-kA_oKSBC3Ipusrmb \n"
	for range 200 {
		checkFind(t, []byte(rnd(alphabet, rand.IntN(300))))
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
	if out, kinds, key := Scan(in); !key {
		t.Errorf("Scan = %q %v, false; want the key found", out, kinds)
	}
}
