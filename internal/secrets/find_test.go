package secrets

import (
	"math/rand/v2"
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
