package backup

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
)

// Create implements Store: a multipart upload whose parts the caller's
// writes fill, in place, and which go up s.partsInFlight() at a time
// while the next one fills. The upload starts with its first part; Commit
// completes it once every part is stored, Abort (or any failure) aborts
// it, so no object and no pending upload is left.
func (s *S3Store) Create(ctx context.Context, key string) (ObjectWriter, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	n := s.partsInFlight()
	return &s3Object{s: s, key: k, ctx: ctx, cancel: cancel, free: make(chan []byte, n), buffers: n}, nil
}

// s3Object is an S3Store object being written. Its part buffers are made
// as needed, at most buffers of them: one filling, the others on the
// wire.
type s3Object struct {
	s      *S3Store
	key    string
	ctx    context.Context
	cancel context.CancelCauseFunc

	uploadID string
	part     []byte      // the part being filled
	free     chan []byte // buffers of parts that are stored
	buffers  uint        // buffers not made yet
	number   int         // of the last part sent
	n        int64
	ended    bool

	wg    sync.WaitGroup
	mu    sync.Mutex
	parts []minio.CompletePart
}

func (o *s3Object) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if err := o.fillable(); err != nil {
			return written, err
		}
		k := copy(o.part[len(o.part):cap(o.part)], p)
		o.part, p, written, o.n = o.part[:len(o.part)+k], p[k:], written+k, o.n+int64(k)
		if len(o.part) == cap(o.part) {
			o.send()
		}
	}
	return written, nil
}

// ReadFrom reads r straight into the parts (Put's copy).
func (o *s3Object) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		if err := o.fillable(); err != nil {
			return total, err
		}
		k, err := io.ReadFull(r, o.part[len(o.part):cap(o.part)])
		o.part, total, o.n = o.part[:len(o.part)+k], total+int64(k), o.n+int64(k)
		if len(o.part) == cap(o.part) {
			o.send()
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return total, nil
		}
		if err != nil {
			return total, fmt.Errorf("put s3://%s/%s: %w", o.s.bucket, o.key, err)
		}
	}
}

// fillable makes sure a part buffer is there to fill, waiting for one to
// come back from the wire when all are out.
func (o *s3Object) fillable() error {
	if o.ended {
		return fmt.Errorf("put s3://%s/%s: the object was ended before", o.s.bucket, o.key)
	}
	if err := context.Cause(o.ctx); err != nil {
		return err
	}
	if o.part != nil {
		return nil
	}
	if o.buffers > 0 && len(o.free) == 0 {
		o.buffers--
		o.part = make([]byte, 0, o.s.PartSize)
		return nil
	}
	select {
	case o.part = <-o.free:
		return context.Cause(o.ctx) // a part that failed gives its buffer back too
	case <-o.ctx.Done():
		return context.Cause(o.ctx)
	}
}

// send uploads the part filled so far, starting the upload on the first.
func (o *s3Object) send() {
	part := o.part
	o.part = nil
	if o.uploadID == "" {
		id, err := o.core().NewMultipartUpload(o.ctx, o.s.bucket, o.key, minio.PutObjectOptions{ContentType: "application/octet-stream"})
		if err != nil {
			o.cancel(o.error(err))
			o.giveBack(part)
			return
		}
		o.uploadID = id
	}
	o.number++
	o.wg.Add(1)
	go o.upload(o.number, part)
}

// upload stores one part and gives its buffer back.
func (o *s3Object) upload(number int, part []byte) {
	defer o.wg.Done()
	info, err := o.core().PutObjectPart(o.ctx, o.s.bucket, o.key, o.uploadID, number, bytes.NewReader(part), int64(len(part)), minio.PutObjectPartOptions{})
	if err != nil {
		o.cancel(o.error(err))
	} else {
		o.mu.Lock()
		o.parts = append(o.parts, minio.CompletePart{PartNumber: number, ETag: info.ETag})
		o.mu.Unlock()
	}
	o.giveBack(part)
}

// giveBack returns a part's buffer for the next part to fill. The free
// list holds every buffer made, so this never blocks.
func (o *s3Object) giveBack(part []byte) { o.free <- part[:0] }

func (o *s3Object) Commit() (int64, error) {
	if o.ended {
		return 0, fmt.Errorf("put s3://%s/%s: the object was ended before", o.s.bucket, o.key)
	}
	if o.number == 0 && len(o.part) == 0 && context.Cause(o.ctx) == nil {
		return o.putEmpty() // S3 takes no empty part
	}
	if len(o.part) > 0 && context.Cause(o.ctx) == nil {
		o.send()
	}
	o.wg.Wait()
	o.ended = true
	if err := context.Cause(o.ctx); err != nil {
		o.abort()
		return 0, err
	}
	slices.SortFunc(o.parts, func(a, b minio.CompletePart) int { return cmp.Compare(a.PartNumber, b.PartNumber) })
	if _, err := o.core().CompleteMultipartUpload(o.ctx, o.s.bucket, o.key, o.uploadID, o.parts, minio.PutObjectOptions{}); err != nil {
		o.abort()
		return 0, o.error(err)
	}
	o.cancel(nil)
	return o.n, nil
}

// putEmpty stores an empty object in one PUT.
func (o *s3Object) putEmpty() (int64, error) {
	o.ended = true
	defer o.cancel(nil)
	if _, err := o.s.client.PutObject(o.ctx, o.s.bucket, o.key, bytes.NewReader(nil), 0, minio.PutObjectOptions{ContentType: "application/octet-stream"}); err != nil {
		return 0, o.error(err)
	}
	return 0, nil
}

func (o *s3Object) Abort() {
	if o.ended {
		return
	}
	o.ended = true
	o.cancel(errAborted)
	o.wg.Wait()
	o.abort()
}

// abort ends a started upload whatever became of the context: S3 keeps
// the parts of an upload neither completed nor aborted (and bills them)
// until a lifecycle rule removes them.
func (o *s3Object) abort() {
	o.cancel(errAborted)
	if o.uploadID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(o.ctx), time.Minute)
	defer cancel()
	_ = o.core().AbortMultipartUpload(ctx, o.s.bucket, o.key, o.uploadID)
}

var errAborted = errors.New("the object was aborted")

func (o *s3Object) core() minio.Core { return minio.Core{Client: o.s.client} }

func (o *s3Object) error(err error) error {
	return fmt.Errorf("put s3://%s/%s: %w", o.s.bucket, o.key, s3Error(err))
}
