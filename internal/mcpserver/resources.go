package mcpserver

// Errors of resources/read as the MCP specification has them, around mcp-go v1.2.1. A
// resource handler that fails makes mcp-go answer -32603 (internal error) with the
// handler's words (server/handler_errors.go): it has no typed error a handler can return
// for a resource that does not exist. The specification answers a resource not found with
// -32002 (2025-11-25 and earlier) or -32602, invalid params (2026-07-28), and data.uri. The
// hook that sees every request first (handler.beforeRequest) asks the ResourceLookup in the
// request's context whether the caller may read its URI, and when not, the shim in front of
// mcp-go (cancel.go) replaces mcp-go's error response to that request with the right one, on
// stdio and HTTP alike. A response that is not an error (the resource came into being
// meanwhile) passes unchanged.

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// ResourceLookup reports whether the caller of ctx may read the resource uri; when it may
// not (no such resource, expired, malformed, another owner's), why, in words for the
// error's message.
type ResourceLookup func(ctx context.Context, uri string) (ok bool, why string)

type resourceLookupKey struct{}

// WithResourceLookup returns ctx carrying lookup for the transports served under it
// (ServeStdio's ctx; for HTTP, the server's base context, which every request's context
// comes from): resources/read of a URI lookup refuses is answered with the specification's
// error for a resource not found.
func WithResourceLookup(ctx context.Context, lookup ResourceLookup) context.Context {
	return context.WithValue(ctx, resourceLookupKey{}, lookup)
}

// resourceLookup is the lookup ctx carries, or nil.
func resourceLookup(ctx context.Context) ResourceLookup {
	l, _ := ctx.Value(resourceLookupKey{}).(ResourceLookup)
	return l
}

// resourceNotFound is the JSON-RPC error response to request id for a resource uri that
// cannot be read, for protocol version (the request's _meta version, "" for none): -32602
// from 2026-07-28 on, -32002 before, with data.uri either way.
func resourceNotFound(id json.RawMessage, uri, why, version string) []byte {
	code := mcp.RESOURCE_NOT_FOUND
	if mcp.IsModernProtocol(version) {
		code = mcp.INVALID_PARAMS
	}
	msg := "Resource not found"
	if why != "" {
		msg += ": " + why
	}
	resp, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int               `json:"code"`
			Message string            `json:"message"`
			Data    map[string]string `json:"data"`
		} `json:"error"`
	}{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: struct {
		Code    int               `json:"code"`
		Message string            `json:"message"`
		Data    map[string]string `json:"data"`
	}{code, msg, map[string]string{"uri": uri}}})
	return resp
}

// inPlaceOfError is the shim's replacement of mcp-go's response that writes resp in place
// of an error response; a response that is not an error (the resource came into being
// meanwhile) passes unchanged.
func inPlaceOfError(resp []byte) func([]byte) []byte {
	return func(theirs []byte) []byte {
		if errorResponseID(theirs) == "" {
			return theirs
		}
		return resp
	}
}

// errorResponseID is the id (canonical JSON) of data when it is a JSON-RPC error response;
// "" for anything else. Like peekOutgoing, it reads no further than the id and the "error"
// member's name.
func errorResponseID(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	var id json.RawMessage
	isError := false
	for dec.More() && (id == nil || !isError) {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		switch tok {
		case "id":
			if dec.Decode(&id) != nil {
				return ""
			}
			continue
		case "method", "result":
			return "" // a request, a notification or a success
		case "error":
			isError = true
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	if !isError {
		return ""
	}
	return canonicalID(id)
}
