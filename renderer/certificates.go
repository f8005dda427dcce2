package renderer

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
)

// cert-manager's Certificate, as much of it as cairn writes (cairn does
// not import cert-manager's module): the rendered objects are checked
// against cert-manager's own CRD by a real API server (cmd/cairn's
// dry-run test).
type certificate struct {
	metav1.TypeMeta `json:",inline"`
	ObjectMeta      metav1.ObjectMeta `json:"metadata"`
	Spec            certificateSpec   `json:"spec"`
}

type certificateSpec struct {
	SecretName  string             `json:"secretName"`
	CommonName  string             `json:"commonName,omitempty"`
	DNSNames    []string           `json:"dnsNames,omitempty"`
	Duration    string             `json:"duration"`
	RenewBefore string             `json:"renewBefore"`
	Usages      []string           `json:"usages"`
	PrivateKey  certificateKey     `json:"privateKey"`
	IssuerRef   contract.IssuerRef `json:"issuerRef"`
}

type certificateKey struct {
	Algorithm      string `json:"algorithm"`
	Size           int    `json:"size"`
	RotationPolicy string `json:"rotationPolicy"`
}

// The certificates' lifetime and renewal, as the runtime's own CA keeps
// them (runtime/pki): 90 days, renewed with 30 left, a new key each time.
const (
	certDuration    = "2160h"
	certRenewBefore = "720h"
)

// certificateObjects are the two cert-manager Certificates of a cluster
// whose spec names an issuer: the members' server certificate and the
// client certificate cairn's clients present, in the Secrets the members
// and the runtime read (the same names and keys as the runtime's own).
// For PostgreSQL, a server certificate and the superuser's; for etcd, as
// the runtime's own CA issues them (runtime/certs): a peer certificate,
// which the members serve and present to each other (server and client
// authentication), with the common name etcd admits peers by
// (--peer-cert-allowed-cn), and root's.
func certificateObjects(n names, issuer contract.IssuerRef) []Object {
	key := certificateKey{Algorithm: "ECDSA", Size: 256, RotationPolicy: "Always"}
	cert := func(name, file string, spec certificateSpec) Object {
		spec.Duration, spec.RenewBefore, spec.PrivateKey, spec.IssuerRef = certDuration, certRenewBefore, key, issuer
		return Object{File: file, Obj: &certificate{TypeMeta: typeMeta(contract.CertificateAPIVersion, contract.CertificateKind),
			ObjectMeta: n.meta(name, "tls"), Spec: spec}}
	}
	server := certificateSpec{
		SecretName: contract.ServerTLSSecret(n.cluster),
		DNSNames:   contract.PostgresServerNames(n.cluster, n.namespace),
		Usages:     []string{"server auth", "digital signature"},
	}
	client := certificateSpec{
		SecretName: contract.ClientTLSSecret(n.cluster),
		CommonName: contract.PostgresSuperuser,
		Usages:     []string{"client auth", "digital signature"},
	}
	if n.app == contract.AppEtcd {
		server.CommonName = contract.EtcdPeerCommonName(n.cluster)
		server.DNSNames = contract.EtcdServerNames(n.cluster, n.namespace)
		server.Usages = []string{"server auth", "client auth", "digital signature"}
		client.CommonName = contract.EtcdClientCommonName
	}
	return []Object{
		cert(contract.ServerTLSSecret(n.cluster), "certificate-server.yaml", server),
		cert(contract.ClientTLSSecret(n.cluster), "certificate-superuser.yaml", client),
	}
}

// tlsConfigKeys add the TLS keys of the ConfigMap <cluster>-cairn, both
// kinds alike: the mode while TLS is on, and the cert-manager issuer when
// the spec names one (contract.KeyTLSIssuer*), which tells the runtime to
// read the certificates rather than keep them.
func tlsConfigKeys(keys map[string]string, s Settings) {
	if !contract.TLSOn(s.TLS) {
		return
	}
	keys[contract.KeyTLS] = s.TLS
	if i := s.TLSIssuer; i != nil {
		keys[contract.KeyTLSIssuerName], keys[contract.KeyTLSIssuerKind], keys[contract.KeyTLSIssuerGroup] = i.Name, i.Kind, i.Group
	}
}
