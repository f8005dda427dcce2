package etcd

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
)

// The Events of etcd's downgrade.
const (
	ReasonDowngradeEnabled   = "DowngradeEnabled"
	ReasonDowngradeCancelled = "DowngradeCancelled"
	ReasonDowngradeRefused   = "DowngradeRefused"
	ReasonDowngradeFinished  = "DowngradeFinished"
)

// downgradeRequest is a merged EtcdDowngrade step's request, from the
// ConfigMap <cluster>-cairn (contract.KeyRequestEtcdDowngrade*).
type downgradeRequest struct {
	ID, Action, To string
}

// downgradeSeen is etcd's downgrade as the members report it.
type downgradeSeen struct {
	// enabled, target: a 3.6+ member reports the downgrade to target
	// ("3.6") enabled.
	enabled bool
	target  string
	// migrated: every member answered, and each that reports a storage
	// version reports target's.
	migrated bool
}

// seeDowngrade reads etcd's downgrade from what the members reported
// (pure). Members before 3.6 report neither a downgrade nor a storage
// version.
func seeDowngrade(l etcdLook) downgradeSeen {
	var d downgradeSeen
	for _, m := range l.members {
		if m.answered && m.downgrade != nil && m.downgrade.GetEnabled() {
			d.enabled, d.target = true, minorOf(m.downgrade.GetTargetVersion())
			break
		}
	}
	if !d.enabled {
		return d
	}
	d.migrated = len(l.members) > 0
	for _, m := range l.members {
		switch {
		case !m.answered:
			d.migrated = false
		case m.storageVersion != "" && minorOf(m.storageVersion) != d.target:
			d.migrated = false
		}
	}
	return d
}

// downgradeStep is what a pass does about etcd's downgrade.
type downgradeStep int

const (
	downgradeNothing downgradeStep = iota
	// downgradeRecord: etcd already is as the request asks; record it done.
	downgradeRecord
	downgradeEnable
	downgradeCancel
	// downgradeWait: not every member is healthy; ask next pass.
	downgradeWait
)

// decideDowngrade says what to do about request req (pure): nothing once
// it is done, record it when etcd is already as it asks, else ask etcd,
// and only while every member is healthy.
func decideDowngrade(req downgradeRequest, prev *contract.EtcdDowngrade, seen downgradeSeen, l etcdLook) downgradeStep {
	if req.ID == "" || prev != nil && prev.Done == req.ID {
		return downgradeNothing
	}
	switch req.Action {
	case contract.EtcdDowngradeEnable:
		if seen.enabled && seen.target == req.To {
			return downgradeRecord
		}
	case contract.EtcdDowngradeCancel:
		if !seen.enabled {
			return downgradeRecord
		}
	default:
		return downgradeNothing
	}
	for _, m := range l.members {
		if !m.healthy() {
			return downgradeWait
		}
	}
	if len(l.members) == 0 {
		return downgradeWait
	}
	if req.Action == contract.EtcdDowngradeCancel {
		return downgradeCancel
	}
	return downgradeEnable
}

// downgrade carries out a merged EtcdDowngrade step's request (when the
// pass made no other change) and reports etcd's downgrade in st; it
// returns the pass's Events about it. A request etcd refuses is tried
// again each pass, its error in the status.
func (m *Membership) downgrade(ctx context.Context, cli *clientv3.Client, config map[string]string, l etcdLook, prev *etcdStatus, st *etcdStatus, changed bool) []agent.Event {
	req := downgradeRequestOf(config)
	var before *contract.EtcdDowngrade
	if prev != nil {
		before = prev.Downgrade
	}
	seen := seeDowngrade(l)
	d := contract.EtcdDowngrade{Enabled: seen.enabled, Target: seen.target, StorageMigrated: seen.migrated}
	if before != nil {
		d.Done, d.Error = before.Done, before.Error
	}
	var evs []agent.Event
	step := decideDowngrade(req, before, seen, l)
	if changed && (step == downgradeEnable || step == downgradeCancel) {
		step = downgradeWait // one change a pass
	}
	switch step {
	case downgradeRecord:
		d.Done, d.Error = req.ID, ""
	case downgradeEnable, downgradeCancel:
		if err := askDowngrade(ctx, cli, step, req.To); err != nil {
			if d.Error != err.Error() {
				evs = append(evs, agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonDowngradeRefused, Message: fmt.Sprintf("etcd refused the downgrade request of step %s: %v", req.ID, err)})
			}
			d.Error = err.Error()
			break
		}
		d.Done, d.Error = req.ID, ""
		if step == downgradeEnable {
			d.Enabled, d.Target = true, req.To
			evs = append(evs, agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonDowngradeEnabled, Message: fmt.Sprintf("enabled etcd's downgrade to %s for step %s: etcd lowers its cluster version to %s and migrates every member's storage", req.To, req.ID, req.To)})
		} else {
			d.Enabled, d.Target, d.StorageMigrated = false, "", false
			evs = append(evs, agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonDowngradeCancelled, Message: fmt.Sprintf("cancelled etcd's downgrade for step %s: etcd raises its cluster version again once every member runs the newer minor", req.ID)})
		}
	}
	if before != nil && before.Enabled && !d.Enabled && step != downgradeCancel && l.listed && len(l.members) > 0 {
		evs = append(evs, agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonDowngradeFinished, Message: fmt.Sprintf("every member runs %s: etcd ended the downgrade", before.Target)})
	}
	if d != (contract.EtcdDowngrade{}) {
		st.Downgrade = &d
	}
	return evs
}

// askDowngrade asks etcd to validate and enable the downgrade to minor to,
// or to cancel the one enabled.
func askDowngrade(ctx context.Context, cli *clientv3.Client, step downgradeStep, to string) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if step == downgradeCancel {
		_, err := cli.Downgrade(cctx, clientv3.DowngradeCancel, "")
		return err
	}
	if _, err := cli.Downgrade(cctx, clientv3.DowngradeValidate, to); err != nil {
		return fmt.Errorf("validate the downgrade to %s: %w", to, err)
	}
	if _, err := cli.Downgrade(cctx, clientv3.DowngradeEnable, to); err != nil {
		return fmt.Errorf("enable the downgrade to %s: %w", to, err)
	}
	return nil
}

// downgradeRequestOf is a merged EtcdDowngrade step's request in the
// rendered config; none when there is none.
func downgradeRequestOf(config map[string]string) downgradeRequest {
	return downgradeRequest{ID: config[contract.KeyRequestEtcdDowngradeID], Action: config[contract.KeyRequestEtcdDowngradeAction],
		To: config[contract.KeyRequestEtcdDowngradeTo]}
}

// minorOf is a version's major.minor ("3.6.0" -> "3.6"); "" when it has
// none.
func minorOf(v string) string {
	major, minor, ok := majorMinor(v)
	if !ok {
		return ""
	}
	return strconv.Itoa(major) + "." + strconv.Itoa(minor)
}
