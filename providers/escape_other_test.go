//go:build !amd64

package providers

// escapers are the escapings of this system, each checked against encoding/json.
func escapers() map[string]escaper {
	return map[string]escaper{"generic": {escapedLenGeneric, escapeToGeneric}}
}
