package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/certs"
)

// Roles keeps a PostgreSQL cluster's primary: it keeps the role labels
// true, fails over from a primary that is gone, carries out requested
// switchovers and keeps synchronous_standby_names (see decidePostgres).
type Roles struct {
	Client             kubernetes.Interface
	Namespace, Cluster string
	Port               int
	// Identity is the runtime replica's name, recorded as field manager.
	Identity string
	Settings FailoverSettings
	// Metrics, when set, receive the PostgreSQL metrics.
	Metrics *PostgresMetrics
	Log     *slog.Logger

	// interval is the time between passes (postgresInterval when zero).
	interval time.Duration
	now      func() time.Time
	// hook, in tests, is called after each step of a failover or
	// switchover with its name.
	hook      func(ctx context.Context, step string)
	unhealthy map[string]time.Time
	lastPass  time.Time
	// nodesForbidden: reading nodes was refused (logged once);
	// stopsExist: the clean-stops ConfigMap was read or created.
	nodesForbidden bool
	stopsExist     bool
	// last is the last read of the API server, and steady whether the
	// last pass found the cluster steady (read.go).
	last   *pgRead
	steady bool
	// ignored are the labelled pods already logged as not members.
	ignored map[string]bool
	// configWant and configAt are the rendered config revision and the
	// time of the last config check (configPass).
	configWant string
	configAt   time.Time
	// CertLifetime is the lifetime of the certificates the runtime
	// issues; zero is pki.LeafLifetime (tests shorten it to see them
	// renewed).
	CertLifetime time.Duration
	// rendered is what the last pass read of the rendered config;
	// material and certsAt the client certificate and when the
	// certificate Secrets were last checked (tls.go).
	// authMu guards them: backups read them beside the passes.
	authMu   sync.Mutex
	rendered pgRendered
	material *certs.Material
	certsAt  time.Time
	// certsErr is the last failed check's error, recorded as an Event
	// once.
	certsErr string
}

// Pass looks at every member, then decides and acts until there is
// nothing more to do at once, and reports in the status, metrics and
// Events. While the cluster is steady it reads the API server on one
// pass in refreshPasses (read.go); any other pass reads it first.
func (r *Roles) Pass(ctx context.Context) error {
	if rd := r.reusable(); rd != nil {
		if err := r.passOn(ctx, rd, false); !errors.Is(err, errNotSteady) {
			return err
		}
	}
	rd, err := r.read(ctx)
	if err != nil {
		return err
	}
	return r.passOn(ctx, rd, true)
}

// passOn makes a pass on rd: fresh, when it was read for this pass. A
// pass on an earlier read returns errNotSteady, having changed nothing,
// as soon as it finds the cluster not steady.
func (r *Roles) passOn(ctx context.Context, rd *pgRead, fresh bool) error {
	asked := r.clock()
	probes := probeMembers(ctx, rd.pods, r.Cluster, r.Namespace, r.Port, rd.auth)
	p := &pgPass{r: r, store: rd.store, auth: rd.auth, pods: podsByName(rd.pods)}
	prev := rd.store.last
	p.view = r.view(rd.pods, probes, asked, prev, r.rendered.req, r.rendered.sync)
	// The clean stops: read once by a new leader (which creates their
	// ConfigMap, so members can record theirs), then only when a member
	// does not answer.
	if fresh && !rd.stopsRead && (!r.stopsExist || !allUp(probes)) {
		rd.stops, r.stopsExist = r.cleanStops(ctx)
		rd.stopsRead = true
	}
	p.view.Draining, p.view.CleanStops = rd.draining, rd.stops
	for i := range 8 {
		a := decidePostgres(p.view)
		if i == 0 {
			if r.steady = steady(p.view, a); !r.steady && !fresh {
				return errNotSteady
			}
		}
		again, err := p.act(ctx, a)
		if err != nil {
			r.last = nil
			return err
		}
		p.view.Status.Message = a.Why
		if !again {
			break
		}
	}
	p.nudgeLabelledAway(ctx)
	p.config = p.configPass(ctx, rd.pods, r.rendered.configRev)
	err := p.report(ctx, prev)
	switch {
	case err != nil && !fresh && errors.Is(err, errStatusMoved):
		r.steady = false
		return errNotSteady
	case err != nil:
		r.last = nil
	}
	return err
}

func (r *Roles) logger() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// label sets a pod's role label; with resourceVersion, only if the pod is
// still as it was listed (a decision on stale data gets a Conflict).
// It returns the pod's new resourceVersion.
func (r *Roles) label(ctx context.Context, pod, resourceVersion, role string) (string, error) {
	meta := map[string]any{"labels": map[string]string{contract.LabelRole: role}}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return "", err
	}
	got, err := r.Client.CoreV1().Pods(r.Namespace).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: r.fieldManager()})
	if err != nil {
		return "", fmt.Errorf("label %s %s: %w", pod, role, err)
	}
	r.logger().Info("role label set", "pod", pod, "role", role)
	return got.ResourceVersion, nil
}

// fieldManager names the writer: the runtime replica that holds the lease.
func (r *Roles) fieldManager() string {
	if r.Identity == "" {
		return contract.FieldManager
	}
	return contract.FieldManager + "/" + r.Identity
}

// auth reads the rendered config and how to reach the members: the
// superuser's password, and the cluster's certificates while TLS is on.
func (r *Roles) auth(ctx context.Context) (pgAuth, error) {
	rendered, err := r.request(ctx)
	if err != nil {
		return pgAuth{}, err
	}
	r.authMu.Lock()
	r.rendered = rendered
	r.authMu.Unlock()
	password, err := r.password(ctx)
	if err != nil {
		return pgAuth{}, err
	}
	auth := pgAuth{password: password}
	return auth, r.tlsAuth(ctx, &auth)
}

func (r *Roles) password(ctx context.Context) (string, error) {
	s, err := r.Client.CoreV1().Secrets(r.Namespace).Get(ctx, contract.SuperuserSecret(r.Cluster), metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("superuser secret: %w", err)
	}
	return string(s.Data[contract.SecretKeyPassword]), nil
}

// warnIgnored logs, once per pod, the labelled pods that are not members.
func (r *Roles) warnIgnored(names []string) {
	for _, n := range names {
		if !r.ignored[n] {
			if r.ignored == nil {
				r.ignored = map[string]bool{}
			}
			r.ignored[n] = true
			r.logger().Warn("a pod carries the cluster's labels but its StatefulSet does not own it: it is not a member, it gets no password and is never promoted", "pod", n)
		}
	}
}
