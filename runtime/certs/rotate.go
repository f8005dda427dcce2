package certs

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/pki"
)

// Replacing the cluster's CA without cutting anyone off. A CA past two
// thirds of its lifetime (pki.CA.Due) is replaced in two moves, each a
// write of the CA Secret that the leaves follow on the same pass:
//
//  1. introduce: a new CA is made and kept beside the current one
//     (caKeyNextCert, caKeyNextKey, since caAnnotationNextSince). The
//     leaves stay as they are, signed by the current CA, and their
//     ca.crt trusts both: members load it (PostgreSQL's at their next
//     check, every minute, a reload; etcd's by restarting one at a
//     time, each in its turn, runtime/instance/etcd/turn.go), so they come
//     to trust the new CA before anyone presents a certificate it signed;
//  2. switch, once the overlap (Keeper.CAOverlap) has passed since: the
//     new CA signs, the old one's certificate stays as caKeyPreviousCert,
//     and the leaves are issued again by the new CA (pki.Due: not signed
//     by the cluster's CA), their ca.crt trusting both, so a member or
//     client that still holds an old leaf is still verified.
//
// The old CA stays trusted until it expires (pki.Bundle drops expired
// CAs). Each move is an update with the resourceVersion read, so two
// replicas cannot both make a new CA.

// Keys and annotation of the CA Secret while a CA is being replaced.
const (
	caKeyNextCert         = "next.crt"
	caKeyNextKey          = "next.key"
	caKeyPreviousCert     = "previous.crt"
	caAnnotationNextSince = contract.LabelPrefix + "ca-next-since"
)

// DefaultCAOverlap is how long a new CA is trusted before it signs: far
// longer than the instance managers' minute between checks, and than
// the about 6 minutes etcd members (up to 7) need to restart in turn
// onto the new bundle, with room for 15 cycles of turns missed to a
// member that is down (runtime/instance/etcd TestEtcdCAOverlapCoversEveryRestart).
const DefaultCAOverlap = time.Hour

// trust is what the leaves' ca.crt must trust besides the signing CA:
// the next CA while one is introduced, the previous one after a switch.
func trust(s *corev1.Secret) []byte {
	if next := s.Data[caKeyNextCert]; len(next) > 0 {
		return next
	}
	return s.Data[caKeyPreviousCert]
}

// rotate moves the replacement of ca (read from s) on, when it is due:
// it returns the CA that signs now, the CA Secret as stored, and whether
// it wrote it.
func (k *Keeper) rotate(ctx context.Context, rec caRecord, s *corev1.Secret, ca *pki.CA, now time.Time) (*pki.CA, *corev1.Secret, bool, error) {
	name := s.Name
	if len(s.Data[caKeyNextCert]) > 0 {
		next, err := pki.ParseCA(s.Data[caKeyNextCert], s.Data[caKeyNextKey])
		if err != nil {
			return nil, nil, false, fmt.Errorf("secret %s holds no usable next CA in %s and %s, and is left as it is: %w",
				k.ref(name), caKeyNextCert, caKeyNextKey, err)
		}
		since, err := time.Parse(time.RFC3339, s.Annotations[caAnnotationNextSince])
		if err != nil {
			// Unreadable: the overlap starts again, which only delays.
			out, err := k.updateCA(ctx, s, nil, map[string]string{caAnnotationNextSince: now.UTC().Format(time.RFC3339)}, "restarted the new CA's overlap")
			return ca, out, out != nil, err
		}
		if now.Before(since.Add(k.caOverlap())) {
			return ca, s, false, nil
		}
		data := map[string][]byte{
			contract.TLSKeyCert: next.CertPEM, contract.TLSKeyKey: next.KeyPEM,
			caKeyPreviousCert: ca.CertPEM, caKeyNextCert: nil, caKeyNextKey: nil,
		}
		out, err := k.updateCA(ctx, s, data, map[string]string{caAnnotationNextSince: ""}, "switched to the new CA")
		if err != nil {
			return nil, nil, false, err
		}
		k.log().Info("the cluster's new CA signs from now on; the old one stays trusted until it expires", "secret", name,
			"commonName", next.Cert.Subject.CommonName, "notAfter", next.Cert.NotAfter, "oldNotAfter", ca.Cert.NotAfter)
		return next, out, true, nil
	}
	if !ca.Due(now) {
		return ca, s, false, nil
	}
	next, err := pki.NewCA(k.caName(), now, k.caLifetime())
	if err != nil {
		return nil, nil, false, fmt.Errorf("secret %s: %w", k.ref(name), err)
	}
	if err := k.recordNew(ctx, rec, s, next.CertPEM); err != nil {
		return nil, nil, false, err
	}
	data := map[string][]byte{caKeyNextCert: next.CertPEM, caKeyNextKey: next.KeyPEM}
	out, err := k.updateCA(ctx, s, data, map[string]string{caAnnotationNextSince: now.UTC().Format(time.RFC3339)}, "introduced a new CA")
	if err != nil {
		return nil, nil, false, err
	}
	k.log().Info("introduced the cluster's new CA: the members trust it now and it signs after the overlap", "secret", name,
		"notAfter", next.Cert.NotAfter, "signsFrom", now.Add(k.caOverlap()), "oldNotAfter", ca.Cert.NotAfter)
	return ca, out, true, nil
}

// updateCA writes the CA Secret s with data's keys set (a nil value
// removes the key) and annotations' set (an empty value removes it),
// under the resourceVersion read.
func (k *Keeper) updateCA(ctx context.Context, s *corev1.Secret, data map[string][]byte, annotations map[string]string, what string) (*corev1.Secret, error) {
	upd := s.DeepCopy()
	if upd.Data == nil {
		upd.Data = map[string][]byte{}
	}
	for key, v := range data {
		if v == nil {
			delete(upd.Data, key)
		} else {
			upd.Data[key] = v
		}
	}
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	for key, v := range annotations {
		if v == "" {
			delete(upd.Annotations, key)
		} else {
			upd.Annotations[key] = v
		}
	}
	return k.update(ctx, upd, what)
}

func (k *Keeper) caLifetime() time.Duration {
	if k.CALifetime == 0 {
		return pki.CALifetime
	}
	return k.CALifetime
}

func (k *Keeper) caOverlap() time.Duration {
	if k.CAOverlap == 0 {
		return DefaultCAOverlap
	}
	return k.CAOverlap
}
