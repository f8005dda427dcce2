package backup

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"
)

// Source streams one backup of a database.
type Source interface {
	// Stream writes the backup to w and fills in what it learned: the
	// source member, version and kind-specific details.
	Stream(ctx context.Context, w io.Writer, m *Manifest) error
}

// Take streams a backup of cluster from src into st and writes its
// manifest last. Nothing is staged on local disk: the data goes from the
// source to the store through a pipe. On any error no manifest is
// written, so no backup looks complete.
func Take(ctx context.Context, st Store, cluster, kind string, src Source, now func() time.Time) (Manifest, error) {
	m := Manifest{Format: ManifestFormat, Cluster: cluster, Kind: kind, Started: now().UTC()}
	m.ID = newID(m.Started)
	pr, pw := io.Pipe()
	// The database's messages are small (a few KiB): batch them, so the
	// store reads in large pieces and the pipe hands over rarely.
	buf := bufio.NewWriterSize(pw, pipeBuffer)
	written := &countingWriter{w: buf}
	streamErr := make(chan error, 1)
	go func() {
		err := src.Stream(ctx, written, &m)
		if err == nil {
			err = buf.Flush()
		}
		pw.CloseWithError(err) // nil closes cleanly
		streamErr <- err
	}()
	// Hashing on the store's side of the pipe runs beside the database's
	// reads, on another core.
	sum := &hashingReader{r: pr, h: sha256.New()}
	n, putErr := st.Put(ctx, Key(cluster, m.ID)+"/"+dataObject, sum)
	pr.CloseWithError(errStoreStopped) // the source stops writing too
	err := <-streamErr
	switch {
	case err != nil && !errors.Is(err, errStoreStopped):
		// The source failed first; the store's error is its echo.
		return m, fmt.Errorf("backup %s of %s: %w", m.ID, cluster, err)
	case putErr != nil:
		return m, fmt.Errorf("backup %s of %s: %w", m.ID, cluster, putErr)
	case err != nil:
		return m, fmt.Errorf("backup %s of %s: %w", m.ID, cluster, err)
	}
	if n != written.n || sum.n != written.n {
		return m, fmt.Errorf("backup %s of %s: stored %d bytes of %d: %w", m.ID, cluster, n, written.n, errIncomplete)
	}
	m.Size, m.SHA256, m.Finished = sum.n, hex.EncodeToString(sum.h.Sum(nil)), now().UTC()
	if err := writeManifest(ctx, st, m); err != nil {
		return m, fmt.Errorf("backup %s of %s: write manifest: %w", m.ID, cluster, err)
	}
	return m, nil
}

// pipeBuffer is how much of a backup is batched before the store reads it.
const pipeBuffer = 1 << 20

// errStoreStopped ends a source's stream when the store stopped reading.
var errStoreStopped = errors.New("the store stopped reading the backup")

// newID is a backup ID that sorts by start time: 20261130T020000Z-1a2b3c.
func newID(t time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// hashingReader hashes what the store reads through it; on the store's
// side of the pipe, it runs beside the database's reads.
type hashingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}

// OpenData returns the data of a complete backup as a reader that fails at
// its end unless the data's size and SHA-256 match the manifest.
func OpenData(ctx context.Context, st Store, m Manifest) (io.ReadCloser, error) {
	r, err := st.Get(ctx, Key(m.Cluster, m.ID)+"/"+dataObject)
	if err != nil {
		return nil, err
	}
	return &verifyingReader{r: r, h: sha256.New(), m: m}, nil
}

type verifyingReader struct {
	r io.ReadCloser
	h hash.Hash
	n int64
	m Manifest
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if err == io.EOF {
		if v.n != v.m.Size || hex.EncodeToString(v.h.Sum(nil)) != v.m.SHA256 {
			return n, fmt.Errorf("backup %s of %s: read %d bytes: %w", v.m.ID, v.m.Cluster, v.n, errIncomplete)
		}
	}
	return n, err
}

func (v *verifyingReader) Close() error { return v.r.Close() }
