// Package e2e holds the end-to-end tests of consult: the built binary, driven over stdio and
// over streamable HTTP by the official TypeScript MCP SDK client (client.mjs) and the official
// Go SDK, against the fake model upstream of internal/testkit/fake. See README.md; `make test` installs
// the TypeScript SDK and runs them, or by hand:
//
//	npm ci --prefix internal/testkit/e2e --no-audit --no-fund && go test ./internal/testkit/e2e/
//
// Without Node or the SDK, go test leaves out the tests that need them and says so in one line.
package e2e
