//go:build unix

package files

import (
	"io"
	"syscall"
)

// readFile reads the regular file at name (an absolute path whose last element is not a
// symbolic link: symbolic links are resolved by the walk) and classifies it, as readAll.
// It uses raw system calls: os.Open on Linux costs three more (it tries to register the
// descriptor with the network poller) and a finalizer. In case the entry was replaced since
// the directory was listed, O_NOFOLLOW refuses a symbolic link and O_NONBLOCK keeps open
// from blocking on a fifo (it does not affect regular files); anything that is not a
// regular file is refused after fstat.
func readFile(name string, limit int64, scratch []byte) ([]byte, Reason) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, Unreadable
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, Unreadable
	}
	return readAll(fdReader(fd), st.Size, limit, scratch)
}

// fdReader reads from a file descriptor, retrying interrupted calls.
type fdReader int

func (fd fdReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Read(int(fd), p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
