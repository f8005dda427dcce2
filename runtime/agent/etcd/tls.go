package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/agent"
	"github.com/cairn-dev/cairn/runtime/certs"
)

// keepTLS makes the pass's view of TLS the rendered config's and returns
// its mode. With TLS on (accept or require), the cluster's certificates
// are made current: by the runtime (Certs.Ensure: the CA made when
// missing, leaves issued when missing or due), so a member restarted with
// TLS finds them, or, when the config names a cert-manager issuer
// (contract.KeyTLSIssuerName), by cert-manager: root's Secret is read,
// never written, and no CA is made. With TLS required, the members are
// reached over TLS, with root's client certificate, verifying each
// member's certificate against the cluster's CA and the client Service's
// name, which every member's certificate carries. Otherwise they are
// reached over plain HTTP, which every member serves while a cluster
// accepts TLS (members not restarted for it serve nothing else); in
// accept the TLS configuration is kept apart to check which members
// serve TLS (servedTLS). A cluster whose config turns TLS on without an
// issuer and a runtime with no Certs is an error: the members would wait
// for certificates nobody issues.
func (m *Membership) keepTLS(ctx context.Context, config map[string]string) (string, error) {
	mode, ok := contract.TLSMode(config[contract.KeyTLS])
	if !ok {
		return "", fmt.Errorf("config %s: TLS mode %q is none of %v", contract.ConfigMap(m.Cluster), config[contract.KeyTLS], contract.TLSModes)
	}
	if !contract.TLSOn(mode) {
		m.tls.Store(nil)
		m.offered.Store(nil)
		return mode, nil
	}
	issuer := config[contract.KeyTLSIssuerName] != ""
	material, err := m.certificates(ctx, issuer)
	if err != nil && issuer && mode == contract.TLSAccept && errors.Is(err, certs.ErrNotIssued) {
		// cert-manager has not issued the certificates the accept restart
		// brings yet: the members serve plain HTTP, which the pass uses,
		// so membership care goes on and only the TLS check waits.
		m.tls.Store(nil)
		m.offered.Store(nil)
		m.logger().Info("the issuer's certificates do not exist yet; TLS is checked once they do", "err", err.Error())
		return mode, nil
	}
	if err != nil {
		return "", fmt.Errorf("certificates: %w", err)
	}
	tc, err := material.ClientConfig(contract.EtcdClientServerName(m.Cluster, m.Namespace))
	if err != nil {
		return "", fmt.Errorf("certificates: %w", err)
	}
	m.offered.Store(tc)
	if mode == contract.TLSRequire {
		m.tls.Store(tc)
	} else {
		m.tls.Store(nil)
	}
	return mode, nil
}

// servedTLS marks the members that serve TLS on their client port with
// the cluster's certificate, verified: with TLS required, those the pass
// reached at an https client URL (over TLS only); the others, and every
// member while the cluster accepts TLS, when they answer a status call
// at the https URL of their client address, all at once so that members
// that do not cost one timeout.
func (m *Membership) servedTLS(ctx context.Context, mode string, l *etcdLook) {
	tc := m.offered.Load()
	if !contract.TLSOn(mode) || tc == nil {
		return
	}
	var probe []int
	var eps []string
	for i, lm := range l.members {
		if mode == contract.TLSRequire && len(lm.clientURLs) > 0 && strings.HasPrefix(lm.clientURLs[0], "https://") {
			l.members[i].servesTLS = lm.answered
			continue
		}
		if u, ok := httpsURL(lm.clientURLs); ok {
			probe, eps = append(probe, i), append(eps, u)
		}
	}
	if len(eps) == 0 {
		return
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: callTimeout, Logger: zap.NewNop(), TLS: tc, Context: ctx})
	if err != nil {
		return
	}
	defer cli.Close()
	var wg sync.WaitGroup
	for j, i := range probe {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			_, err := cli.Status(cctx, eps[j])
			l.members[i].servesTLS = err == nil
		})
	}
	wg.Wait()
}

// httpsURL is the https URL of a member's first client URL, on the same
// host and port.
func httpsURL(clientURLs []string) (string, bool) {
	if len(clientURLs) == 0 {
		return "", false
	}
	u, err := url.Parse(clientURLs[0])
	if err != nil || u.Host == "" {
		return "", false
	}
	return "https://" + u.Host, true
}

// movePeersToTLS changes, with TLS required, the advertised peer URL of
// one member from http to https once the member's peer port serves the
// cluster's certificate: the member restarted requiring TLS and listens
// for its peers over TLS only, and its peers reach it only once the
// membership names its https URL. A member still listening in plain
// HTTP is left alone (changing its URL would cut it off), and nothing
// changes without quorum. One member a pass, as every membership change.
func (m *Membership) movePeersToTLS(ctx context.Context, cli *clientv3.Client, mode string, l etcdLook) ([]agent.Event, bool) {
	tc := m.tls.Load()
	if mode != contract.TLSRequire || tc == nil {
		return nil, false
	}
	if !l.listed || !quorate(voterHealth(l.members)) {
		m.logger().Debug("peer URLs not moved to TLS: the membership is not listed or has no quorum")
		return nil, false
	}
	for _, lm := range l.members {
		if len(lm.peerURLs) == 0 || contract.EtcdPeerTLS(lm.peerURLs) {
			continue
		}
		u, err := url.Parse(lm.peerURLs[0])
		if err != nil || u.Scheme != "http" {
			continue
		}
		if !servesPeerTLS(ctx, tc, u.Host) {
			m.logger().Debug("peer URL not moved to TLS: the member's peer port serves no certificate of the cluster", "member", lm.name, "peer_url", lm.peerURLs[0])
			continue
		}
		to := "https://" + u.Host
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err = cli.MemberUpdate(cctx, lm.id, []string{to})
		cancel()
		if err != nil {
			m.logger().Warn("moving a member's peer URL to TLS failed", "member", lm.name, "err", err.Error())
			return nil, false
		}
		return []agent.Event{{Type: "Normal", Reason: ReasonPeerURLMovedToTLS,
			Message: fmt.Sprintf("%s requires TLS from its peers: its peer URL is now %s (was %s)", lm.name, to, lm.peerURLs[0])}}, true
	}
	return nil, false
}

// servesPeerTLS reports whether the peer port at host serves a
// certificate of the cluster's CA for host. The runtime presents no
// certificate of its own: the member refuses it after the server's
// certificate is verified (etcd admits only the members' certificate on
// its peer port), which is all the check needs.
func servesPeerTLS(ctx context.Context, tc *tls.Config, host string) bool {
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		return false
	}
	c := tc.Clone()
	c.ServerName, c.GetClientCertificate, c.Certificates = name, nil, nil
	verified := false
	c.VerifyConnection = func(tls.ConnectionState) error { verified = true; return nil }
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	conn, err := (&tls.Dialer{Config: c}).DialContext(cctx, "tcp", host)
	if err == nil {
		conn.Close()
	}
	return verified
}

// certificates are root's client certificate and the cluster's CA: read
// from the Secret cert-manager writes when certManager (cert-manager
// renews it), kept by Certs otherwise.
func (m *Membership) certificates(ctx context.Context, certManager bool) (certs.Material, error) {
	if certManager {
		return (&certs.Files{Client: m.Client, Namespace: m.Namespace, Cluster: m.Cluster}).Material(ctx)
	}
	if m.Certs == nil {
		return certs.Material{}, fmt.Errorf("config %s turns TLS on, and this runtime keeps no certificates", contract.ConfigMap(m.Cluster))
	}
	material, _, err := m.Certs.Ensure(ctx)
	return material, err
}

// dial is a client of the members at endpoints, over TLS when the last
// pass found it on (keepTLS). An endpoint's scheme does not decide: a
// member's advertised URLs say https once TLS is on, and the client
// Service's endpoint is the runtime's flag.
func (m *Membership) dial(ctx context.Context, endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: callTimeout, Logger: zap.NewNop(),
		TLS: m.tls.Load(), Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return cli, nil
}

// scheme is the URL scheme of the members' client URLs as the last pass
// reached them.
func (m *Membership) scheme() string {
	if m.tls.Load() != nil {
		return "https"
	}
	return "http"
}

// clientTLS is the client configuration of the last pass; nil for plain
// HTTP.
func (m *Membership) clientTLS() *tls.Config { return m.tls.Load() }
