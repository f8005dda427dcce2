package certs

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/pki"
)

// Keeper keeps the certificate Secrets of one cluster; the runtime's
// leader calls Ensure on its passes.
type Keeper struct {
	Client    kubernetes.Interface
	Namespace string
	Cluster   string
	// App is the cluster's kind as its pods' name label gives it: it
	// picks the kind's leaves (kindLeaves, leaf.go), and Ensure refuses an
	// app that has none, an empty one too.
	App string
	// IPs are addresses an etcd cluster's server certificate carries
	// besides its DNS names, for members reached by address (a cluster
	// without DNS, as in the test beds). Empty in a Kubernetes cluster.
	IPs []net.IP
	// Lifetime of issued leaves; 0 means pki.LeafLifetime. Ensure refuses
	// a lifetime so short that a new leaf would be due at once (which
	// would have it issue again on every pass).
	Lifetime time.Duration
	// CALifetime of a new CA; 0 means pki.CALifetime. CAOverlap is how
	// long a new CA is trusted before it signs (rotate.go); 0 means
	// DefaultCAOverlap.
	CALifetime, CAOverlap time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger // may be nil
}

// Ensure makes the three Secrets exist and be current, and returns the
// client Material and the names of the Secrets it wrote (sorted; empty
// when nothing changed):
//   - the CA Secret is created with a new CA when missing; when it exists
//     but holds no usable CA, Ensure fails and leaves it alone (replacing
//     it would cut every member off, so a person must look); a CA past
//     two thirds of its lifetime is replaced, trusted before it signs
//     (rotate.go);
//   - the server and client Secrets are created when missing, and updated
//     (with the resourceVersion read, so a concurrent writer makes a
//     conflict error) when pki.Due says their leaf is due or their ca.crt
//     is not pki.Bundle's;
//   - a create that loses a race with another replica reads the winner's
//     Secret back and goes on;
//   - a Secret of one of those names that the runtime did not make is an
//     error, and is never written.
//
// Errors wrap the API's and name the Secret.
func (k *Keeper) Ensure(ctx context.Context) (Material, []string, error) {
	leaves, err := k.leaves()
	if err != nil {
		return Material{}, nil, err
	}
	now := k.now()
	ca, extra, wrote, err := k.ensureCA(ctx, now)
	if err != nil {
		return Material{}, nil, err
	}
	var written []string
	if wrote {
		written = append(written, contract.CASecret(k.Cluster))
	}
	var client *corev1.Secret
	ends := map[string]time.Time{contract.CASecret(k.Cluster): ca.Cert.NotAfter}
	for _, l := range leaves {
		s, wrote, err := k.ensureLeaf(ctx, ca, extra, l, now)
		if err != nil {
			return Material{}, nil, err
		}
		if wrote {
			written = append(written, l.name)
		}
		if l.want.Client {
			client = s
		}
		if end, ok := notAfter(s.Data[contract.TLSKeyCert]); ok {
			ends[l.name] = end
		}
	}
	slices.Sort(written)
	m := materialOf(client.Data)
	m.NotAfter = ends
	return m, written, nil
}

// ensureCA reads the cluster's CA, creating its Secret when there is
// none, and moves its replacement on (rotate.go). It returns the CA that
// signs, the CA certificates the leaves must trust besides it (PEM), and
// whether it wrote the Secret.
func (k *Keeper) ensureCA(ctx context.Context, now time.Time) (ca *pki.CA, extra []byte, wrote bool, err error) {
	name := contract.CASecret(k.Cluster)
	rec, err := k.readRecord(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	s, err := k.get(ctx, name)
	if err != nil {
		return nil, nil, false, err
	}
	if s == nil {
		ca, err := pki.NewCA(k.caName(), now, k.caLifetime())
		if err != nil {
			return nil, nil, false, fmt.Errorf("secret %s: %w", k.ref(name), err)
		}
		// Recorded before it exists: a CA Secret is only ever adopted
		// with its record (proof.go).
		if err := k.recordNew(ctx, rec, nil, ca.CertPEM); err != nil {
			return nil, nil, false, err
		}
		data := map[string][]byte{contract.TLSKeyCert: ca.CertPEM, contract.TLSKeyKey: ca.KeyPEM}
		s, wrote, err = k.createOrRead(ctx, k.secret(name, corev1.SecretTypeOpaque, data))
		if err != nil {
			return nil, nil, false, err
		}
		if wrote {
			k.log().Info("created the cluster's CA", "secret", name, "commonName", ca.Cert.Subject.CommonName,
				"notAfter", ca.Cert.NotAfter)
			return ca, nil, true, nil
		}
		// Another writer created it first: its record is the one to check.
		if rec, err = k.readRecord(ctx); err != nil {
			return nil, nil, false, err
		}
	}
	if err := k.owned(s); err != nil {
		return nil, nil, false, err
	}
	ca, err = pki.ParseCA(s.Data[contract.TLSKeyCert], s.Data[contract.TLSKeyKey])
	if err != nil {
		return nil, nil, false, fmt.Errorf("secret %s holds no usable CA in %s and %s, and is left as it is "+
			"(a new CA would cut every member off): %w", k.ref(name), contract.TLSKeyCert, contract.TLSKeyKey, err)
	}
	if err := k.proven(rec, s); err != nil {
		return nil, nil, false, err
	}
	ca, s, wrote, err = k.rotate(ctx, rec, s, ca, now)
	if err != nil {
		return nil, nil, false, err
	}
	return ca, trust(s), wrote, nil
}

// get reads Secret name; a missing Secret is nil, nil.
func (k *Keeper) get(ctx context.Context, name string) (*corev1.Secret, error) {
	s, err := k.secrets().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read secret %s: %w", k.ref(name), err)
	}
	return s, nil
}

// createOrRead creates s; when another writer created it first, it reads
// theirs back instead. created reports whether s is what is stored.
func (k *Keeper) createOrRead(ctx context.Context, s *corev1.Secret) (stored *corev1.Secret, created bool, err error) {
	out, err := k.secrets().Create(ctx, s, metav1.CreateOptions{FieldManager: contract.FieldManager})
	if err == nil {
		return out, true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, false, fmt.Errorf("create secret %s: %w", k.ref(s.Name), err)
	}
	out, err = k.secrets().Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("read secret %s back after another writer created it: %w", k.ref(s.Name), err)
	}
	return out, false, nil
}

// update writes upd, read before with its resourceVersion (so a
// concurrent writer makes a conflict), with the runtime's labels; why
// names the change in an error.
func (k *Keeper) update(ctx context.Context, upd *corev1.Secret, why string) (*corev1.Secret, error) {
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	maps.Copy(upd.Labels, k.labels())
	out, err := k.secrets().Update(ctx, upd, metav1.UpdateOptions{FieldManager: contract.FieldManager})
	if err != nil {
		return nil, fmt.Errorf("update secret %s (%s): %w", k.ref(upd.Name), why, err)
	}
	return out, nil
}

// owned fails unless s carries the labels the runtime gives its Secrets.
func (k *Keeper) owned(s *corev1.Secret) error {
	for key, want := range k.labels() {
		if got := s.Labels[key]; got != want {
			return fmt.Errorf("secret %s was not made by cairn's runtime (label %s is %q, not %q) and is left as it is",
				k.ref(s.Name), key, got, want)
		}
	}
	return nil
}

// secret is a new Secret of the runtime's.
func (k *Keeper) secret(name string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.Namespace, Labels: k.labels()},
		Type:       typ,
		Data:       data,
	}
}

// labels mark the runtime's Secrets of the cluster.
func (k *Keeper) labels() map[string]string {
	return map[string]string{contract.LabelManagedBy: contract.ManagedByRuntime, contract.LabelInstance: k.Cluster}
}

func (k *Keeper) secrets() typedcorev1.SecretInterface {
	return k.Client.CoreV1().Secrets(k.Namespace)
}

func (k *Keeper) ref(name string) string { return k.Namespace + "/" + name }

func (k *Keeper) caName() string { return "cairn " + k.Namespace + "/" + k.Cluster + " CA" }

func (k *Keeper) now() time.Time {
	if k.Now == nil {
		return time.Now()
	}
	return k.Now()
}

func (k *Keeper) lifetime() time.Duration {
	if k.Lifetime == 0 {
		return pki.LeafLifetime
	}
	return k.Lifetime
}

func (k *Keeper) log() *slog.Logger {
	if k.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return k.Log
}
