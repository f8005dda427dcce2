package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// Pool reads a PEM bundle of CA certificates (one or more CERTIFICATE
// blocks) into a pool. It fails when the bundle holds no certificate, a
// block is not a certificate, or text outside the blocks is not blank.
func Pool(bundlePEM []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	rest := bundlePEM
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		n++
		if block.Type != blockCert {
			return nil, fmt.Errorf("CA bundle: block %d is %q, not %q", n, block.Type, blockCert)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("CA bundle: block %d: %w", n, err)
		}
		pool.AddCert(cert)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("CA bundle: text after block %d is not PEM", n)
	}
	if n == 0 {
		return nil, errors.New("CA bundle: no certificate")
	}
	return pool, nil
}

// Bundle returns the CA certificates to trust, PEM: ca's certificate, then
// those CA certificates of previous (a PEM bundle, may be nil) that are
// valid at now and are not ca's, so peers keep trusting the leaves of a CA
// being replaced. previous' order is kept; repeats, blocks that are not CA
// certificates and text outside blocks are dropped, so the same inputs
// always give the same bytes.
func Bundle(ca *CA, previous []byte, now time.Time) []byte {
	out := encodeCert(ca.Cert.Raw)
	seen := [][]byte{ca.Cert.Raw}
	rest := previous
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return out
		}
		if block.Type != blockCert {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil || !cert.IsCA || now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
			continue
		}
		if containsRaw(seen, cert.Raw) {
			continue
		}
		seen = append(seen, cert.Raw)
		out = append(out, encodeCert(cert.Raw)...)
	}
}

func containsRaw(seen [][]byte, raw []byte) bool {
	for _, s := range seen {
		if bytes.Equal(s, raw) {
			return true
		}
	}
	return false
}
