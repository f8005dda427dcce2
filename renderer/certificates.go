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
// What each certifies (names, common name, usages) is the kind's: server
// and client come from its renderer (etcdCertificates,
// postgresCertificates); the Secrets, lifetime, key and issuer are set
// here, alike for every kind.
func certificateObjects(n names, issuer contract.IssuerRef, server, client certificateSpec) []Object {
	key := certificateKey{Algorithm: "ECDSA", Size: 256, RotationPolicy: "Always"}
	cert := func(name, file string, spec certificateSpec) Object {
		spec.SecretName = name
		spec.Duration, spec.RenewBefore, spec.PrivateKey, spec.IssuerRef = certDuration, certRenewBefore, key, issuer
		return Object{File: file, Obj: &certificate{TypeMeta: typeMeta(contract.CertificateAPIVersion, contract.CertificateKind),
			ObjectMeta: n.meta(name, "tls"), Spec: spec}}
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
