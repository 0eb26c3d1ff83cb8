package secrets

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Redact is Scan without looking for key material: the tokens replaced, and their kinds.
func Redact(content []byte) ([]byte, []string) {
	out, kinds, _ := scanContent(content, false, 0)
	return out, kinds
}

const (
	alnum    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	lowernum = "abcdefghijklmnopqrstuvwxyz0123456789"
	upnum    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	base32   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	digits   = "0123456789"
	word     = alnum + "_"
	wordDash = word + "-"
)

// rnd returns n bytes drawn at random from set.
func rnd(set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[rand.IntN(len(set))]
	}
	return string(b)
}

// tokens returns credentials in each provider's format, made of random bytes.
func tokens() []struct{ name, token, kind string } {
	return []struct{ name, token, kind string }{
		{"aws-akia", "AKIA" + rnd(base32, 16), kindAWS},
		{"aws-asia", "ASIA" + rnd(base32, 16), kindAWS},
		{"github-pat", "ghp_" + rnd(alnum, 36), kindGitHub},
		{"github-oauth", "gho_" + rnd(alnum, 36), kindGitHub},
		{"github-app", "ghs_" + rnd(alnum, 36), kindGitHub},
		{"github-refresh", "ghr_" + rnd(alnum, 36), kindGitHub},
		{"github-fine-grained", "github_pat_" + rnd(word, 82), kindGitHub},
		{"gitlab-pat", "glpat-" + rnd(alnum, 20), kindGitLab},
		// gitleaks' rule ends in \b: a key whose last character is a dash would be missed
		// (as by gitleaks); OpenAI's keys end in a letter or digit.
		{"openai-project", "sk-proj-" + rnd(wordDash, 74) + "T3BlbkFJ" + rnd(wordDash, 73) + rnd(alnum, 1), kindOpenAI},
		{"openai-service-account", "sk-svcacct-" + rnd(wordDash, 58) + "T3BlbkFJ" + rnd(wordDash, 57) + rnd(alnum, 1), kindOpenAI},
		{"openai-legacy", "sk-" + rnd(alnum, 20) + "T3BlbkFJ" + rnd(alnum, 20), kindOpenAI},
		{"anthropic", "sk-ant-api03-" + rnd(wordDash, 93) + "AA", kindAnthropic},
		{"anthropic-admin", "sk-ant-admin01-" + rnd(wordDash, 93) + "AA", kindAnthropic},
		{"google", "AIza" + rnd(wordDash, 35), kindGoogle},
		{"npm", "npm_" + rnd(lowernum, 36), kindNpm},
		{"stripe-live", "sk_live_" + rnd(alnum, 24), kindStripe},
		{"stripe-restricted", "rk_live_" + rnd(alnum, 24), kindStripe},
		{"stripe-test", "sk_test_" + rnd(alnum, 99), kindStripe},
		{"slack-bot", "xoxb-" + rnd(digits, 11) + "-" + rnd(digits, 13) + "-" + rnd(alnum, 24), kindSlack},
		{"slack-user", "xoxp-" + rnd(digits, 11) + "-" + rnd(digits, 11) + "-" + rnd(digits, 12) + "-" + rnd(alnum, 32), kindSlack},
		{"slack-app", "xapp-1-A" + rnd(upnum, 10) + "-" + rnd(digits, 13) + "-" + rnd("0123456789abcdef", 64), kindSlack},
		{"slack-workspace", "xoxa-2-" + rnd(alnum, 40), kindSlack},
		{"slack-config", "xoxe.xoxp-1-" + rnd(upnum, 164), kindSlack},
		{"slack-refresh", "xoxe-1-" + rnd(upnum, 146), kindSlack},
		{"slack-webhook", "https://hooks.slack.com/services/T" + rnd(upnum, 8) + "/B" + rnd(upnum, 8) + "/" + rnd(alnum, 24), kindWebhook},
	}
}

// contexts place a token as source and configuration files hold one.
var contexts = []struct{ name, before, after string }{
	{"go-string", "const key = \"", "\"\n"},
	{"env", "API_KEY=", "\n"},
	{"json", `{"token": "`, `"}`},
	{"yaml", "auth:\n  token: ", "\n"},
	{"past-8KiB", padding + "x := '", "'\n"},
	{"at-end", "token: ", ""},
}

func TestRedactReplacesEachToken(t *testing.T) {
	t.Parallel()
	for _, tc := range tokens() {
		for _, ctx := range contexts {
			t.Run(tc.name+"/"+ctx.name, func(t *testing.T) {
				in := []byte(ctx.before + tc.token + ctx.after)
				out, kinds := Redact(in)
				want := ctx.before + "[REDACTED " + tc.kind + "]" + ctx.after
				if string(out) != want {
					t.Errorf("Redact(%q)\n got %q\nwant %q", in, out, want)
				}
				if !slices.Equal(kinds, []string{tc.kind}) {
					t.Errorf("kinds = %q, want [%q]", kinds, tc.kind)
				}
			})
		}
	}
}

func TestRedactManyInOneFile(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	want := map[string]bool{}
	toks := tokens() // the same tokens for the input and the checks
	for _, tc := range toks {
		b.WriteString(padding[:300] + "v := \"" + tc.token + "\"\n")
		want[tc.kind] = true
	}
	in := []byte(b.String())
	out, kinds := Redact(in)
	var wantKinds []string
	for k := range want {
		wantKinds = append(wantKinds, k)
	}
	slices.Sort(wantKinds)
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("kinds = %q, want %q", kinds, wantKinds)
	}
	for _, tc := range toks {
		if bytes.Contains(out, []byte(tc.token)) {
			t.Errorf("%s left in the output: %s", tc.name, tc.token)
		}
	}
	if got, want := bytes.Count(out, []byte("[REDACTED ")), len(toks); got != want {
		t.Errorf("%d replacements, want %d", got, want)
	}
}

// TestRedactLeavesNonSecrets covers look-alikes and gitleaks' allowlists: AWS's documented
// example keys (allowlist '.+EXAMPLE$'), Google's published keys, gitleaks' stopword
// "abcdefghijklmnopqrstuvwxyz", placeholders whose entropy is too low, a prefix inside a
// longer word where the rule asks for a word boundary, and base64 that is no token.
func TestRedactLeavesNonSecrets(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"aws-example":        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n",
		"aws-in-word":        "const XAKIA" + rnd(base32, 16) + " = 1\n",
		"aws-too-short":      "AKIA" + rnd(base32, 10) + "\n",
		"akia-in-prose":      "// AKIA keys are long-term; ASIA keys are temporary.\n",
		"google-allowlisted": "key: AIzaSyabcdefghijklmnopqrstuvwxyz1234567\n",
		"openai-placeholder": "OPENAI_API_KEY=sk-...\n",
		"openai-no-marker":   "sk-proj-" + rnd(alnum, 40) + "\n",
		"github-placeholder": "token: ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
		"github-short":       "ghp_" + rnd(alnum, 20) + "\n",
		"stripe-stopword":    "sk_live_abcdefghijklmnopqrstuvwxyz\n",
		"stripe-in-word":     "mask_live_" + rnd(alnum, 24) + "\n",
		"npm-in-word":        "xnpm_" + rnd(lowernum, 36) + "\n",
		"anthropic-no-AA":    "sk-ant-api03-" + rnd(alnum, 95) + "\n",
		"slack-not-webhook":  "see https://api.slack.com/messaging/webhooks\n",
		"base64-blob":        "data: " + rnd(alnum+"+/", 200) + "\n",
		"go-code":            "func (k *Key) ghp_(x int) int { return npm_x + sk_live_count - A3T }\n",
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			in := []byte(s)
			out, kinds := Redact(in)
			if kinds != nil || &out[0] != &in[0] || len(out) != len(in) {
				t.Errorf("Redact(%q) = %q, %q; want the input itself and no kinds", in, out, kinds)
			}
		})
	}
}

// TestRedactAllocatesNothingWithoutFindings: content where no rule matches costs no
// allocation, even with every fixed prefix in it. (A match that an allowlist then drops,
// such as AKIAIOSFODNN7EXAMPLE, costs the regexp's one small result slice.)
func TestRedactAllocatesNothingWithoutFindings(t *testing.T) {
	in := []byte(padding + "AKIA ghp_x github_pat_ npm_ sk_live_ glpat- sk-ant-api03- xoxb- xapp- hooks.slack.com T3BlbkFJ AIza")
	if n := testing.AllocsPerRun(20, func() { Redact(in) }); n != 0 {
		t.Errorf("Redact allocated %v times, want 0", n)
	}
}
