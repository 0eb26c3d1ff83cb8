package secrets

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"strings"
	"testing"
)

// wrap breaks s into lines of n characters, each ending in "\n" after indent, as GNU
// base64 (76 columns), openssl and PEM (64) write them.
func wrap(s string, n int, indent string) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(indent + s[:n] + "\n")
		s = s[n:]
	}
	b.WriteString(indent + s + "\n")
	return b.String()
}

// pkcs8 returns a fresh private key's PKCS #8 DER body in base64 (what sits between a PEM
// block's markers), of kind "rsa", "ec" or "ed25519".
func pkcs8(t testing.TB, kind string) string {
	t.Helper()
	var key any
	var err error
	switch kind {
	case "rsa":
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ec":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ed25519":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return b64(der)
}

// A shapeRow is one shape of secret (or of harmless text) in a file: what Scan must do
// with it. held, when not 0, is why the file is held back; else kind is what the secret
// is redacted as ("" for a harmless row, which must come back unchanged) and secret what
// must not be left in the output.
type shapeRow struct {
	name, content string
	held          Held
	kind, secret  string
}

// shapeRows are the shapes of issue 28 and the harmless shapes beside them. Every value is
// made of random bytes in the provider's format: none is a real credential.
func shapeRows(t testing.TB) []shapeRow {
	t.Helper()
	hex := func(n int) string { return rnd(hexDigits, n) }
	pw := "Vq7" + rnd(alnum, 8) + "#k2"
	awsSecret := rnd(alnum+"/+", 40)
	google := "AIza" + rnd(wordDash, 35)
	stripe := "sk_live_" + rnd(alnum, 24)
	ecPEM := string(pemKey(t))
	rsaBody := pkcs8(t, "rsa")
	ecBody := pkcs8(t, "ec")
	edBody := pkcs8(t, "ed25519")
	urlToken := hex(40)
	longPW := "Vq7" + rnd(alnum, 100) + "%23k2"
	rows := []shapeRow{
		// Connection strings.
		{"ado.net-password", `"Server=tcp:db.example.com,1433;Database=app;User ID=sa;Password=` + pw + `;Encrypt=true;"`, 0, kindPassword, pw},
		{"odbc-pwd", "Driver={ODBC Driver 18 for SQL Server};Server=db;Uid=sa;Pwd=" + pw + ";\n", 0, kindPassword, pw},
		{"jdbc-query-password", "url=jdbc:mysql://db.example.com:3306/app?user=deploy&password=" + pw + "&useSSL=true\n", 0, kindPassword, pw},
		{"jdbc-sqlserver", "jdbc:sqlserver://db.example.com:1433;databaseName=app;user=sa;password=" + pw + ";\n", 0, kindPassword, pw},
		{"query-password-last", `fetch("https://api.example.com/login?user=admin&password=` + pw + `")`, 0, kindPassword, pw},
		// Credential URLs, any scheme.
		{"url-postgres", "DATABASE_URL=postgres://app:" + pw + "@db.example.com:5432/app\n", 0, kindURL, pw},
		{"url-amqp", "broker_url = 'amqp://guest:" + pw + "@mq.example.com:5672//'\n", 0, kindURL, pw},
		{"url-mongodb-srv", `client = MongoClient("mongodb+srv://admin:` + pw + `@cluster0.example.mongodb.net/?retryWrites=true")`, 0, kindURL, pw},
		{"url-redis-no-user", "REDIS_URL=redis://:" + pw + "@cache.example.com:6379/0\n", 0, kindURL, pw},
		{"url-ftp", "mirror ftp://deploy:" + pw + "@files.example.com/pub\n", 0, kindURL, pw},
		{"url-https", "git clone https://ci-bot:" + pw + "@git.example.com/org/repo.git\n", 0, kindURL, pw},
		{"url-percent-encoded", "SMTP=smtp://mailer:p%40ss" + pw + "@smtp.example.com:587\n", 0, kindURL, pw},
		// A password longer than the 64 bytes credentialCheck once decoded into a fixed buffer
		// (that panicked the scan).
		{"url-long-password", "DATABASE_URL=postgres://app:" + longPW + "@db.example.com/app\n", 0, kindURL, longPW},
		{"curl-u-long-password", "curl -u deploy:" + longPW + " https://ci.example.com/api/json\n", 0, kindPassword, longPW},
		{"url-sidekiq", "source \"https://" + hex(8) + ":" + "1a2b3c4d" + "@gems.contribsys.com/\"\n", 0, kindURL, "1a2b3c4d"},
		// curl -u, a Stripe key as the user.
		{"curl-u-stripe", "curl https://api.stripe.com/v1/charges \\\n  -u " + stripe + ": \\\n  -d amount=2000\n", 0, kindStripe, stripe},
		{"curl-u-password", "curl -u deploy:" + pw + " https://ci.example.com/api/json\n", 0, kindPassword, pw},
		{"curl-user-quoted", "curl --user \"admin:" + pw + "\" https://example.com\n", 0, kindPassword, pw},
		{"curl-bearer", "curl -H \"Authorization: Bearer " + rnd(alnum, 40) + "\" https://api.example.com\n", 0, kindAuthorization, ""},
		// The name's closing quote, escaped or not, and blanks before the ':' or '='.
		{"json-bearer-spaced", "{\"authorization\"  : \"token " + rnd(alnum, 40) + "\"}\n", 0, kindAuthorization, ""},
		{"json-escaped-bearer", "{\"body\": \"{\\\"Authorization\\\":\\\"Bearer " + rnd(alnum, 40) + "\\\"}\"}\n", 0, kindAuthorization, ""},
		{"env-basic-upper", "AUTHORIZATION=Basic " + b64([]byte("deploy:"+pw)) + "\n", 0, kindAuthorization, b64([]byte("deploy:" + pw))},
		// A Google API key followed by & or ).
		{"google-ampersand", `<script src="https://maps.googleapis.com/maps/api/js?key=` + google + `&callback=initMap"></script>`, 0, kindGoogle, google},
		{"google-paren", "See the [map](https://maps.googleapis.com/maps/api/staticmap?center=Paris&key=" + google + ").\n", 0, kindGoogle, google},
		{"google-comma", "genai.configure(api_key=" + google + ", transport='rest')\n", 0, kindGoogle, google},
		// aws configure set.
		{"aws-configure-set", "aws configure set aws_access_key_id AKIA" + rnd(base32, 16) + "\naws configure set aws_secret_access_key " + awsSecret + " --profile prod\n", 0, kindAWSSecret, awsSecret},
		// Private keys in base64.
		{"pem-base64-76", "data:\n  tls.key: |\n" + wrap(b64([]byte(ecPEM)), 76, "    "), HeldEncodedKey, "", ""},
		{"pem-base64-64", "-----BEGIN DATA-----\n" + wrap(b64([]byte(ecPEM)), 64, ""), HeldEncodedKey, "", ""},
		{"pem-base64-misaligned-1", "key: " + b64([]byte("\n"+ecPEM)) + "\n", HeldEncodedKey, "", ""},
		{"pem-base64-misaligned-2", "key: " + b64([]byte("k\n"+ecPEM)) + "\n", HeldEncodedKey, "", ""},
		{"pem-base64-misaligned-wrapped", "blob: |\n" + wrap(b64([]byte(`{"name":"deploy","key":"`+strings.ReplaceAll(ecPEM, "\n", `\n`)+`"}`)), 76, "  "), HeldEncodedKey, "", ""},
		{"pem-base64-json-escaped", `{"tls.key": "` + strings.ReplaceAll(wrap(b64([]byte(ecPEM)), 76, ""), "\n", `\n`) + `"}`, HeldEncodedKey, "", ""},
		{"pkcs8-bare-rsa", "PRIVATE_KEY=" + rsaBody + "\n", HeldEncodedKey, "", ""},
		{"pkcs8-bare-rsa-wrapped", "private_key: |\n" + wrap(rsaBody, 64, "  "), HeldEncodedKey, "", ""},
		{"pkcs8-bare-ec", `{"signingKey": "` + ecBody + `"}`, HeldEncodedKey, "", ""},
		{"pkcs8-bare-ed25519", "ED25519_KEY='" + edBody + "'\n", HeldEncodedKey, "", ""},
		// A token in a .gitconfig URL.
		{"gitconfig-url-token", "[url \"https://oauth2:" + urlToken + "@gitlab.example.com/\"]\n\tinsteadOf = https://gitlab.example.com/\n", 0, kindURL, urlToken},
		{"gitconfig-url-token-user", "[url \"https://" + urlToken + "@github.com/\"]\n\tinsteadOf = https://github.com/\n", 0, kindURL, urlToken},
		{"gitconfig-extraheader", "[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic " + b64([]byte("x-access-token:"+urlToken)) + "\n", 0, kindAuthorization, b64([]byte("x-access-token:" + urlToken))},
		// A database URL's password in a notebook's output (JSON-escaped strings).
		{"notebook-db-url", `{"outputs": [{"output_type": "stream", "text": ["Connected to postgresql://analyst:` + pw + `@warehouse.example.com:5432/dw\n"]}]}`, 0, kindURL, pw},
		{"notebook-db-url-escaped", `{"cells": [{"source": ["engine = create_engine(\"postgresql+psycopg2://analyst:` + pw + `@warehouse.example.com/dw\")\n"]}]}`, 0, kindURL, pw},
		{"notebook-db-url-slashes", `{"data": {"text/plain": ["'postgresql:\/\/analyst:` + pw + `@warehouse.example.com\/dw'"]}}`, 0, kindURL, pw},
		// Azure connection strings' keys.
		{"azure-storage", "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + rnd(alnum+"+/", 86) + "==;EndpointSuffix=core.windows.net\n", 0, kindAzure, ""},
		{"azure-service-bus", `"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=` + rnd(alnum+"+/", 43) + `="`, 0, kindAzure, ""},
	}
	// Vendor tokens (gitleaks' default rules, each provider's format).
	for _, v := range []struct{ name, token, kind string }{
		{"slack-bot", "xoxb-" + rnd(digits, 12) + "-" + rnd(digits, 13) + "-" + rnd(alnum, 24), kindSlack},
		{"slack-user", "xoxp-" + rnd(digits, 12) + "-" + rnd(digits, 12) + "-" + rnd(digits, 13) + "-" + hex(32), kindSlack},
		{"slack-app", "xapp-1-A0" + rnd(upnum, 9) + "-" + rnd(digits, 13) + "-" + hex(64), kindSlack},
		{"github-fine-grained", "github_pat_11A" + rnd(upnum, 19) + "_" + rnd(alnum, 59), kindGitHub},
		{"gitlab-pat", "glpat-" + rnd(alnum+"_-", 20), kindGitLab},
		{"gitlab-deploy", "gldt-" + rnd(alnum, 20), kindGitLab},
		{"gitlab-runner", "glrt-" + rnd(alnum, 20), kindGitLab},
		{"gitlab-trigger", "glptt-" + hex(40), kindGitLab},
		{"gitlab-scim", "glsoat-" + rnd(alnum, 20), kindGitLab},
		{"gitlab-oauth-secret", "gloas-" + hex(64), kindGitLab},
		{"npm", "npm_" + rnd(alnum, 36), kindNpm},
		{"pypi", "pypi-AgEIcHlwaS5vcmc" + rnd(wordDash, 150), "PyPI token"},
		{"hugging-face", "hf_" + rnd("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 34), "Hugging Face token"},
		{"hugging-face-org", "api_org_" + rnd("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 34), "Hugging Face token"},
		{"sendgrid", "SG." + rnd(alnum+"_-", 22) + "." + rnd(alnum+"_-", 43), "SendGrid API key"},
		{"digitalocean-pat", "dop_v1_" + hex(64), "DigitalOcean token"},
		{"digitalocean-oauth", "doo_v1_" + hex(64), "DigitalOcean token"},
		{"digitalocean-refresh", "dor_v1_" + hex(64), "DigitalOcean token"},
		{"shopify", "shpat_" + hex(32), "Shopify token"},
		{"linear", "lin_api_" + rnd(alnum, 40), "Linear API key"},
		{"postman", "PMAK-" + hex(24) + "-" + hex(34), "Postman API key"},
		{"pulumi", "pul-" + hex(40), "Pulumi token"},
		{"heroku", "HRKU-AA" + rnd(alnum+"_-", 58), "Heroku API key"},
		{"grafana-service-account", "glsa_" + rnd(alnum, 32) + "_" + hex(8), "Grafana token"},
		{"grafana-cloud", "glc_" + rnd(alnum+"+/", 60) + "==", "Grafana token"},
		{"age", "AGE-SECRET-KEY-1" + rnd("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), "age secret key"},
		{"sentry-user", "sntryu_" + hex(64), "Sentry token"},
		{"notion", "ntn_" + rnd(digits, 11) + rnd(alnum, 35), "Notion token"},
		{"perplexity", "pplx-" + rnd(alnum, 48), "Perplexity API key"},
		{"rubygems", "rubygems_" + hex(48), "RubyGems token"},
		{"square", "sq0atp-" + rnd(alnum+"_-", 22), "Square token"},
		{"alibaba", "LTAI" + rnd(alnum, 20), "Alibaba access key"},
		{"atlassian", "ATATT3" + rnd(alnum+"_-", 186), "Atlassian API token"},
		{"openshift", "sha256~" + rnd(alnum+"_-", 43), "OpenShift token"},
		{"planetscale", "pscale_tkn_" + rnd(alnum, 43), "PlanetScale token"},
		{"flyio", "fo1_" + rnd(alnum+"_-", 43), "Fly.io token"},
		{"azure-ad", rnd(alnum, 3) + "8Q~" + rnd(alnum+"_~.-", 34), "Azure AD client secret"},
		{"artifactory", "AKCp" + rnd(alnum, 69), "Artifactory API key"},
		{"prefect", "pnu_" + rnd(alnum, 36), "Prefect token"},
		{"readme", "rdme_" + rnd(lowernum, 70), "ReadMe API key"},
		{"infracost", "ico-" + rnd(alnum, 32), "Infracost token"},
		{"brevo", "xkeysib-" + hex(64) + "-" + rnd(alnum, 16), "Brevo API key"},
		{"1password", "A3-" + rnd(upnum, 6) + "-" + rnd(upnum, 11) + "-" + rnd(upnum, 5) + "-" + rnd(upnum, 5) + "-" + rnd(upnum, 5), "1Password secret key"},
		{"clojars", "CLOJARS_" + rnd(lowernum, 60), "Clojars token"},
		{"easypost", "EZAK" + rnd(alnum, 54), "EasyPost API key"},
		{"shippo", "shippo_live_" + hex(40), "Shippo token"},
		{"duffel", "duffel_live_" + rnd(alnum, 43), "Duffel token"},
		{"frameio", "fio-u-" + rnd(alnum, 64), "Frame.io token"},
		{"bedrock", "ABSK" + rnd(alnum+"+/", 130), "AWS Bedrock API key"},
	} {
		// In a shell export, a YAML value and a URL's query.
		rows = append(rows,
			shapeRow{"vendor/" + v.name, "export TOKEN=" + v.token + "\n", 0, v.kind, v.token},
			shapeRow{"vendor/" + v.name + "/yaml", "auth:\n  token: \"" + v.token + "\"\n", 0, v.kind, v.token},
			shapeRow{"vendor/" + v.name + "/query", "GET /api?token=" + v.token + "&page=2\n", 0, v.kind, v.token})
	}
	// Harmless shapes: left as they are.
	for _, h := range []struct{ name, content string }{
		{"kotlin-password-string", "data class Login(\n    val user: String,\n    val password: String\n)\n"},
		{"kotlin-password-nullable", "class Form {\n    var password: String? = null\n    lateinit var confirmPassword: CharArray\n}\n"},
		{"swift-password-string", "struct Credentials {\n    let username: String\n    var password: String\n}\n"},
		{"pydantic-secretstr", "class Settings(BaseSettings):\n    database_url: str\n    password: SecretStr\n    api_token: SecretStr = Field(...)\n"},
		{"typescript-password", "interface User {\n  password: string;\n  passwordHash: Buffer\n}\n"},
		{"aws-policy-arns", "ManagedPolicyArns:\n  - arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess\n  - arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole\n  - arn:aws:iam::aws:policy/IAMUserChangePassword\n"},
		{"aws-policy-arn-password", "changePassword: arn:aws:iam::aws:policy/IAMUserChangePassword\npassword = arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf\n"},
		{"aws-policy-arn-json", `{"PolicyArn": "arn:aws:iam::aws:policy/AdministratorAccess", "ChangePassword": "arn:aws:iam::aws:policy/IAMUserChangePassword"}`},
		{"go-dsn-format", "dsn := fmt.Sprintf(\"postgres://%s:%s@%s/%s\", user, pass, host, db)\n"},
		{"url-placeholders", "# postgres://user:password@localhost:5432/db\n# redis://:${REDIS_PASSWORD}@cache:6379\n# amqp://guest:guest@localhost\n# https://<user>:<token>@example.com\n"},
		{"url-no-password", "git clone ssh://git@github.com/org/repo.git\nurl = https://user@example.com/\nmailto:someone@example.com\ngit@github.com:org/repo.git\n"},
		{"connection-placeholders", `"Server=.;Database=app;Trusted_Connection=True;" + ";Password=" + password + ";Pwd={0};"`},
		{"query-code", "q := \"?user=\" + u + \"&password=\" + url.QueryEscape(p)\n"},
		{"curl-placeholders", "curl -u \"$USER:$TOKEN\" https://example.com\ncurl -u ${{ secrets.USER }}:${{ secrets.PASS }} https://example.com\ncurl -u user:password https://example.com\ncurl -H \"Authorization: Bearer $TOKEN\" https://example.com\n"},
		{"authorization-code", "req.Header.Set(\"Authorization\", \"Bearer \"+token)\nheaders = {\"Authorization\": f\"Bearer {token}\"}\n"},
		{"public-key-base64", "pub: " + b64(mustPKIX(t)) + "\n"},
		{"certificate-base64", "tls.crt: " + b64([]byte("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUEXAMPLE\n-----END CERTIFICATE-----\n")) + "\n"},
		{"go-code", "for i := 0; i < len(s); i++ {\n\tif s[i] == '@' || strings.HasPrefix(s, \"SK\") {\n\t\treturn fmt.Errorf(\"%s://%s@%s\", scheme, user, host)\n\t}\n}\n"},
		{"pem-marker-in-code", "const marker = \"LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t\" // base64 of the marker alone\n"},
	} {
		rows = append(rows, shapeRow{"harmless/" + h.name, h.content, 0, "", ""})
	}
	return rows
}

// mustPKIX returns a fresh public key in PKIX DER.
func mustPKIX(t testing.TB) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// TestShapeTable checks every shape of shapeRows: the file held back with its reason, or
// the secret redacted as its kind, or, for a harmless row, the content unchanged.
func TestShapeTable(t *testing.T) {
	t.Parallel()
	for _, row := range shapeRows(t) {
		t.Run(row.name, func(t *testing.T) {
			out, kinds, held := Scan([]byte(row.content))
			switch {
			case row.held != 0:
				if held != row.held {
					t.Errorf("held %v, want %v (kinds %q)\n%s", held, row.held, kinds, row.content)
				}
			case row.kind == "":
				if held != 0 || kinds != nil || string(out) != row.content {
					t.Errorf("Scan = held %v kinds %q, want the content unchanged:\n got %s\nwant %s", held, kinds, out, row.content)
				}
			default:
				if held != 0 {
					t.Fatalf("held %v, want %q redacted", held, row.kind)
				}
				if !slicesContain(kinds, row.kind) {
					t.Errorf("kinds %q, want %q among them\n%s", kinds, row.kind, out)
				}
				if row.secret != "" && strings.Contains(string(out), row.secret) {
					t.Errorf("the secret %q is left in\n%s", row.secret, out)
				}
			}
		})
	}
}
