package agent

import (
	"context"
	"crypto/tls"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/certs"
)

// keepTLS makes the pass's view of TLS the rendered config's: with its
// TLS mode on, the members are reached over TLS, with root's client
// certificate, verifying each member's certificate against the cluster's
// CA and the client Service's name, which every member's certificate
// carries; with it off, over plain HTTP. With TLS on, the certificates
// come from the runtime (Certs.Ensure: the CA made when missing, leaves
// issued when missing or due), or, when the config names a cert-manager
// issuer (contract.KeyTLSIssuerName), from cert-manager: root's Secret is
// read, never written, and no CA is made. A cluster whose config turns
// TLS on without an issuer and a runtime with no Certs is an error: the
// members would wait for certificates nobody issues.
func (m *Membership) keepTLS(ctx context.Context, config map[string]string) error {
	mode, ok := contract.TLSMode(config[contract.KeyTLS])
	if !ok {
		return fmt.Errorf("config %s: TLS mode %q is none of %v", contract.ConfigMap(m.Cluster), config[contract.KeyTLS], contract.TLSModes)
	}
	if !contract.TLSOn(mode) {
		m.tls.Store(nil)
		return nil
	}
	material, err := m.certificates(ctx, config[contract.KeyTLSIssuerName] != "")
	if err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	tc, err := material.ClientConfig(contract.EtcdClientServerName(m.Cluster, m.Namespace))
	if err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	m.tls.Store(tc)
	return nil
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
