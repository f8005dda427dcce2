package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/pki"
)

func testEnsureCreates(t *testing.T, b *bed) {
	clk := newClock()
	k := b.keeper(t, "pg", clk)
	m, written := b.ensure(t, k)
	if want := []string{"pg-ca", "pg-server-tls", "pg-superuser-tls"}; !slices.Equal(written, want) {
		t.Fatalf("first ensure wrote %v, want %v", written, want)
	}
	for _, tt := range []struct {
		name string
		typ  corev1.SecretType
		keys []string
	}{
		{"pg-ca", corev1.SecretTypeOpaque, []string{"tls.crt", "tls.key"}},
		{"pg-server-tls", corev1.SecretTypeTLS, []string{"ca.crt", "tls.crt", "tls.key"}},
		{"pg-superuser-tls", corev1.SecretTypeTLS, []string{"ca.crt", "tls.crt", "tls.key"}},
	} {
		s := b.secret(t, tt.name)
		if s.Type != tt.typ {
			t.Errorf("%s: type %s, want %s", tt.name, s.Type, tt.typ)
		}
		if keys := sortedKeys(s.Data); !slices.Equal(keys, tt.keys) {
			t.Errorf("%s: keys %v, want %v", tt.name, keys, tt.keys)
		}
		if got := s.Labels["app.kubernetes.io/managed-by"]; got != "cairn-runtime" {
			t.Errorf("%s: managed-by %q", tt.name, got)
		}
		if got := s.Labels["app.kubernetes.io/instance"]; got != "pg" {
			t.Errorf("%s: instance %q", tt.name, got)
		}
	}

	ca := b.secret(t, "pg-ca")
	server := b.secret(t, "pg-server-tls")
	client := b.secret(t, "pg-superuser-tls")
	if !bytes.Equal(server.Data["ca.crt"], ca.Data["tls.crt"]) || !bytes.Equal(client.Data["ca.crt"], ca.Data["tls.crt"]) {
		t.Error("ca.crt is not the CA's certificate")
	}
	roots := pool(t, ca.Data["tls.crt"])
	leaf := parseCert(t, server.Data["tls.crt"])
	for _, name := range []string{"pg-0.pg-hl." + b.ns + ".svc", "pg-rw." + b.ns + ".svc", "pg-ro", "pg-r." + b.ns + ".svc.cluster.local"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: clk.now(),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("server certificate for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "pg-0.other-hl." + b.ns + ".svc", CurrentTime: clk.now()}); err == nil {
		t.Error("server certificate verifies for another cluster's name")
	}
	cl := parseCert(t, client.Data["tls.crt"])
	if _, err := cl.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: clk.now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil || cl.Subject.CommonName != "postgres" {
		t.Errorf("client certificate %q: %v", cl.Subject.CommonName, err)
	}
	want := Material{CA: client.Data["ca.crt"], ClientCert: client.Data["tls.crt"], ClientKey: client.Data["tls.key"]}
	if !sameMaterial(m, want) {
		t.Error("Ensure's Material is not the client Secret's")
	}
	// When each certificate ends, for the runtime's expiry metric.
	wantEnds := map[string]time.Time{"pg-ca": parseCert(t, ca.Data["tls.crt"]).NotAfter, "pg-server-tls": leaf.NotAfter, "pg-superuser-tls": cl.NotAfter}
	if !maps.EqualFunc(m.NotAfter, wantEnds, time.Time.Equal) {
		t.Errorf("NotAfter %v, want %v", m.NotAfter, wantEnds)
	}

	before := versions(t, b, "pg")
	m2, written := b.ensure(t, k)
	if len(written) != 0 {
		t.Fatalf("second ensure wrote %v", written)
	}
	if after := versions(t, b, "pg"); !slices.Equal(after, before) {
		t.Errorf("resource versions moved from %v to %v", before, after)
	}
	if !sameMaterial(m2, m) {
		t.Error("second ensure returned other Material")
	}
}

func testEnsureRotates(t *testing.T, b *bed) {
	clk := newClock()
	k := b.keeper(t, "rot", clk) // leaves of 3h: valid from -18m (a tenth), due after 1h54m
	b.ensure(t, k)
	ca := b.secret(t, "rot-ca")
	var elapsed time.Duration
	for _, step := range []struct {
		advance time.Duration
		want    []string
	}{
		{time.Hour, nil},
		{30 * time.Minute, nil},
		{20 * time.Minute, nil},
		{5 * time.Minute, []string{"rot-server-tls", "rot-superuser-tls"}}, // 1h55m: past two thirds
		{time.Hour, nil},
		{50 * time.Minute, nil},
		{5 * time.Minute, []string{"rot-server-tls", "rot-superuser-tls"}}, // 3h50m: the new ones' two thirds
	} {
		clk.advance(step.advance)
		elapsed += step.advance
		server, client := b.secret(t, "rot-server-tls"), b.secret(t, "rot-superuser-tls")
		m, written := b.ensure(t, k)
		if !slices.Equal(written, step.want) {
			t.Fatalf("at +%s: wrote %v, want %v", elapsed, written, step.want)
		}
		newServer, newClient := b.secret(t, "rot-server-tls"), b.secret(t, "rot-superuser-tls")
		reissued := len(step.want) > 0
		if changed := !bytes.Equal(newServer.Data["tls.key"], server.Data["tls.key"]); changed != reissued {
			t.Errorf("server key changed %v, want %v", changed, reissued)
		}
		if changed := !bytes.Equal(newClient.Data["tls.crt"], client.Data["tls.crt"]); changed != reissued {
			t.Errorf("client certificate changed %v, want %v", changed, reissued)
		}
		if !bytes.Equal(m.ClientCert, newClient.Data["tls.crt"]) {
			t.Error("Material is not the new client certificate")
		}
		if due, why := pki.Due(newServer.Data["tls.crt"], newServer.Data["tls.key"], mustCA(t, ca), pki.Want{DNSNames: contract.PostgresServerNames("rot", b.ns)}, clk.now()); due {
			t.Errorf("server certificate due after ensure: %s", why)
		}
	}
	if now := b.secret(t, "rot-ca"); now.ResourceVersion != ca.ResourceVersion {
		t.Error("the CA Secret was written")
	}
}

// Leaves of seconds (as tests use to see renewal) are backdated by a
// tenth of their lifetime, not an hour, so they are not due as issued.
func testEnsureRotatesShortLifetimes(t *testing.T, b *bed) {
	clk := newClock()
	k := b.keeper(t, "short", clk)
	k.Lifetime = 30 * time.Second // valid from -3s, due after 19s
	b.ensure(t, k)
	for _, step := range []struct {
		advance time.Duration
		want    []string
	}{
		{10 * time.Second, nil},
		{10 * time.Second, []string{"short-server-tls", "short-superuser-tls"}},
		{time.Second, nil},
	} {
		clk.advance(step.advance)
		if _, written := b.ensure(t, k); !slices.Equal(written, step.want) {
			t.Fatalf("after %s more: wrote %v, want %v", step.advance, written, step.want)
		}
	}
}

func testEnsureLeavesABadCA(t *testing.T, b *bed) {
	other, err := pki.NewCA("other", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherLeaf, err := other.IssueClient("x", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		cluster string
		change  func(map[string][]byte)
		want    string
	}{
		{"bad-cert", func(d map[string][]byte) { d["tls.crt"] = []byte("not PEM") }, "certificate: no PEM block"},
		{"bad-key", func(d map[string][]byte) { d["tls.key"] = d["tls.crt"] }, "key: PEM block"},
		{"no-key", func(d map[string][]byte) { delete(d, "tls.key") }, "key: no PEM block"},
		{"other-key", func(d map[string][]byte) { d["tls.key"] = other.KeyPEM }, "key does not match"},
		{"leaf-cert", func(d map[string][]byte) { d["tls.crt"], d["tls.key"] = otherLeaf.CertPEM, otherLeaf.KeyPEM }, "is not a CA"},
	} {
		t.Run(tt.cluster, func(t *testing.T) {
			k := b.keeper(t, tt.cluster, newClock())
			b.ensure(t, k)
			b.edit(t, tt.cluster+"-ca", func(s *corev1.Secret) { tt.change(s.Data) })
			before := versions(t, b, tt.cluster)
			caBefore := b.secret(t, tt.cluster+"-ca")
			_, written, err := k.Ensure(context.Background())
			if err == nil || !strings.Contains(err.Error(), b.ns+"/"+tt.cluster+"-ca") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ensure: %v, want an error naming the CA Secret and %q", err, tt.want)
			}
			if len(written) != 0 {
				t.Errorf("wrote %v", written)
			}
			if after := versions(t, b, tt.cluster); !slices.Equal(after, before) {
				t.Errorf("resource versions moved from %v to %v", before, after)
			}
			if caAfter := b.secret(t, tt.cluster+"-ca"); !equalData(caAfter.Data, caBefore.Data) {
				t.Error("the CA Secret's data changed")
			}
		})
	}
}

func testEnsureLeavesForeignSecrets(t *testing.T, b *bed) {
	for _, tt := range []struct {
		cluster, name string
		labels        map[string]string
	}{
		{"fca", "fca-ca", nil},
		{"fsrv", "fsrv-server-tls", nil},
		{"fcli", "fcli-superuser-tls", map[string]string{"app.kubernetes.io/managed-by": "cairn"}},
		{"fother", "fother-server-tls", map[string]string{"app.kubernetes.io/managed-by": "cairn-runtime", "app.kubernetes.io/instance": "x"}},
	} {
		t.Run(tt.cluster, func(t *testing.T) {
			foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: tt.name, Labels: tt.labels},
				Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("theirs"), "tls.key": []byte("theirs")}}
			created, err := b.c.CoreV1().Secrets(b.ns).Create(context.Background(), foreign, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = b.keeper(t, tt.cluster, newClock()).Ensure(context.Background())
			if err == nil || !strings.Contains(err.Error(), b.ns+"/"+tt.name) || !strings.Contains(err.Error(), "not made by") {
				t.Fatalf("ensure: %v, want an error naming %s", err, tt.name)
			}
			if after := b.secret(t, tt.name); after.ResourceVersion != created.ResourceVersion {
				t.Error("the foreign Secret was written")
			}
		})
	}
}

func testEnsureRewritesTheBundle(t *testing.T, b *bed) {
	previous, err := pki.NewCA("previous", time.Now(), pki.CALifetime)
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	k := b.keeper(t, "bdl", clk)
	b.ensure(t, k)
	caPEM := b.secret(t, "bdl-ca").Data["tls.crt"]
	for _, tt := range []struct {
		name      string
		set, want []byte
	}{
		{"garbage", []byte("garbage"), caPEM},
		{"another CA only", previous.CertPEM, caPEM},
		// A CA someone added beside the cluster's is never trusted.
		{"an extra CA after the cluster's", append(slices.Clip(caPEM), previous.CertPEM...), caPEM},
		{"an extra CA before the cluster's", append(slices.Clip(previous.CertPEM), caPEM...), caPEM},
		{"kept", caPEM, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b.edit(t, "bdl-server-tls", func(s *corev1.Secret) { s.Data["ca.crt"] = tt.set })
			before := b.secret(t, "bdl-server-tls")
			_, written := b.ensure(t, k)
			after := b.secret(t, "bdl-server-tls")
			if tt.want == nil {
				if len(written) != 0 {
					t.Fatalf("wrote %v", written)
				}
				return
			}
			if !slices.Equal(written, []string{"bdl-server-tls"}) {
				t.Fatalf("wrote %v", written)
			}
			if !bytes.Equal(after.Data["ca.crt"], tt.want) {
				t.Errorf("ca.crt:\n%s\nwant:\n%s", after.Data["ca.crt"], tt.want)
			}
			if !bytes.Equal(after.Data["tls.key"], before.Data["tls.key"]) {
				t.Error("the leaf was issued again for a bundle")
			}
		})
	}
}

func testEnsureAdoptsARacingCreate(t *testing.T, b *bed) {
	clk := newClock()
	first, _ := b.ensure(t, b.keeper(t, "race", clk))
	before := versions(t, b, "race")
	late := b.keeper(t, "race", clk)
	late.Client = hookedClient{b.c, notFoundOnce()}
	m, written := b.ensure(t, late)
	if len(written) != 0 {
		t.Errorf("the replica that lost the race wrote %v", written)
	}
	if !sameMaterial(m, first) {
		t.Error("the replica that lost the race returned other Material")
	}
	if after := versions(t, b, "race"); !slices.Equal(after, before) {
		t.Errorf("resource versions moved from %v to %v", before, after)
	}
}

func testEnsureUpdateConflicts(t *testing.T, b *bed) {
	clk := newClock()
	k := b.keeper(t, "cfl", clk)
	b.ensure(t, k)
	clk.advance(2 * time.Hour) // the leaves are due
	k.Client = hookedClient{b.c, func(name string, s *corev1.Secret, err error) (*corev1.Secret, error) {
		if name == "cfl-server-tls" && err == nil {
			// Another writer, between this read and the update.
			b.edit(t, name, func(s *corev1.Secret) { s.Annotations = map[string]string{"other": "writer"} })
		}
		return s, err
	}}
	_, _, err := k.Ensure(context.Background())
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), b.ns+"/cfl-server-tls") {
		t.Fatalf("ensure: %v, want a conflict naming the server Secret", err)
	}
	if s := b.secret(t, "cfl-server-tls"); s.Annotations["other"] != "writer" {
		t.Error("the other writer's update was lost")
	}
}

func versions(t *testing.T, b *bed, cluster string) []string {
	t.Helper()
	var out []string
	for _, name := range []string{contract.CASecret(cluster), contract.ServerTLSSecret(cluster), contract.ClientTLSSecret(cluster)} {
		out = append(out, b.secret(t, name).ResourceVersion)
	}
	return out
}

func sortedKeys(m map[string][]byte) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func equalData(a, b map[string][]byte) bool {
	return slices.Equal(sortedKeys(a), sortedKeys(b)) && !slices.ContainsFunc(sortedKeys(a), func(k string) bool { return !bytes.Equal(a[k], b[k]) })
}

func sameMaterial(a, b Material) bool {
	return bytes.Equal(a.CA, b.CA) && bytes.Equal(a.ClientCert, b.ClientCert) && bytes.Equal(a.ClientKey, b.ClientKey)
}

func pool(t *testing.T, pemBytes []byte) *x509.CertPool {
	t.Helper()
	p, err := pki.Pool(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func parseCert(t *testing.T, pemBytes []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		t.Fatal(errors.New("no PEM block"))
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustCA(t *testing.T, s *corev1.Secret) *pki.CA {
	t.Helper()
	ca, err := pki.ParseCA(s.Data["tls.crt"], s.Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	return ca
}
