package files

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/consultmcp/consult/internal/leaf/secrets"
)

func TestIsDefaultExcludedDir(t *testing.T) {
	for _, tc := range []struct {
		name     string
		siblings []string
		want     bool
	}{
		{".git", nil, true},
		{"node_modules", nil, true},
		{"vendor", nil, true},
		{"foo.egg-info", nil, true},
		{"build", nil, false}, // go/build
		{"build", []string{"build.gradle.kts"}, true},
		{"build", []string{"CMakeLists.txt"}, false},
		{"dist", nil, false}, // cmd/dist
		{"dist", []string{"package.json"}, true},
		{"target", []string{"Cargo.toml"}, true},
		{"target", []string{"go.mod"}, false},
		{"coverage", nil, false},
		{"coverage", []string{"package.json"}, true},
		{"deps", []string{"mix.exs"}, true},
		{"third_party", nil, false},
		{".vscode", nil, false},
		{"src", []string{"package.json"}, false},
	} {
		sib := map[string]bool{}
		for _, s := range tc.siblings {
			sib[s] = true
		}
		if got := isDefaultExcludedDir(tc.name, sib); got != tc.want {
			t.Errorf("isDefaultExcludedDir(%q beside %q) = %v, want %v", tc.name, tc.siblings, got, tc.want)
		}
	}
}

func TestIsSecretName(t *testing.T) {
	for path, want := range map[string]bool{
		".env": true, "app/.env.production": true, ".env.example": false, ".env.sample": false,
		".env.template": false, ".env.dist": false, "docker/prod.env": true, "environment.go": false,
		"tls/server.pem": true, "server.key": true, "keyboard.go": false, "id_rsa": true,
		"id_ed25519": true, "id_rsa.pub": false, "id_ecdsa_sk": true, ".netrc": true,
		".npmrc": true, "credentials.json": true, "home/.aws/credentials": true,
		"credentials": false, "aws/credentials": false, ".docker/config.json": true,
		"config.json": false, "prod.tfvars": true, "terraform.tfstate": true,
		"terraform.tfstate.backup": true, "main.tf": false,
		"client_secret_42.apps.googleusercontent.com.json": true, "secrets.yaml": true,
		"secrets.go": false,
		// Credential files of the major tools (issue 10's list and gitrob/shhgit signatures).
		"kubeconfig": true, "deploy/prod.kubeconfig": true, "terraform.tfvars.json": true,
		".envrc": true, ".env-staging": true, "app.env.local": true, "config.env.ts": false,
		"app.env.example": false, ".mcp.json": true, ".vscode/mcp.json": true,
		".vscode/settings.json": false, ".codex/config.toml": true, "config.toml": false,
		"home/.config/gh/hosts.yml": true, "hosts.yml": false, ".cargo/credentials.toml": true,
		".cargo/config.toml": false, ".yarnrc.yml": true, ".terraformrc": true,
		".vault-token": true, ".bash_history": true, ".zsh_history": true,
		".config/gcloud/application_default_credentials.json":       true,
		".config/gcloud/legacy_credentials/me@example.com/adc.json": true,
		"claude_desktop_config.json":                                true, ".cursor/mcp.json": true, "mcp.json": false,
		"vpn/office.ovpn": true, "wp-config.php": true, "wp-config-sample.php": false,
		// Issue 20: real names, copies, other case and look-alike names.
		"dotfiles/npmrc": true, ".npmrc.bak": true, ".pypirc.bak": true, "pip.conf": true,
		".config/pip/pip.conf": true, "pip.ini": true, ".netrc.bak": true,
		".config/containers/auth.json": true, "run/containers/auth.json": true,
		"home/.docker/config.json": true, "deploy/docker/config.json": true,
		"terraform.tfstate.1700000000.backup": true, "prod.tfstate.old": true,
		".git-credentials.bak": true, "git-credentials": true, ".m2/settings.xml": true,
		"settings-security.xml": true, "auth.json": true, ".dockerconfigjson": true,
		".env~": true, "#.env#": true, ".#.env": true, ".env copy": true, ".env copy 2": true,
		".env (1)": true, ".env - Copy": true, ".env - Copy (2)": true, "Copy of .env": true,
		"..env.swp": true, ".env.swp": true, ".env.orig": true, "credentials.json.bak": true,
		"credentials (1).json": false, "kubeconfig~": true, "kubeconfig.old": true,
		"id_rsa~": true, "server.pem.bak": true, ".ENV": true, ".NPMRC": true,
		"CREDENTIALS.JSON": true, "Secrets.Yaml": true, "ID_RSA": true, "Server.PEM": true,
		"HOME/.AWS/Credentials": true, ".VSCode/MCP.json": true,
		".\u0435nv": true, ".\u0435nv.local": true, ".e\u200bnv": true, ".env\u00a0": true,
		".env\u202f": true, "\uff0eenv": true, ".env ": true, ".env.": true, ".env\u2060": true,
		// Issue 28: macOS Finder's copies, numbered environment files.
		".env 2": true, ".env 13": true, ".ENV 2": true, ".env2": true, ".env3": true,
		".env copy 2 3": true, "id_rsa 2": true, ".npmrc 2": true, "kubeconfig 2": true,
		"\uff0e\uff45\uff4e\uff56": true, ".npmr\u0441": true, "kub\u0435config": true,
		"id_rs\u0430": true, "\u0441redentials.json": true, ".env\n": true,
		// Not credentials, decorated or not.
		"main.go~": false, "README.md.bak": false, "notes (1).txt": false,
		"settings.xml": false, "gradle.properties": false, "env.go.orig": false,
		".environment": false, "copy.go": false, "main copy.go": false, "v1.2.3": false,
		".env.example.bak": false, ".env.sample~": false, "docker/compose.yaml": false,
		"Chapter 2": false, "env 2": false, ".envoy 2": false, ".env2.go": false,
	} {
		name := path[strings.LastIndexByte(path, '/')+1:]
		if got := secretName(path, name) != ""; got != want {
			t.Errorf("secretName(%q) != \"\" = %v, want %v", path, got, want)
		}
	}
}

func TestIsLockFile(t *testing.T) {
	for name, want := range map[string]bool{
		"go.sum": true, "package-lock.json": true, "yarn.lock": true, "Cargo.lock": true,
		"uv.lock": true, "buildscript-gradle.lockfile": true, "go.mod": false,
		"package.json": false, "lock.go": false, "Cargo.toml": false,
	} {
		if got := isLockFile(name); got != want {
			t.Errorf("isLockFile(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestPrivateKeyRule: the gatherer's content rule (package secrets) on the shapes key files
// take; package secrets has the code shapes.
func TestPrivateKeyRule(t *testing.T) {
	// Key data is random: three lines of base64 as a key file has them.
	var body string
	for range 3 {
		line := make([]byte, 48)
		rand.Read(line)
		body += base64.StdEncoding.EncodeToString(line) + "\n"
	}
	for _, tc := range []struct {
		name, text string
		want       bool
	}{
		{"pkcs8", "-----BEGIN PRIVATE KEY-----\n" + body, true},
		{"rsa crlf", "x\r\n-----BEGIN RSA PRIVATE KEY-----\r\n" + body, true},
		{"openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + body, true},
		{"pgp", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + body, true},
		{"encrypted with headers", "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0123456789ABCDEF\n\n" + body, true},
		{"escaped newlines", `{"private_key": "-----BEGIN PRIVATE KEY-----\n` + strings.TrimSpace(strings.SplitN(body, "\n", 2)[0]) + `\n"}`, true},
		{"indented", "var k = `\n\t-----BEGIN EC PRIVATE KEY-----\n\t" + body, true},
		{"public key", "-----BEGIN PUBLIC KEY-----\n" + body, false},
		{"certificate", "-----BEGIN CERTIFICATE-----\n" + body, false},
		{"marker in code", `const h = "-----BEGIN RSA PRIVATE KEY-----"` + "\nfunc parseAVeryLongFunctionNameThatIsNotBase64AtAll() {}", false},
		{"marker then prose", "-----BEGIN PRIVATE KEY----- is the first line of a key file, and then comes the data", false},
		{"no closing dashes", "-----BEGIN PRIVATE KEY\n" + body, false},
		{"short data", "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----", false},
	} {
		if got := secrets.PrivateKey([]byte(tc.text)); got != tc.want {
			t.Errorf("%s: PrivateKey = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestIgnorePatterns(t *testing.T) {
	// Unit checks of single patterns; TestMatchesGit compares whole trees with git.
	for _, tc := range []struct {
		line, domain, path string
		isDir              bool
		want               matchResult
	}{
		{"*.log", "", "a/b.log", false, exclude},
		{"!*.log", "", "b.log", false, include},
		{"/build", "", "build", true, exclude},
		{"/build", "", "src/build", true, noMatch},
		{"logs/", "", "logs", false, noMatch},
		{"logs/", "", "a/logs", true, exclude},
		{"foo/**", "", "foo", true, noMatch},
		{"foo/**", "", "foo/x/y", false, exclude},
		{"a/**/b/c", "", "a/b/x/b/c", false, exclude},
		{"**/tmp", "", "x/tmp", true, exclude},
		{"x/y", "sub", "sub/x/y", false, exclude},
		{"x/y", "sub", "x/y", false, noMatch},
		{"x/y", "sub", "subx/y", false, noMatch},
		{"*.md", "sub", "sub/deep/a.md", false, exclude},
		{"{a,b}.txt", "", "a.txt", false, noMatch},
		{"{a,b}.txt", "", "{a,b}.txt", false, exclude},
		{`\#x`, "", "#x", false, exclude},
		{`\!x`, "", "!x", false, exclude},
		{"[ab].c", "", "b.c", false, exclude},
		{"?.c", "", "ab.c", false, noMatch},
		{`\{x}`, "", "{x}", false, exclude},
		{"a/{b}/c", "", "a/{b}/c", false, exclude},
		{"/a/**", "", "a", true, noMatch},
		{"/a/**/", "", "a/b", false, noMatch},
		{"/a/**/", "", "a/b", true, exclude},
	} {
		ps := parseIgnore([]byte(tc.line), tc.domain, -1)
		if len(ps) != 1 {
			t.Fatalf("%q: %d patterns", tc.line, len(ps))
		}
		name := tc.path[strings.LastIndexByte(tc.path, '/')+1:]
		if got := ps[0].match(tc.path, name, tc.isDir); got != tc.want {
			t.Errorf("%q in %q on %q (dir %v) = %v, want %v", tc.line, tc.domain, tc.path, tc.isDir, got, tc.want)
		}
	}
}

func TestParseIgnoreLines(t *testing.T) {
	data := "# comment\n\n   \nspace\\ \ntrail   \r\n!\n/\nok\n"
	ps := parseIgnore([]byte(data), "", -1)
	var got []string
	for _, p := range ps {
		got = append(got, p.glob)
	}
	if want := []string{"space ", "trail", "ok"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("patterns %q, want %q", got, want)
	}
}

// TestSecretNamesNormal: the names and paths of the tables are written as normalName makes
// the names they are compared with (in lower case), or they would never match.
func TestSecretNamesNormal(t *testing.T) {
	for _, m := range []map[string]string{secretNames, secretPaths} {
		for name := range m {
			if got := normalizeName(name); got != name {
				t.Errorf("table name %q, normalName gives %q", name, got)
			}
		}
	}
}

// TestPlainNameUnchanged: every name plainName lets normalName return as it is, normalizeName
// returns unchanged too, over names of every ASCII byte alone, first, last and inside; and
// names with upper case, spaces or a trailing dot are not plain.
func TestPlainNameUnchanged(t *testing.T) {
	for c := range 128 {
		b := string(rune(c))
		for _, name := range []string{b, b + "x", "x" + b, "x" + b + "y", b + b} {
			if plainName(name) && normalizeName(name) != name {
				t.Errorf("plainName(%q) but normalizeName gives %q", name, normalizeName(name))
			}
		}
	}
	for _, name := range []string{"ID_RSA", ".env.", "a b", " x", "x\t", "ｉd_rsa", "", "credentials.json\u200b"} {
		if plainName(name) {
			t.Errorf("plainName(%q) = true, want false", name)
		}
	}
}

// TestHeldWhyEveryReason: every reason secrets.Scan gives for holding a file back has its
// own words in the report.
func TestHeldWhyEveryReason(t *testing.T) {
	for h := secrets.HeldPrivateKey; h <= secrets.HeldUnchecked; h++ {
		if heldWhy[h] == "" {
			t.Errorf("secrets.Held %d has no words in heldWhy", h)
		}
	}
}
