package postgres

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/certs"
)

// The runtime's side of PostgreSQL's TLS. While the rendered config turns
// TLS on (contract.KeyTLS), the leader keeps the cluster's CA and
// certificate Secrets (certs.Keeper: issued when missing, renewed past
// two thirds of their lifetime) and reaches every member as the superuser
// by the cluster's client certificate, verifying the member's server
// certificate under the member's own name (verify-full). Under accept, a
// member that does not serve TLS yet is reached as before TLS; under
// require, never.

// The Events of the certificates, on the StatefulSet: issued or renewed
// (Normal), and a check that failed (Warning, once per distinct error).
const (
	ReasonCertificatesIssued     = "CertificatesIssued"
	ReasonCertificatesNotChecked = "CertificatesNotChecked"
)

// certsEvery is how often the leader checks the certificate Secrets when
// nothing failed: renewal happens weeks before expiry, and a check is
// three reads. A lifetime shorter than six times it is checked six times
// a lifetime.
const certsEvery = 30 * time.Second

// pgAuth is how a pass reaches the members.
type pgAuth struct {
	password string
	// tls is the cluster's TLS mode; material the client certificate and
	// CA while it is on (nil if not available yet under accept).
	tls      string
	material *certs.Material
}

// tlsAuth adds the cluster's certificates to a pass's auth when TLS is
// on, checking the Secrets every certsEvery.
func (r *Roles) tlsAuth(ctx context.Context, auth *pgAuth) error {
	auth.tls = r.rendered.tls
	if !contract.TLSOn(auth.tls) {
		return nil
	}
	r.authMu.Lock()
	defer r.authMu.Unlock()
	now := r.clock()
	every := certsEvery
	if r.CertLifetime > 0 {
		// Short lifetimes (tests) are checked often enough to renew.
		every = min(every, r.CertLifetime/6)
	}
	if r.material == nil || now.Sub(r.certsAt) >= every {
		m, wrote, err := r.certificates(ctx)
		if err != nil && err.Error() != r.certsErr {
			r.certsErr = err.Error()
			r.certificatesEvent(ctx, agent.Event{Type: corev1.EventTypeWarning, Reason: ReasonCertificatesNotChecked, Message: "the cluster's TLS certificates could not be checked: " + err.Error()})
		}
		switch {
		case err != nil && r.material == nil && auth.tls == contract.TLSRequire:
			return fmt.Errorf("the cluster requires TLS and its certificates are not ready: %w", err)
		case err != nil:
			r.logger().Warn("certificates not checked", "error", err.Error())
		default:
			r.material, r.certsAt, r.certsErr = &m, now, ""
			r.Metrics.certificates(m.NotAfter)
			if len(wrote) > 0 {
				r.logger().Info("certificates issued", "secrets", fmt.Sprint(wrote))
				r.certificatesEvent(ctx, agent.Event{Type: corev1.EventTypeNormal, Reason: ReasonCertificatesIssued, Message: "issued " + strings.Join(wrote, ", ")})
			}
		}
	}
	auth.material = r.material
	return nil
}

// certificates are the cluster's client certificate and CA: kept by the
// runtime (certs.Keeper), or, with a cert-manager issuer, read from the
// Secret cert-manager writes (cert-manager renews it; the runtime never
// writes a certificate Secret then).
func (r *Roles) certificates(ctx context.Context) (certs.Material, []string, error) {
	if r.rendered.certManager {
		m, err := (&certs.Files{Client: r.Client, Namespace: r.Namespace, Cluster: r.Cluster}).Material(ctx)
		return m, nil, err
	}
	k := &certs.Keeper{Client: r.Client, Namespace: r.Namespace, Cluster: r.Cluster, App: contract.AppPostgres, Lifetime: r.CertLifetime, Now: r.now, Log: r.Log}
	return k.Ensure(ctx)
}

// certificatesEvent records ev on the StatefulSet; failing to is logged,
// never the pass's error.
func (r *Roles) certificatesEvent(ctx context.Context, ev agent.Event) {
	if err := agent.RecordClusterEvent(ctx, r.Client, r.Namespace, r.Cluster, r.clock(), ev); err != nil {
		r.logger().Warn("event not recorded", "reason", ev.Reason, "error", err.Error())
	}
}

// lastAuth is the TLS side of the last pass's auth, for backups, which
// run beside the passes: the mode and the client certificate.
func (r *Roles) lastAuth() pgAuth {
	r.authMu.Lock()
	defer r.authMu.Unlock()
	return pgAuth{tls: r.rendered.tls, material: r.material}
}

// memberConfig is the connection to member at ip as the superuser.
func (a pgAuth) memberConfig(cluster, namespace, member, ip string, port int, timeout time.Duration) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = ip, uint16(port), contract.PostgresSuperuser, a.password, contract.PostgresDatabase
	cfg.ConnectTimeout, cfg.RequireAuth = timeout, contract.PostgresRequireAuth
	cfg.RuntimeParams["application_name"] = contract.AppRuntime
	tc, err := a.tlsConfig(contract.PostgresMemberServerName(cluster, namespace, member))
	if err != nil || tc == nil {
		return cfg, err
	}
	cfg.TLSConfig, cfg.Fallbacks = tc, nil
	if a.tls == contract.TLSAccept {
		cfg.Fallbacks = []*pgconn.FallbackConfig{{Host: ip, Port: uint16(port)}}
	}
	return cfg, nil
}

// tlsConfig is the client TLS config for a server that must prove name;
// nil when TLS is off (connections stay as before TLS: libpq's prefer).
func (a pgAuth) tlsConfig(name string) (*tls.Config, error) {
	switch {
	case !contract.TLSOn(a.tls):
		return nil, nil
	case a.material == nil && a.tls == contract.TLSAccept:
		return nil, nil
	case a.material == nil:
		return nil, fmt.Errorf("the cluster requires TLS and the runtime has no client certificate")
	}
	return a.material.ClientConfig(name)
}
