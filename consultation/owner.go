package consultation

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
