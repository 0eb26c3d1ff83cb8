//go:build unix

package files

import (
	"io"
	"syscall"
)

// openRegular opens name for reading and returns its descriptor only if it is a regular
// file, with its size. O_NONBLOCK keeps the open itself from blocking on a fifo or a device
// (it does not affect regular files); unless follow, O_NOFOLLOW refuses a symbolic link as
// the last element; anything but a regular file is refused after fstat, so an entry replaced
// since it was listed cannot lead to a device. It uses raw system calls: os.Open on Linux
// costs three more (it tries to register the descriptor with the network poller) and a
// finalizer.
func openRegular(name string, follow bool) (fd int, size int64, err error) {
	flags := syscall.O_RDONLY | syscall.O_CLOEXEC | syscall.O_NONBLOCK
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	for {
		fd, err = syscall.Open(name, flags, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return -1, 0, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return -1, 0, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return -1, 0, errNotRegular
	}
	return fd, st.Size, nil
}

// readFile reads the regular file at name (an absolute path whose last element is not a
// symbolic link: symbolic links are resolved by the walk) and classifies it, as readAll.
func readFile(name string, limit int64, scratch []byte) ([]byte, []string, Reason) {
	fd, size, err := openRegular(name, false)
	if err != nil {
		return nil, nil, Unreadable
	}
	defer syscall.Close(fd)
	return readAll(fdReader(fd), size, limit, scratch)
}

// readSmall reads the whole regular file at name, at most limit bytes: errTooLarge past
// that, errNotRegular for anything but a regular file (a fifo, a device, a directory), and a
// symbolic link as the last element refused unless follow.
func readSmall(name string, follow bool, limit int64) ([]byte, error) {
	fd, size, err := openRegular(name, follow)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	return readCapped(fdReader(fd), size, limit)
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
