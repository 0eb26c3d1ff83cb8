// Package secrets finds credentials inside file contents, for the gatherer to hold a file
// back or to redact it before it is uploaded.
//
// PrivateKey reports a private key block anywhere in a file: a line
// "-----BEGIN <kind>PRIVATE KEY-----" (RSA, EC, DSA, OPENSSH, ENCRYPTED, plain, PGP …
// BLOCK) followed within 1 KiB by key data, a run of 40 or more base64 characters that
// starts after a separator and looks random (upper case, lower case and digits, entropy
// above 4.5 bits per byte). Newlines may be real or escaped, and the lines may be quoted,
// so keys written as code are found: Go and C string concatenation, a JS/TS array of lines,
// Python implicit concatenation, JSON with "\n" (service-account files), YAML block
// scalars. Code that only names the marker (a PEM parser) is not a key. A marker split
// across strings ("-----BEGIN " + kind + " PRIVATE KEY-----") is not found.
//
// Redact replaces tokens with "[REDACTED <kind>]". Its rules are gitleaks' default rules
// for these providers, with the same regular expressions, entropy thresholds and
// allowlists (gitleaks/gitleaks, config/gitleaks.toml at commit 009e025, generated from
// cmd/generate/config/rules/<file>.go):
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
// Private key blocks are not redacted: PrivateKey holds such a file back whole.
//
// Both scans are built to cost little on a file with no candidate: PrivateKey searches for
// "-----BEGIN " with bytes.Index, and Redact looks for four anchor bytes ('-', 'k' of
// hooks, 'A', '_') and runs a rule's expression only where the bytes around an anchor
// spell that rule's fixed prefix. On amd64 one SSE2 or AVX2 pass finds the anchors (the
// AVX2 one only those whose neighbours may start a rule); elsewhere a bytes.IndexByte pass
// per anchor does. On
// $GOROOT/src (BenchmarkScanGOROOT) PrivateKey finds one key, the EC key of
// crypto/tls/example_test.go, and Redact changes no file.
package secrets
