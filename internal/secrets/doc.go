// Package secrets finds credentials inside file contents, for the gatherer to hold a file
// back or to redact it before it is uploaded.
//
// [PrivateKey] reports a private key block anywhere in a file, also one written as code
// (it says what counts). A marker split across strings ("-----BEGIN " + kind + " PRIVATE
// KEY-----") is not found.
//
// Redact replaces secrets with "[REDACTED <kind>]". Its token rules are gitleaks' default
// rules for these providers, with the same regular expressions, entropy thresholds and
// allowlists (gitleaks/gitleaks, config/gitleaks.toml at commit 009e025, generated from
// cmd/generate/config/rules/<file>.go), except that a token's trailing delimiter also
// accepts \" (a string inside a JSON string, as notebooks hold code) where gitleaks
// accepts \n:
//
//	kind               gitleaks rule ids (rules file)
//	AWS access key     aws-access-token (aws.go): AKIA ASIA ABIA ACCA A3T…; keys ending in
//	                   EXAMPLE (AWS's documentation keys) are allowed
//	GitHub token       github-pat github-oauth github-app-token github-refresh-token
//	                   github-fine-grained-pat (github.go): ghp_ gho_ ghu_ ghs_ ghr_ github_pat_
//	GitLab token       gitlab-pat gitlab-pat-routable (gitlab.go): glpat-
//	OpenAI API key     openai-api-key (openai.go): sk-proj- sk-svcacct- sk-admin- and legacy
//	                   sk- keys, all holding T3BlbkFJ
//	Anthropic API key  anthropic-api-key anthropic-admin-api-key (anthropic.go): sk-ant-api03-
//	                   sk-ant-admin01-
//	Google API key     gcp-api-key (gcp.go): AIza…, less gitleaks' list of published keys
//	npm token          npm-access-token (npm.go): npm_
//	Stripe secret key  stripe-access-token (stripe.go): sk_ rk_ with test_ live_ prod_
//	Slack token        slack-bot-token slack-legacy-bot-token slack-user-token
//	                   slack-app-token slack-config-access-token slack-config-refresh-token
//	                   slack-legacy-workspace-token slack-legacy-token (slack.go): xoxb- xoxp-
//	                   xoxe- xoxa- xoxr- xoxo- xoxs- xapp- xoxe.xoxb-
//	Slack webhook      slack-webhook-url (slack.go): hooks.slack.com/services|workflows|triggers/
//
// gitleaks' global stopwords apply too (a secret holding "abcdefghijklmnopqrstuvwxyz" is a
// placeholder); its path allowlists do not (the gatherer decides which files to read).
// Rules of this package's own:
//
//	OpenRouter API key  sk-or-v1- and 64 hex digits, the default provider's key
//	AWS secret key      40 base64 characters after aws_secret_access_key, secret_key,
//	                    SecretAccessKey, secretAccessKey (an INI file, an environment dump, a
//	                    dict a notebook printed); AWS's documentation key (…EXAMPLEKEY) is allowed
//	password            <password>value</password> (Maven's settings.xml), and a value after
//	                    a name ending in password or passwd at the start of a line or string or
//	                    quoted (gradle.properties' mavenPassword=, .pypirc, "Password: value" in
//	                    a program's output, {'password': '…'}); only values that look like one:
//	                    six characters or more of two classes, not code, a placeholder, a
//	                    number or a name
//	registry credentials  docker's "auth" in a JSON document: base64 of user:password
//	<kind> (base64)     a token of any rule above, or a JSON document holding one, encoded in
//	                    base64 (a Kubernetes Secret's data, a .dockerconfigjson); found by the
//	                    encodings of the GitHub, GitLab, AWS, Google, OpenAI, Anthropic,
//	                    OpenRouter and Stripe prefixes and of '{"'
//
// Scan also holds a whole file back (Held) for: a PEM private key block (PrivateKey); one
// encoded in base64 (a kubeconfig's client-key-data, a Secret's tls.key); a PuTTY private
// key (PuTTY-User-Key-File- with key data after Private-Lines:); a private JSON Web Key
// (a "d" member of 32 characters or more in a JSON document naming "kty"); password
// hashes in the shadow or htpasswd format (a line name:$id$salt$hash); and more candidates
// than its checks may look at (HeldUnchecked: a quarter of the file's size plus 256 KiB of
// windows and decodings), so a file made of token prefixes costs seconds, not minutes.
//
// The scan looks for anchor bytes with one bytes.IndexByte pass each ('$' '-' 'k' 'A' '_'
// 'w' 'W'), and runs a rule's expression only where the bytes around an anchor spell that
// rule's fixed prefix or name; the base64 pass does the same with the first characters of
// the encodings ('Z' 'Q' '2' 'J', and the encoding of "-----BEGIN "). On $GOROOT/src (TestGOROOTFindings, BenchmarkScanGOROOT) Scan holds
// back one file, for the EC key of crypto/tls/example_test.go, and redacts one,
// cmd/go/internal/auth/gitauth_test.go, for the "password=secr3t" of its git credential
// helper fixtures.
package secrets
