package mcpserver

// Errors of resources/read as the MCP specification has them, around mcp-go v1.2.1. A
// resource handler that fails makes mcp-go answer -32603 (internal error) with the
// handler's words (server/handler_errors.go): it has no typed error a handler can return
// for a resource that does not exist. The specification answers a resource not found with
// -32002 (2025-11-25 and earlier) or -32602, invalid params (2026-07-28), and data.uri. The
// layer here reads each resources/read on its way in, asks the server's ResourceLookup
// whether the caller may read its URI, and when not, replaces mcp-go's error response to
// that request, on its way out, with the right one. A response that is not an error (the
// resource came into being meanwhile) passes unchanged.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

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

// resourceMiss is the error response a resources/read gets when lookup refuses its URI: its
// JSON-RPC id (canonical JSON) and the whole response. ok is false for any other message,
// and for a URI the caller may read.
func resourceMiss(ctx context.Context, lookup ResourceLookup, line []byte) (id string, resp []byte, ok bool) {
	if lookup == nil || !bytes.Contains(line, []byte(mcp.MethodResourcesRead)) {
		return "", nil, false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			URI  string `json:"uri"`
			Meta struct {
				Version string `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != string(mcp.MethodResourcesRead) {
		return "", nil, false
	}
	id = canonicalID(m.ID)
	if id == "" {
		return "", nil, false
	}
	found, why := lookup(ctx, m.Params.URI)
	if found {
		return "", nil, false
	}
	return id, resourceNotFound(m.ID, m.Params.URI, why, m.Params.Meta.Version), true
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

// maxMisses bounds the resources/read requests a stdio session has waiting for their error
// to be replaced: each is answered at once, so a few at most are ever waiting.
const maxMisses = 1024

// stdioMisses holds, for one stdio session, the error responses to send instead of
// mcp-go's, by request id.
type stdioMisses struct {
	mu sync.Mutex
	m  map[string][]byte
}

// resourceIn passes the client's stdio through unchanged, noting each resources/read whose
// URI the lookup refuses (in the goroutine that reads the input, before mcp-go reads the
// request).
type resourceIn struct {
	ctx    context.Context
	r      io.Reader
	lookup ResourceLookup
	misses *stdioMisses
	line   []byte
	long   bool // the current line outgrew maxObservedLine: not a request worth reading
}

func (in *resourceIn) Read(p []byte) (int, error) {
	n, err := in.r.Read(p)
	data := p[:n]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		chunk := data
		if i >= 0 {
			chunk = data[:i]
		}
		if !in.long && len(in.line)+len(chunk) <= maxObservedLine {
			in.line = append(in.line, chunk...)
		} else {
			in.long, in.line = true, in.line[:0]
		}
		if i < 0 {
			break
		}
		if !in.long {
			if id, resp, ok := resourceMiss(in.ctx, in.lookup, in.line); ok {
				in.misses.mu.Lock()
				if len(in.misses.m) < maxMisses {
					in.misses.m[id] = resp
				}
				in.misses.mu.Unlock()
			}
		}
		in.line, in.long = in.line[:0], false
		data = data[i+1:]
	}
	return n, err
}

// resourceOut writes mcp-go's stdio output, each Write one message and its newline, with
// the error response to a refused resources/read replaced.
type resourceOut struct {
	w      io.Writer
	misses *stdioMisses
}

func (out *resourceOut) Write(p []byte) (int, error) {
	out.misses.mu.Lock()
	waiting := len(out.misses.m) > 0
	out.misses.mu.Unlock()
	if !waiting {
		return out.w.Write(p)
	}
	id := errorResponseID(bytes.TrimSpace(p))
	out.misses.mu.Lock()
	resp, ok := out.misses.m[id]
	delete(out.misses.m, id)
	out.misses.mu.Unlock()
	if id == "" || !ok {
		return out.w.Write(p)
	}
	if _, err := out.w.Write(append(resp, '\n')); err != nil {
		return 0, err
	}
	return len(p), nil
}

// resourceStdio wraps a stdio session's input with the layer, when ctx carries a
// ResourceLookup, and returns the wrapper of its output to match: the input as it is read
// from the client (before anything else reads it), the output as mcp-go writes it (before
// anything else drops or passes it).
func resourceStdio(ctx context.Context, in io.Reader) (io.Reader, func(io.Writer) io.Writer) {
	lookup := resourceLookup(ctx)
	if lookup == nil {
		return in, func(out io.Writer) io.Writer { return out }
	}
	misses := &stdioMisses{m: map[string][]byte{}}
	return &resourceIn{ctx: ctx, r: in, lookup: lookup, misses: misses},
		func(out io.Writer) io.Writer { return &resourceOut{w: out, misses: misses} }
}

// ResourceErrors wraps an MCP streamable HTTP handler with the layer: a resources/read
// posted for a URI that the request context's ResourceLookup refuses gets the
// specification's error, in place of mcp-go's, in a JSON body or an SSE event alike.
func ResourceErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lookup := resourceLookup(r.Context())
		if lookup == nil || r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "consult: reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		id, resp, ok := resourceMiss(r.Context(), lookup, body)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&resourceResponse{ResponseWriter: w, id: id, resp: resp}, r)
	})
}

// resourceResponse is the response to a refused resources/read posted over HTTP: mcp-go's
// error response to it, a JSON body or the data of an SSE event, is replaced.
type resourceResponse struct {
	http.ResponseWriter
	id   string
	resp []byte
}

func (rw *resourceResponse) Write(p []byte) (int, error) {
	data := bytes.TrimSpace(p)
	sse := bytes.HasPrefix(data, []byte("event:")) || bytes.HasPrefix(data, []byte("data:")) || bytes.HasPrefix(data, []byte("id:"))
	if sse {
		data = sseData(data)
	}
	if rw.resp == nil || errorResponseID(data) != rw.id {
		return rw.ResponseWriter.Write(p)
	}
	out := append(rw.resp, '\n')
	if sse {
		out = bytes.Replace(p, data, rw.resp, 1)
	}
	rw.resp = nil
	if _, err := rw.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush sends what was written; mcp-go streams SSE only through a writer that can flush.
func (rw *resourceResponse) Flush() {
	if f, ok := rw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (rw *resourceResponse) Unwrap() http.ResponseWriter { return rw.ResponseWriter }
