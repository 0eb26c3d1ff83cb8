package secrets

import (
	"bytes"
	"slices"
	"testing"
)

// allRules lists every rule but curl's (which hold only inside a curl command), for the
// reference scan.
var allRules = func() []*rule {
	rules := []*rule{
		ruleAWS, ruleGitHubPAT, ruleGitHubOAuth, ruleGitHubApp, ruleGitHubRefresh, ruleGitHubFine,
		ruleGitLabPAT, ruleGitLabRoutable, ruleOpenAI, ruleAnthropic, ruleAnthropicAdmin, ruleGoogle,
		ruleNpm, ruleStripe, ruleSlackBot, ruleSlackLegacyBot, ruleSlackUser, ruleSlackApp,
		ruleSlackConfig, ruleSlackRefresh, ruleSlackWorkspace, ruleSlackLegacy, ruleSlackWebhook,
		ruleOpenRouter, ruleAWSSecret, rulePasswordXML, rulePassword, ruleConnPassword,
		ruleQueryPassword, ruleAzureKey, ruleTeams, ruleURLPassword, ruleURLToken, ruleAuthToken,
		ruleAuthBasic,
	}
	for _, v := range vendors {
		rules = append(rules, v.rules...)
	}
	return rules
}()

// ruleHints maps rules to a word in lower case that every match holds (a vendor's
// prefix, the '@' of a URL's credentials): the reference scan runs a rule only over
// content that holds its word (ignoring case), and stays fast under the race detector.
var ruleHints = func() map[*rule][]byte {
	m := map[*rule][]byte{
		ruleURLPassword: []byte("@"), ruleURLToken: []byte("@"), ruleTeams: []byte("webhookb2"),
		ruleAuthToken: []byte("authorization"), ruleAuthBasic: []byte("authorization"),
		ruleAzureKey: []byte("key"), ruleConnPassword: []byte(";"), ruleSlackWebhook: []byte("slack"),
		rulePassword: []byte("pass"), rulePasswordXML: []byte("pass"), ruleQueryPassword: []byte("p"),
		ruleAWSSecret: []byte("secret"), ruleOpenRouter: []byte("sk-or-v1-"),
	}
	for _, v := range vendors {
		for _, r := range v.rules {
			m[r] = bytes.ToLower([]byte(v.prefix))
		}
	}
	return m
}()

// TestRulesCompile compiles every rule's expression.
func TestRulesCompile(t *testing.T) {
	t.Parallel()
	for _, r := range append(allRules, rulesCurl...) {
		func() {
			defer func() {
				if err := recover(); err != nil {
					t.Errorf("%s: %v", r.id, err)
				}
			}()
			r.re()
		}()
	}
}

// referenceSecrets runs every rule over the whole of content, as gitleaks does, without the
// anchors Redact uses to avoid running them: the secrets it returns are what Redact must
// remove.
func referenceSecrets(content []byte) [][]byte {
	var out [][]byte
	lower := bytes.ToLower(content)
	for _, r := range allRules {
		if h := ruleHints[r]; h != nil && !bytes.Contains(lower, h) {
			continue
		}
		for _, loc := range r.re().FindAllSubmatchIndex(content, -1) {
			if st, en, ok := r.secret(content, loc); ok {
				out = append(out, content[st:en])
			}
		}
	}
	return out
}

// checkReference fails t when Redact leaves a secret the reference finds in in, changes
// its input, or copies it with nothing found, or when Scan disagrees with PrivateKey and
// Redact.
func checkReference(t *testing.T, in []byte) {
	t.Helper()
	orig := bytes.Clone(in)
	want := referenceSecrets(in)
	out, kinds := Redact(in)
	if !bytes.Equal(in, orig) {
		t.Fatal("Redact changed its input")
	}
	for _, s := range want {
		if len(s) >= 8 && bytes.Contains(out, s) {
			t.Fatalf("secret %q left in the output %q", s, out)
		}
	}
	// Scan is PrivateKey and Redact in one pass (and the checks Redact does not make).
	sOut, sKinds, held := Scan(in)
	if PrivateKey(in) && held == 0 {
		t.Fatalf("PrivateKey finds a key in %q, Scan holds nothing back", in)
	}
	if held == 0 && (!bytes.Equal(sOut, out) || !slices.Equal(sKinds, kinds)) {
		t.Fatalf("Scan = %q %v, Redact = %q %v", sOut, sKinds, out, kinds)
	}
	if kinds == nil {
		if len(in) > 0 && &out[0] != &in[0] || len(out) != len(in) {
			t.Fatalf("no findings but the output is not the input: %q", out)
		}
		if len(want) > 0 {
			t.Fatalf("no findings, but the rules match %q", want)
		}
	}
}

func FuzzRedact(f *testing.F) {
	for _, tc := range tokens() {
		f.Add([]byte("key = \"" + tc.token + "\"\n"))
		f.Add([]byte(tc.token))
		f.Add([]byte(padding[:61] + tc.token + "-----BEGIN "))
	}
	f.Add([]byte("AKIAIOSFODNN7EXAMPLE"))
	f.Add([]byte("xoxe.xoxb-1-" + rnd(upnum, 165)))
	f.Add([]byte("glpat-" + rnd(alnum, 40) + ".01" + rnd(lowernum, 7)))
	f.Add([]byte(ecKeyAfterToken))
	f.Add([]byte("mavenPassword=Tr0ub4dor&3\n<password>s3cr3t-Value</password>\n"))
	f.Add([]byte(`{"text": ["Password: hunter22\n", "{'password': 'Xy7-zzzz'}"]}`))
	f.Add([]byte("aws_secret_access_key = " + rnd(alnum+"/+", 40) + "\nSecretAccessKey: '" + rnd(alnum, 40) + "'"))
	for _, row := range shapeRows(f) {
		f.Add([]byte(row.content))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkReference(t, in) })
}
