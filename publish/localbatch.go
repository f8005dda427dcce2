package publish

import (
	"context"

	"github.com/cairn-dev/cairn/publish/gitrepo"
)

// Batcher is a Provider that can hold its writes during a pass and make
// them together at its end: Publish calls BeginBatch after listing the
// pull requests and FlushBatch before it merges. FlushBatch returns the
// writes that failed, by branch; reads in between see the writes held.
type Batcher interface {
	BeginBatch()
	FlushBatch(ctx context.Context) map[string]error
}

// heldRecord is a record write Local holds in a batch: the record's
// content now, and what the remote held before the batch (the lease).
type heldRecord struct {
	branch    string
	data, old []byte
}

// BeginBatch implements Batcher: the pull request and comment records the
// pass writes are held, then pushed in one push by FlushBatch (each push
// of go-git walks the repo's objects and refs, so a record a push would
// make a first pass over a fleet quadratic).
func (l *Local) BeginBatch() {
	l.batch, l.held, l.heldOrder = true, map[string]*heldRecord{}, nil
}

// FlushBatch implements Batcher: one push of every record held, each
// under the lease of what the remote held before the batch. The writes
// that failed come back by branch, and the records read are dropped so
// that the next read sees what another writer made.
func (l *Local) FlushBatch(ctx context.Context) map[string]error {
	ws := make([]gitrepo.RecordWrite, 0, len(l.heldOrder))
	for _, ref := range l.heldOrder {
		h := l.held[ref]
		ws = append(ws, gitrepo.RecordWrite{Ref: ref, Data: h.data, Old: h.old})
	}
	order := l.heldOrder
	held := l.held
	l.batch, l.held, l.heldOrder = false, nil, nil
	failed := map[string]error{}
	for i, err := range l.Repo.WriteRecords(ctx, ws) {
		if err != nil {
			failed[held[order[i]].branch] = err
		}
	}
	if len(failed) > 0 {
		l.records = nil
	}
	return failed
}

// hold keeps a record write for FlushBatch: the lease is on what the
// remote held before the first write of the batch.
func (l *Local) hold(ref, branch string, data, old []byte) {
	if h, ok := l.held[ref]; ok {
		h.data = data
		return
	}
	l.held[ref] = &heldRecord{branch: branch, data: data, old: old}
	l.heldOrder = append(l.heldOrder, ref)
}

// heldData is the data a batch holds for ref, if it holds any.
func (l *Local) heldData(ref string) ([]byte, bool) {
	if !l.batch {
		return nil, false
	}
	h, ok := l.held[ref]
	if !ok {
		return nil, false
	}
	return h.data, true
}
