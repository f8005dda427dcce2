package publish

import (
	"context"
	"runtime"
	"sync"

	"github.com/cairn-dev/cairn/renderer"
)

// Ahead renders a pass's trees on every core while the pass consumes
// them one at a time, in order: staging a branch touches the one clone,
// rendering (kustomize builds, most of a cold pass) does not. Render(i)
// runs for each i that want admits, at most window results ahead of the
// consumer, so memory stays bounded whatever the fleet's size; Get(i)
// waits for i's result. Indexes are consumed in increasing order: Get(i)
// gives up the unconsumed results before i (steps the pass did not
// render after all, such as one merged since), and Close the rest.
//
// The output does not depend on the number of workers: each tree is the
// renderer's, and the pass stages, pushes and writes pull requests in
// plan order as before (TestAheadIsTheSequentialPass).
type Ahead struct {
	jobs   []aheadJob
	slots  chan struct{}
	next   int // the lowest index not yet consumed or given up
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// aheadJob is one admitted job: its result, and whether it holds a slot
// of the window (set before it is handed to a worker, read after its
// result is received).
type aheadJob struct {
	result  chan rendered
	slotted bool
}

type rendered struct {
	tree  renderer.Tree
	built renderer.Built
	err   error
}

// NewAhead starts rendering n jobs on workers goroutines (GOMAXPROCS
// when workers <= 0), at most 2*workers results ahead of the consumer.
func NewAhead(ctx context.Context, n, workers int, want func(i int) bool, render func(i int) (renderer.Tree, renderer.Built, error)) *Ahead {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	a := &Ahead{jobs: make([]aheadJob, n), slots: make(chan struct{}, 2*workers), cancel: cancel}
	for i := range n {
		if want(i) {
			a.jobs[i].result = make(chan rendered, 1)
		}
	}
	work := make(chan int)
	a.done.Add(1)
	go func() { // the feeder: in order, within the window
		defer a.done.Done()
		defer close(work)
		for i := range a.jobs {
			j := &a.jobs[i]
			if j.result == nil {
				continue
			}
			select {
			case a.slots <- struct{}{}:
				j.slotted = true
				work <- i
			case <-ctx.Done():
				// Stopped: every job not handed out ends with the error.
				for k := i; k < len(a.jobs); k++ {
					if a.jobs[k].result != nil {
						a.jobs[k].result <- rendered{err: ctx.Err()}
					}
				}
				return
			}
		}
	}()
	for range workers {
		a.done.Add(1)
		go func() {
			defer a.done.Done()
			for i := range work {
				var r rendered
				if err := ctx.Err(); err != nil {
					r.err = err
				} else {
					r.tree, r.built, r.err = render(i)
				}
				a.jobs[i].result <- r
			}
		}()
	}
	return a
}

// Get returns job i's render; ok is false when want did not admit it
// (nothing was rendered). It gives up the unconsumed results before i.
func (a *Ahead) Get(i int) (tree renderer.Tree, built renderer.Built, err error, ok bool) {
	a.giveUp(i)
	if a.jobs[i].result == nil {
		return nil, renderer.Built{}, nil, false
	}
	r := a.take(i)
	a.next = i + 1
	return r.tree, r.built, r.err, true
}

// take receives job i's result and frees its slot of the window.
func (a *Ahead) take(i int) rendered {
	j := &a.jobs[i]
	r := <-j.result
	j.result = nil
	if j.slotted {
		<-a.slots
	}
	return r
}

// giveUp drops the results before i that were never consumed.
func (a *Ahead) giveUp(i int) {
	for ; a.next < i; a.next++ {
		if a.jobs[a.next].result != nil {
			a.take(a.next)
		}
	}
}

// Close stops the workers and drops what was not consumed.
func (a *Ahead) Close() {
	a.cancel()
	a.giveUp(len(a.jobs))
	a.done.Wait()
}
