// Package secrets finds credentials inside file contents, for the gatherer to hold a file
// back or to redact it before it is uploaded.
//
// [PrivateKey] reports a private key block anywhere in a file, also one written as code
// (it says what counts). A marker split across strings ("-----BEGIN " + kind + " PRIVATE
// KEY-----") is not found.
//
// [Scan] replaces secrets with "[REDACTED <kind>]". Its token rules are gitleaks' default
// rules for these providers, with the same regular expressions, entropy thresholds and
// allowlists (gitleaks/gitleaks, config/gitleaks.toml at commit 009e025, generated from
// cmd/generate/config/rules/<file>.go), except that a token's trailing delimiter is any
// byte that cannot continue it (tokenEnd), where gitleaks accepts only quotes, white
// space, ';' and a written \n: a key followed by '&' (a URL's query), ')' (Markdown, a
// call), ':' (curl -u), ',' or '.' is found, and one inside a JSON string (\") too:
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
//	Teams webhook      microsoft-teams-webhook (teams.go): …webhook.office.com/webhookb2/…
//
// and the other prefix rules of gitleaks' (commit b58d3f1), listed in vendors with their
// ids: GitLab's other tokens (gldt- glrt- glptt- glsoat- gloas- glcbt- glft- glimt-
// glagent- glffct- _gitlab_session=), PyPI (pypi-AgEIcHlwaS5vcmc), Hugging Face (hf_
// api_org_), SendGrid (SG.), DigitalOcean (dop_v1_ doo_v1_ dor_v1_), Shopify (shpat_ shpca_
// shppa_ shpss_), Linear (lin_api_), Postman (PMAK-), Pulumi (pul-), Heroku (HRKU-AA),
// Grafana (glsa_ glc_), age (AGE-SECRET-KEY-1), Sentry (sntryu_ sntrys_), Notion (ntn_),
// Perplexity (pplx-), RubyGems (rubygems_), Square (sq0atp- EAAA), Facebook (EAAM EAAC),
// Alibaba (LTAI), Atlassian (ATATT3), Azure AD client secrets (…Q~…), OpenShift
// (sha256~), PlanetScale (pscale_), Fly.io (fo1_ fm1a_ fm1r_ fm2_), Artifactory (AKCp),
// AWS Bedrock (ABSK, bedrock-api-key-), 1Password (A3- ops_eyJ), Adobe (p8e-), Clojars,
// Cloudflare origin CA (v1.0-), Duffel, EasyPost (EZAK), Flutterwave (FLWSECK_TEST-),
// Frame.io (fio-u-), Infracost (ico-), 42 Intra (s-s4t2), Octopus Deploy (API-), Prefect
// (pnu_), ReadMe (rdme_), Scalingo (tk-us-), Brevo (xkeysib-), SettleMint (sm_), Shippo,
// Sourcegraph (sgp_). The rules vendors leaves out, and why, are listed there.
//
// gitleaks' global stopwords apply too (a secret holding "abcdefghijklmnopqrstuvwxyz" is a
// placeholder); its path allowlists do not (the gatherer decides which files to read).
// Rules of this package's own:
//
//	OpenRouter API key  sk-or-v1- and 64 hex digits, the default provider's key
//	AWS secret key      40 base64 characters after aws_secret_access_key, secret_key,
//	                    SecretAccessKey, secretAccessKey (an INI file, an environment dump, a
//	                    dict a notebook printed, "aws configure set aws_secret_access_key
//	                    KEY"); AWS's documentation key (…EXAMPLEKEY) is allowed
//	password            <password>value</password> (Maven's settings.xml); a value after a
//	                    name ending in password or passwd at the start of a line or string or
//	                    quoted (gradle.properties' mavenPassword=, .pypirc, "Password: value"
//	                    in a program's output, {'password': '…'}); Password= or Pwd= after a
//	                    ';' in a connection string (ADO.NET, ODBC, JDBC); password=, passwd=
//	                    or pwd= in a URL's query (?…&password=value&…); curl's -u
//	                    user:password and -u token:. Only values that look like one (see
//	                    passwordValue): six characters or more of two classes, not code, a
//	                    placeholder, a number, a name, a type after a colon (Kotlin's and
//	                    Swift's "password: String", pydantic's "password: SecretStr"), or a
//	                    reference to where it is kept (an AWS ARN, a URL)
//	URL credentials     the password of a URL, any scheme (scheme://user:password@host, also
//	                    redis://:password@ and postgresql:\/\/… in a JSON string), checked as
//	                    a password and not a placeholder in disguise (credentialCheck); a
//	                    token as a URL's user (https://<token>@host, git's insteadOf)
//	Authorization header  the value after Authorization: Bearer, token or Basic (base64 of
//	                    user:password), in any file (a curl command, an HTTP file, a map of
//	                    headers, git's http.extraheader)
//	API key header      curl's -H with X-API-Key, X-Auth-Token, Private-Token and the like
//	Azure access key    AccountKey= and SharedAccessKey= in a connection string (the storage
//	                    emulator's published key is allowed)
//	registry credentials  docker's "auth" in a JSON document: base64 of user:password
//	<kind> (base64)     a token of any rule above, or a JSON document holding one, encoded in
//	                    base64 (a Kubernetes Secret's data, a .dockerconfigjson); found by the
//	                    encodings of the GitHub, GitLab, AWS, Google, OpenAI, Anthropic,
//	                    OpenRouter and Stripe prefixes and of '{"'
//
// Scan also holds a whole file back (Held) for: a PEM private key block (PrivateKey); one
// encoded in base64 (a kubeconfig's client-key-data, a Secret's tls.key), also wrapped at
// 64 or 76 columns (openssl, GNU base64) and at any alignment (base64 of a file or a JSON
// document holding a key); a private key's DER body in base64 without a PEM block's
// markers (PKCS #8, PKCS #1, SEC 1, PKCS #12: a PRIVATE_KEY= variable); a PuTTY private key
// (PuTTY-User-Key-File- with key data after Private-Lines:); a private JSON Web Key (a "d"
// member of 32 characters or more in a JSON document naming "kty"); password hashes in the
// shadow or htpasswd format (a line name:$id$salt$hash); and more candidates than its
// checks may look at (HeldUnchecked: a quarter of the file's size plus 256 KiB of windows
// and decodings), so a file made of token prefixes costs seconds, not minutes.
//
// The scan makes one pass over the content for the anchor bytes ('$' '-' 'k' 'A' '_' 'w'
// 'W' '@' '~' 'G' 'z') beside a byte that may stand there in a candidate, and runs a rule's
// expression only where the bytes around an anchor spell that rule's fixed prefix or
// name; the same pass finds the base64 ones: the first characters of the encodings ('Z'
// 'Q' '2' 'J'), "LS0t" (the encoding of "---") and the 'M' that starts a DER body. On $GOROOT/src (TestGOROOTFindings, BenchmarkScanGOROOT)
// Scan holds back two files, for the EC key of crypto/tls/example_test.go and the bare RSA
// key in base64 of crypto/x509/x509_test.go, and redacts one,
// cmd/go/internal/auth/gitauth_test.go, for the "password=secr3t" of its git credential
// helper fixtures.
package secrets
