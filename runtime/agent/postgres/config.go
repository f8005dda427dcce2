package postgres

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
)

// The runtime brings each member's PostgreSQL config to the rendered one
// and reports what every member runs (contract.PostgresConfigStatus),
// which is how the planner knows a parameter step is done:
//
//   - the rendered postgresql.conf sets contract.ConfigRevisionParameter;
//     the kubelet updates a mounted ConfigMap some time after a sync, so a
//     member is reloaded only once pg_file_settings shows the new revision
//     in the file it reads, never before;
//   - current_setting() of that parameter is the revision the member has
//     loaded, and pg_settings.pending_restart lists what waits for a
//     restart (the rolling restart steps bring it).

// configEvery is how often the members' config is checked when nothing
// changed: reloads need not wait on a failover's 500ms passes.
const configEvery = 5 * time.Second

const configSQL = `SELECT COALESCE(current_setting('` + contract.ConfigRevisionParameter + `', true), ''),
  COALESCE((SELECT setting FROM pg_file_settings WHERE name = '` + contract.ConfigRevisionParameter + `' AND error IS NULL ORDER BY seqno DESC LIMIT 1), ''),
  COALESCE((SELECT string_agg(name, ',' ORDER BY name) FROM pg_settings WHERE pending_restart), ''),
  COALESCE((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), false)`

// memberConfig is what one member's config check found.
type memberConfig struct {
	loaded, file string
	pending      []string
	// tls: this check's connection is TLS; the runtime verified the
	// member's certificate when it connected (tlsConfig), so the member
	// serves TLS with the cluster's certificate.
	tls bool
}

// configPass checks the members that answered the probe, reloads those
// whose file holds the rendered revision they have not loaded, and
// returns the status to report; nil when it is not time to check.
func (p *pgPass) configPass(ctx context.Context, pods []corev1.Pod, want string) *contract.PostgresConfigStatus {
	r := p.r
	now := r.clock()
	if want == r.configWant && now.Sub(r.configAt) < configEvery {
		return nil
	}
	r.configWant, r.configAt = want, now
	st := &contract.PostgresConfigStatus{ObservedAt: now.UTC().Format(time.RFC3339), Members: map[string]contract.PostgresMemberConfig{}}
	for _, pod := range pods {
		if p.probe(pod.Name).Reach != reachUp {
			continue
		}
		mc, err := p.memberConfig(ctx, pod.Name, pod.Status.PodIP)
		if err != nil {
			r.logger().Warn("config check failed", "member", pod.Name, "error", err.Error())
			continue
		}
		if want != "" && mc.file == want && mc.loaded != want {
			if err := p.sql(ctx, pod.Name, "SELECT pg_reload_conf()"); err != nil {
				r.logger().Warn("config reload failed", "member", pod.Name, "error", err.Error())
			} else {
				r.logger().Info("config reloaded", "member", pod.Name, "revision", want)
				r.configAt = time.Time{} // look again next pass: the reload is asynchronous
			}
		}
		// A member reached by the accept mode's plain fallback serves no
		// verified TLS.
		st.Members[pod.Name] = contract.PostgresMemberConfig{Revision: mc.loaded, PendingRestart: mc.pending, TLS: mc.tls && p.auth.material != nil}
	}
	return st
}

func (p *pgPass) probe(name string) pgProbe {
	for _, m := range p.view.Members {
		if m.Name == name {
			return m.Probe
		}
	}
	return pgProbe{Reach: reachDown}
}

func (p *pgPass) memberConfig(ctx context.Context, member, ip string) (memberConfig, error) {
	cctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := p.connect(cctx, member, ip)
	if err != nil {
		return memberConfig{}, err
	}
	defer conn.Close(context.Background())
	var mc memberConfig
	var pending string
	if err := conn.QueryRow(cctx, configSQL).Scan(&mc.loaded, &mc.file, &pending, &mc.tls); err != nil {
		return memberConfig{}, err
	}
	if pending != "" {
		mc.pending = strings.Split(pending, ",")
	}
	return mc, nil
}

// sameConfigStatus compares two reports but for when they were made.
func sameConfigStatus(a, b contract.PostgresConfigStatus) bool {
	return maps.EqualFunc(a.Members, b.Members, func(x, y contract.PostgresMemberConfig) bool {
		return x.Revision == y.Revision && slices.Equal(x.PendingRestart, y.PendingRestart) && x.TLS == y.TLS
	})
}

func encodeConfigStatus(st contract.PostgresConfigStatus) (string, error) {
	data, err := json.Marshal(st)
	return string(data), err
}
