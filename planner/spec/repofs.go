package spec

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// RepoLimit bounds what reading a whole repo may cost, on top of each
// file's Limits: a branch anyone may push is read by `cairn check`.
type RepoLimit struct {
	// MaxEntries is the most files and folders walked.
	MaxEntries int
	// MaxFiles is the most files read.
	MaxFiles int
	// MaxBytes is the most bytes read, all files together.
	MaxBytes int
	// MaxDocuments is the most clusters (documents) accepted.
	MaxDocuments int
	// MaxErrors is the most problems reported; reading stops there.
	MaxErrors int
}

// RepoLimits bound a repo's specs: far above a fleet of a thousand
// clusters, and a few seconds and a few hundred MB at most to read.
var RepoLimits = RepoLimit{MaxEntries: 50_000, MaxFiles: 5_000, MaxBytes: 8 << 20, MaxDocuments: 5_000, MaxErrors: 200}

// Opener opens files: an *os.Root opens only inside its folder, OS any
// path.
type Opener interface {
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
	Lstat(name string) (fs.FileInfo, error)
}

// OS opens paths of the machine.
var OS Opener = osOpener{}

type osOpener struct{}

func (osOpener) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

func (osOpener) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// ReadBounded reads a regular file of at most limit bytes. Anything else
// is refused before a byte is read: a FIFO (opened without blocking), a
// device such as /dev/zero, a folder, a file over the limit, and through
// an *os.Root a symlink that leaves it. Errors never quote the content.
func ReadBounded(o Opener, name string, limit int) ([]byte, error) {
	f, err := o.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if li, lerr := o.Lstat(name); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("symlink cannot be followed: %w", bare(err))
		}
		return nil, bare(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, bare(err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	if err := kernelFile(f); err != nil {
		return nil, err
	}
	if info.Size() > int64(limit) {
		return nil, fmt.Errorf("file is %d bytes; the limit is %d", info.Size(), limit)
	}
	return readNow(f, info.Size(), limit)
}

// readNow reads f to its end, at most limit bytes, never waiting for data
// to come: a file whose read would wait (opened without blocking, such as
// /proc/kmsg, which stat calls a regular file of 0 bytes) is refused. The
// reads are made on the descriptor itself: Go's poller would wait for
// such a file to be readable, which may be never.
func readNow(f *os.File, size int64, limit int) ([]byte, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, bare(err)
	}
	buf := make([]byte, 0, min(max(size, 512), int64(limit))+1)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(cap(buf), limit+1-len(buf)))
		}
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), buf[len(buf):cap(buf)])
			return true // never wait for readiness
		}); err != nil {
			return nil, bare(err)
		}
		switch {
		case errors.Is(rerr, syscall.EINTR):
			continue
		case errors.Is(rerr, syscall.EAGAIN):
			return nil, errors.New("reading the file would wait for data to come (a file of /proc or /sys, not a spec)")
		case rerr != nil:
			return nil, bare(rerr)
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, fmt.Errorf("file is larger than the %d-byte limit", limit)
		}
	}
}

// walker lists the files under a folder, depth first in name order,
// reading each folder in batches and stopping at its limit, so that a
// folder of a million entries costs no more than its first MaxEntries.
type walker struct {
	o       Opener
	limit   int
	entries int
	// skip reports folders not to enter (below the top).
	skip func(p string, d fs.DirEntry) bool
	// want reports the files to list.
	want  func(p string, d fs.DirEntry) bool
	files []string
}

var errTooManyEntries = errors.New("too many entries")

func (w *walker) walk(dir string) error {
	f, err := w.o.OpenFile(dir, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	var entries []fs.DirEntry
	for {
		batch, err := f.ReadDir(256)
		entries = append(entries, batch...)
		w.entries += len(batch)
		if w.entries > w.limit {
			f.Close()
			return errTooManyEntries
		}
		if errors.Is(err, io.EOF) || len(batch) == 0 {
			break
		}
		if err != nil {
			f.Close()
			return err
		}
	}
	f.Close()
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, d := range entries {
		p := path.Join(dir, d.Name())
		switch {
		case d.IsDir() && !w.skip(p, d):
			if err := w.walk(p); err != nil {
				return err
			}
		case !d.IsDir() && w.want(p, d):
			w.files = append(w.files, p)
		}
	}
	return nil
}

// bare drops the operation and path of a *fs.PathError, whose path the
// caller already shows and whose operation ("statat") means nothing to a
// reader.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
