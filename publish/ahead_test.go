package publish

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/renderer"
)

// Whatever the workers, the jobs admitted and the ones the consumer
// skips, each Get is the render of its own job, and nothing is rendered
// that was not admitted.
func TestAheadIsTheSequentialPass(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for round := range 200 {
		n, workers := r.IntN(40), 1+r.IntN(4)
		admitted, skipped := make([]bool, n), make([]bool, n)
		delay := make([]time.Duration, n)
		for i := range n {
			admitted[i], skipped[i] = r.IntN(4) > 0, r.IntN(5) == 0
			delay[i] = time.Duration(r.IntN(200)) * time.Microsecond
		}
		a := NewAhead(context.Background(), n, workers, func(i int) bool { return admitted[i] }, func(i int) (renderer.Tree, renderer.Built, error) {
			if !admitted[i] {
				t.Errorf("round %d: job %d rendered but not admitted", round, i)
			}
			time.Sleep(delay[i])
			return renderer.Tree{"job": []byte(fmt.Sprint(i))}, renderer.Built{}, nil
		})
		for i := range n {
			if skipped[i] {
				continue
			}
			tree, _, err, ok := a.Get(i)
			if ok != admitted[i] || err != nil || ok && string(tree["job"]) != fmt.Sprint(i) {
				t.Fatalf("round %d: Get(%d) = %q, %v, %v; admitted %v", round, i, tree["job"], err, ok, admitted[i])
			}
		}
		a.Close()
	}
}

// The window holds: with nothing consumed, at most 2*workers jobs
// render; each Get lets one more start.
func TestAheadStaysWithinItsWindow(t *testing.T) {
	var started atomic.Int64
	a := NewAhead(context.Background(), 50, 2, func(int) bool { return true }, func(i int) (renderer.Tree, renderer.Built, error) {
		started.Add(1)
		return nil, renderer.Built{}, nil
	})
	defer a.Close()
	time.Sleep(50 * time.Millisecond)
	if got := started.Load(); got != 4 {
		t.Fatalf("%d started with nothing consumed, want 4 (2 workers, a window of 4)", got)
	}
	a.Get(0)
	deadline := time.Now().Add(5 * time.Second)
	for started.Load() != 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := started.Load(); got != 5 {
		t.Fatalf("%d started after one Get, want 5", got)
	}
}

// Closing early, or a cancelled pass, ends every worker: no render waits
// forever, and what was not handed out ends with the context's error.
func TestAheadStopsWhenClosedOrCancelled(t *testing.T) {
	a := NewAhead(context.Background(), 100, 2, func(int) bool { return true }, func(int) (renderer.Tree, renderer.Built, error) {
		return nil, renderer.Built{}, nil
	})
	a.Get(3)
	a.Close() // returns: the test would time out otherwise

	ctx, cancel := context.WithCancel(context.Background())
	b := NewAhead(ctx, 100, 2, func(int) bool { return true }, func(int) (renderer.Tree, renderer.Built, error) {
		return nil, renderer.Built{}, nil
	})
	cancel()
	var cancelled int
	for i := range 100 {
		if _, _, err, _ := b.Get(i); err != nil {
			cancelled++
		}
	}
	b.Close()
	if cancelled == 0 {
		t.Fatal("no job ended with the context's error after the cancel")
	}
}
