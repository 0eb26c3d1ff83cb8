package mcpserver

// Cancellation as the MCP specification has it, around mcp-go v1.2.1. This file is the
// whole shim; it reads the messages on their way in and out and changes only these:
//
//  1. mcp-go's streamable HTTP transport (validateModernRequest in
//     server/streamable_http_modern.go) answers 400 "missing or invalid _meta field
//     io.modelcontextprotocol/protocolVersion" to a notification posted with the header
//     Mcp-Protocol-Version 2026-07-28 but without that _meta field. The specification
//     (2026-07-28, "Protocol version": the _meta field is required on requests, optional on
//     notifications) allows it, and the official Go SDK v1.8.0 sends its
//     notifications/cancelled so; after the 400 it closes the session. httpShim copies the
//     header's version into such a notification's _meta before mcp-go sees it (a
//     notifications/cancelled of 2026-07-28 never reaches mcp-go: point 5).
//  2. mcp-go answers a cancelled request anyway: its transports write whatever
//     MCPServer.HandleMessage returns, and a tool call always returns a response
//     (server/request_handler.go). The specification (basic/utilities/cancellation: "the
//     receiver SHOULD NOT send a response for the cancelled request") says not to, and the
//     TypeScript SDK reports the stray response as an error ("unknown message ID").
//     stdioOut and httpResponse drop the response to a request whose cancellation arrived,
//     and the progress notifications of that request not yet written (mcp-go queues them
//     apart from responses and hands them to any stream of the session; the client has
//     forgotten their token, and the TypeScript SDK reports each as an error).
//  3. mcp-go consumes notifications/cancelled itself (MCPServer.handleNotification cancels
//     the request's context with context.Canceled and never calls a notification handler),
//     so a handler cannot learn the reason. The shim records each reason on the way in;
//     callContext gives the tool handler a context whose cause says why the client
//     cancelled (consultation.ErrClientGaveUp or consultation.ErrUserCancelled). The
//     handler finds its JSON-RPC id through a BeforeCallTool hook (rememberRequestID).
//  4. A tool call may wait in mcp-go's queue for a worker (stdio) before its handler runs,
//     and a call's deadline runs from its arrival. The shim records when each request
//     arrived, as it reads it; callContext hands that moment to the handler, which gives it
//     to the consultation (consultation.WithArrival).
//  5. A cancellation is its sender's. A JSON-RPC id names a request only within the channel
//     that sent it: the process on stdio (one client), the session (Mcp-Session-Id, a random
//     id mcp-go makes) over HTTP before 2026-07-28. A 2026-07-28 request over HTTP has no
//     session: mcp-go serves each one in a session of its own without an id, and keys its
//     cancellations by the id alone (inflightKey), so any client's notifications/cancelled
//     would stop every call with that id (all clients share the server's one bearer token).
//     In 2026-07-28 the client's closing a call's stream is its cancellation
//     (basic/patterns/cancellation: "No notifications/cancelled message is required or
//     expected"), and the stream is the only mark of the sender: the notification posted
//     apart has none. So the shim keeps such notifications from mcp-go (202 Accepted), and
//     one gives its reason to the call with its id whose own client closed its stream within
//     reasonGrace of it (the latest such, and only one); it cancels nothing by itself. A
//     connection carries one request at a time (consult serves HTTP/1.1), so no other
//     message can share a call's connection while it runs.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/consultmcp/consult/consultation"
)

// CancelCause maps the reason of a client's notifications/cancelled to the cause a
// consultation sees: consultation.ErrClientGaveUp when the reason says the client's own time
// limit passed ("timed out", "timeout", the TypeScript SDK's -32001 RequestTimeout, the Go
// SDKs' "context deadline exceeded"); consultation.ErrUserCancelled when it says the user
// aborted the call (an AbortError, "user-cancel", "interrupted"); else
// consultation.ErrClientCancelled, a cancel that does not say why (Codex's "MCP request
// cancelled by caller", which it also sends when its own tool timeout passes).
func CancelCause(reason string) error {
	r := strings.ToLower(reason)
	for _, s := range []string{"timed out", "timeout", "-32001", "deadline exceeded"} {
		if strings.Contains(r, s) {
			return consultation.ErrClientGaveUp
		}
	}
	for _, s := range []string{"abort", "user", "interrupt"} {
		if strings.Contains(r, s) {
			return consultation.ErrUserCancelled
		}
	}
	return consultation.ErrClientCancelled
}

// cancelKey names a client request: its session (empty on stdio; Mcp-Session-Id over HTTP
// before 2026-07-28; a 2026-07-28 HTTP request's own streamScope) and its JSON-RPC id in
// canonical JSON.
type cancelKey struct{ session, id string }

// streamScopePrefix begins the session of a 2026-07-28 HTTP request, which is the request
// alone: a NUL, which no header value can carry (net/http refuses the request), so that no
// client can name another's request by its Mcp-Session-Id.
const streamScopePrefix = "\x00stream "

// isStreamScope reports whether session is a 2026-07-28 HTTP request's own.
func isStreamScope(session string) bool { return strings.HasPrefix(session, streamScopePrefix) }

// cancelState is what the shim knows of one request in flight.
type cancelState struct {
	cancelled bool
	reason    string
	done      chan struct{} // closed when cancelled
	token     string        // the request's progress token, canonical JSON
	arrived   time.Time     // when the shim read the request
	// streamEnded is when the client closed the stream of a 2026-07-28 HTTP request; zero
	// while it is open.
	streamEnded time.Time
}

// mark records the client's cancellation with its reason.
func (st *cancelState) mark(reason string) {
	st.cancelled, st.reason = true, reason
	close(st.done)
}

// cancels tracks the requests in flight on one transport and the cancellations that named
// them. A cancellation of a request not in flight is ignored (it finished first), so the
// map holds no more than the requests running.
type cancels struct {
	mu       sync.Mutex
	inflight map[cancelKey]*cancelState
	tokens   map[cancelKey]cancelKey // progress token (in its session) to request
	// gone are the progress tokens of the last cancelled requests that ended, oldest
	// first: mcp-go queues notifications apart from responses, so a heartbeat may be
	// written after the response it preceded.
	gone []cancelKey
	// unclaimed are the 2026-07-28 cancellations no closed stream has claimed yet, oldest
	// first: one may be read before the server has seen its call's stream close.
	unclaimed []streamCancel
	// replies rewrite the response to a request before it is written (tasks.go): set
	// while mcp-go handles the request, taken when its response goes out.
	replies map[cancelKey]func(resp []byte) []byte
	// written counts the progress notifications gone out per token (in its session), and
	// wrote is signalled at each: a call's result waits for its own notifications, since
	// mcp-go writes notifications apart from results and one sent just before a result
	// could otherwise follow it (reporter.settle).
	written map[cancelKey]int
	wrote   *sync.Cond
}

// replace arranges for the response to request k to be written as f makes it of mcp-go's.
func (c *cancels) replace(k cancelKey, f func(resp []byte) []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replies[k] = f
}

// replaced is resp, the response to request k, as its replacement makes it; nil when there
// is none. The replacement is used once.
func (c *cancels) replaced(k cancelKey, resp []byte) []byte {
	c.mu.Lock()
	f, ok := c.replies[k]
	delete(c.replies, k)
	c.mu.Unlock()
	if !ok {
		return nil
	}
	return f(resp)
}

// streamCancel is a 2026-07-28 notifications/cancelled: the id it names, its reason and
// when it arrived.
type streamCancel struct {
	id, reason string
	at         time.Time
}

// maxUnclaimed bounds the cancellations waiting for their stream's end: past it the oldest
// is forgotten (a flood of them costs no more).
const maxUnclaimed = 64

// goneTokens is how many tokens of ended, cancelled requests are remembered.
const goneTokens = 64

func newCancels() *cancels {
	c := &cancels{inflight: make(map[cancelKey]*cancelState), tokens: make(map[cancelKey]cancelKey), written: make(map[cancelKey]int),
		replies: make(map[cancelKey]func([]byte) []byte)}
	c.wrote = sync.NewCond(&c.mu)
	return c
}

// maxWrittenTokens bounds the tokens whose written notifications are counted at once: a
// token's count goes when its call settles, and this catches what a call that never settles
// (a progress written after its result) leaves.
const maxWrittenTokens = 4096

// noteProgress records that a progress notification with token (canonical JSON) in session
// has gone out, or was dropped: either way it can no longer follow its call's result.
func (c *cancels) noteProgress(session, token string) {
	if token == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.written) >= maxWrittenTokens {
		clear(c.written)
	}
	c.written[cancelKey{session, token}]++
	c.wrote.Broadcast()
}

// awaitProgress waits until n progress notifications with token k have gone out (or were
// dropped), or until limit, and forgets k's count.
func (c *cancels) awaitProgress(k cancelKey, n int, limit time.Duration) {
	stop := time.AfterFunc(limit, func() {
		c.mu.Lock()
		c.wrote.Broadcast()
		c.mu.Unlock()
	})
	defer stop.Stop()
	deadline := time.Now().Add(limit)
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.written[k] < n && time.Now().Before(deadline) {
		c.wrote.Wait()
	}
	delete(c.written, k)
}

// begin records request k in flight, with its progress token (canonical JSON; "" for none)
// and the moment it arrived.
func (c *cancels) begin(k cancelKey, token string, arrived time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight[k] = &cancelState{done: make(chan struct{}), token: token, arrived: arrived}
	if token != "" {
		tk := cancelKey{k.session, token}
		c.tokens[tk] = k
		c.gone = slices.DeleteFunc(c.gone, func(g cancelKey) bool { return g == tk })
	}
}

// progressCancelled reports whether a progress notification with token (canonical JSON)
// belongs to a request the client cancelled: the client has forgotten the token.
func (c *cancels) progressCancelled(session, token string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	tk := cancelKey{session, token}
	if slices.Contains(c.gone, tk) {
		return true
	}
	k, ok := c.tokens[tk]
	if !ok {
		return false
	}
	st, ok := c.inflight[k]
	return ok && st.cancelled
}

// cancel records the client's cancellation of k with its reason.
func (c *cancels) cancel(k cancelKey, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.inflight[k]; ok && !st.cancelled {
		st.mark(reason)
	}
}

// end forgets k and reports whether it was cancelled.
func (c *cancels) end(k cancelKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.inflight[k]
	if !ok {
		return false
	}
	delete(c.inflight, k)
	if st.token != "" {
		tk := cancelKey{k.session, st.token}
		delete(c.tokens, tk)
		if st.cancelled {
			if len(c.gone) == goneTokens {
				c.gone = c.gone[1:]
			}
			c.gone = append(c.gone, tk)
		}
	}
	return st.cancelled
}

// cancelStream gives a 2026-07-28 cancellation of id, which arrived at now, to the call
// with that id whose client closed its stream latest within reasonGrace before now, if
// any; else it keeps it for a stream that ends within reasonGrace after (streamEnded).
func (c *cancels) cancelStream(id, reason string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var claim *cancelState
	for k, st := range c.inflight {
		if isStreamScope(k.session) && k.id == id && !st.cancelled && !st.streamEnded.IsZero() &&
			now.Sub(st.streamEnded) <= reasonGrace && (claim == nil || st.streamEnded.After(claim.streamEnded)) {
			claim = st
		}
	}
	if claim != nil {
		claim.mark(reason)
		return
	}
	c.unclaimed = slices.DeleteFunc(c.unclaimed, func(u streamCancel) bool { return now.Sub(u.at) > reasonGrace })
	if len(c.unclaimed) == maxUnclaimed {
		c.unclaimed = c.unclaimed[1:]
	}
	c.unclaimed = append(c.unclaimed, streamCancel{id, reason, now})
}

// streamEnded records that the client closed the stream of the 2026-07-28 request k at
// now, and gives it the latest cancellation of its id that arrived within reasonGrace
// before and no stream has claimed.
func (c *cancels) streamEnded(k cancelKey, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.inflight[k]
	if !ok || !isStreamScope(k.session) || !st.streamEnded.IsZero() {
		return
	}
	st.streamEnded = now
	for i := len(c.unclaimed) - 1; i >= 0 && !st.cancelled; i-- {
		if u := c.unclaimed[i]; u.id == k.id && now.Sub(u.at) <= reasonGrace {
			st.mark(u.reason)
			c.unclaimed = slices.Delete(c.unclaimed, i, i+1)
		}
	}
}

// state is what the shim knows of request k now; false when it is not in flight.
func (c *cancels) state(k cancelKey) (cancelState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.inflight[k]
	if !ok {
		return cancelState{}, false
	}
	return *st, true
}

// await is k's state after waiting up to grace for its cancellation to arrive.
func (c *cancels) await(k cancelKey, grace time.Duration) cancelState {
	if st, ok := c.state(k); ok && grace > 0 {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-st.done:
		case <-t.C:
		}
	}
	st, _ := c.state(k)
	return st
}

// reasonGrace is how long a call whose HTTP request ended waits for the client's
// notifications/cancelled before it stops without a reason. The official Go SDK closes the
// call's stream first and posts the cancellation after it, a loopback round trip later,
// which a busy machine can stretch: without the wait, a call the user cancelled would read
// as a client that went away. A cancellation that comes ends the wait at once; a client that
// sends none (the stream's end is the cancellation in 2026-07-28) costs this much delay
// before the upstream request is closed.
const reasonGrace = 200 * time.Millisecond

// cancelScope is put in the context of every request a shim passes on, so the handler can
// look its cancellation up.
type cancelScope struct {
	c       *cancels
	session string
	grace   time.Duration // how long to wait for a reason after the request ended (HTTP)
}

type cancelScopeKey struct{}

// canonicalID is id (any JSON value) as canonical JSON: the same for the id a client sent,
// the id mcp-go hands to hooks, and the id in its response. "" for no id.
func canonicalID(id any) string {
	if raw, ok := id.(json.RawMessage); ok {
		if len(raw) == 0 {
			return ""
		}
		if err := json.Unmarshal(raw, &id); err != nil {
			return ""
		}
	}
	if id == nil {
		return ""
	}
	b, err := json.Marshal(id)
	if err != nil {
		return ""
	}
	return string(b)
}

// requestIDMeta is the _meta key under which rememberRequestID leaves a tool call's JSON-RPC
// id for its handler; whatever a client put there is overwritten.
const requestIDMeta = "consult/jsonrpc-id"

// rememberRequestID is a BeforeCallTool hook: mcp-go passes the hook the request's id, and
// the handler the request the hook may change.
func rememberRequestID(_ context.Context, id any, req *mcp.CallToolRequest) {
	if req.Params.Meta == nil {
		req.Params.Meta = &mcp.Meta{}
	}
	req.Params.Meta.SetMetaField(requestIDMeta, canonicalID(id))
}

// requestKey is the request of the tool call req in ctx's shim; false without a shim or id.
func requestKey(ctx context.Context, req mcp.CallToolRequest) (cancelScope, cancelKey, bool) {
	sc, ok := ctx.Value(cancelScopeKey{}).(cancelScope)
	id, _ := req.Params.Meta.GetMetaField(requestIDMeta).(string)
	if !ok || id == "" {
		return sc, cancelKey{}, false
	}
	return sc, cancelKey{sc.session, id}, true
}

// callContext returns the context a tool handler runs in: it carries the moment the shim
// read the call (consultation.WithArrival), and ends when ctx ends, with CancelCause of the
// client's reason when the client cancelled the call, else with ctx's cause. stop releases
// it. Without a shim, or for a line too long to read, it is ctx.
func callContext(ctx context.Context, req mcp.CallToolRequest) (_ context.Context, stop func()) {
	sc, k, ok := requestKey(ctx, req)
	if !ok {
		return ctx, func() {}
	}
	if st, ok := sc.c.state(k); ok {
		ctx = consultation.WithArrival(ctx, st.arrived)
	}
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stopAfter := context.AfterFunc(ctx, func() {
		if st := sc.c.await(k, sc.grace); st.cancelled {
			cancel(CancelCause(st.reason))
			return
		}
		cancel(context.Cause(ctx))
	})
	return cctx, func() {
		stopAfter()
		cancel(context.Canceled)
	}
}

// message is the part of a JSON-RPC message the shim reads.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

func (m *message) isRequest() bool  { return m.Method != "" && canonicalID(m.ID) != "" }
func (m *message) isResponse() bool { return m.Method == "" && (m.Result != nil || m.Error != nil) }

// observeIncoming records what a client message that arrived at now means for cancellation:
// a request begins, a notifications/cancelled marks its request cancelled with its reason.
func (c *cancels) observeIncoming(session string, m *message, now time.Time) {
	switch {
	case m.isRequest():
		c.begin(cancelKey{session, canonicalID(m.ID)}, paramsOf(m.Params).meta, now)
	case m.Method == string(mcp.MethodNotificationCancelled):
		if p := paramsOf(m.Params); p.requestID != "" {
			c.cancel(cancelKey{session, p.requestID}, p.reason)
		}
	}
}

// paramsOf reads the members of a message's params the shim needs: a request's
// _meta.progressToken (meta), a notifications/cancelled's requestId and reason, a progress
// notification's progressToken (token). Ids and tokens are canonical JSON, "" for none.
func paramsOf(params json.RawMessage) (p struct{ meta, requestID, reason, token string }) {
	var m struct {
		RequestID     json.RawMessage `json:"requestId"`
		Reason        json.RawMessage `json:"reason"`
		ProgressToken json.RawMessage `json:"progressToken"`
		Meta          struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &m) == nil {
		p.meta, p.requestID, p.token = canonicalID(m.Meta.ProgressToken), canonicalID(m.RequestID), canonicalID(m.ProgressToken)
		_ = json.Unmarshal(m.Reason, &p.reason) // a reason that is not a string is none
	}
	return p
}

// outgoing is what becomes of m, a message to the client of session whose JSON is data:
// dropped (the response to a request the client cancelled, or a progress notification of
// one), written as out in its place (a response replaced, see replace), or written as it is
// (out nil). A response ends its request.
func (c *cancels) outgoing(session string, m *message, data []byte) (out []byte, drop bool) {
	switch {
	case m.Method == "notifications/progress":
		tok := paramsOf(m.Params).token
		return nil, tok != "" && c.progressCancelled(session, tok)
	case m.isResponse():
		k := cancelKey{session, canonicalID(m.ID)}
		out = c.replaced(k, data)
		return out, c.end(k)
	}
	return nil, false
}

// peekOutgoing reads what the shim needs of an outgoing message, mcp-go's JSON: its id,
// its method, and the params of a progress notification. It reads the members in order
// and stops at a response's "result" or "error" once it has the id (mcp-go writes the id
// first), so a response is never decoded beyond its head, however large its result; the
// message then has an empty, non-nil Result or Error. ok is false when data does not start
// as a JSON object.
func peekOutgoing(data []byte) (m message, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return m, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return m, false
		}
		var into any = new(json.RawMessage) // a member the shim does not need: skipped
		switch tok {
		case "id":
			into = &m.ID
		case "method":
			into = &m.Method
		case "params":
			if m.Method != "" && m.Method != "notifications/progress" {
				return m, true // the params of another message are never needed
			}
			into = &m.Params
		case "result", "error":
			member := &m.Result
			if tok == "error" {
				member = &m.Error
			}
			if m.ID != nil {
				*member = json.RawMessage{}
				return m, true
			}
			into = member
		}
		if err := dec.Decode(into); err != nil {
			return m, false
		}
	}
	return m, true
}

// maxObservedLine bounds the stdio line the shim buffers to read; longer lines pass
// through unread (a cancellation is a few hundred bytes).
const maxObservedLine = 4 << 20

// stdioIn passes the client's stdio through unchanged. It reads it as soon as it arrives,
// stamping each message as it reads it (observe), and holds up to readAheadChunks reads
// until mcp-go takes them: mcp-go reads one line at a time and handles it before it reads
// the next, so on a busy server a message would otherwise be stamped only when the messages
// before it had been handled.
type stdioIn struct {
	c       *cancels
	line    []byte
	skipped bool          // the current line outgrew maxObservedLine
	chunks  chan []byte   // reads mcp-go has not taken yet
	done    chan struct{} // closed by stop: the reading goroutine ends
	err     error         // the input's error, once chunks is closed
	rest    []byte        // what mcp-go has not taken of the current chunk
}

// readAheadChunks bounds what stdioIn holds: 64 reads of 32 KiB, 2 MiB at most.
const (
	readAheadChunks = 64
	readAheadSize   = 32 << 10
)

// newStdioIn starts reading r.
func newStdioIn(r io.Reader, c *cancels) *stdioIn {
	s := &stdioIn{c: c, chunks: make(chan []byte, readAheadChunks), done: make(chan struct{})}
	go func() {
		defer close(s.chunks)
		for {
			buf := make([]byte, readAheadSize)
			n, err := r.Read(buf)
			if n > 0 {
				s.observe(buf[:n], time.Now()) // every line read here arrived by now
				select {
				case s.chunks <- buf[:n]:
				case <-s.done:
					return
				}
			}
			if err != nil {
				s.err = err
				return
			}
		}
	}()
	return s
}

// observe records what each line that ends in data means for cancellation.
func (s *stdioIn) observe(data []byte, now time.Time) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		chunk := data
		if i >= 0 {
			chunk = data[:i]
		}
		if !s.skipped && len(s.line)+len(chunk) <= maxObservedLine {
			s.line = append(s.line, chunk...)
		} else {
			s.skipped, s.line = true, s.line[:0]
		}
		if i < 0 {
			return
		}
		if !s.skipped {
			var m message
			if json.Unmarshal(s.line, &m) == nil {
				s.c.observeIncoming("", &m, now)
			}
		}
		s.line, s.skipped = s.line[:0], false
		data = data[i+1:]
	}
}

func (s *stdioIn) Read(p []byte) (int, error) {
	if len(s.rest) == 0 {
		chunk, ok := <-s.chunks
		if !ok {
			return 0, s.err
		}
		s.rest = chunk
	}
	n := copy(p, s.rest)
	s.rest = s.rest[n:]
	return n, nil
}

// stop ends the reading goroutine once its read returns.
func (s *stdioIn) stop() { close(s.done) }

// stdioOut writes mcp-go's stdio output, each Write one message and its newline
// (StdioServer.writeResponse), and drops the response to a cancelled request and its
// progress notifications after the cancellation (the client has forgotten their token;
// the TypeScript SDK reports each as an error).
type stdioOut struct {
	w io.Writer
	c *cancels
}

func (s *stdioOut) Write(p []byte) (int, error) {
	m, ok := peekOutgoing(p)
	if !ok {
		return s.w.Write(p)
	}
	if m.Method == "notifications/progress" {
		defer s.c.noteProgress("", paramsOf(m.Params).token)
	}
	switch out, drop := s.c.outgoing("", &m, bytes.TrimRight(p, "\n")); {
	case drop:
		return len(p), nil
	case out != nil:
		if _, err := s.w.Write(append(out, '\n')); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return s.w.Write(p)
}

// HTTPShim wraps mcp-go's streamable HTTP handler with the cancellation shim.
func HTTPShim(next http.Handler) http.Handler {
	return &httpShim{next: next, c: newCancels()}
}

type httpShim struct {
	next    http.Handler
	c       *cancels
	streams atomic.Uint64 // 2026-07-28 requests seen, which number their scopes
}

func (h *httpShim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	version := r.Header.Get(mcp.HeaderProtocolVersion)
	session := r.Header.Get(server.HeaderKeySessionID)
	modern := mcp.IsModernProtocol(version)
	if modern { // a request of its own (point 5 above)
		session = streamScopePrefix + strconv.FormatUint(h.streams.Add(1), 10)
	}
	// Every stream may carry the session's progress notifications (mcp-go hands them to
	// whichever request of the session is being answered), so every response is watched.
	rw := &httpResponse{ResponseWriter: w, c: h.c, session: session}
	if r.Method != http.MethodPost || r.Body == nil {
		h.next.ServeHTTP(rw, r)
		rw.release()
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "consult: reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var m message
	if json.Unmarshal(body, &m) == nil {
		if modern && m.Method == string(mcp.MethodNotificationCancelled) && canonicalID(m.ID) == "" {
			// Kept from mcp-go, which would cancel every call with its id (point 5 above).
			if p := paramsOf(m.Params); p.requestID != "" {
				h.c.cancelStream(p.requestID, p.reason, arrived)
			}
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if m.Method != "" && canonicalID(m.ID) == "" && modern {
			body = withProtocolVersionMeta(body, m.Params, version)
		}
		h.c.observeIncoming(session, &m, arrived)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r = r.WithContext(context.WithValue(r.Context(), cancelScopeKey{}, cancelScope{h.c, session, reasonGrace}))
	if m.isRequest() {
		rw.k = cancelKey{session, canonicalID(m.ID)}
		defer h.c.end(rw.k)
		if modern { // its client closing the stream is its cancellation
			k := rw.k
			defer context.AfterFunc(r.Context(), func() { h.c.streamEnded(k, time.Now()) })()
		}
	}
	h.next.ServeHTTP(rw, r)
	rw.release()
}

// withProtocolVersionMeta returns a notification's body, whose params are params, with
// params._meta carrying version when it carries none (point 1 above); body unchanged if it
// cannot be read.
func withProtocolVersionMeta(body, params []byte, version string) []byte {
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	if json.Unmarshal(params, &p) == nil && p.Meta.ProtocolVersion() != "" {
		return body
	}
	v, _ := json.Marshal(version)
	out, _ := withMember(body, v, "params", "_meta", mcp.MetaKeyProtocolVersion)
	return out
}

// withMember is the JSON object doc with the member at path set to value, making the
// objects on the path that are missing or null; doc itself, and false, when it or a member
// on the path is something else.
func withMember(doc []byte, value json.RawMessage, path ...string) ([]byte, bool) {
	var obj map[string]json.RawMessage
	if len(doc) > 0 && json.Unmarshal(doc, &obj) != nil {
		return doc, false
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	if len(path) > 1 {
		inner, ok := withMember(obj[path[0]], value, path[1:]...)
		if !ok {
			return doc, false
		}
		value = inner
	}
	obj[path[0]] = value
	out, _ := json.Marshal(obj) // values decoded from JSON encode again without error
	return out, true
}

// httpResponse is the response to one HTTP request. mcp-go writes a POST's JSON-RPC
// response either as one JSON body (header first) or as one SSE event per Write
// (writeSSEEvent). The response to a cancelled request is dropped, and a plain JSON
// response then becomes 202 Accepted with no body; the status of a JSON response is held
// until its body shows whether it is dropped. Progress notifications of a cancelled request
// are dropped from every stream of the session.
type httpResponse struct {
	http.ResponseWriter
	c       *cancels
	session string
	k       cancelKey // the request posted; zero for none

	heldStatus  int // status of a JSON response not yet sent
	wroteHeader bool
}

func (rw *httpResponse) WriteHeader(code int) {
	if rw.wroteHeader || rw.heldStatus != 0 {
		return
	}
	if rw.k.id != "" && strings.HasPrefix(rw.Header().Get("Content-Type"), "application/json") {
		rw.heldStatus = code
		return
	}
	rw.wroteHeader = true
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *httpResponse) Write(p []byte) (int, error) {
	data, sse := payload(p)
	m, ok := peekOutgoing(data)
	if !ok {
		rw.release()
		return rw.ResponseWriter.Write(p)
	}
	if m.Method == "notifications/progress" {
		defer rw.c.noteProgress(rw.session, paramsOf(m.Params).token)
	}
	out, drop := rw.c.outgoing(rw.session, &m, data)
	if drop {
		if rw.heldStatus != 0 {
			rw.Header().Del("Content-Type")
			rw.heldStatus = http.StatusAccepted
			rw.release()
		}
		return len(p), nil
	}
	rw.release()
	if out == nil {
		return rw.ResponseWriter.Write(p)
	}
	if _, err := rw.ResponseWriter.Write(reframed(p, data, out, sse)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// payload is the message p carries: p itself (trimmed), a JSON body, or the data of p, an
// SSE event (sse true), which starts with one of the fields mcp-go writes (an event id when
// it keeps events for resuming).
func payload(p []byte) (data []byte, sse bool) {
	data = bytes.TrimSpace(p)
	for _, f := range []string{"event:", "data:", "id:"} {
		if bytes.HasPrefix(data, []byte(f)) {
			return sseData(data), true
		}
	}
	return data, false
}

// reframed is p, whose message is data, carrying out instead: a JSON body, or the SSE event
// p with its other lines kept.
func reframed(p, data, out []byte, sse bool) []byte {
	if !sse {
		return append(out, '\n')
	}
	if ev := bytes.Replace(p, data, out, 1); !bytes.Equal(ev, p) || bytes.Equal(data, out) {
		return ev // the event as it was, its id line kept, with the new data
	}
	return fmt.Appendf(nil, "event: message\ndata: %s\n\n", out)
}

// sseData is the data of one SSE event: its "data:" lines, each without the field name
// and surrounding spaces, one after the other. The data of an event of one such line, as
// mcp-go writes them, is not copied.
func sseData(event []byte) []byte {
	var parts [][]byte
	for line := range bytes.Lines(event) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			parts = append(parts, bytes.TrimSpace(d))
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return bytes.Join(parts, nil)
}

// release sends a held status: before a body, and when the handler returns.
func (rw *httpResponse) release() {
	if rw.heldStatus != 0 && !rw.wroteHeader {
		rw.wroteHeader = true
		rw.ResponseWriter.WriteHeader(rw.heldStatus)
	}
	rw.heldStatus = 0
}

// Flush sends what was written; mcp-go streams SSE only through a writer that can flush.
func (rw *httpResponse) Flush() {
	rw.release()
	if f, ok := rw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (write deadlines).
func (rw *httpResponse) Unwrap() http.ResponseWriter { return rw.ResponseWriter }
