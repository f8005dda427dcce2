package certs

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/pki"
)

// leaf is one of the cluster's leaf Secrets: its name, what its
// certificate must be, and how to issue one.
type leaf struct {
	name  string
	want  pki.Want
	issue func(ca *pki.CA, now time.Time, lifetime time.Duration) (pki.Leaf, error)
}

// kindLeaves are the server Secret, then the client Secret, of each kind
// the Keeper serves, by its pods' name label value (Keeper.App); one line
// a kind, its leaves in a file of its own.
var kindLeaves = map[string]func(k *Keeper) []leaf{
	contract.AppEtcd:     etcdLeaves,
	contract.AppPostgres: postgresLeaves,
}

// leaves are the leaves of the Keeper's kind; a kind with none is an
// error that names it, never another kind's leaves.
func (k *Keeper) leaves() ([]leaf, error) {
	leaves, ok := kindLeaves[k.App]
	if !ok {
		return nil, fmt.Errorf("certificates of %s/%s: no certificates are known for app %q", k.Namespace, k.Cluster, k.App)
	}
	return leaves(k), nil
}

// clientLeaf is the client Secret of a cluster, for commonName.
func clientLeaf(cluster, commonName string) leaf {
	return leaf{
		name: contract.ClientTLSSecret(cluster),
		want: pki.Want{CommonName: commonName, Client: true},
		issue: func(ca *pki.CA, now time.Time, lifetime time.Duration) (pki.Leaf, error) {
			return ca.IssueClient(commonName, now, lifetime)
		},
	}
}

// ensureLeaf makes leaf l's Secret current: created when missing, updated
// when its data is not what next says. wrote reports whether it wrote.
func (k *Keeper) ensureLeaf(ctx context.Context, ca *pki.CA, extra []byte, l leaf, now time.Time) (s *corev1.Secret, wrote bool, err error) {
	s, err = k.get(ctx, l.name)
	if err != nil {
		return nil, false, err
	}
	if s == nil {
		data, reason, err := k.next(ca, extra, l, nil, now)
		if err != nil {
			return nil, false, err
		}
		s, wrote, err = k.createOrRead(ctx, k.secret(l.name, corev1.SecretTypeTLS, data))
		if err != nil {
			return nil, false, err
		}
		if wrote {
			k.log().Info("issued a certificate", "secret", l.name, "reason", reason)
			return s, true, nil
		}
	}
	if err := k.owned(s); err != nil {
		return nil, false, err
	}
	if s.Type != corev1.SecretTypeTLS {
		return nil, false, fmt.Errorf("secret %s is of type %s, not %s, and is left as it is", k.ref(l.name), s.Type, corev1.SecretTypeTLS)
	}
	data, reason, err := k.next(ca, extra, l, s.Data, now)
	if err != nil || data == nil {
		return s, false, err
	}
	upd := s.DeepCopy()
	upd.Data = data
	out, err := k.update(ctx, upd, reason)
	if err != nil {
		return nil, false, err
	}
	k.log().Info("issued a certificate", "secret", l.name, "reason", reason)
	return out, true, nil
}

// next is the data leaf l's Secret must hold instead of old (nil when
// missing), and why; nil, "" when old is current. The leaf is issued again
// when pki.Due says so; ca.crt becomes pki.Bundle of the cluster's CA and
// extra (the CA being introduced or the one replaced, rotate.go), all of
// them proven the cluster's own (proof.go), and nothing else: a CA
// someone added to old's ca.crt is dropped, never trusted.
func (k *Keeper) next(ca *pki.CA, extra []byte, l leaf, old map[string][]byte, now time.Time) (map[string][]byte, string, error) {
	bundle := pki.Bundle(ca, extra, now)
	due, reason := pki.Due(old[contract.TLSKeyCert], old[contract.TLSKeyKey], ca, l.want, now)
	if !due {
		if bytes.Equal(bundle, old[contract.TLSKeyCA]) {
			return nil, "", nil
		}
		return map[string][]byte{
			contract.TLSKeyCert: old[contract.TLSKeyCert],
			contract.TLSKeyKey:  old[contract.TLSKeyKey],
			contract.TLSKeyCA:   bundle,
		}, "CA bundle differs", nil
	}
	issued, err := l.issue(ca, now, k.lifetime())
	if err != nil {
		return nil, "", fmt.Errorf("secret %s: %w", k.ref(l.name), err)
	}
	// A leaf due as soon as it is made would be made again every pass.
	if again, why := pki.Due(issued.CertPEM, issued.KeyPEM, ca, l.want, now); again {
		return nil, "", fmt.Errorf("secret %s: a certificate issued with lifetime %s is due at once (%s)", k.ref(l.name), k.lifetime(), why)
	}
	return map[string][]byte{
		contract.TLSKeyCert: issued.CertPEM,
		contract.TLSKeyKey:  issued.KeyPEM,
		contract.TLSKeyCA:   bundle,
	}, reason, nil
}
