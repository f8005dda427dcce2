package etcd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// Run runs the pod's etcd member: it decides how the member starts,
// waiting while it cannot, and starts etcd. With the cluster's TLS on,
// the instance manager stays etcd's parent (Supervise): it restarts
// etcd, in turn with the other members, when the mounted CA bundle
// changes, which etcd reads only when it starts. With TLS off there is
// no bundle to follow, so, as before TLS, it replaces this process with
// etcd, which then receives the pod's signals itself: clusters rendered
// before TLS run exactly as they did.
func Run(ctx context.Context, e *Manager) error {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return fmt.Errorf("etcd binary: %w", err)
	}
	if e.Version == "" {
		if e.Version, err = BinaryVersion(ctx, bin); err != nil {
			e.Log.Warn("the etcd binary's version is unknown", "err", err.Error())
		}
	}
	args, err := e.startArgs(ctx)
	if err != nil {
		return err
	}
	if contract.TLSOn(e.Config.TLS) {
		return e.Supervise(ctx, bin, args, os.Stdout, os.Stderr)
	}
	return syscall.Exec(bin, append([]string{"etcd"}, args...), instance.ChildEnv())
}

// waitReasons are what an etcd member waits for (instance.Retry).
var waitReasons = []instance.WaitReason{
	{Err: ErrNoCluster, Reason: "waiting for the cluster"},
	{Err: ErrDataLost, Reason: "waiting for the runtime to replace this member"},
	{Err: ErrRemoving, Reason: "waiting for the StatefulSet to shrink"},
}

// startArgs are Args, waited for while the member cannot start.
func (e *Manager) startArgs(ctx context.Context) (args []string, err error) {
	err = instance.Retry(ctx, e.Log.Info, waitReasons, func() (err error) {
		args, err = e.Args(ctx)
		return err
	})
	return args, err
}
