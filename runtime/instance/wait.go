package instance

import (
	"context"
	"errors"
	"time"
)

// ErrNoCerts: TLS is on but the member has no certificates yet (the
// runtime issues them once the cluster's config turns TLS on). The
// member waits, not ready.
var ErrNoCerts = errors.New("TLS is on and the cluster's certificates are not there yet")

// retryDelay is how long a member waits before it tries again to find its
// cluster.
const retryDelay = 5 * time.Second

// WaitReason is what a member waits for while it cannot start with Err
// (errors.Is): the reason Retry logs.
type WaitReason struct {
	Err    error
	Reason string
}

// Retry calls fn until it succeeds, logging each wait with the first of
// reasons whose Err the error is (ErrNoCerts's after them); every error,
// known or transient, is waited out while the pod stays not ready (its
// startup probe allows an hour before Kubernetes restarts it).
func Retry(ctx context.Context, logf func(msg string, args ...any), reasons []WaitReason, fn func() error) error {
	reasons = append(reasons[:len(reasons):len(reasons)],
		WaitReason{ErrNoCerts, "waiting for the runtime to issue the cluster's certificates"})
	for {
		err := fn()
		if err == nil {
			return nil
		}
		reason := "error"
		for _, r := range reasons {
			if errors.Is(err, r.Err) {
				reason = r.Reason
				break
			}
		}
		logf("cannot start yet", "reason", reason, "err", err.Error(), "retry_in", retryDelay.String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryDelay):
		}
	}
}
