package secrets

import "bytes"

// Vendor tokens found by a fixed prefix: gitleaks' high-confidence prefix rules that the
// hand-written checks of redact.go do not cover. Each is found from an anchor byte of its
// prefix and the byte beside it (see vendorTables), so adding one costs a call of at only
// where its pair of bytes stands.

// tokenEnd is what must follow a token: any byte that cannot continue it, or the end.
// gitleaks' rules accept only a quote, a backquote, white space, ';' or a written \n or
// \r; a key followed by '&' (a URL's query), ')' (Markdown, a call), ':' (curl -u), ',' or
// '.' is a key too.
const tokenEnd = `(?:[^\w-]|$)`

// A vendor is a token rule found by its prefix.
type vendor struct {
	prefix string // the token's fixed start; lower case when fold
	fold   bool   // the prefix in any case
	anchor byte   // the byte of the prefix the scan looks for: not a letter when fold
	// back is how many bytes of the token come before its prefix (the 4 before Azure's
	// "Q~").
	back  int
	rules []*rule
}

// vr returns the one rule of a vendor.
func vr(id, kind string, entropy float64, expr string) []*rule {
	return []*rule{{id: id, kind: kind, entropy: entropy, re: lazyRegexp(expr)}}
}

// vendors are the rules, each with its gitleaks id and file (gitleaks/gitleaks, config/
// gitleaks.toml at commit b58d3f1, generated from cmd/generate/config/rules/<file>.go);
// the expressions are gitleaks' with tokenEnd for its trailing delimiter. Left out: the
// rules that need a keyword beside the value (generic-api-key and the like); a few
// prefixes that are common words or hex (clickhouse's 4b1d, sourcegraph's bare hex,
// authress's sc_, maxmind's _mmk suffix, airtable's pat…, artifactory's cmVmd, twilio's
// SK); and the prefixes none of whose pairs of bytes is rare in code, which would call
// the checks several times a line (databricks' dapi, and the ones made of letters and
// dots: Vault's hvs. and hvb., Doppler's dp.pt., Dynatrace's dt0c01., Terraform Cloud's
// .atlasv1., Harness's pat. and sat.).
var vendors = []vendor{
	// gitlab.go: the other GitLab tokens (glpat- is in redact.go).
	{prefix: "glcbt-", anchor: '-', rules: vr("gitlab-cicd-job-token", kindGitLab, 3, `glcbt-[0-9a-zA-Z]{1,5}_[0-9a-zA-Z_-]{20}`)},
	{prefix: "gldt-", anchor: '-', rules: vr("gitlab-deploy-token", kindGitLab, 3, `gldt-[0-9a-zA-Z_\-]{20}`)},
	{prefix: "glffct-", anchor: '-', rules: vr("gitlab-feature-flag-client-token", kindGitLab, 3, `glffct-[0-9a-zA-Z_\-]{20}`)},
	{prefix: "glft-", anchor: '-', rules: vr("gitlab-feed-token", kindGitLab, 3, `glft-[0-9a-zA-Z_\-]{20}`)},
	{prefix: "glimt-", anchor: '-', rules: vr("gitlab-incoming-mail-token", kindGitLab, 3, `glimt-[0-9a-zA-Z_\-]{25}`)},
	{prefix: "glagent-", anchor: '-', rules: vr("gitlab-kubernetes-agent-token", kindGitLab, 3, `glagent-[0-9a-zA-Z_\-]{50}`)},
	{prefix: "gloas-", anchor: '-', rules: vr("gitlab-oauth-app-secret", kindGitLab, 3, `gloas-[0-9a-zA-Z_\-]{64}`)},
	{prefix: "glptt-", anchor: '-', rules: vr("gitlab-ptt", kindGitLab, 3, `glptt-[0-9a-f]{40}`)},
	{prefix: "glrt-", anchor: '-', rules: []*rule{
		{id: "gitlab-runner-authentication-token", kind: kindGitLab, entropy: 3, re: lazyRegexp(`glrt-[0-9a-zA-Z_\-]{20}`)},
		{id: "gitlab-runner-authentication-token-routable", kind: kindGitLab, entropy: 4, re: lazyRegexp(`\bglrt-t\d_[0-9a-zA-Z_\-]{27,300}\.[0-9a-z]{2}[0-9a-z]{7}\b`)},
	}},
	{prefix: "glsoat-", anchor: '-', rules: vr("gitlab-scim-token", kindGitLab, 3, `glsoat-[0-9a-zA-Z_\-]{20}`)},
	{prefix: "_gitlab_session=", anchor: '_', rules: vr("gitlab-session-cookie", kindGitLab, 3, `_gitlab_session=[0-9a-z]{32}`)},
	// pypi.go, huggingface.go, sendgrid.go, digitalocean.go.
	{prefix: "pypi-AgEIcHlwaS5vcmc", anchor: '-', rules: vr("pypi-upload-token", "PyPI token", 3, `pypi-AgEIcHlwaS5vcmc[\w-]{50,1000}`)},
	{prefix: "hf_", anchor: '_', rules: vr("huggingface-access-token", "Hugging Face token", 2, `\b(hf_(?i:[a-z]{34}))`+tokenEnd)},
	{prefix: "api_org_", anchor: '_', rules: vr("huggingface-organization-api-token", "Hugging Face token", 2, `\b(api_org_(?i:[a-z]{34}))`+tokenEnd)},
	{prefix: "SG.", anchor: 'G', rules: vr("sendgrid-api-token", "SendGrid API key", 2, `\b(SG\.(?i)[a-z0-9=_\-\.]{66})`+tokenEnd)},
	{prefix: "dop_v1_", anchor: '_', rules: vr("digitalocean-pat", "DigitalOcean token", 3, `\b(dop_v1_[a-f0-9]{64})`+tokenEnd)},
	{prefix: "doo_v1_", anchor: '_', rules: vr("digitalocean-access-token", "DigitalOcean token", 3, `\b(doo_v1_[a-f0-9]{64})`+tokenEnd)},
	{prefix: "dor_v1_", fold: true, anchor: '_', rules: vr("digitalocean-refresh-token", "DigitalOcean token", 0, `(?i)\b(dor_v1_[a-f0-9]{64})`+tokenEnd)},
	// 1password.go, adobe.go, age.go, alibaba.go, artifactory.go, atlassian.go, aws.go.
	{prefix: "A3-", anchor: '-', rules: vr("1password-secret-key", "1Password secret key", 3.8, `\bA3-[A-Z0-9]{6}-(?:(?:[A-Z0-9]{11})|(?:[A-Z0-9]{6}-[A-Z0-9]{5}))-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b`)},
	{prefix: "ops_eyJ", anchor: '_', rules: vr("1password-service-account-token", "1Password token", 4, `ops_eyJ[a-zA-Z0-9+/]{250,}={0,3}`)},
	{prefix: "p8e-", anchor: '-', rules: vr("adobe-client-secret", "Adobe client secret", 2, `\b(p8e-(?i)[a-z0-9]{32})`+tokenEnd)},
	{prefix: "AGE-SECRET-KEY-1", anchor: '-', rules: vr("age-secret-key", "age secret key", 0, `AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}`)},
	{prefix: "LTAI", anchor: 'A', rules: vr("alibaba-access-key-id", "Alibaba access key", 2, `\b(LTAI(?i)[a-z0-9]{20})`+tokenEnd)},
	{prefix: "AKCp", anchor: 'A', rules: vr("artifactory-api-key", "Artifactory API key", 4.5, `\bAKCp[A-Za-z0-9]{69}\b`)},
	{prefix: "ATATT3", anchor: 'A', rules: vr("atlassian-api-token", "Atlassian API token", 3.5, `\b(ATATT3[A-Za-z0-9_\-=]{186})`+tokenEnd)},
	{prefix: "ABSK", anchor: 'A', rules: vr("aws-amazon-bedrock-api-key-long-lived", "AWS Bedrock API key", 3, `\b(ABSK[A-Za-z0-9+/]{109,269}={0,2})`+tokenEnd)},
	// The short-lived key is "bedrock-api-key-" and a presigned URL in base64, whose
	// signature comes last: the whole run is redacted (gitleaks' rule is the prefix).
	{prefix: "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t", anchor: '-', rules: []*rule{{id: "aws-amazon-bedrock-api-key-short-lived",
		kind: "AWS Bedrock API key", entropy: 3, window: 8 << 10, re: lazyRegexp(`bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%_-]*`)}}},
	// azure.go: three characters, a digit, "Q~", then 31 to 34.
	{prefix: "Q~", anchor: '~', back: 4, rules: vr("azure-ad-client-secret", "Azure AD client secret", 3, `(?:^|[\\'"\x60\s>=:(,)])([a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\'"\x60\s<),&])`)},
	// clojars.go, cloudflare.go, duffel.go, easypost.go, facebook.go.
	{prefix: "clojars_", fold: true, anchor: '_', rules: vr("clojars-api-token", "Clojars token", 2, `(?i)CLOJARS_[a-z0-9]{60}`)},
	{prefix: "v1.0-", anchor: '-', rules: vr("cloudflare-origin-ca-key", "Cloudflare origin CA key", 2, `\b(v1\.0-[a-f0-9]{24}-[a-f0-9]{146})`+tokenEnd)},
	{prefix: "duffel_", anchor: '_', rules: vr("duffel-api-token", "Duffel token", 2, `duffel_(?:test|live)_(?i)[a-z0-9_\-=]{43}`)},
	{prefix: "EZAK", anchor: 'A', rules: vr("easypost-api-token", "EasyPost API key", 2, `\bEZAK(?i)[a-z0-9]{54}\b`)},
	{prefix: "EAA", anchor: 'A', rules: []*rule{
		{id: "facebook-page-access-token", kind: "Facebook token", entropy: 4, re: lazyRegexp(`\b(EAA[MC](?i)[a-z0-9]{100,})` + tokenEnd)},
		{id: "square-access-token", kind: "Square token", entropy: 2, re: lazyRegexp(`\b((?:EAAA)[\w-]{22,60})` + tokenEnd)},
	}},
	// flutterwave.go, flyio.go, frameio.go, grafana.go, heroku.go, infracost.go,
	// intra42.go.
	{prefix: "FLWSECK_TEST-", anchor: '-', rules: []*rule{
		{id: "flutterwave-secret-key", kind: "Flutterwave key", entropy: 2, re: lazyRegexp(`FLWSECK_TEST-(?i)[a-h0-9]{32}-X`)},
		{id: "flutterwave-encryption-key", kind: "Flutterwave key", entropy: 2, re: lazyRegexp(`FLWSECK_TEST-(?i)[a-h0-9]{12}`)},
	}},
	{prefix: "fo1_", anchor: '_', rules: vr("flyio-access-token", "Fly.io token", 4, `\b(fo1_[\w-]{43})`+tokenEnd)},
	{prefix: "fm1a_", anchor: '_', rules: vr("flyio-access-token", "Fly.io token", 4, `\b(fm1a_[a-zA-Z0-9+\/]{100,}={0,3})`+tokenEnd)},
	{prefix: "fm1r_", anchor: '_', rules: vr("flyio-access-token", "Fly.io token", 4, `\b(fm1r_[a-zA-Z0-9+\/]{100,}={0,3})`+tokenEnd)},
	{prefix: "fm2_", anchor: '_', rules: vr("flyio-access-token", "Fly.io token", 4, `\b(fm2_[a-zA-Z0-9+\/]{100,}={0,3})`+tokenEnd)},
	{prefix: "fio-u-", anchor: '-', rules: vr("frameio-api-token", "Frame.io token", 0, `fio-u-(?i)[a-z0-9\-_=]{64}`)},
	{prefix: "glc_", fold: true, anchor: '_', rules: vr("grafana-cloud-api-token", "Grafana token", 3, `(?i)\b(glc_[A-Za-z0-9+/]{32,400}={0,3})`+tokenEnd)},
	{prefix: "glsa_", fold: true, anchor: '_', rules: vr("grafana-service-account-token", "Grafana token", 3, `(?i)\b(glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})`+tokenEnd)},
	{prefix: "HRKU-AA", anchor: '-', rules: vr("heroku-api-key-v2", "Heroku API key", 4, `\b((HRKU-AA[0-9a-zA-Z_-]{58}))`+tokenEnd)},
	{prefix: "ico-", anchor: '-', rules: vr("infracost-api-token", "Infracost token", 3, `\b(ico-[a-zA-Z0-9]{32})`+tokenEnd)},
	{prefix: "s-s4t2", anchor: '-', rules: vr("intra42-client-secret", "42 Intra client secret", 3, `\b(s-s4t2(?:ud|af)-(?i)[abcdef0123456789]{64})`+tokenEnd)},
	// linear.go, notion.go, octopusdeploy.go, openshift.go, perplexity.go, planetscale.go,
	// postman.go, prefect.go, pulumi.go, readme.go, rubygems.go, scalingo.go.
	{prefix: "lin_api_", anchor: '_', rules: vr("linear-api-key", "Linear API key", 2, `lin_api_(?i)[a-z0-9]{40}`)},
	{prefix: "ntn_", anchor: '_', rules: vr("notion-api-token", "Notion token", 4, `\b(ntn_[0-9]{11}[A-Za-z0-9]{32}[A-Za-z0-9]{3})`+tokenEnd)},
	{prefix: "API-", anchor: '-', rules: vr("octopus-deploy-api-key", "Octopus Deploy API key", 3, `\b(API-[A-Z0-9]{26})`+tokenEnd)},
	{prefix: "sha256~", anchor: '~', rules: vr("openshift-user-token", "OpenShift token", 3.5, `\b(sha256~[\w-]{43})(?:[^\w-]|$)`)},
	{prefix: "pplx-", anchor: '-', rules: vr("perplexity-api-key", "Perplexity API key", 4, `\b(pplx-[a-zA-Z0-9]{48})(?:[^\w-]|$|\b)`)},
	{prefix: "pscale_", anchor: '_', rules: []*rule{
		{id: "planetscale-api-token", kind: "PlanetScale token", entropy: 3, re: lazyRegexp(`\b(pscale_tkn_(?i)[\w=\.-]{32,64})` + tokenEnd)},
		{id: "planetscale-oauth-token", kind: "PlanetScale token", entropy: 3, re: lazyRegexp(`\b(pscale_oauth_[\w=\.-]{32,64})` + tokenEnd)},
		{id: "planetscale-password", kind: "PlanetScale token", entropy: 3, re: lazyRegexp(`\b(pscale_pw_(?i)[\w=\.-]{32,64})` + tokenEnd)},
	}},
	{prefix: "PMAK-", anchor: '-', rules: vr("postman-api-token", "Postman API key", 3, `\b(PMAK-(?i)[a-f0-9]{24}\-[a-f0-9]{34})`+tokenEnd)},
	{prefix: "pnu_", anchor: '_', rules: vr("prefect-api-token", "Prefect token", 2, `\b(pnu_[a-zA-Z0-9]{36})`+tokenEnd)},
	{prefix: "pul-", anchor: '-', rules: vr("pulumi-api-token", "Pulumi token", 2, `\b(pul-[a-f0-9]{40})`+tokenEnd)},
	{prefix: "rdme_", anchor: '_', rules: vr("readme-api-token", "ReadMe API key", 2, `\b(rdme_[a-z0-9]{70})`+tokenEnd)},
	{prefix: "rubygems_", anchor: '_', rules: vr("rubygems-api-token", "RubyGems token", 2, `\b(rubygems_[a-f0-9]{48})`+tokenEnd)},
	{prefix: "tk-us-", anchor: '-', rules: vr("scalingo-api-token", "Scalingo token", 2, `\b(tk-us-[\w-]{48})`+tokenEnd)},
	// sendinblue.go, sentry.go, settlemint.go, shippo.go, shopify.go, sourcegraph.go,
	// square.go, teams.go (in credentials.go, at its '@').
	{prefix: "xkeysib-", anchor: '-', rules: vr("sendinblue-api-token", "Brevo API key", 2, `\b(xkeysib-[a-f0-9]{64}\-(?i)[a-z0-9]{16})`+tokenEnd)},
	{prefix: "sntryu_", anchor: '_', rules: vr("sentry-user-token", "Sentry token", 3.5, `\b(sntryu_[a-f0-9]{64})`+tokenEnd)},
	{prefix: "sntrys_eyJpYXQiO", anchor: '_', rules: vr("sentry-org-token", "Sentry token", 4.5, `\bsntrys_eyJpYXQiO[a-zA-Z0-9+/]{10,200}(?:LCJyZWdpb25fdXJs|InJlZ2lvbl91cmwi|cmVnaW9uX3VybCI6)[a-zA-Z0-9+/]{10,200}={0,2}_[a-zA-Z0-9+/]{43}(?:[^a-zA-Z0-9+/]|\z)`)},
	{prefix: "sm_", anchor: '_', rules: vr("settlemint-access-token", "SettleMint token", 3, `\b(sm_(?:aat|pat|sat)_[a-zA-Z0-9]{16})`+tokenEnd)},
	{prefix: "shippo_", anchor: '_', rules: vr("shippo-api-token", "Shippo token", 2, `\b(shippo_(?:live|test)_[a-fA-F0-9]{40})`+tokenEnd)},
	{prefix: "shpat_", anchor: '_', rules: vr("shopify-access-token", "Shopify token", 2, `shpat_[a-fA-F0-9]{32}`)},
	{prefix: "shpca_", anchor: '_', rules: vr("shopify-custom-access-token", "Shopify token", 2, `shpca_[a-fA-F0-9]{32}`)},
	{prefix: "shppa_", anchor: '_', rules: vr("shopify-private-app-access-token", "Shopify token", 2, `shppa_[a-fA-F0-9]{32}`)},
	{prefix: "shpss_", anchor: '_', rules: vr("shopify-shared-secret", "Shopify token", 2, `shpss_[a-fA-F0-9]{32}`)},
	{prefix: "sgp_", fold: true, anchor: '_', rules: vr("sourcegraph-access-token", "Sourcegraph token", 3, `(?i)\b(sgp_(?:[a-fA-F0-9]{16}|local)_[a-fA-F0-9]{40}|sgp_[a-fA-F0-9]{40})\b`+tokenEnd)},
	{prefix: "sq0atp-", anchor: '-', rules: vr("square-access-token", "Square token", 2, `\b((?:sq0atp-)[\w-]{22,60})`+tokenEnd)},
}

// A vendorEntry is a vendor in the table of its anchor: at is where the anchor byte
// stands in its prefix.
type vendorEntry struct {
	*vendor
	at int
}

// A vendorTable holds, for an anchor byte, the vendors to try by the byte at the
// anchor's rel offset (the byte before a '-', '_', '~' or 'G'; the byte after an 'A'),
// and, to rule most hits out at once, the pairs of bytes at rel and 2*rel their prefixes
// hold: bit b&63 of pairs[a] is set when some prefix holds a at rel and b at 2*rel (or
// ends before 2*rel).
type vendorTable struct {
	byNear [256][]vendorEntry
	pairs  [256]uint64
}

// vendorTables holds the table of each anchor byte, built once from vendors.
var vendorTables = func() map[byte]*vendorTable {
	m := map[byte]*vendorTable{}
	for i := range vendors {
		v := &vendors[i]
		rel := -1
		if v.anchor == 'A' {
			rel = +1
		}
		at := -1
		for j := 0; j < len(v.prefix); j++ {
			if v.prefix[j] == v.anchor && j+rel >= 0 && j+rel < len(v.prefix) {
				at = j
				break
			}
		}
		if at < 0 {
			panic("secrets: vendor " + v.prefix + " has no anchor with a neighbour")
		}
		t := m[v.anchor]
		if t == nil {
			t = new(vendorTable)
			m[v.anchor] = t
		}
		e := vendorEntry{v, at}
		bits := ^uint64(0)
		if j := at + 2*rel; j >= 0 && j < len(v.prefix) {
			bits = 1<<(v.prefix[j]&63) | 1<<(upperIf(v.prefix[j], v.fold)&63)
		}
		key := v.prefix[at+rel]
		for _, k := range []byte{key, upperIf(key, v.fold)} {
			if len(t.byNear[k]) == 0 || t.byNear[k][len(t.byNear[k])-1].vendor != v {
				t.byNear[k] = append(t.byNear[k], e)
			}
			t.pairs[k] |= bits
		}
	}
	return m
}()

// upperIf returns c in upper case when fold is set and c is a lower-case letter, else c.
func upperIf(c byte, fold bool) byte {
	if fold && c >= 'a' && c <= 'z' {
		return c - 0x20
	}
	return c
}

// vendorNear returns the set of bytes that stand beside anchor b in a vendor's prefix,
// added to extra (the bytes the hand-written checks want).
func vendorNear(b byte, extra string) *[256]bool {
	t := byteSet(extra)
	if vt := vendorTables[b]; vt != nil {
		for k := range vt.byNear {
			if vt.byNear[k] != nil {
				t[k] = true
			}
		}
	}
	return t
}

// vendorsAt tries the vendors whose prefix may hold anchor k's byte at c[i], by the byte
// beside it.
func (s *scan) vendorsAt(k, i int) {
	c := s.content
	a := &anchors[k]
	j := i + a.rel
	if j2 := j + a.rel; j2 >= 0 && j2 < len(c) && a.vendors.pairs[c[j]]&(1<<(c[j2]&63)) == 0 {
		return
	}
	for _, e := range a.vendors.byNear[c[j]] {
		start := i - e.at
		if start < 0 || start+len(e.prefix) > len(c) {
			continue
		}
		if e.fold && !hasPrefixFold(c[start:], e.prefix) || !e.fold && !bytes.HasPrefix(c[start:], []byte(e.prefix)) {
			continue
		}
		if end := s.verify(max(start-e.back, 0), i, e.rules); end > 0 {
			s.next[k] = max(s.next[k], end)
		}
	}
}
