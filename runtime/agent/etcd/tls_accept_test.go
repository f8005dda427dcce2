package etcd

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/cairn-dev/cairn/planner/contract"
)

// While a cluster moves into accept with a cert-manager issuer, the
// issuer's certificates may not exist yet: the pass goes on in plain HTTP,
// which every member serves then, and only the TLS check waits. With TLS
// required, or with the runtime's own CA, missing certificates are the
// pass's error.
func TestMissingIssuerCertificatesHoldOnlyTheTLSCheckInAccept(t *testing.T) {
	issuer := map[string]string{contract.KeyTLSIssuerName: "company-ca", contract.KeyTLSIssuerKind: contract.ClusterIssuerKind, contract.KeyTLSIssuerGroup: contract.CertManagerGroup}
	for _, tc := range []struct {
		mode    string
		issuer  bool
		wantErr bool
	}{
		{mode: contract.TLSAccept, issuer: true},
		{mode: contract.TLSRequire, issuer: true, wantErr: true},
		{mode: contract.TLSAccept, wantErr: true}, // no Certs: nothing would issue them
	} {
		config := map[string]string{contract.KeyTLS: tc.mode}
		if tc.issuer {
			for k, v := range issuer {
				config[k] = v
			}
		}
		m := &Membership{Client: fake.NewClientset(), Namespace: "db", Cluster: "e"}
		mode, err := m.keepTLS(context.Background(), config)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s, issuer %v: %v, want an error %v", tc.mode, tc.issuer, err, tc.wantErr)
			continue
		}
		if err == nil && (mode != tc.mode || m.clientTLS() != nil || m.offered.Load() != nil) {
			t.Errorf("%s, issuer %v: mode %q, TLS %v, offered %v", tc.mode, tc.issuer, mode, m.clientTLS(), m.offered.Load())
		}
	}
}
