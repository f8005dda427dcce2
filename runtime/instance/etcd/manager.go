package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// ErrNoCluster: no member of the cluster answers, and this member may not
// bootstrap one. The caller waits and tries again.
var ErrNoCluster = errors.New("no member of the cluster answers and this member may not bootstrap it")

// ErrRemoving: a merged scale-in step removes this member; it waits for
// the StatefulSet to shrink instead of joining again.
var ErrRemoving = errors.New("this member is being removed by a scale-in step")

// ErrDataLost: this member is in the membership but its data directory is
// empty. Starting it would fail; the runtime replaces it (remove, then
// re-add), and the next attempt joins.
var ErrDataLost = errors.New("member is in the membership but its data directory is empty")

// Manager is the instance manager of one etcd member.
type Manager struct {
	// Name is the member's name: its pod name, <cluster>-<ordinal>.
	Name    string
	DataDir string
	Config  Config
	// PeerURL and ClientURL are the URLs a member advertises; in
	// Kubernetes http://<member>.<peer-service>.<namespace>.svc:2380 and
	// :2379.
	PeerURL, ClientURL func(member string) string
	// ListenPeerURL and ListenClientURL are where this member listens;
	// their schemes, as PeerURL's and ClientURL's, are Schemes' of
	// the cluster's TLS mode. ListenMetricsURL, with TLS on, is where it
	// serves /health and /metrics in plain HTTP for the probes.
	ListenPeerURL, ListenClientURL, ListenMetricsURL string
	// TLSDir holds the member's certificates (contract.TLSFile*) when the
	// cluster's TLS mode (Config.TLS) is on: in a pod, contract.EtcdTLSDir.
	TLSDir string
	// Endpoints are client URLs that reach the running cluster.
	Endpoints []string
	// DialTimeout bounds each attempt to reach the cluster.
	DialTimeout time.Duration
	// Version is the version of the etcd binary the member runs
	// (BinaryVersion); empty when unknown.
	Version string
	// Turns times the restarts that load a changed CA bundle, with TLS
	// on (turn.go); zero fields take their defaults.
	Turns RestartTurns
	// ConfigDir, when set, is the mounted <cluster>-cairn ConfigMap
	// Config was read from; such a restart reads it again, as a new
	// container would.
	ConfigDir string
	Log       *slog.Logger
}

// Args decides how the member starts and returns the etcd flags for it:
// from its data, by joining the running cluster, or, for the members of a
// create step, by bootstrapping. It returns ErrNoCluster or ErrDataLost
// when the member cannot start yet, and instance.ErrNoCerts while TLS is on and
// its certificate files are not all there (tls.go).
func (e *Manager) Args(ctx context.Context) ([]string, error) {
	if err := e.checkTLS(); err != nil {
		return nil, err
	}
	ord, err := contract.PodOrdinal(e.Name)
	if err != nil {
		return nil, err
	}
	hasData, err := instance.Exists(filepath.Join(e.DataDir, "member"))
	if err != nil {
		return nil, err
	}
	cli, members, err := e.cluster(ctx)
	if cli != nil {
		defer cli.Close()
	}
	reachable := err == nil
	if args, ok, err := e.recoverArgs(ctx, hasData, cli, members, reachable); err != nil || ok {
		return args, err
	}
	if !hasData && !reachable && e.Config.Bootstrap == contract.BootstrapNew && e.Config.Restore != nil && ord < e.Config.InitialMembers {
		// A create step from a snapshot: every member it creates restores
		// the same snapshot and starts from that data. A member that comes
		// later, when the restored cluster already answers, joins it as
		// the member it lists (and one that lost its data is found out).
		if err := e.restore(ctx); err != nil {
			return nil, err
		}
		hasData = true
	}
	if e.Config.RemoveMember == e.Name && (!reachable || !e.inMembership(members) || !hasData) {
		return nil, fmt.Errorf("%s: %w", e.Name, ErrRemoving)
	}
	switch {
	case hasData && reachable && e.readdedUnstarted(members):
		// Removed and added again (a replacement) while it was down: the
		// new member is unstarted and its old data belongs to the old one.
		if err := e.moveAside(); err != nil {
			return nil, err
		}
		return e.join(ctx, cli, members)
	case hasData && reachable && !e.inMembership(members):
		// Removed while it was down (a scale-in, a replacement): its data
		// belongs to a member ID the cluster no longer knows.
		if err := e.moveAside(); err != nil {
			return nil, err
		}
		return e.join(ctx, cli, members)
	case hasData:
		e.Log.Info("starting from data", "member", e.Name)
		return append(e.baseArgs(), e.logArgs()...), nil
	case reachable:
		return e.join(ctx, cli, members)
	case e.Config.Bootstrap == contract.BootstrapNew && ord < e.Config.InitialMembers:
		return e.bootstrapArgs(), nil
	}
	return nil, fmt.Errorf("%w (%v)", ErrNoCluster, err)
}

// cluster lists the members through the endpoints.
func (e *Manager) cluster(ctx context.Context) (*clientv3.Client, []*etcdserverpb.Member, error) {
	eps := slices.DeleteFunc(slices.Clone(e.Endpoints), func(ep string) bool { return ep == e.ClientURL(e.Name) })
	if len(eps) == 0 {
		return nil, nil, errors.New("no endpoints")
	}
	timeout := cmpOr(e.DialTimeout, 3*time.Second)
	tlsConfig, err := e.clientTLS()
	if err != nil {
		return nil, nil, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: timeout, Logger: zap.NewNop(), TLS: tlsConfig})
	if err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := cli.MemberList(cctx)
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	return cli, resp.Members, nil
}

// readdedUnstarted reports whether the member with this peer URL was added
// but never started (no name, no client URLs).
func (e *Manager) readdedUnstarted(members []*etcdserverpb.Member) bool {
	return slices.ContainsFunc(members, func(m *etcdserverpb.Member) bool {
		return m.Name == "" && len(m.ClientURLs) == 0 && slices.Contains(m.PeerURLs, e.PeerURL(e.Name))
	})
}

func (e *Manager) inMembership(members []*etcdserverpb.Member) bool {
	return slices.ContainsFunc(members, func(m *etcdserverpb.Member) bool {
		return m.Name == e.Name || slices.Contains(m.PeerURLs, e.PeerURL(e.Name))
	})
}

// join adds this member to the running cluster (as a learner where etcd
// supports it) unless an earlier attempt already did, and returns the
// flags to start it with.
func (e *Manager) join(ctx context.Context, cli *clientv3.Client, members []*etcdserverpb.Member) ([]string, error) {
	peer := e.PeerURL(e.Name)
	idx := slices.IndexFunc(members, func(m *etcdserverpb.Member) bool {
		return m.Name == e.Name || slices.Contains(m.PeerURLs, peer)
	})
	switch {
	case idx >= 0 && len(members[idx].ClientURLs) > 0:
		// It has started before (it published its client URLs), so its
		// data existed: the data is lost, not yet to be created.
		return nil, fmt.Errorf("%s: %w", e.Name, ErrDataLost)
	case idx < 0:
		learner, err := e.supportsLearners(ctx, cli)
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, cmpOr(e.DialTimeout, 3*time.Second))
		defer cancel()
		var resp *clientv3.MemberAddResponse
		if learner {
			resp, err = cli.MemberAddAsLearner(cctx, []string{peer})
		} else {
			resp, err = cli.MemberAdd(cctx, []string{peer})
		}
		if err != nil {
			return nil, fmt.Errorf("add member %s: %w", e.Name, err)
		}
		members = resp.Members
		e.Log.Info("added to the cluster", "member", e.Name, "learner", learner)
	default:
		// Added earlier (by a previous attempt, or as one of the create
		// step's members) and never started.
		e.Log.Info("joining as the member added earlier", "member", e.Name)
	}
	var initial []string
	for _, m := range members {
		name := m.Name
		if slices.Contains(m.PeerURLs, peer) {
			name = e.Name
		}
		if name == "" {
			continue // added by someone else and not started: not ours to name
		}
		for _, u := range m.PeerURLs {
			initial = append(initial, name+"="+u)
		}
	}
	slices.Sort(initial)
	return append(e.baseArgs(), "--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "existing"), nil
}

// supportsLearners reports whether every answering member runs etcd 3.4+.
func (e *Manager) supportsLearners(ctx context.Context, cli *clientv3.Client) (bool, error) {
	for _, ep := range cli.Endpoints() {
		cctx, cancel := context.WithTimeout(ctx, cmpOr(e.DialTimeout, 3*time.Second))
		st, err := cli.Status(cctx, ep)
		cancel()
		if err != nil {
			continue
		}
		major, minor, ok := parseMinor(st.Version)
		if !ok {
			return false, fmt.Errorf("member at %s reports version %q", ep, st.Version)
		}
		return major > 3 || major == 3 && minor >= 4, nil
	}
	return false, errors.New("no member reports its version")
}

func (e *Manager) baseArgs() []string {
	args := []string{
		"--name", e.Name,
		"--data-dir", e.DataDir,
		"--listen-peer-urls", e.ListenPeerURL,
		"--listen-client-urls", alsoTLS(e.Config.TLS, e.ListenClientURL),
		"--advertise-client-urls", alsoTLS(e.Config.TLS, e.ClientURL(e.Name)),
		"--initial-advertise-peer-urls", e.PeerURL(e.Name),
	}
	if q := e.Config.SpaceQuota; q > 0 {
		// The rendered spec.spaceQuota; without it etcd's default.
		args = append(args, "--quota-backend-bytes", strconv.FormatInt(q, 10))
	}
	return append(args, e.tlsArgs()...)
}

// bootstrapArgs start one of the create step's members: all of them start
// with the same initial cluster and token and form the cluster together.
func (e *Manager) bootstrapArgs() []string {
	e.Log.Info("bootstrapping a new cluster", "member", e.Name, "members", e.Config.InitialMembers)
	return append(e.baseArgs(),
		"--initial-cluster", e.initialCluster(),
		"--initial-cluster-state", "new",
		"--initial-cluster-token", e.Config.Token)
}

// initialCluster is etcd's --initial-cluster of the create step's
// members: name=peer URL of each, by ordinal.
func (e *Manager) initialCluster() string {
	cluster, _ := contract.MemberCluster(e.Name)
	var initial []string
	for i := range e.Config.InitialMembers {
		m := contract.MemberName(cluster, i)
		initial = append(initial, m+"="+e.PeerURL(m))
	}
	return strings.Join(initial, ",")
}

// moveAside keeps stale data under a new name instead of deleting it.
func (e *Manager) moveAside() error {
	return instance.MoveAside(e.DataDir, e.Log.With("member", e.Name), "this member was removed from the cluster; keeping its old data aside and joining again")
}

func parseMinor(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	a, err1 := strconv.Atoi(parts[0])
	b, err2 := strconv.Atoi(parts[1])
	return a, b, err1 == nil && err2 == nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
