package certs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/runtime/pki"
)

// The Keeper records each CA it makes in the cluster's status ConfigMap
// before the CA exists, beside what others wrote there.
func testEnsureRecordsItsCA(t *testing.T, b *bed) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rec-cairn-status"}, Data: map[string]string{"backup.json": "{}"}}
	if _, err := b.c.CoreV1().ConfigMaps(b.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.ensure(t, b.keeper(t, "rec", newClock()))
	fp, err := fingerprint(b.secret(t, "rec-ca").Data["tls.crt"])
	if err != nil {
		t.Fatal(err)
	}
	got := b.configMap(t, "rec-cairn-status")
	if got.Data["ca-fingerprints"] != fp+"\n" || got.Data["backup.json"] != "{}" {
		t.Fatalf("status ConfigMap %v, want ca-fingerprints %s and backup.json kept", got.Data, fp)
	}
	// Without a ConfigMap, the Keeper creates it.
	b.ensure(t, b.keeper(t, "rec2", newClock()))
	fp2, err := fingerprint(b.secret(t, "rec2-ca").Data["tls.crt"])
	if err != nil {
		t.Fatal(err)
	}
	if got := b.configMap(t, "rec2-cairn-status").Data["ca-fingerprints"]; got != fp2+"\n" {
		t.Fatalf("ca-fingerprints %q, want %s", got, fp2)
	}
}

// A CA Secret with the runtime's labels that the runtime has no record
// of making, as another cluster's runtime or a person could plant, is
// never adopted: nothing is issued with it, nothing written, and the
// error says why and how a person adopts it. So is a CA planted as the
// next one beside the cluster's proven CA.
func testEnsureRefusesAPlantedCA(t *testing.T, b *bed) {
	ctx := context.Background()
	planted := func(t *testing.T, cluster string) *pki.CA {
		t.Helper()
		ca, err := pki.NewCA("cairn "+b.ns+"/"+cluster+" CA", time.Now(), pki.CALifetime)
		if err != nil {
			t.Fatal(err)
		}
		return ca
	}
	labels := func(cluster string) map[string]string {
		return map[string]string{"app.kubernetes.io/managed-by": "cairn-runtime", "app.kubernetes.io/instance": cluster}
	}
	for _, tt := range []struct {
		name, cluster string
		plant         func(t *testing.T, cluster string) (key string)
	}{
		{"a labelled CA Secret, no record", "plant1", func(t *testing.T, c string) string {
			ca := planted(t, c)
			b.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: c + "-ca", Labels: labels(c)},
				Data: map[string][]byte{"tls.crt": ca.CertPEM, "tls.key": ca.KeyPEM}})
			return "tls.crt"
		}},
		{"a labelled CA Secret, another CA recorded", "plant2", func(t *testing.T, c string) string {
			ca, other := planted(t, c), planted(t, c)
			fp, err := fingerprint(other.CertPEM)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.c.CoreV1().ConfigMaps(b.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c + "-cairn-status"},
				Data: map[string]string{"ca-fingerprints": fp + "\n"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			b.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: c + "-ca", Labels: labels(c)},
				Data: map[string][]byte{"tls.crt": ca.CertPEM, "tls.key": ca.KeyPEM}})
			return "tls.crt"
		}},
		{"a next CA planted beside the cluster's own", "plant3", func(t *testing.T, c string) string {
			b.ensure(t, b.keeper(t, c, newClock()))
			ca := planted(t, c)
			b.edit(t, c+"-ca", func(s *corev1.Secret) {
				s.Data["next.crt"], s.Data["next.key"] = ca.CertPEM, ca.KeyPEM
				s.Annotations = map[string]string{"cairn.dev/ca-next-since": time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)}
			})
			return "next.crt"
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := tt.plant(t, tt.cluster)
			before := map[string]string{}
			for _, n := range []string{tt.cluster + "-ca", tt.cluster + "-server-tls", tt.cluster + "-superuser-tls"} {
				if s, err := b.c.CoreV1().Secrets(b.ns).Get(ctx, n, metav1.GetOptions{}); err == nil {
					before[n] = s.ResourceVersion
				}
			}
			_, written, err := b.keeper(t, tt.cluster, newClock()).Ensure(ctx)
			if !errors.Is(err, errNotProven) {
				t.Fatalf("ensure: %v, want a refusal of the planted CA", err)
			}
			for _, want := range []string{b.ns + "/" + tt.cluster + "-ca", "not adopted", key, b.ns + "/" + tt.cluster + "-cairn-status", "sha256:"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal %q does not say %q", err, want)
				}
			}
			if len(written) != 0 {
				t.Errorf("wrote %v", written)
			}
			for _, n := range []string{tt.cluster + "-ca", tt.cluster + "-server-tls", tt.cluster + "-superuser-tls"} {
				s, err := b.c.CoreV1().Secrets(b.ns).Get(ctx, n, metav1.GetOptions{})
				switch {
				case apierrors.IsNotFound(err) && before[n] == "":
				case err != nil:
					t.Errorf("%s: %v", n, err)
				case s.ResourceVersion != before[n]:
					t.Errorf("%s was written", n)
				}
			}
		})
	}
}

// A person adopts a CA they vetted by recording its fingerprint; the
// Keeper then issues the leaves with it.
func testEnsureAdoptsARecordedCA(t *testing.T, b *bed) {
	ctx := context.Background()
	ca, err := pki.NewCA("vetted", time.Now(), pki.CALifetime)
	if err != nil {
		t.Fatal(err)
	}
	b.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vet-ca",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "cairn-runtime", "app.kubernetes.io/instance": "vet"}},
		Data: map[string][]byte{"tls.crt": ca.CertPEM, "tls.key": ca.KeyPEM}})
	k := b.keeper(t, "vet", newClock())
	if _, _, err := k.Ensure(ctx); !errors.Is(err, errNotProven) {
		t.Fatalf("ensure before the record: %v", err)
	}
	fp, err := fingerprint(ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.CoreV1().ConfigMaps(b.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "vet-cairn-status"},
		Data: map[string]string{"ca-fingerprints": fp + "\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, written := b.ensure(t, k)
	if strings.Join(written, ",") != "vet-server-tls,vet-superuser-tls" {
		t.Fatalf("wrote %v", written)
	}
	leaf := parseCert(t, b.secret(t, "vet-server-tls").Data["tls.crt"])
	if err := leaf.CheckSignatureFrom(ca.Cert); err != nil {
		t.Fatalf("the server certificate is not the vetted CA's: %v", err)
	}
}

func (b *bed) create(t *testing.T, s *corev1.Secret) {
	t.Helper()
	if _, err := b.c.CoreV1().Secrets(b.ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (b *bed) configMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := b.c.CoreV1().ConfigMaps(b.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}
