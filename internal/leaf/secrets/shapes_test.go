package secrets

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
)

const hexDigits = "0123456789abcdef"

// openRouterKey returns a key in OpenRouter's format.
func openRouterKey() string { return "sk-or-v1-" + rnd(hexDigits, 64) }

// TestRedactOpenRouterKey: OpenRouter's key is redacted where users write it: a shell
// script, an agent's settings, an MCP client configuration, a notebook cell.
func TestRedactOpenRouterKey(t *testing.T) {
	t.Parallel()
	key := openRouterKey()
	for name, content := range map[string]string{
		"run.sh":                "#!/bin/sh\nexport OPENROUTER_API_KEY=" + key + "\nexec consult\n",
		".claude/settings.json": `{"env": {"OPENROUTER_API_KEY": "` + key + `"}}`,
		"mcp.json":              `{"mcpServers":{"consult":{"command":"consult","args":["--api-key=` + key + `"]}}}`,
		"notebook.ipynb":        `{"cells":[{"source":["os.environ[\"KEY\"] = \"` + key + `\"\n"]}]}`,
		"at-end":                key,
	} {
		out, kinds, held := Scan([]byte(content))
		if held != 0 || strings.Contains(string(out), key) || len(kinds) != 1 || kinds[0] != kindRouter {
			t.Errorf("%s: Scan = %q %q %v, want the key redacted as %q", name, out, kinds, held, kindRouter)
		}
	}
	// Placeholders and other strings with the prefix are left alone.
	for _, s := range []string{"sk-or-v1-" + strings.Repeat("0", 64), "sk-or-v1-xxxxxxxx", "sk-or-v1-" + rnd(hexDigits, 63)} {
		if _, kinds := Redact([]byte(`KEY="` + s + `"`)); kinds != nil {
			t.Errorf("Redact found %q in %q", kinds, s)
		}
	}
}

// TestRedactBeforeEscapedQuote: a token followed by \" (a string inside a JSON string, as
// a notebook's cells hold code) is redacted, as it is followed by \n.
func TestRedactBeforeEscapedQuote(t *testing.T) {
	t.Parallel()
	for _, tc := range tokens() {
		in := []byte(`{"source": ["key = \"` + tc.token + `\"\n"]}`)
		out, kinds := Redact(in)
		if strings.Contains(string(out), tc.token) || len(kinds) != 1 || kinds[0] != tc.kind {
			t.Errorf("%s: Redact = %q %q, want it redacted", tc.name, out, kinds)
		}
	}
}

// pemKey returns a fresh EC private key in PEM.
func pemKey(t testing.TB) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

var b64 = base64.StdEncoding.EncodeToString

// TestScanHoldsEncodedKeys: a private key block in base64, as a kubeconfig and a
// Kubernetes Secret hold one, holds the file back.
func TestScanHoldsEncodedKeys(t *testing.T) {
	t.Parallel()
	key := b64(pemKey(t))
	cert := b64([]byte("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUEXAMPLE\n-----END CERTIFICATE-----\n"))
	for name, content := range map[string]string{
		"kubeconfig": "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    client-certificate-data: " +
			cert + "\n    client-key-data: " + key + "\n",
		"tls-secret.yaml": "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\ndata:\n  tls.crt: " + cert + "\n  tls.key: " + key + "\n",
		"secret.json":     `{"kind": "Secret", "data": {"tls.key": "` + key + `"}}`,
	} {
		if out, kinds, held := Scan([]byte(content)); held != HeldEncodedKey {
			t.Errorf("%s: Scan = %d bytes %q %v, want it held back (%v)", name, len(out), kinds, held, HeldEncodedKey)
		}
	}
	// A certificate alone is not a key.
	if _, _, held := Scan([]byte("tls.crt: " + cert + "\n")); held != 0 {
		t.Errorf("a certificate in base64 is held back: %v", held)
	}
}

// TestRedactEncodedCredentials: docker's auths (base64 of user:password), a Secret's
// .dockerconfigjson (base64 of those), and tokens in base64 are redacted.
func TestRedactEncodedCredentials(t *testing.T) {
	t.Parallel()
	gh := "ghp_" + rnd(alnum, 36)
	auth := b64([]byte("deploy:" + rnd(alnum, 20)))
	docker := `{"auths": {"ghcr.io": {"auth": "` + auth + `"}, "registry.example.com": {"auth":"` + b64([]byte("bob:hunter2!")) + `"}}}`
	for _, tc := range []struct {
		name, content, secret, kind string
	}{
		{"docker-config", docker, auth, kindRegistry},
		{"dockerconfigjson", "kind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: " + b64([]byte(docker)) + "\n", b64([]byte(docker)), kindRegistry + " (base64)"},
		{"github-token", "kind: Secret\ndata:\n  token: " + b64([]byte(gh)) + "\n", b64([]byte(gh)), kindGitHub + " (base64)"},
		{"github-token-json", `{"GITHUB_TOKEN_B64":"` + b64([]byte(gh+"\n")) + `"}`, b64([]byte(gh + "\n")), kindGitHub + " (base64)"},
		{"openrouter", "OPENROUTER_KEY_B64=" + b64([]byte(openRouterKey())), "", kindRouter + " (base64)"},
		{"aws", "AWS_ACCESS_KEY_ID: " + b64([]byte("AKIAZ3MQ7XQ2W4HJ5VNB")), "", kindAWS + " (base64)"},
	} {
		out, kinds, held := Scan([]byte(tc.content))
		if held != 0 || !slicesContain(kinds, tc.kind) || tc.secret != "" && strings.Contains(string(out), strings.TrimRight(tc.secret, "=")) {
			t.Errorf("%s: Scan = %q %q %v, want %q redacted", tc.name, out, kinds, held, tc.kind)
		}
	}
	// Base64 that decodes to something else is left alone, and so is an auth that is not
	// user:password.
	for _, s := range []string{
		"data: " + b64([]byte("ghost in the shell, a film")), // "gho" then no token
		`{"auth": "` + b64([]byte("no colon here at all")) + `"}`,
		"image: " + b64([]byte(`{"alg":"HS256","typ":"JWT"}`)),
	} {
		if out, kinds, held := Scan([]byte(s)); kinds != nil || held != 0 {
			t.Errorf("Scan(%q) = %q %q %v, want nothing found", s, out, kinds, held)
		}
	}
}

func slicesContain(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// jwk returns an RSA JSON Web Key, private or public only.
func jwk(t *testing.T, private bool) []byte {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(n *big.Int) string { return base64.RawURLEncoding.EncodeToString(n.Bytes()) }
	m := map[string]string{"kty": "RSA", "kid": "1", "n": enc(k.N), "e": "AQAB"}
	if private {
		m["d"], m["p"], m["q"] = enc(k.D), enc(k.Primes[0]), enc(k.Primes[1])
		m["dp"], m["dq"], m["qi"] = enc(k.Precomputed.Dp), enc(k.Precomputed.Dq), enc(k.Precomputed.Qinv)
	}
	b, err := json.MarshalIndent(map[string]any{"keys": []any{m}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestScanHoldsPrivateJWK: a private JSON Web Key holds the file back; a public one does
// not.
func TestScanHoldsPrivateJWK(t *testing.T) {
	t.Parallel()
	if _, _, held := Scan(jwk(t, true)); held != HeldJWK {
		t.Errorf("private JWK: held %v, want %v", held, HeldJWK)
	}
	ec := []byte(`{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}`)
	if _, _, held := Scan(ec); held != HeldJWK {
		t.Errorf("private EC JWK: held %v, want %v", held, HeldJWK)
	}
	if out, kinds, held := Scan(jwk(t, false)); held != 0 || kinds != nil {
		t.Errorf("public JWK: Scan = %q %q %v, want nothing found", out, kinds, held)
	}
}

// puttyKey returns a PuTTY private key file (format 3, unencrypted) with random key data.
func puttyKey() string {
	return "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy@example\nPublic-Lines: 2\n" +
		"AAAAB3NzaC1yc2EAAAADAQABAAABAQC" + rnd(alnum+"+/", 33) + "\n" + rnd(alnum+"+/", 64) + "\n" +
		"Private-Lines: 2\n" + rnd(alnum+"+/", 64) + "\n" + rnd(alnum+"+/", 40) + "\n" +
		"Private-MAC: " + rnd(hexDigits, 64) + "\n"
}

// TestScanHoldsPuTTYKey: PuTTY key content in any file holds it back; code that names the
// format does not.
func TestScanHoldsPuTTYKey(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"notes.txt": "the deploy key:\n\n" + puttyKey(),
		"json":      `{"key": "` + strings.ReplaceAll(puttyKey(), "\n", `\n`) + `"}`,
	} {
		if _, _, held := Scan([]byte(content)); held != HeldPuTTYKey {
			t.Errorf("%s: held %v, want %v", name, held, HeldPuTTYKey)
		}
	}
	parser := "if !strings.HasPrefix(line, \"PuTTY-User-Key-File-\") {\n\treturn errFormat\n}\n" +
		"n, err := strconv.Atoi(strings.TrimPrefix(next(), \"Private-Lines: \"))\n"
	if _, _, held := Scan([]byte(parser)); held != 0 {
		t.Errorf("a PPK parser is held back: %v", held)
	}
}

// TestScanHoldsPasswordHashes: shadow and htpasswd lines hold a file back; passwd lines
// and shell code with "$" do not.
func TestScanHoldsPasswordHashes(t *testing.T) {
	t.Parallel()
	salt, hash := rnd(alnum+"./", 16), rnd(alnum+"./", 86)
	for name, content := range map[string]string{
		"shadow":   "root:$6$" + salt + "$" + hash + ":19700:0:99999:7:::\ndaemon:*:19700:0:99999:7:::\n",
		"yescrypt": "bin:*:19700::::::\nalice:$y$j9T$" + rnd(alnum+"./", 22) + "$" + rnd(alnum+"./", 43) + ":19701:0:99999:7:::\n",
		"bcrypt":   "admin:$2y$10$" + rnd(alnum+"./", 53) + "\n",
		"apr1":     "# users\nweb:$apr1$" + rnd(alnum, 8) + "$" + rnd(alnum+"./", 22) + "\n",
		"json":     `{"content": "root:$6$` + salt + "$" + hash + `:19700:0:99999:7:::\ndaemon:*:19700:0:99999:7:::\n"}`,
	} {
		if _, _, held := Scan([]byte(content)); held != HeldPasswordHashes {
			t.Errorf("%s: held %v, want %v", name, held, HeldPasswordHashes)
		}
	}
	for name, content := range map[string]string{
		"passwd":  "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
		"shell":   "PATH=$PATH:$HOME/bin\nfoo:$(bar)\necho ${HOME}:$USER\n",
		"make":    "all:$(OBJS)\n\t$(CC) -o $@ $^\n",
		"shortid": "x:$1$abc$def:\n",
	} {
		if _, _, held := Scan([]byte(content)); held != 0 {
			t.Errorf("%s: held %v, want nothing", name, held)
		}
	}
}

// TestRedactKeywordSecrets: AWS secret keys and passwords after their names, as credential
// files, build settings and notebook outputs print them.
func TestRedactKeywordSecrets(t *testing.T) {
	t.Parallel()
	aws := rnd(alnum+"/+", 40)
	pw := "Tr0ub4dor&3" + rnd(alnum, 4)
	for _, tc := range []struct{ name, content, secret, kind string }{
		{"aws-credentials", "[default]\naws_access_key_id = AKIA" + rnd(base32, 16) + "\naws_secret_access_key = " + aws + "\n", aws, kindAWSSecret},
		{"aws-env-dump", `{"outputs": [{"text": ["environ({'AWS_SECRET_ACCESS_KEY': '` + aws + `', 'HOME': '/root'})\n"]}]}`, aws, kindAWSSecret},
		{"aws-notebook-print", `{"text/plain": ["{'AccessKeyId': 'ASIA..', 'SecretAccessKey': '` + aws + `'}"]}`, aws, kindAWSSecret},
		{"aws-js", "const s3 = new S3({ secretAccessKey: \"" + aws + "\" })\n", aws, kindAWSSecret},
		{"maven-settings", "<settings>\n <servers>\n  <server>\n   <id>nexus</id>\n   <username>deploy</username>\n   <password>" + pw + "</password>\n  </server>\n </servers>\n</settings>\n", pw, kindPassword},
		{"gradle-properties", "org.gradle.jvmargs=-Xmx2g\nmavenUser=deploy\nmavenPassword=" + pw + "\n", pw, kindPassword},
		{"signing-password", "signing.keyId=24875D73\nsigning.password=" + pw + "\n", pw, kindPassword},
		{"pypirc", "[pypi]\nusername = __token__\npassword = " + pw + "\n", pw, kindPassword},
		{"notebook-output", `{"output_type": "stream", "text": ["Connecting as admin\n", "Password: ` + pw + `\n"]}`, pw, kindPassword},
		{"notebook-dict", `{"text/plain": ["{'user': 'admin', 'password': '` + pw + `'}"]}`, pw, kindPassword},
		{"weak", "signing.password=password123\n", "password123", kindPassword},
		{"compose", "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: " + pw + "\n", pw, kindPassword},
	} {
		out, kinds, held := Scan([]byte(tc.content))
		if held != 0 || strings.Contains(string(out), tc.secret) || !slicesContain(kinds, tc.kind) {
			t.Errorf("%s: Scan = %q %q %v, want %q redacted", tc.name, out, kinds, held, tc.kind)
		}
	}
	// Code and placeholders are left alone.
	for _, s := range []string{
		"password = getpass.getpass()\n",
		"password = self.password\n",
		"<password>${env.MAVEN_PASSWORD}</password>\n",
		"PASSWORD=changeme\n",
		"passwd: files\n",
		"mavenPassword=\n",
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
		"if password == \"\" {\n",
		"encodeUserPassword: \"encodeUserPassword\",\n",
		"password: DB_PASSWORD\n",
		"password = userPassword1\n",
	} {
		if out, kinds := Redact([]byte(s)); kinds != nil {
			t.Errorf("Redact(%q) = %q %q, want nothing found", s, out, kinds)
		}
	}
}

// TestScanHoldsBackFilesMadeOfCandidates: a file made of token prefixes or names, each a
// candidate the rules must check, is held back (HeldUnchecked) once the checks pass their
// budget, instead of costing minutes; a file dense with real tokens is still redacted.
func TestScanHoldsBackFilesMadeOfCandidates(t *testing.T) {
	t.Parallel()
	for _, unit := range []string{"xoxb-", "password=", "-----BEGIN PRIVATE KEY-----", " Z2hwX", `"auth":"`, "sk-ant-api03-",
		"https://a:Passw0rd1@", " -u ", "LS0tLS1CRUdJTiBQ"} {
		in := []byte("{" + strings.Repeat(unit, (256<<10)/len(unit)))
		if _, _, held := Scan(in); held != HeldUnchecked {
			t.Errorf("256 KiB of %q: held %v, want %v", unit, held, HeldUnchecked)
		}
	}
	var b strings.Builder
	for range 100 {
		for _, tc := range tokens() {
			b.WriteString("v := \"" + tc.token + "\"\n")
		}
	}
	in := []byte(b.String())
	out, _, held := Scan(in)
	if held != 0 {
		t.Fatalf("a file of %d real tokens is held back: %v", 100*len(tokens()), held)
	}
	// Every token the rules accept (a random one may fall under a rule's entropy) is gone.
	want := referenceSecrets(in)
	for _, s := range want {
		if strings.Contains(string(out), string(s)) {
			t.Errorf("%q left in a file of real tokens", s)
		}
	}
	if len(want) < 90*len(tokens()) {
		t.Errorf("the rules accept %d of %d tokens", len(want), 100*len(tokens()))
	}
}
