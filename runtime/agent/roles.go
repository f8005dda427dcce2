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
	LabelRole     = "cairn.dev/role"
	RolePrimary   = "primary"
	RoleReplica   = "replica"
	labelName     = "app.kubernetes.io/name"
	labelInstance = "app.kubernetes.io/instance"
)

// Roles keeps the role labels of a PostgreSQL cluster's pods true.
type Roles struct {
	Client             kubernetes.Interface
	Namespace, Cluster string
	Port               int
	Log                *slog.Logger
}

// Pass asks every member with an address whether it is in recovery and
// labels the one that is not primary and the others replica. With no
// primary, or more than one, it changes no primary label: the member
// that takes writes is decided by failover and fencing, not here.
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
		if p.Status.PodIP == "" {
			continue
		}
		inRecovery, err := r.inRecovery(ctx, p.Status.PodIP, password)
		if err != nil {
			r.Log.Debug("member does not answer", "pod", p.Name, "err", err.Error())
			continue
		}
		roles[p.Name] = RoleReplica
		if !inRecovery {
			roles[p.Name] = RolePrimary
			primaries = append(primaries, p.Name)
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
		if err := r.label(ctx, p.Name, want); err != nil {
			return err
		}
		r.Log.Info("role label set", "pod", p.Name, "role", want)
	}
	return nil
}

func (r *Roles) label(ctx context.Context, pod, role string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{LabelRole: role}}})
	_, err := r.Client.CoreV1().Pods(r.Namespace).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "cairn-runtime"})
	if err != nil {
		return fmt.Errorf("label %s %s: %w", pod, role, err)
	}
	return nil
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
		return false, err
	}
	defer conn.Close(context.Background())
	var v bool
	err = conn.QueryRow(cctx, "SELECT pg_is_in_recovery()").Scan(&v)
	return v, err
}
