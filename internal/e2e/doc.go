// Package e2e holds the end-to-end tests of consult: the built binary, driven over stdio and
// over streamable HTTP by the official TypeScript MCP SDK client (client.mjs), against the
// fake model upstream of providers/fake. See README.md; run with
//
//	npm ci --prefix internal/e2e && go test ./internal/e2e/
package e2e
