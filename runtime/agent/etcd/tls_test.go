package etcd

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/certs"
	"github.com/cairn-dev/cairn/runtime/pki"
	"github.com/cairn-dev/cairn/testbed"
)

// etcdIssuerConfig is the rendered config of cluster e created with a
// cert-manager ClusterIssuer (renderer: etcdConfigKeys).
var etcdIssuerConfig = map[string]string{
	contract.KeyBootstrap: contract.BootstrapExisting, contract.KeyTLS: contract.TLSRequire,
	contract.KeyTLSIssuerName: "company-ca", contract.KeyTLSIssuerKind: contract.ClusterIssuerKind, contract.KeyTLSIssuerGroup: contract.CertManagerGroup,
}

// withCertManager has the bed's cluster take its certificates from a
// cert-manager issuer.
func withCertManager(b *etcdBed) { b.certManager = true }

// certManagerSetup does what cert-manager and the kubelet do before a
// cluster with an issuer starts: the server and client Secrets, as
// cert-manager writes them from a CA issuer (ca.crt beside each leaf),
// and the members' certificate files, as their projected volume holds
// them. The peer certificate is the rendered Certificate's (server and
// client auth, CN *.e, the peer and client Services' names) plus the
// members' loopback addresses: the bed has no DNS, and members reach
// their peers by address. It writes the rendered config and returns the
// spec whose rendered Role the runtime runs under.
func (b *etcdBed) certManagerSetup() string {
	b.t.Helper()
	now := time.Now()
	ca, err := pki.NewCA("company CA", now, 24*time.Hour)
	if err != nil {
		b.t.Fatal(err)
	}
	var ips []net.IP
	for i := range maxMembers {
		ips = append(ips, net.ParseIP(b.ip["e-"+strconv.Itoa(i)]))
	}
	server, err := ca.IssuePeer(contract.EtcdServerNames("e", b.ns), ips, now, 24*time.Hour)
	if err != nil {
		b.t.Fatal(err)
	}
	client, err := ca.IssueClient(contract.EtcdClientCommonName, now, 24*time.Hour)
	if err != nil {
		b.t.Fatal(err)
	}
	for name, leaf := range map[string]pki.Leaf{contract.ServerTLSSecret("e"): server, contract.ClientTLSSecret("e"): client} {
		if _, err := b.kube.CoreV1().Secrets(b.ns).Create(b.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{contract.TLSKeyCert: leaf.CertPEM, contract.TLSKeyKey: leaf.KeyPEM, contract.TLSKeyCA: ca.CertPEM}}, metav1.CreateOptions{}); err != nil {
			b.t.Fatal(err)
		}
	}
	b.tlsDir = filepath.Join(b.dir, "tls")
	if _, err := (&certs.Files{Client: b.kube, Namespace: b.ns, Cluster: "e", Dir: b.tlsDir, Uid: -1, Gid: -1}).Sync(b.ctx); err != nil {
		b.t.Fatal(err)
	}
	b.config(etcdIssuerConfig)
	return fmt.Sprintf("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e, namespace: %s}\n"+
		"spec: {size: 3, version: \"3.7.3\", tls: {issuerRef: {name: company-ca, kind: ClusterIssuer}}}\n", b.ns)
}

// secretVersions are the namespace's Secrets and their resourceVersions.
func (b *etcdBed) secretVersions() map[string]string {
	b.t.Helper()
	list, err := b.kube.CoreV1().Secrets(b.ns).List(b.ctx, metav1.ListOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range list.Items {
		out[s.Name] = s.ResourceVersion
	}
	return out
}

// With a cert-manager issuer, the etcd runtime reads root's certificate
// from the Secret cert-manager writes and nothing more: under the
// rendered Role (get of that one Secret), it reaches members that serve
// and require TLS with the issuer's certificates, reports them and
// promotes a learner that joined over TLS, while it makes no CA and
// creates or updates no Secret. The control: once the config stops
// naming the issuer, the runtime turns to keeping the certificates
// itself, and the rendered Role refuses it.
func TestEtcdCertManagerCertificatesAreReadNotWritten(t *testing.T) {
	b := newEtcdBed(t, 3, withCertManager)
	before := b.secretVersions()
	if names := slices.Sorted(maps.Keys(before)); !slices.Equal(names, []string{contract.ServerTLSSecret("e"), contract.ClientTLSSecret("e")}) {
		t.Fatalf("secrets before the runtime: %v", names)
	}
	b.run()
	b.waitStatus("three voters reached over TLS", healthyVoters(3))
	if b.members.clientTLS() == nil || b.members.scheme() != "https" {
		t.Fatal("the runtime reaches the members in plain HTTP")
	}
	w := startWriter(t, b.etcd()) // root's certificate from cert-manager's Secret
	b.statefulSet(4)
	b.claim("e-3")
	b.pod("e-3", true)
	b.start("e-3") // joins as a learner over TLS
	b.waitStatus("four voters, the learner promoted", healthyVoters(4))
	b.waitPasses(3)
	w.report(t)
	if got := b.reasons(); !slices.Equal(got, []string{ReasonMemberAdded, ReasonMemberPromoted}) {
		t.Errorf("events %v", got)
	}
	t.Logf("pass errors: %v", b.passErrors()) // fails on a forbidden call
	if after := b.secretVersions(); !maps.Equal(before, after) {
		t.Errorf("the runtime wrote Secrets beside cert-manager's issuer: before %v, after %v", before, after)
	}

	// The control: without the issuer in the config, the runtime would
	// keep the certificates itself, and the Role the issuer renders lets
	// it do none of that.
	cfg := maps.Clone(etcdIssuerConfig)
	delete(cfg, contract.KeyTLSIssuerName)
	b.config(cfg)
	testbed.Eventually(t, "the runtime refused its own CA", func() error {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, err := range b.errs {
			if strings.Contains(err.Error(), "forbidden") && strings.Contains(err.Error(), contract.CASecret("e")) {
				return nil
			}
		}
		return errors.New("no forbidden CA call yet")
	})
	if _, err := b.kube.CoreV1().Secrets(b.ns).Get(b.ctx, contract.CASecret("e"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a CA Secret exists: %v", err)
	}
}
