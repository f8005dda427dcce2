package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/instance"
)

// TLS of an etcd member, by the cluster's TLS mode (contract.KeyTLS):
//   - off: clients and peers speak plain HTTP, as before TLS;
//   - accept, the way a cluster rendered before TLS moves to it: the
//     client port serves TLS beside plain HTTP (etcd tells the two apart
//     on one port), TLS clients presenting a certificate of the cluster's
//     CA; peers still speak plain HTTP to each other, but each member
//     holds its peer certificate, with which it reaches a peer that
//     already requires TLS; /health and /metrics are served on their
//     own port, as in require;
//   - require: the client port serves only TLS and admits only clients
//     with a certificate of the cluster's CA (--client-cert-auth); peers
//     reach each other only over TLS, each presenting the members'
//     certificate (--peer-client-cert-auth); /health and /metrics are
//     served in plain HTTP on their own port (ListenMetricsURL), which
//     serves nothing else, for the kubelet's probes. The member's own
//     calls to the cluster (listing, adding itself) present the client
//     certificate and verify the server's.
//
// A member that moves from accept to require listens for its peers over
// TLS from its restart on, while the membership still names its plain
// peer URL: the runtime changes that URL to https once the member's peer
// port serves the cluster's certificate (agent.Membership), and until
// then its peers cannot reach it, which quorum survives (one member
// restarts at a time).
//
// etcd reads its certificate and key files again at each handshake, so a
// renewed leaf takes effect without a restart; the CA bundle (ca.crt) is
// read when etcd starts, so the instance manager restarts etcd, in turn
// with the other members, when the bundle changes (ca.go).

// Schemes are the URL schemes of an etcd member's client and peer
// URLs in TLS mode mode: https in require; http in off and in accept,
// where the client port serves https too (alsoTLS).
func Schemes(mode string) (client, peer string) {
	if mode == contract.TLSRequire {
		return "https", "https"
	}
	return "http", "http"
}

// alsoTLS is a client URL list that, in TLS mode accept, names the https
// URL of each http one beside it, on the same host and port.
func alsoTLS(mode, urls string) string {
	if mode != contract.TLSAccept {
		return urls
	}
	var out []string
	for _, u := range strings.Split(urls, ",") {
		out = append(out, u)
		if rest, ok := strings.CutPrefix(u, "http://"); ok {
			out = append(out, "https://"+rest)
		}
	}
	return strings.Join(out, ",")
}

// tlsArgs are etcd's TLS flags for the cluster's mode.
func (e *Manager) tlsArgs() []string {
	if !contract.TLSOn(e.Config.TLS) {
		return nil
	}
	cert, key, ca := e.tlsFile(contract.TLSFileServerCert), e.tlsFile(contract.TLSFileServerKey), e.tlsFile(contract.TLSFileCA)
	args := []string{
		"--cert-file", cert, "--key-file", key, "--trusted-ca-file", ca, "--client-cert-auth",
		"--peer-cert-file", cert, "--peer-key-file", key, "--peer-trusted-ca-file", ca, "--peer-client-cert-auth",
	}
	// etcd checks by default that a peer's certificate names the address
	// it connects from, resolving each DNS name: a wildcard never
	// resolves, and a pod's address is not known when its certificate is
	// issued. A peer is instead proven by the members' certificate
	// itself: signed by the cluster's CA, with client authentication,
	// and with the members' common name, which root's client certificate
	// (the other one the CA signs) does not carry.
	if cluster, ok := contract.MemberCluster(e.Name); ok {
		args = append(args, "--peer-cert-allowed-cn", contract.EtcdPeerCommonName(cluster))
	}
	args = append(args, e.skipPeerSANFlag())
	if e.ListenMetricsURL != "" {
		args = append(args, "--listen-metrics-urls", e.ListenMetricsURL)
	}
	return args
}

// skipPeerSANFlag is the flag that turns off etcd's check of a peer's
// address against its certificate: --peer-skip-client-san-verification
// from etcd 3.6 (and when the version is unknown), its experimental name
// before.
func (e *Manager) skipPeerSANFlag() string {
	if major, minor, ok := parseMinor(e.Version); ok && major == 3 && minor < 6 {
		return "--experimental-peer-skip-client-san-verification"
	}
	return "--peer-skip-client-san-verification"
}

// checkTLS fails unless the member can start in the cluster's TLS mode:
// a known mode etcd members are rendered in, and, with TLS on, every
// certificate file readable (the kubelet mounts them before the
// container starts; a member started outside a pod waits for them).
func (e *Manager) checkTLS() error {
	switch e.Config.TLS {
	case "", contract.TLSOff:
		return nil
	case contract.TLSAccept, contract.TLSRequire:
	default:
		return fmt.Errorf("%s: the cluster's TLS mode is %q; etcd members start with one of %v", e.Name, e.Config.TLS, contract.TLSModes)
	}
	if e.TLSDir == "" {
		return fmt.Errorf("%s: TLS is on and the member has no certificate directory", e.Name)
	}
	for _, f := range []string{contract.TLSFileCA, contract.TLSFileServerCert, contract.TLSFileServerKey, contract.TLSFileClientCert, contract.TLSFileClientKey} {
		if _, err := os.Stat(e.tlsFile(f)); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%s: %w (%s)", e.Name, instance.ErrNoCerts, e.tlsFile(f))
			}
			return fmt.Errorf("%s: certificate file: %w", e.Name, err)
		}
	}
	return nil
}

// clientTLS is the TLS configuration of the member's own calls to the
// cluster: nil unless TLS is required (in accept, a member not restarted
// yet serves plain HTTP only, and every member serves it); in require,
// the client certificate (read again at each handshake, so a renewed one
// is used) and the cluster's CA bundle as the only roots. Server names
// are verified against the endpoint's host, which the members'
// certificate carries.
func (e *Manager) clientTLS() (*tls.Config, error) {
	if e.Config.TLS != contract.TLSRequire {
		return nil, nil
	}
	return ClientTLS(e.TLSDir)
}

// ClientTLS is the TLS configuration of a client of an etcd cluster
// whose certificate files (contract.TLSFile*) are in dir: the client
// pair, read again at each handshake, and the CA bundle as the only
// roots. It fails when the bundle cannot be read or holds no
// certificate.
func ClientTLS(dir string) (*tls.Config, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, contract.TLSFileCA))
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("etcd client TLS: %s holds no certificate", filepath.Join(dir, contract.TLSFileCA))
	}
	cert, key := filepath.Join(dir, contract.TLSFileClientCert), filepath.Join(dir, contract.TLSFileClientKey)
	if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		RootCAs:    roots,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(cert, key)
			return &c, err
		},
	}, nil
}

func (e *Manager) tlsFile(name string) string { return filepath.Join(e.TLSDir, name) }
