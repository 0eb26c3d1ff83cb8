package files

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/consultmcp/consult/internal/leaf/secrets"
)

// SniffBytes is how much of a file is inspected for a NUL byte (binary) or a private key
// block (secret): git uses the same 8 KiB window to decide a file is binary.
const SniffBytes = 8 << 10

// readAll reads a regular file whose stat size is size and classifies it: the content, or
// TooLarge if it holds more than limit bytes, Binary by its first SniffBytes bytes,
// Secret when it holds key material anywhere (redacted then holds why, one string),
// Unreadable on an I/O error. High-confidence tokens in the content are replaced by
// "[REDACTED <kind>]" and their kinds returned.
//
// A file larger than the sniff window is sniffed first, into scratch (at least SniffBytes
// long), so a binary or a key costs one small read and no allocation. The stat size is a
// hint, not trusted: files in /proc say 0, and a file may grow or shrink while it is read,
// so reading goes on to EOF, stopping at limit+1 bytes. A read that asks for one byte more
// than the stat size and gets exactly the stat size is taken as reaching EOF (regular files
// return short reads only at their end), so most files cost a single read.
// sum, when set, receives the SHA-256 of the content returned (see scan).
func readAll(f io.Reader, size, limit int64, scratch []byte, sum *[sha256.Size]byte) (content []byte, redacted []string, reason Reason) {
	if size > limit {
		return nil, nil, TooLarge
	}
	var buf []byte
	sniffed := false
	switch {
	case size > SniffBytes:
		n, err := io.ReadFull(f, scratch[:SniffBytes])
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return nil, nil, Unreadable
		}
		if isBinary(scratch[:n]) {
			return nil, nil, Binary
		}
		if n < SniffBytes { // it shrank
			b := make([]byte, n)
			copy(b, scratch)
			return scan(b, sum)
		}
		buf = make([]byte, n, size+1)
		copy(buf, scratch)
		sniffed = true
	case size > 0:
		buf = make([]byte, 0, size+1)
	default:
		buf = make([]byte, 0, 512)
	}
	buf, err := readRest(f, buf, size, limit)
	switch {
	case errors.Is(err, errTooLarge):
		return nil, nil, TooLarge
	case err != nil:
		return nil, nil, Unreadable
	}
	if !sniffed && isBinary(buf[:min(len(buf), SniffBytes)]) {
		return nil, nil, Binary
	}
	return scan(buf[:len(buf):len(buf)], sum)
}

// scan holds back content that holds key material anywhere (Secret, with why as the one
// string of the second result), and replaces the high-confidence secrets in the rest. With
// sum set, it writes there the SHA-256 of what it returns, and skips a content scanned
// clean before (scannedClean).
func scan(content []byte, sum *[sha256.Size]byte) ([]byte, []string, Reason) {
	if sum != nil {
		*sum = sha256.Sum256(content)
		scannedClean.Lock()
		clean := scannedClean.m[*sum]
		scannedClean.Unlock()
		if clean {
			return content, nil, 0
		}
	}
	out, kinds, held := secrets.Scan(content)
	switch {
	case held != 0:
		return nil, []string{cmp.Or(heldWhy[held], "holds a secret")}, Secret
	case sum == nil:
	case kinds != nil:
		*sum = sha256.Sum256(out) // of what is sent
	default:
		scannedClean.Lock()
		if len(scannedClean.m) >= 1<<16 {
			clear(scannedClean.m)
		}
		scannedClean.m[*sum] = true
		scannedClean.Unlock()
	}
	return out, kinds, 0
}

// scannedClean holds the digests of the contents this process has scanned for secrets and
// found none in: the same bytes gathered again (a question after another about the same
// files, or calls about one repository at the same time) are not scanned again. The
// SHA-256 names the bytes, so no other content can pass for one scanned. It holds at most
// 65,536 digests and starts over when full.
var scannedClean = struct {
	sync.Mutex
	m map[[sha256.Size]byte]bool
}{m: map[[sha256.Size]byte]bool{}}

// Errors of tree.readSmall.
var (
	errNotRegular = errors.New("not a regular file")
	errTooLarge   = errors.New("larger than its cap")
)

// tree opens the files of one gathering. Everything inside the root is opened through the
// *os.Root, so the kernel, not a string prefix, keeps what is read inside it: a directory
// swapped for a symbolic link to elsewhere after it was listed leads nowhere. Only what
// git itself reads from outside the root, the ignore files of its ancestors up to the
// top of its work tree and the info/exclude of a repository whose .git file points
// elsewhere, is opened by path.
type tree struct {
	root          *os.Root
	path, pathSep string // the root's real path, and with a trailing separator
}

// rel returns abs, an absolute path, relative to the root, and whether it lies inside it.
func (t *tree) rel(abs string) (string, bool) {
	if abs == t.path {
		return ".", true
	}
	return strings.CutPrefix(abs, t.pathSep)
}

// lstat is os.Lstat of the absolute path abs, through the root when abs is inside it.
func (t *tree) lstat(abs string) (fs.FileInfo, error) {
	if rel, ok := t.rel(abs); ok {
		return t.root.Lstat(rel)
	}
	return os.Lstat(abs)
}

// open opens the file at name in dir for reading and returns it only if it is a regular
// file, with its size. openFlags keeps the open itself from blocking on a fifo or a device;
// anything but a regular file is refused after fstat, so an entry replaced since it was
// listed cannot lead to a device.
func open(dir *os.Root, name string) (*os.File, int64, error) {
	f, err := dir.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, 0, err
	}
	return checkRegular(f)
}

// checkRegular returns f with its size if it is a regular file, else closes it.
func checkRegular(f *os.File) (*os.File, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, errNotRegular
	}
	return f, fi.Size(), nil
}

// readFile reads the regular file at name in dir and classifies it, as readAll.
func readFile(dir *os.Root, name string, limit int64, scratch []byte, sum *[sha256.Size]byte) ([]byte, []string, Reason) {
	f, size, err := open(dir, name)
	if err != nil {
		return nil, nil, Unreadable
	}
	defer f.Close()
	return readAll(f, size, limit, scratch, sum)
}

// readSmall reads the whole regular file at the absolute path abs, at most limit bytes:
// errTooLarge past that, errNotRegular for anything but a regular file (a fifo, a device,
// a directory) and for a symbolic link as the last element unless follow.
func (t *tree) readSmall(abs string, follow bool, limit int64) ([]byte, error) {
	if !follow {
		fi, err := t.lstat(abs)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, errNotRegular
		}
	}
	var f *os.File
	var size int64
	var err error
	if rel, ok := t.rel(abs); ok {
		f, size, err = open(t.root, rel)
	} else if f, err = os.OpenFile(abs, openFlags, 0); err == nil {
		f, size, err = checkRegular(f)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, errTooLarge
	}
	// The stat size is only a hint for the first allocation: readRest reads on to the end.
	return readRest(f, make([]byte, 0, min(max(size, 512), limit)+1), size, limit)
}

// readRest reads f to its end after buf, at most limit bytes in all (errTooLarge past that),
// and returns buf with what it read; any read error but EOF is returned. A read that asks
// for more than is left to the stat size (size > 0) and gets exactly up to it is taken as
// reaching EOF: regular files return short reads only at their end.
func readRest(f io.Reader, buf []byte, size, limit int64) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := min(int64(cap(buf)-len(buf)), limit+1-int64(len(buf)))
		n, err := f.Read(buf[len(buf) : len(buf)+int(room)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, errTooLarge
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return buf, nil
			}
			return nil, err
		}
		if int64(n) < room && size > 0 && int64(len(buf)) == size {
			return buf, nil // a short read at the stat size: EOF
		}
	}
}
