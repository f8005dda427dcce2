package postgres

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// TLS of a PostgreSQL member, by the cluster's TLS mode (contract.KeyTLS):
//
//   - off: connections are as they were before TLS (libpq's and pgx's
//     default, sslmode=prefer, verifying nothing);
//   - accept: the member keeps its certificates in TLSDir, reloads its
//     server when they change, and reaches the other members over TLS
//     where they offer it, falling back to plain connections (the
//     cluster is moving to TLS and some members may not serve it yet);
//   - require: every connection it makes is TLS, verifying the server's
//     certificate against the cluster's CA and its name (verify-full);
//     as the superuser it proves itself by the cluster's client
//     certificate, the only way pg_hba admits the superuser over the
//     network.
//
// A member reached by address (a test bed's, or a peer from the headless
// Service's records) is verified under its name in the headless Service
// (contract.PostgresMemberServerName), which the members' certificate
// covers with a wildcard.

// CertSync writes the member's certificates into its TLS directory from
// the runtime's Secrets (certs.Files): changed reports a file replaced.
type CertSync interface {
	Sync(ctx context.Context) (changed bool, err error)
}

// defaultCertsEvery is how often a running member checks its
// certificates: a renewed certificate reaches it well within a day.
const defaultCertsEvery = time.Minute

// tlsMode is the cluster's TLS mode now: TLSMode's answer when set (the
// mounted config changes without a restart), else the config read at
// start. An unreadable mode is the config's.
func (p *Manager) tlsMode() string {
	if p.TLSMode != nil {
		if m, ok := contract.TLSMode(p.TLSMode()); ok {
			return m
		}
	}
	m, _ := contract.TLSMode(p.Config.TLS)
	return m
}

// syncCerts brings the member's certificate files up to date when TLS is
// on; before the server starts, failing to is instance.ErrNoCerts.
func (p *Manager) syncCerts(ctx context.Context) (changed bool, err error) {
	if !contract.TLSOn(p.tlsMode()) {
		return false, nil
	}
	if p.Certs == nil {
		return false, fmt.Errorf("%s: TLS is on but this member has no certificate source: %w", p.Name, instance.ErrNoCerts)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	changed, err = p.Certs.Sync(cctx)
	if err != nil {
		return false, fmt.Errorf("%s: %v: %w", p.Name, err, instance.ErrNoCerts)
	}
	return changed, nil
}

// keepCerts checks the certificates every CertsEvery while the server
// runs (from its start: Start) and reloads the server when they change:
// PostgreSQL reads its certificate and key again at a reload, so a
// renewed certificate never restarts a member. It also turns TLS on in a
// running member when a merged step does (the config changes without a
// restart). A change written before the postmaster handles signals is
// reloaded once it does.
func (p *Manager) keepCerts(ctx context.Context, s *Server) {
	every := p.CertsEvery
	if every <= 0 {
		every = defaultCertsEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	pending := false // files changed, the server not reloaded yet
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-t.C:
		}
		changed, err := p.syncCerts(ctx)
		if err != nil {
			p.Log.Warn("certificates not checked", "member", p.Name, "err", err.Error())
		}
		pending = pending || changed
		if pending && s.handlesSignals() {
			p.Log.Info("certificates changed: reloading the server", "member", p.Name)
			s.reload()
			pending = false
		}
	}
}

// tlsFile is a file of the member's TLS directory.
func (p *Manager) tlsFile(name string) string {
	dir := p.TLSDir
	if dir == "" {
		dir = contract.PostgresTLSDir
	}
	return filepath.Join(dir, name)
}

// cluster is the member's cluster: its name without the ordinal.
func (p *Manager) cluster() string {
	if i := strings.LastIndexByte(p.Name, '-'); i > 0 {
		return p.Name[:i]
	}
	return p.Name
}

// serverName is the name a server at host must prove.
func (p *Manager) serverName(host string) string {
	return contract.PostgresServerNameFor(p.cluster(), p.Namespace, p.Name, host)
}

// clientTLS is the TLS config for the server at host: the cluster's CA,
// the server's name, and with client the superuser's certificate.
func (p *Manager) clientTLS(host string, client bool) (*tls.Config, error) {
	ca, err := os.ReadFile(p.tlsFile(contract.TLSFileCA))
	if err != nil {
		return nil, fmt.Errorf("the cluster's CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("the cluster's CA in %s holds no certificate", p.tlsFile(contract.TLSFileCA))
	}
	tc := &tls.Config{RootCAs: pool, ServerName: p.serverName(host), MinVersion: tls.VersionTLS12}
	if client {
		pair, err := tls.LoadX509KeyPair(p.tlsFile(contract.TLSFileClientCert), p.tlsFile(contract.TLSFileClientKey))
		if err != nil {
			return nil, fmt.Errorf("the superuser's client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// superuserConfig is the connection to the server at host:port as the
// superuser, by the cluster's TLS mode.
func (p *Manager) superuserConfig(host string, port int) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = host, uint16(port), Superuser, p.SuperuserPassword, contract.PostgresDatabase
	cfg.ConnectTimeout, cfg.RequireAuth = 3*time.Second, contract.PostgresRequireAuth
	mode := p.tlsMode()
	if !contract.TLSOn(mode) {
		return cfg, nil
	}
	tc, err := p.clientTLS(host, true)
	switch {
	case err != nil && mode == contract.TLSAccept:
		// The certificates are on their way: as before TLS, meanwhile.
		return cfg, nil
	case err != nil:
		return nil, err
	}
	cfg.TLSConfig, cfg.Fallbacks = tc, nil
	if mode == contract.TLSAccept {
		// Not every member may serve TLS yet.
		cfg.Fallbacks = []*pgconn.FallbackConfig{{Host: host, Port: uint16(port)}}
	}
	return cfg, nil
}

// conninfo is a libpq connection string to the server at host:port as
// user, by the cluster's TLS mode: under require, verify-full against
// the cluster's CA (an address is given as hostaddr, with the name to
// verify as host). It names the cluster's client certificate for every
// user: the superuser is admitted by it, others by password (pg_hba's
// scram-sha-256 checks no certificate), and naming it keeps libpq from
// looking for one in the home directory.
func (p *Manager) conninfo(host string, port int, user string) string {
	kv := [][2]string{{"host", host}}
	mode := p.tlsMode()
	if contract.TLSOn(mode) && net.ParseIP(host) != nil {
		kv = [][2]string{{"host", p.serverName(host)}, {"hostaddr", host}}
	}
	kv = append(kv, [2]string{"port", strconv.Itoa(port)}, [2]string{"user", user})
	if contract.TLSOn(mode) {
		sslmode := "prefer"
		if mode == contract.TLSRequire {
			sslmode = "verify-full"
		}
		kv = append(kv, [2]string{"sslmode", sslmode}, [2]string{"sslrootcert", p.tlsFile(contract.TLSFileCA)},
			[2]string{"sslcert", p.tlsFile(contract.TLSFileClientCert)}, [2]string{"sslkey", p.tlsFile(contract.TLSFileClientKey)})
	}
	parts := make([]string, len(kv))
	for i, e := range kv {
		parts[i] = e[0] + "=" + conninfoValue(e[1])
	}
	return strings.Join(parts, " ")
}

// conninfoValue quotes a libpq connection string value when it needs it.
func conninfoValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " '\\\t\n") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// TLSFileSettings are the -c settings that point a server at the
// certificates in dir instead of contract.PostgresTLSDir, where the
// rendered postgresql.conf names them (test beds give each member its
// own directory; -c settings rule over the file's, at reloads too).
func TLSFileSettings(dir string) map[string]string {
	return map[string]string{
		"ssl_cert_file": filepath.Join(dir, contract.TLSFileServerCert),
		"ssl_key_file":  filepath.Join(dir, contract.TLSFileServerKey),
		"ssl_ca_file":   filepath.Join(dir, contract.TLSFileCA),
	}
}

// TLSModeFile reads the cluster's TLS mode from the mounted
// <cluster>-cairn ConfigMap in dir, which the kubelet updates after a
// merged step: a missing key is off.
func TLSModeFile(dir string) func() string {
	return func() string {
		data, err := os.ReadFile(filepath.Join(dir, contract.KeyTLS))
		if err != nil {
			return contract.TLSOff
		}
		return strings.TrimSpace(string(data))
	}
}
