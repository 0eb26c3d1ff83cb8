package background

import "context"

// ownerKey is the context key of the caller's identity.
type ownerKey struct{}

// WithOwner returns ctx carrying the identity of the caller: over HTTP, a digest of the
// bearer token the request presented. Background consultations started under ctx belong to
// that owner: another owner cannot list, read or cancel them. "" (the default, and stdio's
// case: one local client per server process) is an owner like any other.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerFrom returns the owner WithOwner put in ctx, or "".
func OwnerFrom(ctx context.Context) string {
	s, _ := ctx.Value(ownerKey{}).(string)
	return s
}

// sessionKey is the context key of the caller's client session.
type sessionKey struct{}

// WithSession returns ctx carrying the client session a call came from: the MCP session id
// over HTTP, "" over stdio (one client per server process). A listing of consultations
// shows the session's own first and marks the others as started by another session.
func WithSession(ctx context.Context, session string) context.Context {
	return context.WithValue(ctx, sessionKey{}, session)
}

// SessionFrom returns the session WithSession put in ctx, or "".
func SessionFrom(ctx context.Context) string {
	s, _ := ctx.Value(sessionKey{}).(string)
	return s
}
