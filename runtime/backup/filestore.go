package backup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// FileStore keeps objects as files under Root. Put writes a hidden
// temporary file, syncs it and renames it into place, so a cut-off write
// leaves no object.
type FileStore struct {
	Root string
}

func (s *FileStore) path(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.Root, filepath.FromSlash(key)), nil
}

// Put implements Store.
func (s *FileStore) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	o, err := s.Create(ctx, key)
	if err != nil {
		return 0, err
	}
	if _, err := io.CopyBuffer(o, r, make([]byte, 1<<20)); err != nil {
		o.Abort()
		return 0, fmt.Errorf("put %s: %w", key, err)
	}
	return o.Commit()
}

// Create implements Store: a hidden temporary file beside the object's,
// synced and renamed into place by Commit.
func (s *FileStore) Create(ctx context.Context, key string) (ObjectWriter, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return nil, fmt.Errorf("put %s: %w", key, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	tmp := filepath.Join(filepath.Dir(p), ".partial-"+filepath.Base(p)+"-"+hex.EncodeToString(b[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return nil, fmt.Errorf("put %s: %w", key, err)
	}
	return &fileObject{ctx: ctx, key: key, path: p, f: f}, nil
}

// fileObject is a FileStore object being written; the source's pieces go
// to the file as they come.
type fileObject struct {
	ctx       context.Context
	key, path string
	f         *os.File
	n         int64
	done      bool
}

func (o *fileObject) Write(p []byte) (int, error) {
	if err := o.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := o.f.Write(p)
	o.n += int64(n)
	return n, err
}

func (o *fileObject) Commit() (int64, error) {
	if o.done {
		return 0, fmt.Errorf("put %s: the object was ended before", o.key)
	}
	o.done = true
	err := o.ctx.Err()
	if err == nil {
		err = o.f.Sync()
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.f.Name(), o.path)
	}
	if err != nil {
		os.Remove(o.f.Name())
		return 0, fmt.Errorf("put %s: %w", o.key, err)
	}
	return o.n, nil
}

func (o *fileObject) Abort() {
	if o.done {
		return
	}
	o.done = true
	o.f.Close()
	os.Remove(o.f.Name())
}

// Get implements Store. Only a regular file is an object: it is opened
// without blocking and checked before a byte is read, since opening a
// FIFO waits for a writer that may never come (and no context reaches
// an open), and a FIFO or a device may stream without end. The reader
// knows the file's size (sizedObject).
func (s *FileStore) Get(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", p, fi.Mode())
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return sizedFile{f, fi.Size()}, nil
}

// sizedFile is a FileStore object being read.
type sizedFile struct {
	*os.File
	size int64
}

func (f sizedFile) Size() int64 { return f.size }

// List implements Store; it skips the temporary files of writes under way.
func (s *FileStore) List(_ context.Context, prefix string) ([]string, error) {
	var keys []string
	err := filepath.WalkDir(s.Root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == s.Root {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".partial-") {
			return err
		}
		rel, err := filepath.Rel(s.Root, p)
		if err != nil {
			return err
		}
		if key := filepath.ToSlash(rel); strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	slices.Sort(keys)
	return keys, nil
}

// Delete implements Store; deleting a missing key is not an error.
func (s *FileStore) Delete(_ context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	_ = os.Remove(filepath.Dir(p)) // the backup's folder, once empty
	return nil
}

// contextReader stops a copy when ctx ends.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
