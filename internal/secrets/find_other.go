//go:build !amd64

package secrets

// find calls s.at for each anchor byte of s.content, and reports whether one found a
// private key.
func (s *scan) find() bool { return s.findEach() }
