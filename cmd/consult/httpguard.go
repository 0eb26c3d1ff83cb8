package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/internal/engine/background"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/mark3labs/mcp-go/server"
)

// The limits of what one HTTP request may make the server hold.
const (
	// maxRequestBody caps a request body: a JSON-RPC call with a question and a few globs is
	// kilobytes, and each request's body is held in memory whole.
	maxRequestBody = 4 << 20
	// bodyReadTimeout bounds reading a body: clients send it at once, and one that trickles
	// in would hold a connection and its memory for as long as it likes.
	bodyReadTimeout = 10 * time.Second
	// readHeaderTimeout bounds reading the request line and headers, for the same reason.
	readHeaderTimeout = 10 * time.Second
	// maxHeaderBytes caps the headers: a bearer token and the MCP headers are well under 1 KiB.
	maxHeaderBytes = 64 << 10
)

// The bearer token's rules.
const (
	// minTokenLen is the shortest token accepted from a file or CONSULT_HTTP_TOKEN: anything
	// shorter could be guessed by a client that can make requests all day.
	minTokenLen = 16
	// generatedTokenBytes is the randomness of a generated token (256 bits).
	generatedTokenBytes = 32
	// maxTokenFileBytes caps what is read of a token file: the token is its first line.
	maxTokenFileBytes = 4 << 10
)

var (
	// errTokenTooShort: a configured token under minTokenLen characters.
	errTokenTooShort = errors.New("token too short")
	// errTokenBadChar: a configured token with a space or control character, which cannot be
	// sent in a header as it is.
	errTokenBadChar = errors.New("token has a character a header cannot carry")
	// errTokenFileExposed: a token file other users could read.
	errTokenFileExposed = errors.New("token file readable by others")
	// errTokenFileNotOwned: a token file owned by another user, who can change the token.
	errTokenFileNotOwned = errors.New("token file owned by another user")
	// errBadOrigin: an --http-allow-origin value that is not scheme://host[:port].
	errBadOrigin = errors.New("not an origin")
)

// httpToken is the bearer token every HTTP request must present, and where it came from.
type httpToken struct {
	value     string
	source    string // how the user names it: "--http-token-file F", "CONSULT_HTTP_TOKEN"
	generated bool   // made at start: the only copy is what the server prints once
}

// resolveHTTPToken takes the token from the token file, else from CONSULT_HTTP_TOKEN (the
// value of envToken), else generates one.
func resolveHTTPToken(file, envToken string) (httpToken, error) {
	switch {
	case file != "":
		v, err := readTokenFile(file)
		if err != nil {
			return httpToken{}, fmt.Errorf("--http-token-file %s: %w", file, err)
		}
		return httpToken{value: v, source: "--http-token-file " + file}, nil
	case envToken != "":
		v := strings.TrimSpace(envToken)
		if err := checkToken(v); err != nil {
			return httpToken{}, fmt.Errorf("CONSULT_HTTP_TOKEN: %w", err)
		}
		return httpToken{value: v, source: "CONSULT_HTTP_TOKEN"}, nil
	}
	return httpToken{value: generateToken(), source: "generated", generated: true}, nil
}

// readTokenFile returns the first line of path, trimmed. The file must be a regular file
// owned by the user running consult that neither group nor others can access (the token is
// the whole of the server's access control: whoever can read it can call the server, and
// whoever owns it can change it to a token of their own).
func readTokenFile(path string) (string, error) {
	// Opened without blocking (a fifo put in its place cannot stall the start), then checked
	// to be a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if err := checkTokenFileOwner(fi, os.Geteuid()); err != nil {
		return "", err
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return "", fmt.Errorf("%w: its mode is %04o, so other users can read the token; run chmod 600 %s", errTokenFileExposed, perm, path)
	}
	line, err := bufio.NewReader(io.LimitReader(f, maxTokenFileBytes)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	v := strings.TrimSpace(line)
	if err := checkToken(v); err != nil {
		return "", err
	}
	return v, nil
}

// checkTokenFileOwner refuses a token file that user euid does not own.
func checkTokenFileOwner(fi os.FileInfo, euid int) error {
	uid, ok := results.FileOwner(fi)
	if !ok || uid == euid {
		return nil
	}
	return fmt.Errorf("%w: uid %d owns it, not the user running consult (uid %d), and can change the token or read it; keep the token in a file of your own: install -m 600 /dev/null NEWFILE, write the token into it, and pass --http-token-file NEWFILE", errTokenFileNotOwned, uid, euid)
}

// checkToken refuses a configured token that is short or cannot travel in a header.
func checkToken(v string) error {
	if len(v) < minTokenLen {
		return fmt.Errorf("%w: %d characters, want at least %d (e.g. openssl rand -hex 32)", errTokenTooShort, len(v), minTokenLen)
	}
	for _, c := range []byte(v) {
		if c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%w: use printable ASCII without spaces", errTokenBadChar)
		}
	}
	return nil
}

// generateToken returns generatedTokenBytes from crypto/rand, base64url without padding.
func generateToken() string {
	b := make([]byte, generatedTokenBytes)
	rand.Read(b) // never fails: crypto/rand crashes the program rather than return an error
	return base64.RawURLEncoding.EncodeToString(b)
}

// tokenOwner is the owner of what a request with this token starts: the hex of the first
// 16 bytes of the token's SHA-256, which names the token without revealing it.
func tokenOwner(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:16])
}

// parseOrigins checks each allowed origin is scheme://host[:port], as browsers send the
// Origin header, and returns them lower-cased.
func parseOrigins(list []string) ([]string, error) {
	var out []string
	for _, o := range list {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("--http-allow-origin %q: %w: write scheme://host[:port], e.g. http://localhost:3000", o, errBadOrigin)
		}
		out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	return out, nil
}

// httpGuard admits a request to next only if its Host, Origin and bearer token are right,
// and hands next the body read whole under a size cap and a deadline. The owner of the
// request (see tokenOwner) goes into its context.
type httpGuard struct {
	next         http.Handler
	tokenSum     [sha256.Size]byte
	owner        string
	origins      map[string]bool
	loopbackOnly bool          // the server listens on loopback: Host must name loopback
	maxBody      int64         // maxRequestBody; tests lower it
	bodyTimeout  time.Duration // bodyReadTimeout; tests lower it
	conns        *connGate     // the server's untrusted connections (see boundConns); nil: not tracked
	sessions     *sessionIDs   // the server's session ids (see sessionManager); nil: not checked
	maxConns     int           // maxUntrustedConns; tests lower it
}

// newHTTPGuard returns a guard for token, to be put in front of the MCP handler (its next
// field; see newHTTPServer). loopbackBind is whether the server listens only on
// loopback; origins are parseOrigins' result.
func newHTTPGuard(token string, origins []string, loopbackBind bool) *httpGuard {
	g := &httpGuard{
		tokenSum:     sha256.Sum256([]byte(token)),
		owner:        tokenOwner(token),
		origins:      make(map[string]bool, len(origins)),
		loopbackOnly: loopbackBind,
		maxBody:      maxRequestBody,
		bodyTimeout:  bodyReadTimeout,
		maxConns:     maxUntrustedConns,
	}
	for _, o := range origins {
		g.origins[o] = true
	}
	return g
}

// tokenSource says where the bearer token comes from. Like every text of a refusal for a
// missing or wrong token, it has no double quotes, so that it reads as it is where a client
// shows it inside JSON or a header.
const tokenSource = "the token is the one consult printed when it started, or the one in its --http-token-file or CONSULT_HTTP_TOKEN"

// The first sentence of a 401, by what the request carried.
const (
	noTokenMessage    = "consult: this request has no bearer token."
	wrongTokenMessage = "consult: this bearer token is not the one this server was started with."
)

// ServeHTTP checks Host, then Origin, then the token (so a page that rebinds a name to the
// server learns nothing about the token), then reads the body. Every refusal closes the
// connection: a client that was refused has nothing more to send on it.
func (g *httpGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.loopbackOnly && !loopbackHost(r.Host) {
		refuse(w, fmt.Sprintf("consult: Host %q is not a loopback name; this server listens on loopback and answers only requests for localhost, 127.0.0.1 or [::1]", r.Host), http.StatusForbidden)
		return
	}
	if o, ok := r.Header["Origin"]; ok && (len(o) != 1 || !g.origins[o[0]]) {
		refuse(w, fmt.Sprintf("consult: Origin %q is not allowed; start the server with --http-allow-origin ORIGIN to allow it", strings.Join(o, ", ")), http.StatusForbidden)
		return
	}
	switch auth := r.Header.Values("Authorization"); {
	case len(auth) > 1:
		refuse(w, fmt.Sprintf("consult: the request has %d Authorization headers; send exactly one: Authorization: Bearer <token>", len(auth)), http.StatusBadRequest)
		return
	case len(auth) == 0 || strings.TrimSpace(auth[0]) == "":
		unauthorized(w, noTokenMessage)
		return
	case !g.authorized(auth[0]):
		unauthorized(w, wrongTokenMessage)
		return
	}
	g.conns.trust(r.Context())
	if g.sessions.isEnded(r.Header.Get(server.HeaderKeySessionID)) {
		refuse(w, endedSessionMessage, http.StatusNotFound)
		return
	}
	if err := g.readBody(w, r); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			refuse(w, fmt.Sprintf("consult: request body over %d bytes", g.maxBody), http.StatusRequestEntityTooLarge)
		case errors.Is(err, os.ErrDeadlineExceeded):
			refuse(w, fmt.Sprintf("consult: request body not received within %s", consult.FormatDuration(g.bodyTimeout)), http.StatusRequestTimeout)
		default:
			refuse(w, "consult: reading the request body: "+err.Error(), http.StatusBadRequest)
		}
		return
	}
	g.next.ServeHTTP(w, r.WithContext(background.WithOwner(r.Context(), g.owner)))
}

// refuse answers code with msg as text and closes the connection after it.
func refuse(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}

// unauthorized answers 401 for a request without the right token. MCP clients (Claude Code,
// MCP Inspector, the TypeScript SDK) read a 401 as the start of OAuth; the challenge says
// what is wrong in error_description, and the OAuth endpoints they go on to probe answer
// with the same advice (see oauthRefusal), which is what they show the user.
func unauthorized(w http.ResponseWriter, first string) {
	w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="consult", error="invalid_token", error_description=%q`, first+" Send the header Authorization: Bearer <token>."))
	refuse(w, first+" Send the header Authorization: Bearer <token>; "+tokenSource+". consult does not use OAuth, and a token in the URL is not accepted.", http.StatusUnauthorized)
}

// authorized reports whether the value of an Authorization header is the bearer token,
// comparing digests in constant time.
func (g *httpGuard) authorized(header string) bool {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(sum[:], g.tokenSum[:]) == 1
}

// readBody replaces r.Body with its content, read whole under the cap and the deadline.
// The deadline is cleared afterwards: a response may stream for as long as a call runs.
func (g *httpGuard) readBody(w http.ResponseWriter, r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if r.ContentLength > g.maxBody {
		return &http.MaxBytesError{Limit: g.maxBody} // refused before reading a byte
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(g.bodyTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.maxBody))
	if err != nil {
		return err
	}
	if err := rc.SetReadDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return nil
}

// loopbackHost reports whether a Host header names this machine: localhost, 127.0.0.0/8 or
// [::1], with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	return strings.EqualFold(host, "localhost") || net.ParseIP(host).IsLoopback() // nil, not an IP, is no loopback
}

// printHTTPAccess tells the user on stderr where the server is and how clients
// authenticate. A generated token is shown here, once: there is no other way to learn it.
// A configured one is not echoed.
func printHTTPAccess(w io.Writer, endpoint string, tok httpToken) {
	fmt.Fprintf(w, "consult: serving MCP over HTTP at %s\n", endpoint)
	fmt.Fprintf(w, "consult: every request needs the header  Authorization: Bearer <token>\n")
	if tok.generated {
		fmt.Fprintf(w, "consult: token generated for this run (shown only here; set CONSULT_HTTP_TOKEN or --http-token-file to keep one across restarts):\n  %s\n", tok.value)
	} else {
		fmt.Fprintf(w, "consult: the token is the one in %s\n", tok.source)
	}
	fmt.Fprintf(w, "consult: e.g.  claude mcp add --transport http -s user consult %s --header \"Authorization: Bearer $TOKEN\"\n", endpoint)
}
