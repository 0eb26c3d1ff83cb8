package files

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	mathrand "math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func randomString(set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[mathrand.IntN(len(set))]
	}
	return string(b)
}

const (
	alnumSet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	hexSet   = "0123456789abcdef"
)

// TestSecretShapesWithheldOrRedacted gathers a tree holding secrets in the shapes issues 20
// and 28 list and checks that each file is held back with its reason or sent with the secret
// replaced, as the dry run lists them (Gathered.Withheld, File.Redacted).
func TestSecretShapesWithheldOrRedacted(t *testing.T) {
	t.Parallel()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(k)
	keyB64 := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	router := "sk-or-v1-" + randomString(hexSet, 64)
	openai := "sk-proj-" + randomString(alnumSet, 74) + "T3BlbkFJ" + randomString(alnumSet, 74)
	gh := "ghp_" + randomString(alnumSet, 36)
	aws := randomString(alnumSet+"/+", 40)
	pw := "Tr0ub4dor&3" + randomString(alnumSet, 4)
	b64 := base64.StdEncoding.EncodeToString
	putty := "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n" +
		randomString(alnumSet, 64) + "\n" + randomString(alnumSet, 4) + "\nPrivate-Lines: 1\n" +
		randomString(alnumSet+"+/", 44) + "\nPrivate-MAC: " + randomString(hexSet, 64) + "\n"

	token := randomString(hexSet, 40)
	stripe := "sk_live_" + randomString(alnumSet, 24)
	wrapped := ""
	for rest := keyB64; rest != ""; {
		n := min(76, len(rest))
		wrapped += "    " + rest[:n] + "\n"
		rest = rest[n:]
	}
	files := map[string]string{
		// Issue 28.
		"appsettings.json": `{"ConnectionStrings": {"Default": "Server=db;Database=app;User Id=sa;Password=` + pw + `;"}}`,
		".gitconfig":       "[url \"https://oauth2:" + token + "@gitlab.example.com/\"]\n\tinsteadOf = https://gitlab.example.com/\n",
		"analysis.ipynb":   `{"cells": [{"outputs": [{"text": ["Connected to postgresql://analyst:` + pw + `@warehouse.example.com/dw\n"]}]}]}`,
		"deploy/charge.sh": "curl https://api.stripe.com/v1/charges -u " + stripe + ": -d amount=2000\n",
		"k8s/wrapped.yaml": "kind: Secret\ndata:\n  tls.key: |\n" + wrapped,

		"run.sh":                "#!/bin/sh\nexport OPENROUTER_API_KEY=" + router + "\n",
		".claude/settings.json": `{"env": {"OPENROUTER_API_KEY": "` + router + `"}}`,
		"cell.ipynb":            `{"cells": [{"source": ["client = OpenAI(api_key=\"` + openai + `\")\n"]}], "nbformat": 4}`,
		"outputs.ipynb": `{"cells": [{"outputs": [{"output_type": "stream", "text": ["aws_secret_access_key = ` + aws +
			`\n", "Password: ` + pw + `\n"]}]}], "nbformat": 4}`,
		"k8s/tls.yaml":                        "kind: Secret\ntype: kubernetes.io/tls\ndata:\n  tls.key: " + keyB64 + "\n",
		"k8s/admin.conf":                      "kind: Config\nusers:\n- name: admin\n  user:\n    client-key-data: " + keyB64 + "\n",
		"k8s/token.yaml":                      "kind: Secret\ndata:\n  token: " + b64([]byte(gh)) + "\n",
		"deploy/registry.json":                `{"auths": {"ghcr.io": {"auth": "` + b64([]byte("ci:"+gh)) + `"}}}`,
		"keys/signing.json":                   `{"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0", "d": "` + randomString(alnumSet, 43) + `"}`,
		"notes/deploy-key.txt":                "deploy key:\n" + putty,
		"backup/shadow.txt":                   "root:$6$" + randomString(alnumSet, 16) + "$" + randomString(alnumSet+"./", 86) + ":19700:0:99999:7:::\n",
		"maven/settings.xml":                  "<settings><servers><server><id>nexus</id><password>" + pw + "</password></server></servers></settings>\n",
		"gradle.properties":                   "org.gradle.jvmargs=-Xmx2g\nmavenPassword=" + pw + "\n",
		".env~":                               "KEY=1\n",
		"#.env#":                              "KEY=1\n",
		".env copy":                           "KEY=1\n",
		".env (1)":                            "KEY=1\n",
		".ENV":                                "KEY=1\n",
		".\u0435nv":                           "KEY=1\n", // Cyrillic е
		".env\u00a0":                          "KEY=1\n", // no-break space
		"\uff0eenv":                           "KEY=1\n", // fullwidth dot
		".e\u200bnv":                          "KEY=1\n", // zero-width space
		".env ":                               "KEY=1\n",
		".env 2":                              "KEY=1\n", // macOS Finder's copy
		".env2":                               "KEY=1\n",
		"npmrc":                               "//registry.npmjs.org/:_authToken=x\n",
		".NPMRC":                              "//registry.npmjs.org/:_authToken=x\n",
		".pypirc.bak":                         "[pypi]\n",
		"pip.conf":                            "[global]\nindex-url = https://u:p@pypi.example.com/simple\n",
		".netrc.bak":                          "machine x\n",
		"containers/auth.json":                "{}\n",
		"docker/config.json":                  "{}\n",
		"terraform.tfstate.1700000000.backup": "{}\n",
		".git-credentials.bak":                "https://u:p@github.com\n",
		"auth.json":                           "{}\n",
		"CREDENTIALS.JSON":                    "{}\n",
		"credentials.json.bak":                "{}\n",
		"kubeconfig~":                         "{}\n",
		"clean.go":                            "package clean\n",
	}
	got := gather(t, Options{Root: writeTree(t, files), Pattern: "**"})

	wantWithheld := map[string]string{
		"k8s/wrapped.yaml":     "holds a private key in base64",
		"k8s/tls.yaml":         "holds a private key in base64",
		"k8s/admin.conf":       "holds a private key in base64",
		"keys/signing.json":    "holds a private JSON Web Key",
		"notes/deploy-key.txt": "holds a PuTTY private key",
		"backup/shadow.txt":    "holds shadow or htpasswd password hashes",
	}
	for _, name := range []string{".env~", "#.env#", ".env copy", ".env (1)", ".ENV", ".\u0435nv", ".env\u00a0", "\uff0eenv", ".e\u200bnv", ".env ", ".env 2", ".env2"} {
		wantWithheld[name] = whyEnv
	}
	for _, name := range []string{"npmrc", ".NPMRC", ".pypirc.bak", "pip.conf", ".netrc.bak", "containers/auth.json", "docker/config.json",
		".git-credentials.bak", "auth.json", "CREDENTIALS.JSON", "credentials.json.bak", "kubeconfig~"} {
		wantWithheld[name] = whyCredentials
	}
	wantWithheld["terraform.tfstate.1700000000.backup"] = whyTerraform
	gotWithheld := map[string]string{}
	for _, w := range got.Withheld {
		gotWithheld[w.Path] = w.Why
	}
	for p, why := range wantWithheld {
		if gotWithheld[p] != why {
			t.Errorf("%q: withheld as %q, want %q", p, gotWithheld[p], why)
		}
	}

	wantRedacted := map[string][]string{
		"appsettings.json":      {"password"},
		".gitconfig":            {"URL credentials"},
		"analysis.ipynb":        {"URL credentials"},
		"deploy/charge.sh":      {"Stripe secret key"},
		"run.sh":                {"OpenRouter API key"},
		".claude/settings.json": {"OpenRouter API key"},
		"cell.ipynb":            {"OpenAI API key"},
		"outputs.ipynb":         {"AWS secret key", "password"},
		"k8s/token.yaml":        {"GitHub token (base64)"},
		"deploy/registry.json":  {"registry credentials"},
		"maven/settings.xml":    {"password"},
		"gradle.properties":     {"password"},
		"clean.go":              nil,
	}
	sent := map[string]File{}
	for _, f := range got.Files {
		sent[f.Path] = f
	}
	for p, kinds := range wantRedacted {
		f, ok := sent[p]
		if !ok {
			t.Errorf("%s not sent (withheld: %q)", p, gotWithheld[p])
			continue
		}
		if !slices.Equal(f.Redacted, kinds) {
			t.Errorf("%s: redacted %q, want %q", p, f.Redacted, kinds)
		}
		for _, secret := range []string{router, openai, aws, pw, b64([]byte(gh)), b64([]byte("ci:" + gh)), token, stripe} {
			if strings.Contains(string(f.Content), strings.TrimRight(secret, "=")) {
				t.Errorf("%s sent with a secret in it:\n%s", p, f.Content)
			}
		}
	}
	if len(got.Files)+len(got.Withheld) != len(files) {
		t.Errorf("%d files sent and %d withheld of %d", len(got.Files), len(got.Withheld), len(files))
	}
}
