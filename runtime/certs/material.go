package certs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/runtime/pki"
)

// ErrNotIssued is in the error of Files' methods when a certificate Secret
// does not exist yet, so a caller can wait for the runtime.
var ErrNotIssued = errors.New("the runtime has not issued the cluster's certificates yet")

// Material is what a client of the cluster's servers needs: the CA bundle
// to verify servers, and the superuser's client certificate.
type Material struct {
	CA                    []byte // PEM bundle
	ClientCert, ClientKey []byte // PEM
	// NotAfter is when the certificate of each of the cluster's
	// certificate Secrets ends, by Secret name (the CA's, the server's,
	// the client's), as Keeper.Ensure leaves them; nil from Files.
	NotAfter map[string]time.Time
}

// materialOf is the Material of a client certificate Secret's data.
func materialOf(data map[string][]byte) Material {
	return Material{CA: data[contract.TLSKeyCA], ClientCert: data[contract.TLSKeyCert], ClientKey: data[contract.TLSKeyKey]}
}

// notAfter is the end of the first certificate in certPEM; false when
// there is none.
func notAfter(certPEM []byte) (time.Time, bool) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return time.Time{}, false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}, false
	}
	return cert.NotAfter, true
}

// ClientConfig is a *tls.Config for reaching a server of the cluster:
// RootCAs from m.CA, the client certificate, ServerName serverName (see
// contract.PostgresServerNameFor), MinVersion TLS 1.2.
func (m Material) ClientConfig(serverName string) (*tls.Config, error) {
	if serverName == "" {
		return nil, errors.New("client TLS config: no server name")
	}
	roots, err := pki.Pool(m.CA)
	if err != nil {
		return nil, fmt.Errorf("client TLS config: %w", err)
	}
	cert, err := tls.X509KeyPair(m.ClientCert, m.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("client TLS config: client certificate: %w", err)
	}
	return &tls.Config{
		RootCAs:      roots,
		Certificates: []tls.Certificate{cert},
		ServerName:   serverName,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// checkLeaf fails unless data, the data of Secret ref, holds a certificate
// (every PEM block of tls.crt a certificate) and its key, and a CA bundle
// pki.Pool reads. The error names the Secret and the key.
func checkLeaf(ref string, data map[string][]byte) error {
	for _, key := range []string{contract.TLSKeyCert, contract.TLSKeyKey, contract.TLSKeyCA} {
		if len(data[key]) == 0 {
			return fmt.Errorf("secret %s: %s is missing or empty", ref, key)
		}
	}
	if err := checkCerts(data[contract.TLSKeyCert]); err != nil {
		return fmt.Errorf("secret %s: %s: %w", ref, contract.TLSKeyCert, err)
	}
	if _, err := tls.X509KeyPair(data[contract.TLSKeyCert], data[contract.TLSKeyKey]); err != nil {
		return fmt.Errorf("secret %s: %s does not go with %s: %w", ref, contract.TLSKeyKey, contract.TLSKeyCert, err)
	}
	if _, err := pki.Pool(data[contract.TLSKeyCA]); err != nil {
		return fmt.Errorf("secret %s: %s: %w", ref, contract.TLSKeyCA, err)
	}
	return nil
}

// checkCerts fails unless b is one or more PEM certificates.
func checkCerts(b []byte) error {
	n := 0
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		n++
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("PEM block %d is %q, not a certificate", n, block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("PEM block %d: %w", n, err)
		}
	}
	if n == 0 {
		return errors.New("no PEM certificate")
	}
	return nil
}
