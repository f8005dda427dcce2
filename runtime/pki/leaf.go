package pki

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"time"
)

// Leaf is an issued certificate and its key, PEM.
type Leaf struct {
	CertPEM, KeyPEM     []byte // KeyPEM is PKCS#8 "PRIVATE KEY"
	NotBefore, NotAfter time.Time
}

// IssueServer issues a server certificate (ExtKeyUsageServerAuth,
// KeyUsageDigitalSignature) for dnsNames, which may hold wildcards such as
// "*.c-hl.ns.svc"; its CommonName is dnsNames[0]. It is valid from now-1h
// to now+lifetime, but never past the CA's NotAfter, and has a new ECDSA
// P-256 key.
func (ca *CA) IssueServer(dnsNames []string, now time.Time, lifetime time.Duration) (Leaf, error) {
	if err := checkNames("server", dnsNames); err != nil {
		return Leaf{}, err
	}
	leaf, err := ca.issue(now, lifetime, func(c *x509.Certificate) {
		c.Subject = pkix.Name{CommonName: dnsNames[0]}
		c.DNSNames = append([]string(nil), dnsNames...)
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	if err != nil {
		return Leaf{}, fmt.Errorf("issue server certificate for %s: %w", dnsNames[0], err)
	}
	return leaf, nil
}

// IssuePeer issues a certificate its holder both serves and presents as
// a client (ExtKeyUsageServerAuth and ExtKeyUsageClientAuth), as an etcd
// member does to its peers: for dnsNames (which may hold wildcards) and,
// when a member is reached by address, ips. Its CommonName is
// dnsNames[0]; the validity and the key are as IssueServer's.
func (ca *CA) IssuePeer(dnsNames []string, ips []net.IP, now time.Time, lifetime time.Duration) (Leaf, error) {
	if err := checkNames("peer", dnsNames); err != nil {
		return Leaf{}, err
	}
	leaf, err := ca.issue(now, lifetime, func(c *x509.Certificate) {
		c.Subject = pkix.Name{CommonName: dnsNames[0]}
		c.DNSNames = append([]string(nil), dnsNames...)
		c.IPAddresses = append([]net.IP(nil), ips...)
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	})
	if err != nil {
		return Leaf{}, fmt.Errorf("issue peer certificate for %s: %w", dnsNames[0], err)
	}
	return leaf, nil
}

// IssueClient issues a client certificate (ExtKeyUsageClientAuth,
// KeyUsageDigitalSignature) whose CommonName is commonName: PostgreSQL's
// certificate authentication maps the CN to the user. The validity and
// the key are as IssueServer's.
func (ca *CA) IssueClient(commonName string, now time.Time, lifetime time.Duration) (Leaf, error) {
	if commonName == "" {
		return Leaf{}, errors.New("issue client certificate: empty common name")
	}
	leaf, err := ca.issue(now, lifetime, func(c *x509.Certificate) {
		c.Subject = pkix.Name{CommonName: commonName}
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	if err != nil {
		return Leaf{}, fmt.Errorf("issue client certificate for %s: %w", commonName, err)
	}
	return leaf, nil
}

// issue signs a new leaf; set fills in its subject, names and usage.
func (ca *CA) issue(now time.Time, lifetime time.Duration, set func(*x509.Certificate)) (Leaf, error) {
	if lifetime <= 0 {
		return Leaf{}, fmt.Errorf("lifetime %s is not positive", lifetime)
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	if !notAfter.After(now) {
		return Leaf{}, fmt.Errorf("CA %q expired at %s", ca.Cert.Subject.CommonName, ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	key, err := newKey()
	if err != nil {
		return Leaf{}, err
	}
	tmpl, err := template(now, notAfter, &key.PublicKey)
	if err != nil {
		return Leaf{}, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	set(tmpl)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return Leaf{}, fmt.Errorf("sign: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Leaf{}, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return Leaf{}, err
	}
	return Leaf{
		CertPEM:   encodeCert(der),
		KeyPEM:    keyPEM,
		NotBefore: cert.NotBefore,
		NotAfter:  cert.NotAfter,
	}, nil
}

// checkNames fails unless dnsNames, of a kind ("server", "peer")
// certificate, holds at least one name and no empty one.
func checkNames(kind string, dnsNames []string) error {
	if len(dnsNames) == 0 {
		return fmt.Errorf("issue %s certificate: no DNS names", kind)
	}
	for _, n := range dnsNames {
		if n == "" {
			return fmt.Errorf("issue %s certificate: empty DNS name", kind)
		}
	}
	return nil
}
