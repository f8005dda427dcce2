package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// Store holds objects by key ("<cluster>/<id>/data"). Writes are all or
// nothing: an object is visible only once all of it was written.
type Store interface {
	// Put writes r under key, streaming, and returns the bytes written.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// Create starts an object under key that the caller writes, for a
	// source that pushes its data (a base backup): no pipe, no goroutine
	// between the source and the store. ctx bounds the whole write.
	Create(ctx context.Context, key string) (ObjectWriter, error)
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// List returns the keys under prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	Delete(ctx context.Context, key string) error
}

// ObjectWriter is an object being written. It appears under its key only
// when Commit returns nil; the caller ends each one with Commit or Abort.
type ObjectWriter interface {
	io.Writer
	// Commit stores the object whole and returns its size; on an error
	// nothing appears.
	Commit() (int64, error)
	// Abort discards what was written; after Commit it does nothing.
	Abort()
}

// ErrNotFound is a key that is not in the store.
var ErrNotFound = errors.New("not found")

// checkKey refuses keys that could leave the store's folder or prefix.
func checkKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || path.Clean(key) != key || strings.HasPrefix(key, "..") || strings.Contains(key, "\x00") {
		return fmt.Errorf("object key %q is not a clean relative path", key)
	}
	return nil
}

// Open returns the store of a location; s3 locations use cfg.
func Open(loc Location, cfg S3Config) (Store, error) {
	switch loc.Scheme {
	case "file":
		return &FileStore{Root: loc.Path}, nil
	case "s3":
		return NewS3Store(loc, cfg)
	}
	return nil, fmt.Errorf("backup location %s: unknown scheme", loc)
}

// OpenFromEnv opens a storageLocation with the S3 settings of this
// process's environment (S3ConfigFromEnv).
func OpenFromEnv(location string) (Store, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	cfg, err := S3ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	return Open(loc, cfg)
}
