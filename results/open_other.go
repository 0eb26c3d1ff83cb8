//go:build !unix

package results

import "os"

// openFlags: without O_NONBLOCK and O_NOFOLLOW, openRecord relies on its check after open.
const openFlags = os.O_RDONLY
