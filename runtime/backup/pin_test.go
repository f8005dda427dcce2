package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
)

func TestExpiredPassesOverPinnedBackups(t *testing.T) {
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	backups := func(pinned ...int) []Manifest {
		var all []Manifest
		for i := range 5 { // finished on days 1..5
			all = append(all, Manifest{ID: fmt.Sprint(i), Finished: base.AddDate(0, 0, i)})
		}
		for _, i := range pinned {
			all[i].Request, all[i].Pinned = "backup-before-15.4", true
		}
		return all
	}
	now := base.AddDate(0, 0, 5)
	for _, c := range []struct {
		name string
		r    Retention
		all  []Manifest
		want string
	}{
		{"count 1 keeps the pinned one and the newest", Retention{Count: 1}, backups(1), "0,2,3"},
		{"max age 1s keeps the pinned one and the newest", Retention{MaxAge: time.Second}, backups(0), "1,2,3"},
		{"pinned backups are not counted", Retention{Count: 2}, backups(3), "0,1"},
		{"the newest pinned: the newest unpinned is kept too", Retention{Count: 1, MaxAge: time.Second}, backups(4), "0,1,2"},
		{"all pinned", Retention{Count: 1}, backups(0, 1, 2, 3, 4), ""},
		{"released (request kept, pin cleared): expired as any other", Retention{Count: 1}, func() []Manifest {
			all := backups(1)
			all[1].Pinned = false
			return all
		}(), "0,1,2,3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, m := range c.r.Expired(c.all, now) {
				got = append(got, m.ID)
			}
			if strings.Join(got, ",") != c.want {
				t.Fatalf("expired %v, want %s", got, c.want)
			}
		})
	}
}

// The backup taken for a request survives the shortest retention, on
// each store, until it is released.
func TestPinnedBackupSurvivesPrune(t *testing.T) {
	ctx := context.Background()
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			now := clock(time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC))
			short := Retention{Count: 1, MaxAge: time.Second}
			take := func(r Retention) Manifest {
				t.Helper()
				m, err := Take(ctx, st, "db", "PostgresCluster", bytesSource{data: payload(64)}, now)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := Prune(ctx, st, "db", r, now().Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
				return m
			}
			take(short)
			asked := short
			asked.Request = "backup-before-15.4"
			pinned := take(asked)
			second := take(asked) // the request is served: not pinned again
			take(short)
			last := take(short)
			all, err := List(ctx, st, "db")
			if err != nil || len(all) != 2 || all[0].ID != pinned.ID || all[1].ID != last.ID {
				t.Fatalf("kept %v %v, want the pinned %s and the newest %s (not %s)", ids(all), err, pinned.ID, last.ID, second.ID)
			}
			if m := all[0]; !m.Pinned || m.Request != "backup-before-15.4" {
				t.Fatalf("pinned manifest %+v", m)
			}
			if got := Pinned(all); len(got) != 1 || got[0].ID != pinned.ID {
				t.Fatalf("Pinned: %v", ids(got))
			}

			m, was, err := Release(ctx, st, "db", pinned.ID)
			if err != nil || !was || m.Pinned || m.Request != "backup-before-15.4" {
				t.Fatalf("release: %+v %v %v", m, was, err)
			}
			if _, was, err := Release(ctx, st, "db", pinned.ID); err != nil || was {
				t.Fatalf("second release: %v %v", was, err)
			}
			// Still named by the config: a released request pins nothing new.
			take(asked)
			all, _ = List(ctx, st, "db")
			if len(all) != 1 || all[0].Pinned {
				t.Fatalf("after the release: %v", ids(all))
			}
			if _, _, err := Release(ctx, st, "db", pinned.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("release of a deleted backup: %v", err)
			}
		})
	}
}

// failingPuts fails writing manifests, as a store that went read-only
// would.
type failingPuts struct{ Store }

func (f failingPuts) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	if strings.HasSuffix(key, "/"+manifestObject) {
		return 0, errors.New("403 AccessDenied")
	}
	return f.Store.Put(ctx, key, r)
}

// A pin that cannot be written stops retention: nothing is deleted that
// the next prune might still have to pin.
func TestPruneDeletesNothingWhenThePinFails(t *testing.T) {
	ctx := context.Background()
	st := &FileStore{Root: t.TempDir()}
	now := clock(time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC))
	for i := range 3 {
		if _, err := Take(ctx, st, "db", "EtcdCluster", bytesSource{data: payload(10 + i)}, now); err != nil {
			t.Fatal(err)
		}
	}
	deleted, err := Prune(ctx, failingPuts{st}, "db", Retention{Count: 1, Request: "backup-before-3.5.21"}, now())
	if err == nil || !strings.Contains(err.Error(), "pin backup") || len(deleted) != 0 {
		t.Fatalf("deleted %v, %v", deleted, err)
	}
	if all, _ := List(ctx, st, "db"); len(all) != 3 || len(Pinned(all)) != 0 {
		t.Fatalf("kept %v", ids(all))
	}
}

func TestPolicyNamesTheRequest(t *testing.T) {
	for _, c := range []struct {
		name string
		id   string
	}{
		{"no request", ""},
		{"a TakeBackup step's request", "backup-before-15.4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := map[string]string{contract.KeyBackupSchedule: "0 2 * * *", contract.KeyBackupStorageLocation: "file:///b"}
			if c.id != "" {
				data[contract.KeyRequestBackupID] = c.id
			}
			p, on, err := PolicyFromConfig(data)
			if err != nil || !on || p.Retention.Request != c.id {
				t.Fatalf("%+v %v %v", p, on, err)
			}
		})
	}
}

func ids(all []Manifest) []string {
	out := make([]string, len(all))
	for i, m := range all {
		out[i] = m.ID
	}
	return out
}
