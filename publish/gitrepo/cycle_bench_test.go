package gitrepo

import (
	"context"
	"fmt"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// BenchmarkKeepAnOpenStepOnABusyBase measures the proof that keeps an open
// step's head as the base moves elsewhere: since a head the base holds is
// never kept, the proof walks the base's history back to the head's time,
// over the commits made on the base since the head was built.
func BenchmarkKeepAnOpenStepOnABusyBase(b *testing.B) {
	for _, since := range []int{10, 1000} {
		b.Run(fmt.Sprintf("%d commits since", since), func(b *testing.B) {
			ctx := context.Background()
			bare := newRemote(b, map[string]string{"clusters/db.yaml": "spec\n"})
			first, err := clone(b, bare).Publish(ctx, "cairn/db/s", change("v1\n"))
			if err != nil {
				b.Fatal(err)
			}
			repo, err := git.PlainOpen(bare)
			if err != nil {
				b.Fatal(err)
			}
			main := mustCommit(b, repo, branchHead(b, bare, "main"))
			prev := main
			for i := range since {
				sig := object.Signature{Name: "p", Email: "p@x", When: main.Committer.When.Add(time.Duration(i+1) * time.Second)}
				h, err := store(repo, &object.Commit{Author: sig, Committer: sig, Message: "elsewhere\n", TreeHash: prev.TreeHash, ParentHashes: []plumbing.Hash{prev.Hash}})
				if err != nil {
					b.Fatal(err)
				}
				prev = mustCommit(b, repo, h)
			}
			setBranch(b, bare, "main", prev.Hash, nil)
			r := clone(b, bare)
			if err := r.Fetch(ctx, "cairn/db/s"); err != nil {
				b.Fatal(err)
			}
			base, _ := r.Base()
			head, _ := r.RemoteBranch("cairn/db/s")
			c, _ := change("v1\n")(base)
			for _, cached := range []bool{false, true} {
				b.Run(map[bool]string{false: "first pass", true: "a pass on the same base"}[cached], func(b *testing.B) {
					for range b.N {
						if !cached {
							r.notHeld = heldCache{}
						}
						if _, ok, err := r.holds(head, base, c); err != nil || !ok || head.Hash != first.Commit {
							b.Fatalf("kept %v %v", ok, err)
						}
					}
				})
			}
		})
	}
}
