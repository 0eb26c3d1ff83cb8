package files

import (
	"bytes"
	"strings"
)

// defaultExcludedDirs are the directories left out by name; the package documentation
// lists every default exclusion and the reasons.
var defaultExcludedDirs = setOf(
	".git", ".hg", ".svn", ".bzr", "_darcs", ".jj",
	"node_modules", "bower_components", "jspm_packages", ".yarn", ".pnpm-store", ".next", ".nuxt",
	".svelte-kit", ".angular", ".turbo", ".parcel-cache", ".docusaurus", ".expo", ".vercel",
	".netlify", ".serverless", ".nyc_output",
	"__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
	".hypothesis", ".ipynb_checkpoints", ".eggs", "htmlcov",
	".gradle", ".terraform", ".terragrunt-cache", ".dart_tool", ".pub-cache", ".stack-work",
	"elm-stuff", ".zig-cache", "zig-cache", "zig-out", ".build", "DerivedData", "Pods", "Carthage",
	".bundle", ".direnv", ".devenv", ".sass-cache", ".cache", ".idea",
	"vendor",
)

// outputBeside maps a directory name that is build output only next to certain files to
// those files.
var outputBeside = map[string][]string{
	"target":   {"Cargo.toml", "pom.xml", "build.sbt"},
	"build":    {"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts", "setup.py", "pyproject.toml"},
	"dist":     {"package.json", "setup.py", "pyproject.toml"},
	"coverage": {"package.json"},
	"_build":   {"mix.exs"},
	"deps":     {"mix.exs"},
}

// markerNames are the entry names a directory listing is scanned for: ignore files, Python
// environment markers, nested repositories and the build files of outputBeside.
var markerNames = func() map[string]bool {
	m := setOf(".gitignore", ".ignore", "pyvenv.cfg", "conda-meta", ".git")
	for _, files := range outputBeside {
		for _, f := range files {
			m[f] = true
		}
	}
	return m
}()

// isDefaultExcludedDir reports whether a directory called name, in a directory whose listing
// contains the marker names in siblings, is tool output or fetched code.
func isDefaultExcludedDir(name string, siblings map[string]bool) bool {
	if defaultExcludedDirs[name] || strings.HasSuffix(name, ".egg-info") {
		return true
	}
	for _, f := range outputBeside[name] {
		if siblings[f] {
			return true
		}
	}
	return false
}

// Lock files (reason LockFile): generated pins and checksums, long and of no use to a model.
var lockFiles = setOf(
	"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
	"bun.lock", "deno.lock", "go.sum", "go.work.sum", "Gopkg.lock", "glide.lock", "Cargo.lock",
	"poetry.lock", "Pipfile.lock", "uv.lock", "pdm.lock", "pixi.lock", "conda-lock.yml",
	"composer.lock", "Gemfile.lock", "mix.lock", "pubspec.lock", "flake.lock", "Package.resolved",
	"packages.lock.json", "paket.lock", "gradle.lockfile", "Podfile.lock", "Cartfile.resolved",
	"MODULE.bazel.lock", "shard.lock", "Manifest.toml", "renv.lock",
)

// isLockFile reports whether a file called name is a dependency lock file. Any name ending
// in ".lockfile" (Gradle's per-configuration locks) is one too.
func isLockFile(name string) bool {
	return lockFiles[name] || strings.HasSuffix(name, ".lockfile")
}

// secretNames, secretSuffixes, sshKeyPrefixes, secretPaths and hasPrivateKey recognise
// secrets; the package documentation lists them.
var secretNames = setOf(
	".env", ".netrc", "_netrc", ".npmrc", ".pypirc", ".git-credentials", ".pgpass", ".my.cnf",
	".htpasswd", "credentials.json", "secrets.json", "secrets.yml", "secrets.yaml", "secrets.toml",
)

var secretExamples = setOf(".env.example", ".env.sample", ".env.template", ".env.dist")

var secretSuffixes = []string{
	".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".p8", ".ppk", ".keytab", ".kdbx",
	".tfvars", ".tfstate", ".tfstate.backup", ".env",
}

var sshKeyPrefixes = []string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"}

// secretPaths are matched against the last two segments of a path.
var secretPaths = setOf(".aws/credentials", ".docker/config.json", ".kube/config")

// isSecretName reports whether the file at slash path rel, called name, may hold a
// credential by its name alone.
func isSecretName(rel, name string) bool {
	if secretNames[name] {
		return true
	}
	if strings.HasPrefix(name, ".env.") {
		return !secretExamples[name]
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	if strings.HasPrefix(name, "client_secret") && strings.HasSuffix(name, ".json") {
		return true
	}
	if !strings.HasSuffix(name, ".pub") {
		for _, p := range sshKeyPrefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
	}
	if i := strings.LastIndexByte(rel, '/'); i > 0 {
		j := strings.LastIndexByte(rel[:i], '/')
		if secretPaths[rel[j+1:]] {
			return true
		}
	}
	return false
}

// isBinary reports a NUL byte in sniff, git's test for binary content.
func isBinary(sniff []byte) bool { return bytes.IndexByte(sniff, 0) >= 0 }

var (
	pemBegin      = []byte("-----BEGIN ")
	pemPrivateKey = []byte("PRIVATE KEY")
	pemDashes     = []byte("-----")
)

// hasPrivateKey reports a PEM private key block in sniff: a "-----BEGIN <kind>PRIVATE
// KEY-----" line (RSA, EC, OPENSSH, ENCRYPTED, PGP … BLOCK) followed, within a few hundred
// bytes, by a run of base64 key data. Requiring the data keeps source code that merely names
// the marker (a PEM parser, a scanner like this one) from being mistaken for a key; newlines
// may be real or escaped ("\n" inside a JSON string, as in service-account files).
func hasPrivateKey(sniff []byte) bool {
	for {
		i := bytes.Index(sniff, pemBegin)
		if i < 0 {
			return false
		}
		sniff = sniff[i+len(pemBegin):]
		end := bytes.Index(sniff, pemDashes)
		if end < 0 {
			return false
		}
		label := sniff[:end]
		if end <= 64 && bytes.Contains(label, pemPrivateKey) && bytes.IndexByte(label, '\n') < 0 {
			if hasKeyData(sniff[end+len(pemDashes):]) {
				return true
			}
		}
	}
}

// hasKeyData reports a line of at least 40 base64 characters within the first 400 bytes of
// b. The run must start a line (after optional indentation) and may continue over line ends,
// real or escaped, so an identifier in code that follows the marker is not key data.
func hasKeyData(b []byte) bool {
	if len(b) > 400 {
		b = b[:400]
	}
	run, lineStart := 0, true
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/', c == '=':
			if lineStart {
				run++
				if run >= 40 {
					return true
				}
			}
		case c == '\n' || c == '\r':
			lineStart = true
		case c == '\\' && i+1 < len(b) && (b[i+1] == 'n' || b[i+1] == 'r'):
			i++
			lineStart = true
		case (c == ' ' || c == '\t') && run == 0:
		default:
			run, lineStart = 0, false
		}
	}
	return false
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
