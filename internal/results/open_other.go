//go:build !unix

package results

// openFlags: without O_NONBLOCK and O_NOFOLLOW here, openIn relies on the root (which
// refuses links out of the directory) and its checks before and after opening.
const openFlags = 0

// refusedLink: no open flag refuses links here.
func refusedLink(error) bool { return false }
