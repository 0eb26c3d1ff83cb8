//go:build !unix

package results

import "os"

// openFlags: without O_NONBLOCK and O_NOFOLLOW, Store.open relies on its check after open.
const openFlags = os.O_RDONLY

// refusedLink: no open flag refuses links here.
func refusedLink(error) bool { return false }
