// Package files gathers the files a consultation sends to a model: a walk of a root
// directory that matches a doublestar pattern, honours ignore files, leaves out what should
// not be sent (dependencies, build output, lock files, binaries, secrets, symbolic links
// leading out) and applies size caps, saying what it left out and why. Layout turns the
// result into a prompt.
//
// # The walk
//
//   - It starts at the literal directory prefix of the pattern (pattern "src/**/*.go" walks
//     src/ only) and enters a directory only if a file below it could match the pattern.
//   - It prunes ignored directories, default-excluded directories and directories whose
//     whole subtree the exclude pattern matches (exclude "tests/**"), counting each once as
//     "dir/" when it could have held a match.
//   - It reads regular files, and symbolic links to regular files inside the root (under
//     the link's path). It never follows a symbolic link to a directory, like git, ripgrep
//     and fd, so links cannot make it loop, and it never reads outside the root: a link
//     leading out is skipped as Outside. Fifos, sockets and devices are never opened.
//   - A skipped file is counted only if it matches the pattern.
//   - Files are kept in path order until the next one would pass the total-size or
//     file-count cap; every later file is OverTotal. The result depends on the tree alone,
//     never on scheduling.
//
// One goroutine lists the directories, in path order; a small pool of workers reads and
// classifies files while the walk goes on; the caller's goroutine takes their results in
// path order. At most 32 files are in flight beyond the kept ones, so memory stays within
// the caps plus 32 × the per-file cap.
//
// # Ignore files
//
// Ignore files are read as git and ripgrep read them:
//
//   - .gitignore in every directory, with git's syntax and precedence: a deeper file wins
//     over a shallower one, the last matching line of a file wins, "!" re-includes, a
//     leading or middle "/" anchors a pattern to its directory, a trailing "/" matches
//     directories only, "**" spans directories. A file inside an excluded directory cannot
//     be re-included: ignored directories are not walked at all.
//   - .ignore files (ripgrep's convention), same syntax, read after the .gitignore of the
//     same directory so that they win over it.
//   - info/exclude of the repository, with the lowest precedence. A .git file (worktree,
//     submodule) is followed to its git directory; a worktree uses its main repository's.
//
// When the root is inside a git work tree (the nearest ancestor holding a .git directory or
// file), the .gitignore and .ignore files of the directories from the top of the work tree
// down to the root apply too, matched with paths relative to the top, as git applies them.
// If the root itself lies in an ignored directory, those outer rules are dropped: the caller
// asked for that directory by name. Outside any repository the ignore files are honoured all
// the same (like ripgrep --no-require-git): a .gitignore says what its author does not
// consider source. Global excludes (core.excludesFile) are not read. A repository nested in
// the tree brings its own info/exclude.
//
// Patterns are matched with git's semantics on top of doublestar; git's behaviour is the
// reference (TestMatchesGit compares the two on a tree of tricky cases). go-git's
// plumbing/format/gitignore was tried first and rejected: its patterns also match every
// prefix of a path, so the "*", "!*/", "!*.go" idiom keeps a/b.txt and "*.txt" then "!docs/"
// keeps docs/a.txt, where git ignores both; its "**" does not backtrack ("a/**/b/c" misses
// a/b/x/b/c); and "foo/**" matches foo itself.
//
// # Default exclusions
//
// The rule behind every list: leave out what a tool generated, fetched or keeps for itself,
// and what may hold a credential; keep everything a person wrote, even when its directory
// has a name that is sometimes used for output.
//
// Directories left out by name (DefaultExcluded), anywhere in the tree:
//
//	version control  .git .hg .svn .bzr _darcs .jj
//	JavaScript       node_modules bower_components jspm_packages .yarn .pnpm-store .next
//	                 .nuxt .svelte-kit .angular .turbo .parcel-cache .docusaurus .expo
//	                 .vercel .netlify .serverless .nyc_output
//	Python           __pycache__ .venv venv .tox .nox .mypy_cache .pytest_cache
//	                 .ruff_cache .hypothesis .ipynb_checkpoints .eggs *.egg-info htmlcov
//	other tools      .gradle .terraform .terragrunt-cache .dart_tool .pub-cache .stack-work
//	                 elm-stuff .zig-cache zig-cache zig-out .build DerivedData Pods Carthage
//	                 .bundle .direnv .devenv .sass-cache .cache .idea
//	vendored code    vendor (written by go mod vendor, Composer, Bundler)
//
// Directories left out only beside the build file of the tool that writes them, because
// the bare names also name source directories (Go has go/build and cmd/dist; coverage.py
// keeps its code in coverage/):
//
//	target         beside Cargo.toml, pom.xml or build.sbt
//	build          beside build.gradle(.kts), settings.gradle(.kts), setup.py, pyproject.toml
//	dist           beside package.json, setup.py or pyproject.toml
//	coverage       beside package.json
//	_build, deps   beside mix.exs
//
// Any directory holding a pyvenv.cfg file or a conda-meta directory is a Python environment,
// whatever its name ("env", ".env3"), and is left out too.
//
// Kept on purpose: third_party (unlike vendor/ no tool writes it; projects patch and build
// the code in it, and it is often what a question is about), .vscode (small, checked-in
// project settings such as launch and task definitions), .github, out, bin, lib.
//
// A directory the pattern names literally is entered anyway, unless an ignore file
// excludes it: the literal base ("vendor/x/**/*.go" enters vendor/x) and any literal
// segment of any brace alternative ("**/node_modules/**/*.js" enters every node_modules).
// A file named .git (worktree or submodule marker) is DefaultExcluded too.
//
// Lock files (LockFile): package-lock.json npm-shrinkwrap.json yarn.lock pnpm-lock.yaml
// bun.lockb bun.lock deno.lock go.sum go.work.sum Gopkg.lock glide.lock Cargo.lock
// poetry.lock Pipfile.lock uv.lock pdm.lock pixi.lock conda-lock.yml composer.lock
// Gemfile.lock mix.lock pubspec.lock flake.lock Package.resolved packages.lock.json
// paket.lock gradle.lockfile *.lockfile Podfile.lock Cartfile.resolved MODULE.bazel.lock
// shard.lock Manifest.toml renv.lock: generated pins and checksums, long and of no use to a
// model.
//
// Binaries (Binary): a NUL byte in the first SniffBytes bytes, git's test.
//
// Secrets (Secret). Whatever is gathered is sent to a model provider, so anything that may
// hold a credential stays out, even at the cost of an occasional harmless file, and is listed
// in Gathered.Withheld with the reason. The lists follow the credential files of the major
// tools and the path signatures of gitleaks (pkcs12-file) and gitrob/shhgit. Names are
// compared in lower case after look-alike characters are made ASCII (Cyrillic and Greek
// homoglyphs, fullwidth forms, other dots and hyphens), invisible ones dropped (zero-width
// spaces, the byte-order mark), other spaces made plain and spaces and dots at the ends
// trimmed; and both as they are and without the decorations of copies: a trailing ~,
// #name#, .#name, .bak .backup .bkp .old .orig .save .sav .swp .swo .tmp .temp .copy
// .prev .previous and numbered .N, -copy _copy -backup _backup -old _old, " copy",
// " copy N", " - Copy", " (N)", a numbered " N" (macOS Finder), "Copy of ". So .ENV, .env~,
// #.env#, ".env copy", ".env (1)", ".env 2", credentials.json.bak and .еnv with a Cyrillic е
// are all .env; .env.example.bak is a template.
//
//	environment  .env, .envrc, .flaskenv, .env.* .env-* .env_* .envN, *.env and name.env.suffix
//	             (app.env.local), except templates (.example .sample .template .dist .tmpl
//	             .tpl) and source files (config.env.ts)
//	credentials  .netrc _netrc .npmrc .yarnrc .yarnrc.yml .pypirc .git-credentials .pgpass
//	             and netrc npmrc pypirc git-credentials pgpass without the dot; pip.conf
//	             pip.ini auth.json (Composer, podman) settings-security.xml .dockerconfigjson
//	             .my.cnf .htpasswd credentials.json client_secret*.json
//	             secrets.{json,yml,yaml,toml} kubeconfig *.kubeconfig .terraformrc
//	             terraform.rc .vault-token .dockercfg .s3cfg .boto .passwd-s3fs .databrickscfg
//	             application_default_credentials.json credentials.db access_tokens.db
//	             accessTokens.json msal_token_cache.{json,bin} credentials.tfrc.json
//	             sftp-config.json recentservers.xml sitemanager.xml filezilla.xml
//	             wp-config.php credentials-config.json kaggle.json
//	key stores   .pem .key .p12 .pfx .jks .keystore .p8 .ppk .keytab .kdbx .kdb .keychain
//	             .agilekeychain .gpg .ovpn; id_rsa id_dsa id_ecdsa id_ed25519 and names
//	             starting so (id_ecdsa_sk, id_rsa.bak) except *.pub
//	Terraform    .tfvars .tfvars.json .tfstate and any name holding .tfstate
//	             (terraform.tfstate.1700000000.backup)
//	histories    .bash_history .zsh_history .sh_history .history fish_history
//	             .python_history .psql_history .mysql_history .sqlite_history
//	             .node_repl_history .rediscli_history .irb_history .lesshst .mongosh_history
//	clients      .mcp.json claude_desktop_config.json .claude.json, and by path
//	             .vscode/mcp.json .cursor/mcp.json .codex/config.toml .gemini/settings.json
//	             .windsurf/mcp.json .codeium/windsurf/mcp_config.json .continue/config.json
//	             .claude/settings.local.json: MCP client configurations hold API keys
//	paths        .aws/credentials .docker/config.json docker/config.json containers/auth.json
//	             .kube/config .cargo/credentials(.toml) .gem/credentials .config/gh/hosts.yml
//	             .config/hub .composer/auth.json .pulumi/credentials.json .oci/config
//	             ngrok/ngrok.yml huggingface/token .snowsql/config doctl/config.yaml
//	             hcloud/cli.toml .circleci/cli.yml .m2/settings.xml .pip/pip.conf
//	             gcloud/legacy_credentials/…
//	system       /etc/shadow, /etc/gshadow and their backups, /etc/security/opasswd,
//	             /etc/master.passwd, /etc/spwd.db, /etc/sudoers, /etc/ssh/ssh_host_*
//	             except *.pub: held back by path, never opened, even by a server run as root
//	contents     anywhere in any file (package secrets): a PEM private key block, also when
//	             written as code ("holds a private key"); one encoded in base64, as a
//	             kubeconfig's client-key-data or a Kubernetes Secret's tls.key, also wrapped
//	             and misaligned, or a key's bare DER body in base64 ("holds a private key
//	             in base64"); a PuTTY private key ("holds a PuTTY private key");
//	             a private JSON Web Key ("holds a private JSON Web Key"); shadow or htpasswd
//	             password hashes ("holds shadow or htpasswd password hashes"); more
//	             candidates than the scan checks, a file built to make it run long ("more
//	             possible secrets than the scan checks")
//
// A symbolic link is judged by its own name and by where it leads: "notes.txt" linked to
// ".env" is held back as "link to .env: environment file". Version-control directories
// (.git .hg .svn .bzr _darcs .jj) are never entered, even when the pattern names them, never
// read through a link, and a root inside one is refused (ErrVCSDir): .git/config holds
// remote URLs with tokens.
//
// High-confidence secrets inside otherwise useful files (cloud, GitHub, model-provider,
// package-registry, payment and chat tokens, also in base64; AWS secret keys and passwords
// after their names, in connection strings and in URLs' queries; the credentials of URLs,
// Authorization headers and curl commands; docker's registry auths) are replaced by
// "[REDACTED <kind>]" in File.Content, and File.Redacted names them. The rules are listed
// in package secrets.
//
// Ignore files (.gitignore, .ignore, info/exclude) come from the tree being gathered, which
// may be anyone's clone: each is opened without blocking and applied only when it is a
// regular file of at most 1 MiB (a symbolic link is not followed, as git does not); one that
// is not is reported as IgnoreFileUnused. Over 100,000 patterns in all, Gather stops with
// ErrIgnoreFiles rather than send what they may exclude. The walk checks the deadline at
// every entry, and Gather returns at the deadline whatever the readers are doing.
//
// Other skips: TooLarge for a file over the per-file cap (never truncated; the size from
// stat is not trusted, at most cap+1 bytes are read, so /proc files work); Unreadable for
// permission errors, dangling or looping links and non-regular files; ExcludedByPattern for
// the caller's exclude pattern. Unreadable files and directories never fail the walk.
package files
