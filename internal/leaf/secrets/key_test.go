package secrets

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pemKeys returns freshly generated private keys in PEM, by name.
func pemKeys(t *testing.T) map[string]string {
	t.Helper()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8 := func(k any) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	ecDER, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(typ string, der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	return map[string]string{
		"rsa-pkcs1":   enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)),
		"rsa-pkcs8":   enc("PRIVATE KEY", pkcs8(rsaKey)),
		"ec-sec1":     enc("EC PRIVATE KEY", ecDER),
		"ed25519":     enc("PRIVATE KEY", pkcs8(edKey)),
		"encrypted":   enc("ENCRYPTED PRIVATE KEY", pkcs8(ecKey)), // the label is what counts
		"pgp":         "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: test\n\n" + strings.Join(lines(enc("X", pkcs8(rsaKey))), "\n") + "\n-----END PGP PRIVATE KEY BLOCK-----\n",
		"dsa-labeled": enc("DSA PRIVATE KEY", pkcs8(edKey)),
	}
}

// lines returns the lines of a PEM block without its BEGIN and END lines.
func lines(p string) []string {
	ls := strings.Split(strings.TrimSpace(p), "\n")
	return ls[1 : len(ls)-1]
}

// shapes writes a PEM key as a file or as source code would hold it.
var shapes = map[string]func(p string) string{
	"pem": func(p string) string { return p },
	"go-concat": func(p string) string {
		var b strings.Builder
		b.WriteString("var testKey = ")
		for i, l := range strings.Split(strings.TrimSpace(p), "\n") {
			if i > 0 {
				b.WriteString(" +\n\t")
			}
			b.WriteString(`"` + l + `\n"`)
		}
		return b.String() + "\n"
	},
	"js-array": func(p string) string {
		var q []string
		for _, l := range strings.Split(strings.TrimSpace(p), "\n") {
			q = append(q, "'"+l+"'")
		}
		return "const key = [\n  " + strings.Join(q, ",\n  ") + "\n].join('\\n');\n"
	},
	"js-array-one-line": func(p string) string {
		var q []string
		for _, l := range strings.Split(strings.TrimSpace(p), "\n") {
			q = append(q, "'"+l+"'")
		}
		return "const key = [" + strings.Join(q, ", ") + "].join('\\n');\n"
	},
	"python-implicit": func(p string) string {
		var b strings.Builder
		b.WriteString("KEY = (\n")
		for _, l := range strings.Split(strings.TrimSpace(p), "\n") {
			b.WriteString(`    "` + l + `\n"` + "\n")
		}
		return b.String() + ")\n"
	},
	"c-concat": func(p string) string {
		var b strings.Builder
		b.WriteString("static const char *key =\n")
		for _, l := range strings.Split(strings.TrimSpace(p), "\n") {
			b.WriteString(`    "` + l + `\n"` + "\n")
		}
		return b.String() + "    ;\n"
	},
	"json-escaped": func(p string) string {
		return `{"type": "service_account", "private_key": "` + strings.ReplaceAll(p, "\n", `\n`) + `", "client_email": "a@b.iam.gserviceaccount.com"}`
	},
	"yaml-block": func(p string) string {
		return "tls:\n  key: |\n    " + strings.ReplaceAll(strings.TrimSpace(p), "\n", "\n    ") + "\n  other: 1\n"
	},
}

// padding is ordinary Go code longer than the 8 KiB the old check looked at.
var padding = strings.Repeat("func f(x int) int { return x*2 + 1 } // ordinary code\n", 200)

func TestPrivateKeyFindsKeysInEveryShape(t *testing.T) {
	t.Parallel()
	keys := pemKeys(t)
	if path, err := exec.LookPath("ssh-keygen"); err == nil {
		dir := t.TempDir()
		out, err := exec.Command(path, "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "k")).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, "k"))
		if err != nil {
			t.Fatal(err)
		}
		keys["openssh"] = string(b)
	} else {
		t.Log("no ssh-keygen: the OpenSSH key case is not run")
	}
	for name, key := range keys {
		for shape, write := range shapes {
			for _, at := range []struct {
				where  string
				before string
			}{{"start", ""}, {"past-8KiB", padding}} {
				t.Run(name+"/"+shape+"/"+at.where, func(t *testing.T) {
					content := []byte(at.before + write(key) + padding)
					if !PrivateKey(content) {
						t.Errorf("PrivateKey = false, want true for\n%.600s", content[len(at.before):])
					}
					if out, kinds, key := Scan(content); key != HeldPrivateKey || out != nil || kinds != nil {
						t.Errorf("Scan = %d bytes, %v, %v; want a private key and nothing else", len(out), kinds, key)
					}
				})
			}
		}
	}
}

func TestPrivateKeyIgnoresCodeThatNamesTheMarker(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"pem-parser": `package pem

const begin = "-----BEGIN RSA PRIVATE KEY-----"

// parse decodes the first block of data.
func parse(data []byte) (*Block, error) {
	i := bytes.Index(data, []byte(begin))
	if i < 0 {
		return nil, errors.New("pem: no block")
	}
	return decodeBlockFromTheRestOfTheInput(data[i+len(begin):]), nil
}
`,
		"comment":          "// A key file starts with -----BEGIN OPENSSH PRIVATE KEY----- and is parsed by\n// ssh.ParseRawPrivateKeyWithPassphrase(pemBytes, passphrase) in golang.org/x/crypto.\n",
		"public-key-data":  "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEPR3tU2Fta9ktY+6P9G0cWO+0kETA\n-----END PUBLIC KEY-----\n",
		"base64-no-marker": "data = \"MHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49\"\n",
		"identifier-after": `const marker = "-----BEGIN PRIVATE KEY-----"; var x = VeryLongIdentifierNameThatGoesOnAndOnForeverAndEver1`,
		"marker-split":     `msg := "-----BEGIN " + kind + " PRIVATE KEY-----"` + "\n" + `return fmt.Errorf("unexpected %s", msg)`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			if PrivateKey([]byte(content)) {
				t.Errorf("PrivateKey = true, want false for\n%s", content)
			}
			if _, _, key := Scan([]byte(content)); key != 0 {
				t.Errorf("Scan found a private key in\n%s", content)
			}
		})
	}
}
