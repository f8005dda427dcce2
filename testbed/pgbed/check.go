package pgbed

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance/postgres"
	"github.com/cairn-dev/cairn/testbed"
)

// startCheck backs a major upgrade's pre-flight check pod: what its
// container runs (`cairn instance pg-upgrade-check --from F --to T
// --location URL`), with the bed's programs of both majors, the
// cluster's rendered postgresql.conf and a scratch folder of its own.
// The pod ends as the command does: exit 1 with its error as the
// termination message, or 0.
func (b *Bed) startCheck(ctx context.Context, pod *corev1.Pod) (testbed.Running, bool, error) {
	args := map[string]string{}
	for _, c := range pod.Spec.Containers {
		for i, a := range c.Command {
			if c.Name == contract.PGUpgradeCheckContainer && slices.Contains([]string{"--from", "--to", "--location"}, a) && i+1 < len(c.Command) {
				args[a] = c.Command[i+1]
			}
		}
	}
	from, ferr := strconv.Atoi(args["--from"])
	to, terr := strconv.Atoi(args["--to"])
	if ferr != nil || terr != nil || args["--location"] == "" {
		return testbed.Running{}, false, fmt.Errorf("pod %s: pg-upgrade-check %v", pod.Name, args)
	}
	oldBin, err := testbed.LookupPostgresBin(from)
	if err != nil {
		return testbed.Running{}, false, err
	}
	newBin, err := testbed.LookupPostgresBin(to)
	if err != nil {
		return testbed.Running{}, false, err
	}
	cluster := pod.Labels[contract.LabelInstance]
	_, conf, err := b.config(ctx, cluster)
	if err != nil {
		return testbed.Running{}, false, err
	}
	work := filepath.Join(b.dir, "check-"+string(pod.UID))
	if err := b.ownedDir(work); err != nil {
		return testbed.Running{}, false, err
	}
	out, err := os.Create(filepath.Join(b.dir, pod.Name+".log"))
	if err != nil {
		return testbed.Running{}, false, err
	}
	check := &postgres.UpgradeCheck{Cluster: cluster, Location: args["--location"], Backup: contract.RestoreLatest,
		From: from, To: to, OldBin: oldBin, NewBin: newBin, Work: work, ConfigFile: conf, Credential: b.cred,
		Log: slog.New(slog.NewTextHandler(out, nil))}
	cctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var result error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer out.Close()
		err := check.Run(cctx)
		if err != nil {
			fmt.Fprintf(out, "pg-upgrade-check: %v\n", err)
		}
		mu.Lock()
		result = err
		mu.Unlock()
	}()
	exited := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	return testbed.Running{IP: b.IP(cluster, 15), Exited: exited,
		Ready: func(context.Context) bool { return !exited() },
		Stop: func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
			}
		},
		Outcome: func() (int32, string) {
			mu.Lock()
			defer mu.Unlock()
			if result == nil {
				return 0, ""
			}
			msg := result.Error()
			return 1, msg[:min(len(msg), contract.TerminationMessageMax)]
		}}, true, nil
}
