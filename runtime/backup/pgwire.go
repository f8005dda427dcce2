package backup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// wireReader reads the backend's messages of a PostgreSQL connection for
// a base backup. It reads in large pieces, as much as the socket holds
// (pgx's reader asks for 8 KiB at a time and copies each message into a
// buffer of its own), and hands the body of a CopyData message to its
// consumer in the pieces the reads brought, without copying it: the
// archive goes from this buffer to the store.
type wireReader struct {
	r      io.Reader
	buf    []byte
	rp, wp int // the unread bytes are buf[rp:wp]
}

// wireBuffer is a wireReader's buffer: the most one read brings, and the
// largest message other than CopyData it takes.
const wireBuffer = 1 << 20

func newWireReader(r io.Reader) *wireReader {
	return &wireReader{r: r, buf: make([]byte, wireBuffer)}
}

// header reads the next message's type and the length of its body.
func (w *wireReader) header() (byte, int, error) {
	if err := w.fill(5); err != nil {
		return 0, 0, err
	}
	typ, length := w.buf[w.rp], binary.BigEndian.Uint32(w.buf[w.rp+1:])
	w.rp += 5
	if length < 4 || length > 1<<30 {
		return 0, 0, fmt.Errorf("a message %q of length %d", typ, length)
	}
	return typ, int(length) - 4, nil
}

// body returns the next n bytes whole (a small message's body), valid
// until the next read.
func (w *wireReader) body(n int) ([]byte, error) {
	if n > len(w.buf) {
		return nil, fmt.Errorf("a %d-byte message, larger than %d bytes", n, len(w.buf))
	}
	if err := w.fill(n); err != nil {
		return nil, err
	}
	b := w.buf[w.rp : w.rp+n : w.rp+n]
	w.rp += n
	return b, nil
}

// stream hands the next n bytes to f in the pieces the reads bring.
func (w *wireReader) stream(n int, f func([]byte) error) error {
	for n > 0 {
		if err := w.fill(1); err != nil {
			return err
		}
		k := min(n, w.wp-w.rp)
		if err := f(w.buf[w.rp : w.rp+k : w.rp+k]); err != nil {
			return err
		}
		w.rp, n = w.rp+k, n-k
	}
	return nil
}

// fill makes n bytes readable, reading as much as the connection gives
// into the room after them.
func (w *wireReader) fill(n int) error {
	if w.wp-w.rp >= n {
		return nil
	}
	if w.rp == w.wp {
		w.rp, w.wp = 0, 0
	}
	if len(w.buf)-w.rp < n { // too little room after rp: move the rest to the front
		w.wp, w.rp = copy(w.buf, w.buf[w.rp:w.wp]), 0
	}
	for w.wp-w.rp < n {
		k, err := w.r.Read(w.buf[w.wp:])
		w.wp += k
		if err != nil && w.wp-w.rp < n {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("the connection ended inside a message: %w", io.ErrUnexpectedEOF)
			}
			return err
		}
	}
	return nil
}
