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
	"context"

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

// resourceNotFound is the JSON-RPC error response to request id (canonical JSON) for a
// resource uri that cannot be read, for protocol version (the request's _meta version, ""
// for none): -32602 from 2026-07-28 on, -32002 before, with data.uri either way.
func resourceNotFound(id, uri, why, version string) []byte {
	code := mcp.RESOURCE_NOT_FOUND
	if mcp.IsModernProtocol(version) {
		code = mcp.INVALID_PARAMS
	}
	msg := "Resource not found"
	if why != "" {
		msg += ": " + why
	}
	return rpcError(id, code, msg, map[string]string{"uri": uri})
}

// inPlaceOfError is the shim's replacement of mcp-go's response that writes resp in place
// of an error response; a response that is not an error (the resource came into being
// meanwhile) passes unchanged.
func inPlaceOfError(resp []byte) func([]byte) []byte {
	return func(theirs []byte) []byte {
		if m, ok := peekOutgoing(theirs); !ok || m.Error == nil {
			return theirs
		}
		return resp
	}
}
