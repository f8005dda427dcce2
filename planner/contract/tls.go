package contract

import "net"

// TLS of PostgreSQL and etcd clusters: the modes a cluster moves
// through, the Secrets that hold its certificates, the names its server
// certificate carries and the files a member reads them from.

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

// StatusKeyCAFingerprints, in the status ConfigMap (StatusConfigMap),
// is the runtime's record of the CAs it made for the cluster: one
// "sha256:<hex of the certificate's DER>" a line, oldest first. The
// runtime adopts a CA Secret only when every CA certificate in it is
// recorded there; only the cluster's own runtime may write that
// ConfigMap (its Role by name, and the admission policy for create).
const StatusKeyCAFingerprints = "ca-fingerprints"

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
// TLSFile* constants.
const PostgresTLSDir = "/dev/shm/cairn-tls"

// EtcdTLSDir is where an etcd member's pod mounts its certificates: the
// server and client Secrets projected into one read-only volume, named
// by the TLSFile* constants. The kubelet replaces the files when the
// Secrets change, and etcd reads its certificate and key again at each
// handshake, so a renewed leaf needs no restart.
const EtcdTLSDir = "/var/run/cairn/tls"

// Files in PostgresTLSDir and EtcdTLSDir: ca.crt is the server Secret's,
// the client pair the superuser's (PostgreSQL) or root's (etcd).
const (
	TLSFileServerCert = "server.crt"
	TLSFileServerKey  = "server.key"
	TLSFileCA         = "ca.crt"
	TLSFileClientCert = "client.crt"
	TLSFileClientKey  = "client.key"
)

// EtcdClientCommonName is the common name of an etcd cluster's client
// certificate (contract.ClientTLSSecret), with which the runtime and the
// members' instance managers reach the members: etcd's own name for its
// superuser, so the certificate keeps its meaning if etcd's
// authentication is turned on.
const EtcdClientCommonName = "root"

// EtcdMetricsPort is where an etcd member serves /health and /metrics in
// plain HTTP, with no client certificate asked: the kubelet's probes
// cannot present one. It serves nothing else.
const EtcdMetricsPort = 2381

// EtcdServerNames are the DNS names an etcd cluster's server certificate
// carries: every member under the peer Service (a wildcard, so one
// certificate serves members added later) and the client Service, each
// as a short name, with the namespace, and fully qualified. The members
// present it both as servers and, to their peers, as clients. The first
// is EtcdPeerCommonName, the certificate's common name.
func EtcdServerNames(cluster, namespace string) []string {
	var out []string
	for _, f := range nameForms(EtcdPeerService(cluster), namespace) {
		out = append(out, "*."+f)
	}
	return append(out, nameForms(EtcdClientService(cluster), namespace)...)
}

// EtcdPeerCommonName is the common name of an etcd cluster's server
// certificate, which the members present to each other: etcd admits a
// peer only with it (--peer-cert-allowed-cn), so root's client
// certificate, from the same CA, cannot pose as a member.
func EtcdPeerCommonName(cluster string) string { return "*." + EtcdPeerService(cluster) }

// EtcdClientServerName is the name cairn's clients verify an etcd
// member's certificate against, whichever member they reach: the client
// Service's, which the certificate of every member carries.
func EtcdClientServerName(cluster, namespace string) string {
	return EtcdClientService(cluster) + "." + namespace + ".svc"
}

// nameForms are a Service's names: short, with the namespace, under
// svc and fully qualified; only the short name without a namespace.
func nameForms(name, namespace string) []string {
	if namespace == "" {
		return []string{name}
	}
	return []string{name, name + "." + namespace, name + "." + namespace + ".svc", name + "." + namespace + ".svc.cluster.local"}
}

// PostgresServerNames are the DNS names the members' server certificate
// carries: every member under the headless Service (a wildcard, so one
// certificate serves members added later), and the -rw, -ro and -r
// Services, each as a short name, with the namespace, and fully
// qualified (without a namespace, only the short names). Names are
// checked by the spec (DNS labels), so none holds a dot or a wildcard of
// its own.
func PostgresServerNames(cluster, namespace string) []string {
	var out []string
	for _, f := range nameForms(HeadlessService(cluster), namespace) {
		out = append(out, "*."+f)
	}
	for _, svc := range []string{PrimaryService(cluster), ReplicaService(cluster), ReadService(cluster)} {
		out = append(out, nameForms(svc, namespace)...)
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
