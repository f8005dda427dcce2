package certs

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-dev/cairn/planner/contract"
)

// Proof that a CA is the cluster's own. Labels prove nothing: anyone who
// may create a Secret can set them, and another cluster's runtime could
// once create any Secret of the namespace. So the Keeper records the
// SHA-256 fingerprint of every CA certificate it makes, before the CA is
// written, in the cluster's status ConfigMap (contract.StatusConfigMap,
// key contract.StatusKeyCAFingerprints), which only this cluster's
// runtime may write: its Role updates it by name, and the admission
// policy (deploy/admission) lets a runtime create ConfigMaps and Secrets
// of its own cluster's names only. A CA Secret whose certificates (the
// signing one, and the next or previous one of a replacement) are not
// all recorded there is refused, never used to sign, never trusted by
// the leaves; the error says what to record to adopt it by hand.

// keptFingerprints bounds the record while the CA Secret is missing: the
// CAs of creations that lost a race or were cut off before their create.
const keptFingerprints = 4

// errNotProven is in the error of a CA Secret the runtime has no record
// of making.
var errNotProven = errors.New("the runtime has no record of making this CA")

// caRecord is the record as read: the ConfigMap (nil when missing) and
// its fingerprints, oldest first.
type caRecord struct {
	cm  *corev1.ConfigMap
	fps []string
}

// fingerprint is "sha256:<hex>" of the DER of the first certificate in
// certPEM.
func fingerprint(certPEM []byte) (string, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return "", errors.New("no PEM certificate")
	}
	if _, err := x509.ParseCertificate(block.Bytes); err != nil {
		return "", err
	}
	sum := sha256.Sum256(block.Bytes)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// caFingerprints are the fingerprints of the CA certificates CA Secret s
// holds (the signing one, a next and a previous one), by key.
func caFingerprints(s *corev1.Secret) (map[string]string, error) {
	out := map[string]string{}
	for _, key := range []string{contract.TLSKeyCert, caKeyNextCert, caKeyPreviousCert} {
		if len(s.Data[key]) == 0 {
			continue
		}
		fp, err := fingerprint(s.Data[key])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out[key] = fp
	}
	return out, nil
}

// readRecord reads the record; a missing ConfigMap or key is an empty one.
func (k *Keeper) readRecord(ctx context.Context) (caRecord, error) {
	name := contract.StatusConfigMap(k.Cluster)
	cm, err := k.Client.CoreV1().ConfigMaps(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return caRecord{}, nil
	}
	if err != nil {
		return caRecord{}, fmt.Errorf("read configmap %s (the record of the cluster's CAs): %w", k.ref(name), err)
	}
	return caRecord{cm: cm, fps: strings.Fields(cm.Data[contract.StatusKeyCAFingerprints])}, nil
}

// proven fails, with errNotProven, unless every CA certificate of CA
// Secret s is in rec.
func (k *Keeper) proven(rec caRecord, s *corev1.Secret) error {
	fps, err := caFingerprints(s)
	if err != nil {
		return fmt.Errorf("secret %s holds no usable CA and is left as it is: %w", k.ref(s.Name), err)
	}
	for _, key := range []string{contract.TLSKeyCert, caKeyNextCert, caKeyPreviousCert} {
		fp, ok := fps[key]
		if !ok || slices.Contains(rec.fps, fp) {
			continue
		}
		return fmt.Errorf("secret %s is not adopted: its %s (%s) is not in %s of configmap %s, which only this cluster's runtime writes: %w. "+
			"It is left as it is and nothing is signed with it; if a person made or vetted it, add that line to the key to adopt it, else delete the Secret and the runtime makes a new CA",
			k.ref(s.Name), key, fp, contract.StatusKeyCAFingerprints, k.ref(contract.StatusConfigMap(k.Cluster)), errNotProven)
	}
	return nil
}

// record writes fps (oldest first) as the record, under the
// resourceVersion read (a concurrent writer makes a conflict, never a
// lost fingerprint), creating the ConfigMap when rec found none.
func (k *Keeper) record(ctx context.Context, rec caRecord, fps []string) error {
	name := contract.StatusConfigMap(k.Cluster)
	value := strings.Join(fps, "\n") + "\n"
	cms := k.Client.CoreV1().ConfigMaps(k.Namespace)
	if rec.cm == nil {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.Namespace,
			Labels: map[string]string{contract.LabelManagedBy: contract.ManagedByRuntime}},
			Data: map[string]string{contract.StatusKeyCAFingerprints: value}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: contract.FieldManager}); err != nil {
			return fmt.Errorf("record the new CA in configmap %s: %w", k.ref(name), err)
		}
		return nil
	}
	upd := rec.cm.DeepCopy()
	if upd.Data == nil {
		upd.Data = map[string]string{}
	}
	upd.Data[contract.StatusKeyCAFingerprints] = value
	if _, err := cms.Update(ctx, upd, metav1.UpdateOptions{FieldManager: contract.FieldManager}); err != nil {
		return fmt.Errorf("record the new CA in configmap %s: %w", k.ref(name), err)
	}
	return nil
}

// recordNew records the CA certificate newPEM before it is written:
// beside the CAs of s (the CA Secret, proven; nil when missing), or,
// when there is no CA Secret, beside the last few recorded.
func (k *Keeper) recordNew(ctx context.Context, rec caRecord, s *corev1.Secret, newPEM []byte) error {
	fp, err := fingerprint(newPEM)
	if err != nil {
		return fmt.Errorf("fingerprint of the new CA: %w", err)
	}
	var keep []string
	if s == nil {
		keep = rec.fps[max(0, len(rec.fps)-(keptFingerprints-1)):]
	} else {
		fps, err := caFingerprints(s)
		if err != nil {
			return err
		}
		have := slices.Collect(maps.Values(fps))
		for _, f := range rec.fps { // in the record's order
			if slices.Contains(have, f) {
				keep = append(keep, f)
			}
		}
	}
	keep = append(slices.DeleteFunc(slices.Clone(keep), func(f string) bool { return f == fp }), fp)
	return k.record(ctx, rec, keep)
}
