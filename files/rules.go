package files

import (
	"bytes"
	"path/filepath"
	"strings"
	"unicode"
)

// defaultExcludedDirs are the directories left out by name; the package documentation
// lists every default exclusion and the reasons.
var defaultExcludedDirs = setOf(
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
	if vcsDirs[name] || defaultExcludedDirs[name] || strings.HasSuffix(name, ".egg-info") {
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

// vcsDirs are the version-control directories: never entered, even when the pattern names
// them, and never read through a link: .git/config holds remote URLs with tokens, and
// .hg/hgrc an [auth] section.
var vcsDirs = setOf(".git", ".hg", ".svn", ".bzr", "_darcs", ".jj")

// VCSDir returns the first version-control directory (.git, .hg, …) among the elements of
// the slash- or separator-separated path p, if any: such a directory is never gathered from.
func VCSDir(p string) (string, bool) {
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if vcsDirs[seg] {
			return seg, true
		}
	}
	return "", false
}

// secretNames maps exact file names, as normalName makes them (in lower case: Azure's
// accessTokens.json is accesstokens.json), to why they are held back.
var secretNames = map[string]string{
	".env": whyEnv, ".envrc": whyEnv, ".flaskenv": whyEnv,
	".netrc": whyCredentials, "_netrc": whyCredentials, ".npmrc": whyCredentials,
	".pypirc": whyCredentials, ".git-credentials": whyCredentials, ".pgpass": whyCredentials,
	".my.cnf": whyCredentials, ".htpasswd": whyCredentials, "credentials.json": whyCredentials,
	"secrets.json": whyCredentials, "secrets.yml": whyCredentials, "secrets.yaml": whyCredentials,
	"secrets.toml": whyCredentials, ".yarnrc.yml": whyCredentials, ".yarnrc": whyCredentials,
	".terraformrc": whyCredentials, "terraform.rc": whyCredentials, ".vault-token": whyCredentials,
	"kubeconfig": whyCredentials, ".dockercfg": whyCredentials, ".s3cfg": whyCredentials,
	".boto": whyCredentials, ".passwd-s3fs": whyCredentials, ".databrickscfg": whyCredentials,
	"application_default_credentials.json": whyCredentials, "credentials.db": whyCredentials,
	"access_tokens.db": whyCredentials, "accesstokens.json": whyCredentials,
	"msal_token_cache.json": whyCredentials, "msal_token_cache.bin": whyCredentials,
	"credentials.tfrc.json": whyCredentials, "sftp-config.json": whyCredentials,
	"recentservers.xml": whyCredentials, "sitemanager.xml": whyCredentials,
	"filezilla.xml": whyCredentials, "wp-config.php": whyCredentials,
	"credentials-config.json": whyCredentials, "kaggle.json": whyCredentials,
	// Copies kept without the leading dot (dotfiles repositories), pip's configuration
	// (index URLs with credentials), Composer's and podman's auth.json, Maven's
	// settings-security.xml (the master password), a Secret's docker configuration.
	"npmrc": whyCredentials, "netrc": whyCredentials, "pypirc": whyCredentials,
	"git-credentials": whyCredentials, "pgpass": whyCredentials, "pip.conf": whyCredentials,
	"pip.ini": whyCredentials, "auth.json": whyCredentials, "settings-security.xml": whyCredentials,
	".dockerconfigjson": whyCredentials, "config.dockerconfigjson": whyCredentials,
	"terraform.tfvars.json": whyTerraform,
	".bash_history":         whyHistory, ".zsh_history": whyHistory, ".sh_history": whyHistory,
	".history": whyHistory, "fish_history": whyHistory, ".python_history": whyHistory,
	".psql_history": whyHistory, ".mysql_history": whyHistory, ".sqlite_history": whyHistory,
	".node_repl_history": whyHistory, ".rediscli_history": whyHistory, ".irb_history": whyHistory,
	".lesshst": whyHistory, ".mongosh_history": whyHistory,
	".mcp.json": whyClientConf, "claude_desktop_config.json": whyClientConf, ".claude.json": whyClientConf,
}

// secretExamples are the templates of environment files: they hold names, not values.
var secretExamples = setOf(".env.example", ".env.sample", ".env.template", ".env.dist")

// secretSuffixes maps file name endings to why they are held back.
var secretSuffixes = []struct{ suffix, why string }{
	{".pem", whyKeyFile}, {".key", whyKeyFile}, {".p12", whyKeyFile}, {".pfx", whyKeyFile},
	{".jks", whyKeyFile}, {".keystore", whyKeyFile}, {".p8", whyKeyFile}, {".ppk", whyKeyFile},
	{".keytab", whyKeyFile}, {".kdbx", whyKeyFile}, {".kdb", whyKeyFile}, {".keychain", whyKeyFile},
	{".agilekeychain", whyKeyFile}, {".gpg", whyKeyFile}, {".ovpn", whyKeyFile},
	{".tfvars", whyTerraform}, {".tfvars.json", whyTerraform}, {".tfstate", whyTerraform},
	{".tfstate.backup", whyTerraform}, {".env", whyEnv}, {".kubeconfig", whyCredentials},
}

var sshKeyPrefixes = []string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"}

// secretPaths are matched against the last two or three segments of a path, as normalName
// makes them: files whose name alone is common, but not in that directory.
var secretPaths = map[string]string{
	".aws/credentials": whyCredentials, ".docker/config.json": whyCredentials,
	".kube/config": whyCredentials, ".cargo/credentials": whyCredentials,
	".cargo/credentials.toml": whyCredentials, ".gem/credentials": whyCredentials,
	".config/gh/hosts.yml": whyCredentials, ".config/hub": whyCredentials,
	".composer/auth.json": whyCredentials, ".pulumi/credentials.json": whyCredentials,
	".oci/config": whyCredentials, ".ngrok2/ngrok.yml": whyCredentials,
	"ngrok/ngrok.yml": whyCredentials, ".huggingface/token": whyCredentials,
	"huggingface/token": whyCredentials, ".snowsql/config": whyCredentials,
	"doctl/config.yaml": whyCredentials, "hcloud/cli.toml": whyCredentials,
	".circleci/cli.yml": whyCredentials, "gcloud/legacy_credentials": whyCredentials,
	".vscode/mcp.json": whyClientConf, ".cursor/mcp.json": whyClientConf,
	".codex/config.toml": whyClientConf, ".gemini/settings.json": whyClientConf,
	".windsurf/mcp.json": whyClientConf, ".codeium/windsurf/mcp_config.json": whyClientConf,
	".continue/config.json": whyClientConf, ".claude/settings.local.json": whyClientConf,
	"docker/config.json": whyCredentials, "containers/auth.json": whyCredentials,
	".m2/settings.xml": whyCredentials, ".pip/pip.conf": whyCredentials,
}

// secretName says why the file at slash path rel, called name, may hold a credential by its
// name alone, or "". Names are compared as normalName makes them (case and look-alike
// characters do not count), as they are and without the decorations of copies (see
// undecorated): ".ENV", ".env~", "#.env#", ".env copy", ".env (1)", "credentials.json.bak"
// and ".еnv" with a Cyrillic е are all .env.
func secretName(rel, name string) string {
	n := normalName(name)
	u := undecorated(n)
	// A copy of a template (.env.example.bak) is a template.
	if !isEnvTemplate(u) {
		if why := secretNormalName(n); why != "" {
			return why
		}
	}
	if u != n {
		if why := secretNormalName(u); why != "" {
			return why
		}
	}
	// The last two and three segments.
	if i := strings.LastIndexByte(rel, '/'); i > 0 {
		dir := rel[:i]
		j := strings.LastIndexByte(dir, '/')
		parent := normalName(dir[j+1:])
		for _, last := range []string{n, u} {
			if why, ok := secretPaths[parent+"/"+last]; ok {
				return why
			}
			if j > 0 {
				k := strings.LastIndexByte(dir[:j], '/')
				if why, ok := secretPaths[normalName(dir[k+1:j])+"/"+parent+"/"+last]; ok {
					return why
				}
			}
		}
		// gcloud keeps per-account credentials below legacy_credentials/<account>/.
		if strings.Contains(strings.ToLower(rel), "gcloud/legacy_credentials/") {
			return whyCredentials
		}
	}
	return ""
}

// secretNormalName says why a file whose normalised name is name may hold a credential, or "".
func secretNormalName(name string) string {
	if why, ok := secretNames[name]; ok {
		return why
	}
	if secretExamples[name] {
		return ""
	}
	// .env.local, .env-staging, app.env.local, .env2: an environment file under any
	// decoration.
	if strings.HasPrefix(name, ".env") && isDigits(name[len(".env"):]) {
		return whyEnv
	}
	if strings.HasPrefix(name, ".env.") || strings.HasPrefix(name, ".env-") || strings.HasPrefix(name, ".env_") {
		if !isEnvTemplate(name) {
			return whyEnv
		}
	}
	if i := strings.Index(name, ".env."); i > 0 && !isEnvTemplate(name) && !sourceExts[name[strings.LastIndexByte(name, '.')+1:]] {
		return whyEnv // app.env.local, but not config.env.ts
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(name, s.suffix) {
			return s.why
		}
	}
	// terraform.tfstate.1700000000.backup, prod.tfstate.old: state and its backups.
	if strings.Contains(name, ".tfstate") {
		return whyTerraform
	}
	if strings.HasPrefix(name, "client_secret") && strings.HasSuffix(name, ".json") {
		return whyCredentials
	}
	if !strings.HasSuffix(name, ".pub") {
		for _, p := range sshKeyPrefixes {
			if strings.HasPrefix(name, p) {
				return whyKeyFile
			}
		}
	}
	return ""
}

// normalName returns name as the name rules compare it: look-alike characters made ASCII
// (the Cyrillic and Greek letters that look like Latin ones, fullwidth forms, dots and
// hyphens of other scripts), invisible ones dropped (zero-width spaces and joiners, the
// byte-order mark, the soft hyphen), other spaces (no-break, ideographic) made ' ', lower
// case, and white space and dots at the ends trimmed (Windows drops trailing ones).
func normalName(name string) string {
	if plainName(name) {
		return name // most names, without building a copy
	}
	return normalizeName(name)
}

// normalizeName is normalName without the shortcut for plain names.
func normalizeName(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		switch {
		case r >= 0xff01 && r <= 0xff5e: // fullwidth ASCII
			r -= 0xff01 - 0x21
		case invisible(r):
			continue
		case unicode.IsSpace(r):
			r = ' '
		default:
			if a, ok := lookAlikes[r]; ok {
				r = a
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return strings.TrimRight(strings.TrimLeft(b.String(), " "), " .")
}

// plainName reports a name that normalName returns as it is: printable ASCII without
// upper case or spaces, not ending in a dot.
func plainName(name string) bool {
	if name == "" || name[len(name)-1] == '.' {
		return false
	}
	for i := range len(name) {
		if c := name[i]; c <= ' ' || c > '~' || c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}

// invisible reports a character that shows nothing: zero-width spaces, joiners and
// non-joiners, word joiner and invisible operators, byte-order mark, soft hyphen, Mongolian
// vowel separator.
func invisible(r rune) bool {
	return r >= 0x200b && r <= 0x200d || r >= 0x2060 && r <= 0x2064 || r == 0xfeff || r == 0xad || r == 0x180e
}

// lookAlikes maps characters that look like ASCII ones in a file name to them: the
// Cyrillic and Greek homoglyphs of Latin letters, dots (one dot leader, small and
// ideographic full stops) and hyphens.
var lookAlikes = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p',
	'с': 'c', 'т': 't', 'у': 'y', 'х': 'x', 'ѕ': 's', 'і': 'i', 'ї': 'i', 'ј': 'j', 'ԁ': 'd',
	'һ': 'h', 'ӏ': 'l', 'ԛ': 'q', 'ԝ': 'w', 'ɡ': 'g',
	'А': 'a', 'В': 'b', 'Е': 'e', 'К': 'k', 'М': 'm', 'Н': 'h', 'О': 'o', 'Р': 'p', 'С': 'c',
	'Т': 't', 'У': 'y', 'Х': 'x', 'Ѕ': 's', 'І': 'i', 'Ј': 'j',
	// Greek
	'α': 'a', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u',
	'χ': 'x', 'Α': 'a', 'Β': 'b', 'Ε': 'e', 'Ζ': 'z', 'Η': 'h', 'Ι': 'i', 'Κ': 'k', 'Μ': 'm',
	'Ν': 'n', 'Ο': 'o', 'Ρ': 'p', 'Τ': 't', 'Υ': 'y', 'Χ': 'x',
	// Dots and hyphens
	'\u2024': '.', '\ufe52': '.', '\u3002': '.', '\uff61': '.', '\u2027': '.',
	'\u2010': '-', '\u2011': '-', '\u2012': '-', '\u2013': '-', '\u2212': '-', '\ufe63': '-',
}

// backupSuffixes end the names of copies: editors' backups and swap files, and people's.
var backupSuffixes = []string{".bak", ".backup", ".bkp", ".old", ".orig", ".save", ".sav",
	".swp", ".swo", ".tmp", ".temp", ".copy", ".prev", ".previous", ".1", "~", "-copy", "_copy",
	"-backup", "_backup", "-old", "_old"}

// undecorated returns the lower-case name without what editors, systems and people add to
// a copy, repeatedly: a trailing "~" (vim, emacs), "#…#" (emacs auto-save), a leading ".#"
// (emacs lock), the suffixes of backupSuffixes, a numbered ".N", " copy", " copy N",
// " - copy" (macOS, Windows), " (N)" (browsers, Windows), a numbered " N" (macOS Finder's
// copy of a file without an extension: ".env 2"), "copy of ", and the extra leading dot of
// vim's swap file for a dotfile (..env.swp).
func undecorated(name string) string {
	for {
		before := name
		name = strings.TrimSpace(name)
		if len(name) > 2 && name[0] == '#' && name[len(name)-1] == '#' {
			name = name[1 : len(name)-1]
		}
		name = strings.TrimPrefix(name, ".#")
		name = strings.TrimPrefix(name, "copy of ")
		for _, s := range backupSuffixes {
			if len(name) > len(s) && strings.HasSuffix(name, s) {
				name = name[:len(name)-len(s)]
			}
		}
		// " (1)", " copy", " copy 2", " - copy", " - copy (2)", ".20240101", ".1700000000".
		if i := strings.LastIndexByte(name, '('); i > 0 && strings.HasSuffix(name, ")") && isDigits(name[i+1:len(name)-1]) {
			name = strings.TrimRight(name[:i], " ")
		}
		if i := strings.LastIndex(name, " copy"); i > 0 && (i+5 == len(name) || name[i+5] == ' ' && isDigits(name[i+6:])) {
			name = strings.TrimSuffix(strings.TrimRight(name[:i], " "), " -")
		}
		if i := strings.LastIndexByte(name, '.'); i > 0 && isDigits(name[i+1:]) {
			name = name[:i]
		}
		if i := strings.LastIndexByte(name, ' '); i > 0 && isDigits(name[i+1:]) {
			name = strings.TrimRight(name[:i], " ")
		}
		if strings.HasPrefix(name, "..") {
			name = name[1:]
		}
		if name == before {
			return name
		}
	}
}

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// sourceExts are the extensions of source files, which a name like "config.env.ts" ends in.
var sourceExts = setOf("ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts", "py", "go", "rb", "rs",
	"java", "kt", "swift", "php", "cs", "dart", "vue", "svelte", "md")

// isEnvTemplate reports an environment file that is a template (.env.example,
// app.env.sample): it holds variable names, not their values.
func isEnvTemplate(name string) bool {
	for _, t := range []string{".example", ".sample", ".template", ".dist", ".tmpl", ".tpl"} {
		if strings.HasSuffix(name, t) {
			return true
		}
	}
	return false
}

// systemSecrets are the system's password and host-key files: never read, whatever the
// pattern, even by a server running as root.
var systemSecrets = setOf("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/security/opasswd", "/etc/master.passwd", "/etc/spwd.db", "/etc/sudoers")

// systemSecret says why the file at the absolute path abs is a system credential file, or "".
func systemSecret(abs string) string {
	if !strings.HasPrefix(abs, "/etc/") {
		return ""
	}
	if systemSecrets[abs] || strings.HasPrefix(abs, "/etc/shadow") || strings.HasPrefix(abs, "/etc/gshadow") {
		return whySystem
	}
	if strings.HasPrefix(abs, "/etc/ssh/ssh_host_") && !strings.HasSuffix(abs, ".pub") {
		return whySystem
	}
	return ""
}

// isBinary reports a NUL byte in sniff, git's test for binary content.
func isBinary(sniff []byte) bool { return bytes.IndexByte(sniff, 0) >= 0 }

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
