//go:build !amd64

package secrets

// finders are the one-pass finds of this system, each checked against findEach.
func finders() map[string]func(*scan) bool {
	return map[string]func(*scan) bool{"find": (*scan).find}
}
