package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Lifetimes.
const (
	CALifetime   = 10 * 365 * 24 * time.Hour
	LeafLifetime = 90 * 24 * time.Hour
)

// skew is how long before now a certificate's validity starts, for peers
// whose clocks are a little behind: an hour, or a tenth of a shorter
// lifetime (tests issue certificates of seconds to see them renewed).
const skew = time.Hour

// PEM block types.
const (
	blockCert = "CERTIFICATE"
	blockKey  = "PRIVATE KEY"
)

// CA is a cluster's certificate authority.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte // the CA certificate, PEM
	KeyPEM  []byte // its private key, PEM ("PRIVATE KEY", PKCS#8)
}

// NewCA makes a self-signed CA (ECDSA P-256) named commonName, valid from
// now-1h to now+lifetime. It may sign leaves only (MaxPathLen 0).
func NewCA(commonName string, now time.Time, lifetime time.Duration) (*CA, error) {
	if commonName == "" {
		return nil, errors.New("new CA: empty common name")
	}
	if lifetime <= 0 {
		return nil, fmt.Errorf("new CA: lifetime %s is not positive", lifetime)
	}
	key, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("new CA: %w", err)
	}
	tmpl, err := template(now, now.Add(lifetime), &key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("new CA: %w", err)
	}
	tmpl.Subject = pkix.Name{CommonName: commonName}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.MaxPathLen = 0
	tmpl.MaxPathLenZero = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("new CA: sign: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("new CA: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, fmt.Errorf("new CA: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
}

// ParseCA reads a CA back from its PEM pair: the first CERTIFICATE block
// of certPEM, and a private key ("PRIVATE KEY", or the older "EC PRIVATE
// KEY" and "RSA PRIVATE KEY") in keyPEM. The CA's CertPEM and KeyPEM are
// written again from them, as NewCA writes them. It fails when either
// holds no such block, the certificate is not a CA's, or the key is not
// its key.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("parse CA: certificate: %w", err)
	}
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return nil, fmt.Errorf("parse CA: certificate %q is not a CA", cert.Subject.CommonName)
	}
	if cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("parse CA: certificate %q may not sign certificates", cert.Subject.CommonName)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parse CA: key: %w", err)
	}
	if !keyMatches(cert, key) {
		return nil, fmt.Errorf("parse CA: key does not match certificate %q", cert.Subject.CommonName)
	}
	// Written again from what was read: one certificate, a PKCS#8 key.
	normKey, err := encodeKey(key)
	if err != nil {
		return nil, fmt.Errorf("parse CA: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: encodeCert(cert.Raw), KeyPEM: normKey}, nil
}

// newKey makes an ECDSA P-256 key.
func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return key, nil
}

// template is what every certificate shares: a random serial, validity
// from skew (at most a tenth of the lifetime) before now to notAfter, and
// a subject key id.
func template(now, notAfter time.Time, pub *ecdsa.PublicKey) (*x509.Certificate, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	skid, err := subjectKeyID(pub)
	if err != nil {
		return nil, err
	}
	return &x509.Certificate{
		SerialNumber: serial,
		NotBefore:    now.Add(-min(skew, notAfter.Sub(now)/10)),
		NotAfter:     notAfter,
		SubjectKeyId: skid,
	}, nil
}

// newSerial returns a random positive 128-bit serial number.
func newSerial() (*big.Int, error) {
	b := make([]byte, 16)
	for {
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("serial: %w", err)
		}
		if n := new(big.Int).SetBytes(b); n.Sign() > 0 {
			return n, nil
		}
	}
}

// subjectKeyID is the leftmost 160 bits of the SHA-256 of the public key
// (RFC 7093, method 1).
func subjectKeyID(pub *ecdsa.PublicKey) ([]byte, error) {
	point, err := pub.Bytes()
	if err != nil {
		return nil, fmt.Errorf("subject key id: %w", err)
	}
	sum := sha256.Sum256(point)
	return sum[:20], nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: blockCert, Bytes: der})
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: blockKey, Bytes: der}), nil
}

// parseCert reads the first PEM block of b, which must be a certificate.
func parseCert(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if block.Type != blockCert {
		return nil, fmt.Errorf("PEM block is %q, not %q", block.Type, blockCert)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	return cert, nil
}

// parseKey reads the first PEM block of b, which must be a private key.
func parseKey(b []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case blockKey:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block is %q, not %q", block.Type, blockKey)
	}
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T cannot sign", key)
	}
	return signer, nil
}

// keyMatches reports whether key is the private half of cert's public key.
func keyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}
