//go:build !amd64

package providers

// escapedLen is the length of s as a JSON string's content: what escapeTo writes.
func escapedLen(s []byte) int { return escapedLenGeneric(s) }

// escapeTo writes s at the start of dst as the content of a JSON string, escaped as
// encoding/json does without its HTML escaping (which JSON does not need): quote,
// backslash and control characters escaped, invalid UTF-8 replaced by U+FFFD, U+2028 and
// U+2029 escaped. dst must have room for escapedLen(s) bytes; it returns that length, and
// writes nothing past it.
func escapeTo(dst, s []byte) int { return escapeToGeneric(dst, s) }
