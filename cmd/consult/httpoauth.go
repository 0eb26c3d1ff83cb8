package main

import (
	"encoding/json"
	"net/http"
)

// oauthMessage is the advice of oauthRefusal. It comes first and short: Claude Code cuts what
// it shows after about 400 characters (and hides what looks like a path).
const oauthMessage = "consult does not use OAuth: it needs the header Authorization: Bearer <token> (e.g. claude mcp add ... --header 'Authorization: Bearer TOKEN'); " + tokenSource + "."

// oauthRefusal answers every path but /mcp: 404 with an OAuth error body (RFC 6749 section
// 5.2, RFC 7591 section 3.2.2) whose error_description says how to authenticate.
//
// An MCP client refused with 401 goes looking for OAuth: protected resource metadata (RFC
// 9728, /.well-known/oauth-protected-resource[/mcp]), authorization server metadata (RFC 8414,
// /.well-known/oauth-authorization-server, /.well-known/openid-configuration), then dynamic
// client registration (POST /register). The TypeScript SDK, which Claude Code and MCP
// Inspector are built on, moves past a 4xx from the metadata paths and reports the failed
// registration with its body: Claude Code and Inspector show it as "Dynamic Client
// Registration rejected (HTTP 404): <body>", the SDK's own auth() as the error_description.
// So the body is where the user learns that the token is missing.
func oauthRefusal(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusNotFound)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // clients show the body as it is: <token> must stay readable
	enc.Encode(oauthError{Error: "invalid_token", Description: oauthMessage})
}

// oauthError is an OAuth error response.
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}
