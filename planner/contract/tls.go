package contract

import "net"

// TLS of PostgreSQL clusters: the modes a cluster moves through, the
// Secrets that hold its certificates, the names its server certificate
// carries and the files an instance manager writes them to.

// KeyTLS, in the ConfigMap <cluster>-cairn, is the cluster's TLS mode:
// TLSOff (or the key missing, as in clusters rendered before TLS), then
// TLSAccept, then TLSRequire. A cluster moves one mode at a time, each
// move a reviewed step.
const KeyTLS = "tls"

// Values of KeyTLS.
const (
	// TLSOff: servers speak plain TCP only.
	TLSOff = "off"
	// TLSAccept: servers offer TLS with the cluster's certificate; pg_hba
	// admits both TLS and plain connections, and cairn's own clients use
	// TLS where it is offered.
	TLSAccept = "accept"
	// TLSRequire: servers admit only TLS (hostssl), and cairn's clients
	// verify the server's certificate (sslmode=verify-full).
	TLSRequire = "require"
)

// TLSModes are the modes in the order a cluster moves through them.
var TLSModes = []string{TLSOff, TLSAccept, TLSRequire}

// TLSMode reads a KeyTLS value; "" (no key) is TLSOff. ok is false for
// any other value.
func TLSMode(v string) (mode string, ok bool) {
	switch v {
	case "", TLSOff:
		return TLSOff, true
	case TLSAccept, TLSRequire:
		return v, true
	}
	return "", false
}

// TLSOn reports whether mode has the servers serve TLS.
func TLSOn(mode string) bool { return mode == TLSAccept || mode == TLSRequire }

// The cluster's certificate Secrets. The runtime keeps them (they are
// never rendered, so never in Git): CASecret holds the cluster's CA and
// its key and is read by the runtime alone; ServerTLSSecret holds the
// members' server certificate; ClientTLSSecret the superuser's client
// certificate, with which the runtime and the members reach each other's
// servers. Both are read by the members, each by name.
func CASecret(cluster string) string        { return cluster + "-ca" }
func ServerTLSSecret(cluster string) string { return cluster + "-server-tls" }
func ClientTLSSecret(cluster string) string { return cluster + "-superuser-tls" }

// Keys of the certificate Secrets: those of Kubernetes' kubernetes.io/tls
// type and of cert-manager's Secrets. TLSKeyCA is the CA certificates a
// peer is verified against (a bundle while a CA is being replaced).
const (
	TLSKeyCert = "tls.crt"
	TLSKeyKey  = "tls.key"
	TLSKeyCA   = "ca.crt"
)

// Keys of the ConfigMap <cluster>-cairn naming the cert-manager issuer of
// the cluster's certificates (spec.tls.issuerRef). Without them, the
// runtime keeps the cluster's own CA and issues the certificates itself.
const (
	KeyTLSIssuerName  = "tls.issuer.name"
	KeyTLSIssuerKind  = "tls.issuer.kind"
	KeyTLSIssuerGroup = "tls.issuer.group"
)

// IssuerRef names a cert-manager issuer.
type IssuerRef struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Group string `json:"group"`
}

// cert-manager's names: the issuer kinds and group, and the Certificate
// kind and API version the renderer writes.
const (
	IssuerKind            = "Issuer"
	ClusterIssuerKind     = "ClusterIssuer"
	CertManagerGroup      = "cert-manager.io"
	CertificateKind       = "Certificate"
	CertificateAPIVersion = CertManagerGroup + "/v1"
)

// PostgresTLSDir is where a PostgreSQL member's instance manager writes
// its certificates, on the memory-backed /dev/shm every member pod
// mounts: the key never reaches a disk. The files are named by the
// PostgresTLS* constants.
const PostgresTLSDir = "/dev/shm/cairn-tls"

// Files in PostgresTLSDir.
const (
	PostgresTLSServerCert = "server.crt"
	PostgresTLSServerKey  = "server.key"
	PostgresTLSCA         = "ca.crt"
	PostgresTLSClientCert = "client.crt"
	PostgresTLSClientKey  = "client.key"
)

// PostgresServerNames are the DNS names the members' server certificate
// carries: every member under the headless Service (a wildcard, so one
// certificate serves members added later), and the -rw, -ro and -r
// Services, each as a short name, with the namespace, and fully
// qualified (without a namespace, only the short names). Names are
// checked by the spec (DNS labels), so none holds a dot or a wildcard of
// its own.
func PostgresServerNames(cluster, namespace string) []string {
	var out []string
	forms := func(name string) []string {
		if namespace == "" {
			return []string{name}
		}
		return []string{name, name + "." + namespace, name + "." + namespace + ".svc", name + "." + namespace + ".svc.cluster.local"}
	}
	for _, f := range forms(HeadlessService(cluster)) {
		out = append(out, "*."+f)
	}
	for _, svc := range []string{PrimaryService(cluster), ReplicaService(cluster), ReadService(cluster)} {
		out = append(out, forms(svc)...)
	}
	return out
}

// PostgresMemberServerName is the name a client verifies a member's
// certificate against when it reaches the member by address:
// <member>.<cluster>-hl.<namespace>.svc, which the certificate's
// headless wildcard covers.
func PostgresMemberServerName(cluster, namespace, member string) string {
	return member + "." + HeadlessService(cluster) + "." + namespace + ".svc"
}

// PostgresServerNameFor is the name to verify a server reached at host
// against: host itself when it is one of the cluster's DNS names, the
// member's name under the headless Service otherwise (an address).
func PostgresServerNameFor(cluster, namespace, member, host string) string {
	if net.ParseIP(host) == nil {
		return host
	}
	return PostgresMemberServerName(cluster, namespace, member)
}
