package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Label keys and values, as the renderer selects on them.
const (
	LabelRole   = "cairn.dev/role"
	RolePrimary = "primary"
	RoleReplica = "replica"
	// RoleFenced marks a former primary that does not answer while another
	// member is primary: no Service selects it, and its instance manager
	// will not start it as a primary.
	RoleFenced    = "fenced"
	labelName     = "app.kubernetes.io/name"
	labelInstance = "app.kubernetes.io/instance"
)

// Roles keeps the role labels of a PostgreSQL cluster's pods true.
type Roles struct {
	Client             kubernetes.Interface
	Namespace, Cluster string
	Port               int
	// Identity is the runtime replica's name, recorded as field manager.
	Identity string
	Log      *slog.Logger
}

// Pass asks every member with an address whether it is in recovery. When
// exactly one answers as primary, it first fences every other pod still
// labelled primary (answering or not), then labels that one primary and
// the answering others replica; so no two pods are ever labelled primary.
// With no primary, or more than one, it changes no primary label: who
// takes writes is decided by failover and fencing, not here.
func (r *Roles) Pass(ctx context.Context) error {
	password, err := r.password(ctx)
	if err != nil {
		return err
	}
	pods, err := r.Client.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: fmt.Sprintf("%s=postgresql,%s=%s", labelName, labelInstance, r.Cluster)})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	roles := map[string]string{}
	var primaries []string
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		inRecovery, err := r.inRecovery(ctx, p.Status.PodIP, password)
		if err != nil {
			r.logger().Debug("member does not answer", "pod", p.Name, "err", err.Error())
			continue
		}
		roles[p.Name] = RoleReplica
		if !inRecovery {
			roles[p.Name] = RolePrimary
			primaries = append(primaries, p.Name)
		}
	}
	if len(primaries) == 1 {
		// Demote before promoting: another pod labelled primary is fenced
		// (or, when it answers as a replica, labelled so) first.
		for _, p := range pods.Items {
			if p.Name == primaries[0] || p.Labels[LabelRole] != RolePrimary {
				continue
			}
			want := RoleFenced
			if roles[p.Name] == RoleReplica {
				want = RoleReplica
			}
			if err := r.label(ctx, p.Name, p.ResourceVersion, want); err != nil {
				return err
			}
		}
	}
	for _, p := range pods.Items {
		want, known := roles[p.Name]
		switch {
		case !known, want == RolePrimary && len(primaries) != 1:
			continue
		case p.Labels[LabelRole] == want:
			continue
		}
		// The pod may have been patched above: no resourceVersion guard on
		// this second write of the pass.
		if err := r.label(ctx, p.Name, "", want); err != nil {
			return err
		}
	}
	return nil
}

func (r *Roles) logger() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// label sets a pod's role label; with resourceVersion, only if the pod is
// still as it was listed (a decision on stale data gets a Conflict).
func (r *Roles) label(ctx context.Context, pod, resourceVersion, role string) error {
	meta := map[string]any{"labels": map[string]string{LabelRole: role}}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	_, err = r.Client.CoreV1().Pods(r.Namespace).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: r.fieldManager()})
	if err != nil {
		return fmt.Errorf("label %s %s: %w", pod, role, err)
	}
	r.logger().Info("role label set", "pod", pod, "role", role)
	return nil
}

// fieldManager names the writer: the runtime replica that holds the lease.
func (r *Roles) fieldManager() string {
	if r.Identity == "" {
		return "cairn-runtime"
	}
	return "cairn-runtime/" + r.Identity
}

func (r *Roles) password(ctx context.Context) (string, error) {
	s, err := r.Client.CoreV1().Secrets(r.Namespace).Get(ctx, r.Cluster+"-superuser", metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("superuser secret: %w", err)
	}
	return string(s.Data["password"]), nil
}

func (r *Roles) inRecovery(ctx context.Context, ip, password string) (bool, error) {
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return false, err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = ip, uint16(r.Port), "postgres", password, "postgres"
	cfg.ConnectTimeout = 2 * time.Second
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return false, fmt.Errorf("connect to %s: %w", ip, err)
	}
	defer conn.Close(context.Background())
	var v bool
	if err := conn.QueryRow(cctx, "SELECT pg_is_in_recovery()").Scan(&v); err != nil {
		return false, fmt.Errorf("ask %s its role: %w", ip, err)
	}
	return v, nil
}
