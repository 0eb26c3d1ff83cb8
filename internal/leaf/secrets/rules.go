package secrets

import (
	"bytes"
	"math"
	"regexp"
	"sync"
)

// A rule is one gitleaks rule or one of this package's: its regular expression (gitleaks'
// from its default configuration, config/gitleaks.toml, generated from
// cmd/generate/config/rules, with tokenEnd for its trailing delimiter), the entropy the
// secret must exceed, and its allowlist. The secret is the first non-empty capture group,
// or the whole match when the expression has none, as in gitleaks.
type rule struct {
	id      string // gitleaks rule id, or this package's name for its own rules
	kind    string // what the replacement names: "[REDACTED <kind>]"
	re      func() *regexp.Regexp
	entropy float64 // the secret's Shannon entropy must exceed this; 0 checks nothing
	allow   []string
	// allowSuffix is gitleaks' allowlist regex '.+<suffix>$'.
	allowSuffix string
	// window, when not 0, is how many bytes from the start of the name the expression runs
	// over (the keyword rules); else it runs over the token the anchor found.
	window int
	// toAnchor, on a keyword rule whose every match ends at its anchor byte (a URL's
	// '@'), stops the window there: the bytes after it cannot change the match, and a
	// later match has an anchor of its own.
	toAnchor bool
	// check, when set, must accept the secret w[st:en] too; w is what the expression ran
	// over, for a check that looks at what stands before the secret.
	check func(w []byte, st, en int) bool
	// curl is set on the rules that hold only inside a curl command: the scan runs them
	// over the command (see curlAt), and the tests' reference scan leaves them out.
	curl bool
}

const (
	kindAWS           = "AWS access key"
	kindGitHub        = "GitHub token"
	kindGitLab        = "GitLab token"
	kindOpenAI        = "OpenAI API key"
	kindAnthropic     = "Anthropic API key"
	kindGoogle        = "Google API key"
	kindNpm           = "npm token"
	kindStripe        = "Stripe secret key"
	kindSlack         = "Slack token"
	kindWebhook       = "Slack webhook"
	kindRouter        = "OpenRouter API key"
	kindAWSSecret     = "AWS secret key"
	kindPassword      = "password"
	kindURL           = "URL credentials"
	kindAuthorization = "Authorization header"
	kindAPIHeader     = "API key header"
	kindAzure         = "Azure access key"
	kindTeams         = "Teams webhook"
)

// The rules, each with its gitleaks id; the source of every expression is
// gitleaks/gitleaks config/gitleaks.toml (commit 009e025), whose generator is the file of
// cmd/generate/config/rules named after each.
var (
	// aws-access-token (rules/aws.go); allowlist '.+EXAMPLE$', AWS's documentation keys.
	ruleAWS = &rule{id: "aws-access-token", kind: kindAWS, entropy: 3,
		re:          lazyRegexp(`\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b`),
		allowSuffix: "EXAMPLE"}

	// github-pat, github-oauth, github-app-token, github-refresh-token,
	// github-fine-grained-pat (rules/github.go).
	ruleGitHubPAT     = &rule{id: "github-pat", kind: kindGitHub, entropy: 3, re: lazyRegexp(`ghp_[0-9a-zA-Z]{36}`)}
	ruleGitHubOAuth   = &rule{id: "github-oauth", kind: kindGitHub, entropy: 3, re: lazyRegexp(`gho_[0-9a-zA-Z]{36}`)}
	ruleGitHubApp     = &rule{id: "github-app-token", kind: kindGitHub, entropy: 3, re: lazyRegexp(`(?:ghu|ghs)_[0-9a-zA-Z]{36}`)}
	ruleGitHubRefresh = &rule{id: "github-refresh-token", kind: kindGitHub, entropy: 3, re: lazyRegexp(`ghr_[0-9a-zA-Z]{36}`)}
	ruleGitHubFine    = &rule{id: "github-fine-grained-pat", kind: kindGitHub, entropy: 3, re: lazyRegexp(`github_pat_\w{82}`)}

	// gitlab-pat, gitlab-pat-routable (rules/gitlab.go).
	ruleGitLabPAT      = &rule{id: "gitlab-pat", kind: kindGitLab, entropy: 3, re: lazyRegexp(`glpat-[\w-]{20}`)}
	ruleGitLabRoutable = &rule{id: "gitlab-pat-routable", kind: kindGitLab, entropy: 4,
		re: lazyRegexp(`\bglpat-[0-9a-zA-Z_-]{27,300}\.[0-9a-z]{2}[0-9a-z]{7}\b`)}

	// openai-api-key (rules/openai.go): project, service-account, admin and legacy keys all
	// hold "T3BlbkFJ" (base64 of "OpenAI").
	ruleOpenAI = &rule{id: "openai-api-key", kind: kindOpenAI, entropy: 3,
		re: lazyRegexp(`\b(sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})\b|sk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20})` + tokenEnd)}

	// OpenRouter's keys, "sk-or-v1-" and 64 hex digits: not a gitleaks rule. Its key is the
	// default provider's, which users write into client configurations and scripts.
	ruleOpenRouter = &rule{id: "openrouter-api-key", kind: kindRouter, entropy: 3,
		re: lazyRegexp(`\b(sk-or-v1-[0-9a-f]{64})\b`)}

	// anthropic-api-key, anthropic-admin-api-key (rules/anthropic.go).
	ruleAnthropic      = &rule{id: "anthropic-api-key", kind: kindAnthropic, re: lazyRegexp(`\b(sk-ant-api03-[a-zA-Z0-9_\-]{93}AA)` + tokenEnd)}
	ruleAnthropicAdmin = &rule{id: "anthropic-admin-api-key", kind: kindAnthropic, re: lazyRegexp(`\b(sk-ant-admin01-[a-zA-Z0-9_\-]{93}AA)` + tokenEnd)}

	// gcp-api-key (rules/gcp.go), with its allowlist of published keys.
	ruleGoogle = &rule{id: "gcp-api-key", kind: kindGoogle, entropy: 4,
		re: lazyRegexp(`\b(AIza[\w-]{35})` + tokenEnd),
		allow: []string{
			"AIzaSyabcdefghijklmnopqrstuvwxyz1234567", "AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs",
			"AIzaSyCkEhVjf3pduRDt6d1yKOMitrUEke8agEM", "AIzaSyDMAScliyLx7F0NPDEJi1QmyCgHIAODrlU",
			"AIzaSyD3asb-2pEZVqMkmL6M9N6nHZRR_znhrh0", "AIzayDNSXIbFmlXbIE6mCzDLQAqITYefhixbX4A",
			"AIzaSyAdOS2zB6NCsk1pCdZ4-P6GBdi_UUPwX7c", "AIzaSyASWm6HmTMdYWpgMnjRBjxcQ9CKctWmLd4",
			"AIzaSyANUvH9H9BsUccjsu2pCmEkOPjjaXeDQgY", "AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM",
			"AIzaSyA4UrcGxgwQFTfaI3no3t7Lt1sjmdnP5sQ", "AIzaSyDSb51JiIcB6OJpwwMicseKRhhrOq1cS7g",
			"AIzaSyBF2RrAIm4a0mO64EShQfqfd2AFnzAvvuU", "AIzaSyBcE-OOIbhjyR83gm4r2MFCu4MJmprNXsw",
			"AIzaSyB8qGxt4ec15vitgn44duC5ucxaOi4FmqE", "AIzaSyA8vmApnrHNFE0bApF4hoZ11srVL_n0nvY",
		}}

	// npm-access-token (rules/npm.go).
	ruleNpm = &rule{id: "npm-access-token", kind: kindNpm, entropy: 2, re: lazyRegexp(`(?i)\b(npm_[a-z0-9]{36})` + tokenEnd)}

	// stripe-access-token (rules/stripe.go).
	ruleStripe = &rule{id: "stripe-access-token", kind: kindStripe, entropy: 2,
		re: lazyRegexp(`\b((?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99})` + tokenEnd)}

	// slack-bot-token, slack-legacy-bot-token, slack-user-token, slack-app-token,
	// slack-config-access-token, slack-config-refresh-token, slack-legacy-workspace-token,
	// slack-legacy-token, slack-webhook-url (rules/slack.go).
	ruleSlackBot       = &rule{id: "slack-bot-token", kind: kindSlack, entropy: 3, re: lazyRegexp(`xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*`)}
	ruleSlackLegacyBot = &rule{id: "slack-legacy-bot-token", kind: kindSlack, entropy: 2, re: lazyRegexp(`xoxb-[0-9]{8,14}-[a-zA-Z0-9]{18,26}`)}
	ruleSlackUser      = &rule{id: "slack-user-token", kind: kindSlack, entropy: 2, re: lazyRegexp(`xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}`)}
	ruleSlackApp       = &rule{id: "slack-app-token", kind: kindSlack, entropy: 2, re: lazyRegexp(`(?i)xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+`)}
	ruleSlackConfig    = &rule{id: "slack-config-access-token", kind: kindSlack, entropy: 2, re: lazyRegexp(`(?i)xoxe.xox[bp]-\d-[A-Z0-9]{163,166}`)}
	ruleSlackRefresh   = &rule{id: "slack-config-refresh-token", kind: kindSlack, entropy: 2, re: lazyRegexp(`(?i)xoxe-\d-[A-Z0-9]{146}`)}
	ruleSlackWorkspace = &rule{id: "slack-legacy-workspace-token", kind: kindSlack, entropy: 2, re: lazyRegexp(`xox[ar]-(?:\d-)?[0-9a-zA-Z]{8,48}`)}
	ruleSlackLegacy    = &rule{id: "slack-legacy-token", kind: kindSlack, entropy: 2, re: lazyRegexp(`xox[os]-\d+-\d+-\d+-[a-fA-F\d]+`)}
	ruleSlackWebhook   = &rule{id: "slack-webhook-url", kind: kindWebhook, re: lazyRegexp(`(?:https?://)?hooks.slack.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}`)}
)

// Keyword rules, not gitleaks': a value after the name that says what it is. Each runs
// over window bytes from the name (the value is not part of a token the anchors find).
var (
	// An AWS secret access key after its name (aws_secret_access_key, SecretAccessKey,
	// secretAccessKey, secret_key, in any case but the camel-cased ones), as a credentials
	// file, an environment dump, a notebook's output or "aws configure set
	// aws_secret_access_key KEY" prints it: 40 base64 characters. Keys ending in EXAMPLEKEY
	// are AWS's documentation's.
	ruleAWSSecret = &rule{id: "aws-secret-access-key", kind: kindAWSSecret, entropy: 4, window: 128,
		re:          lazyRegexp(`(?:(?i:secret_access_key|secret_key)|[Ss]ecretAccessKey)(?:\\?["'])?(?:[ \t]{0,16}(?:=>|[:=])[ \t]{0,16}|[ \t]{1,16})(?:\\?["'])?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`),
		allowSuffix: "EXAMPLEKEY"}

	// A password in an XML element, as Maven's settings.xml holds one.
	rulePasswordXML = &rule{id: "password-xml", kind: kindPassword, window: 256, check: passwordCheck,
		re: lazyRegexp(`(?i)<(?:password|passwd)>([^<\s]{1,200})</`)}

	// A password after a name ending in password or passwd, at the start of a line or of a
	// string, or quoted: a properties, INI or YAML entry (gradle.properties' mavenPassword,
	// .pypirc), a JSON member or a dict a notebook printed, "Password: value" in a
	// program's output. The value ends at a quote or the line's end.
	rulePassword = &rule{id: "password", kind: kindPassword, window: 320, check: passwordCheck,
		re: lazyRegexp(`(?i)(?:^|[\n"'\s]|\\n)[\w.-]{0,32}pass(?:word|wd)(?:\\?["'])?[ \t]{0,16}[:=][ \t]{0,16}(?:\\?["'])?([^\s"'<>\\,;]{1,200})(?:\\?["']|\\[nr]|[ \t]{0,16}(?:\r?\n|$))`)}

	// A password in a connection string, after a ';' (ADO.NET, ODBC, JDBC for SQL
	// Server): "…;User ID=sa;Password=value;" or "Pwd=value". The value ends at a ';', a
	// quote or white space.
	ruleConnPassword = &rule{id: "connection-string-password", kind: kindPassword, window: 256, check: passwordCheck,
		re: lazyRegexp(`(?i);[ \t]{0,16}(?:password|pwd)[ \t]{0,16}=[ \t]{0,16}([^;\s"'<>\\]{1,200})(?:[;"'\\]|\s|$)`)}

	// A password in a URL's query (a JDBC URL, a login link): "?password=value" or
	// "&pwd=value", up to the next '&' or '#', a quote or white space.
	ruleQueryPassword = &rule{id: "query-password", kind: kindPassword, window: 256, check: passwordCheck,
		re: lazyRegexp(`(?i)[?&](?:[\w.-]{0,32}pass(?:word|wd)|pwd)=([^&#\s"'<>\\]{1,200})(?:[&#"'\\]|\s|$)`)}

	// An Azure storage account's key or a Service Bus or Event Hubs shared access key in a
	// connection string: "AccountKey=<base64>;". The storage emulator's published key is
	// allowed.
	ruleAzureKey = &rule{id: "azure-connection-string-key", kind: kindAzure, entropy: 4, window: 256,
		re:    lazyRegexp(`(?:AccountKey|SharedAccessKey)[ \t]{0,16}=[ \t]{0,16}([A-Za-z0-9+/]{20,200}={0,2})(?:[;"'\\]|\s|$)`),
		allow: []string{"Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="}}

	// microsoft-teams-webhook (rules/teams.go), found by its '@'.
	ruleTeams = &rule{id: "microsoft-teams-webhook", kind: kindTeams, window: 320,
		re: lazyRegexp(`https://[a-z0-9]+\.webhook\.office\.com/webhookb2/[a-z0-9]{8}-(?:[a-z0-9]{4}-){3}[a-z0-9]{12}@[a-z0-9]{8}-(?:[a-z0-9]{4}-){3}[a-z0-9]{12}/IncomingWebhook/[a-z0-9]{32}/[a-z0-9]{8}-(?:[a-z0-9]{4}-){3}[a-z0-9]{12}`)}
)

// passwordValue reports whether v, the value after a password's name (or in a URL, a
// connection string, curl's -u), looks like a password: not a name for one, six
// characters or more of at least two classes (lower case, upper case, digits, others), not
// code (isCode; an attribute such as self.password), not a number and not a reference to
// where the password is kept (an AWS ARN, a URL).
func passwordValue(v []byte) bool {
	if len(v) < 6 || isCode(v) || isPasswordName(v) {
		return false // too short, code, or a name (userPassword, encodeUserPassword)
	}
	if hasPrefixFold(v, "arn:") || bytes.Contains(v, []byte("://")) {
		return false
	}
	var lower, upperc, digitc, other, dot int
	for _, c := range v {
		switch {
		case c >= 'a' && c <= 'z':
			lower = 1
		case c >= 'A' && c <= 'Z':
			upperc = 1
		case c >= '0' && c <= '9':
			digitc = 1
		case c == '.':
			dot, other = 1, 1
		case c == '_':
		default:
			other = 1
		}
	}
	if lower+upperc+digitc+other < 2 || bytes.HasPrefix(v, []byte("0x")) {
		return false
	}
	// An identifier with dots is an attribute or a module path.
	identifier := true
	for _, c := range v {
		if !isWordByte(c) && c != '.' {
			identifier = false
		}
	}
	return !(identifier && dot == 1)
}

// isCode reports a value that is code or a placeholder, not a secret: a call, an index, a
// template or a block ("()[]{}" and backquotes), a variable's expansion ($NAME, ${…},
// $(…)), a format verb ('%' not followed by two hex digits, as percent-encoding is), or a
// mask ("**").
func isCode(v []byte) bool {
	for i, c := range v {
		switch c {
		case '(', ')', '[', ']', '{', '}', '`':
			return true
		case '$':
			if i == 0 || i+1 < len(v) && (v[i+1] == '{' || v[i+1] == '(') {
				return true
			}
		case '%':
			if i+2 >= len(v) || !isHex(v[i+1]) || !isHex(v[i+2]) {
				return true
			}
		case '*':
			if i+1 < len(v) && v[i+1] == '*' || len(v) == 1 {
				return true
			}
		}
	}
	return false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// isPasswordName reports an identifier that names a password: letters, digits and '_', with
// "pass" after a letter (userPassword, DB_PASSWORD; not password123).
func isPasswordName(v []byte) bool {
	for _, c := range v {
		if !isWordByte(c) {
			return false
		}
	}
	for i := 1; i+len("pass") <= len(v); i++ {
		if hasPrefixFold(v[i:], "pass") && (isLetter(v[i-1]) || v[i-1] == '_') {
			return true
		}
	}
	return false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// lazyRegexp returns a function that compiles expr on its first call and returns the same
// expression after: compiling all the rules takes about 4 ms, which a program that never
// scans (or not yet, as a server answering its first requests) should not pay at start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// stopwords is gitleaks' global allowlist: a secret holding one (in lower case) is not one.
var stopwords = []string{"014df517-39d1-4453-b7b3-9930c563627c", "abcdefghijklmnopqrstuvwxyz"}

// secret returns the secret of the match loc in b (the first non-empty group, else the
// whole match) and whether it passes the rule's entropy and allowlists.
func (r *rule) secret(b []byte, loc []int) (start, end int, ok bool) {
	start, end = loc[0], loc[1]
	for g := 2; g+1 < len(loc); g += 2 {
		if loc[g] >= 0 && loc[g+1] > loc[g] {
			start, end = loc[g], loc[g+1]
			break
		}
	}
	s := b[start:end]
	if r.check != nil && !r.check(b, start, end) {
		return start, end, false
	}
	if r.entropy != 0 && entropy(s) <= r.entropy {
		return start, end, false
	}
	for _, a := range r.allow {
		if string(s) == a {
			return start, end, false
		}
	}
	if r.allowSuffix != "" && len(s) > len(r.allowSuffix) && bytes.HasSuffix(s, []byte(r.allowSuffix)) {
		return start, end, false
	}
	for _, w := range stopwords {
		if containsFold(s, w) {
			return start, end, false
		}
	}
	return start, end, true
}

// entropy is the Shannon entropy of s in bits per byte, as gitleaks computes it.
func entropy(s []byte) float64 {
	var counts [256]int
	for _, c := range s {
		counts[c]++
	}
	e, n := 0.0, float64(len(s))
	for _, k := range counts {
		if k > 0 {
			p := float64(k) / n
			e -= p * math.Log2(p)
		}
	}
	return e
}

// containsFold reports whether s holds lower-case ASCII w, ignoring the case of s.
func containsFold(s []byte, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if hasPrefixFold(s[i:], w) {
			return true
		}
	}
	return false
}

// hasPrefixFold reports whether s starts with lower-case ASCII w, ignoring the case of s.
func hasPrefixFold(s []byte, w string) bool {
	return len(s) >= len(w) && bytes.EqualFold(s[:len(w)], []byte(w))
}
