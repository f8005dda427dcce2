package pki

import (
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"time"
)

// Want is what a leaf must be.
type Want struct {
	DNSNames   []string // a server certificate's names, compared as a set
	IPs        []net.IP // a server certificate's addresses, compared as a set
	CommonName string   // a client certificate's CN ("" for a server)
	Client     bool
	// Peer: a server certificate that its holder also presents as a
	// client (etcd members reach each other with it), so it carries both
	// server and client authentication. Client must be false.
	Peer bool
}

// Reasons Due gives, for a log line and an Event.
const (
	reasonMissing     = "missing"
	reasonNotCert     = "not a certificate"
	reasonNotKey      = "not a private key"
	reasonKeyMismatch = "key does not match the certificate"
	reasonNotYetValid = "not yet valid"
	reasonExpired     = "expired"
	reasonCAInvalid   = "the cluster's CA is not valid"
	reasonNotServer   = "not a server certificate"
	reasonNotClient   = "not a client certificate"
	reasonUsage       = "usage differs"
	reasonNotSigned   = "not signed by the cluster's CA"
	reasonNames       = "names differ"
	reasonCommonName  = "common name differs"
	reasonAged        = "past two thirds of its lifetime"
)

// Due reports whether the leaf in certPEM/keyPEM must be issued again at
// now, and why, as a short lower-case phrase for a log line and an Event.
// It is due when either PEM is empty or unreadable; the key does not match
// the certificate; the certificate is not valid at now, or does not verify
// with ca's certificate as the only root and the usage want asks for
// (server or client authentication, and that alone); its DNS names (as a
// set) or, for a client or when want names one, its CommonName differ from
// want's; or now is past NotBefore + 2/3*(NotAfter-NotBefore). Otherwise
// it returns false, "". ca must not be nil.
func Due(certPEM, keyPEM []byte, ca *CA, want Want, now time.Time) (bool, string) {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return true, reasonMissing
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return true, reasonNotCert
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return true, reasonNotKey
	}
	if !keyMatches(cert, key) {
		return true, reasonKeyMismatch
	}
	if reason := validity(cert, ca, now); reason != "" {
		return true, reason
	}
	if reason := usageDiffers(cert, want); reason != "" {
		return true, reason
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	opts := x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{extUsages(want)[0]},
	}
	if _, err := cert.Verify(opts); err != nil {
		return true, reasonNotSigned
	}
	if !sameNames(cert.DNSNames, want.DNSNames) || !sameIPs(cert.IPAddresses, want.IPs) {
		return true, reasonNames
	}
	if (want.Client || want.CommonName != "") && cert.Subject.CommonName != want.CommonName {
		return true, reasonCommonName
	}
	if now.After(renewAt(cert.NotBefore, cert.NotAfter)) {
		return true, reasonAged
	}
	return false, ""
}

// validity says why the leaf or its CA is not valid at now, or "".
func validity(cert *x509.Certificate, ca *CA, now time.Time) string {
	switch {
	case now.Before(cert.NotBefore):
		return reasonNotYetValid
	case now.After(cert.NotAfter):
		return reasonExpired
	case now.Before(ca.Cert.NotBefore) || now.After(ca.Cert.NotAfter):
		return reasonCAInvalid
	}
	return ""
}

// usageDiffers says why cert's extended key usage is not exactly what
// want asks for (server authentication; client authentication for a
// client; both for a peer), or "".
func usageDiffers(cert *x509.Certificate, want Want) string {
	usages := extUsages(want)
	for _, u := range usages {
		if !slices.Contains(cert.ExtKeyUsage, u) {
			if u == x509.ExtKeyUsageClientAuth {
				return reasonNotClient
			}
			return reasonNotServer
		}
	}
	if len(cert.UnknownExtKeyUsage) > 0 || slices.ContainsFunc(cert.ExtKeyUsage, func(u x509.ExtKeyUsage) bool { return !slices.Contains(usages, u) }) {
		return reasonUsage
	}
	return ""
}

// extUsages are the extended key usages of the leaf want describes, the
// one it is verified for first.
func extUsages(want Want) []x509.ExtKeyUsage {
	switch {
	case want.Client:
		return []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	case want.Peer:
		return []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	return []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
}

// Due reports whether ca is past two thirds of its lifetime, when the
// runtime starts replacing it (certs.Keeper).
func (ca *CA) Due(now time.Time) bool {
	return now.After(renewAt(ca.Cert.NotBefore, ca.Cert.NotAfter))
}

// renewAt is when a certificate valid from notBefore to notAfter is due:
// two thirds of the way through.
func renewAt(notBefore, notAfter time.Time) time.Time {
	return notBefore.Add(notAfter.Sub(notBefore) / 3 * 2)
}

// sameNames reports whether a and b hold the same DNS names, in any order
// and case, repeats ignored.
func sameNames(a, b []string) bool {
	return slices.Equal(nameSet(a), nameSet(b))
}

func nameSet(names []string) []string {
	set := make([]string, 0, len(names))
	for _, n := range names {
		set = append(set, strings.ToLower(n))
	}
	slices.Sort(set)
	return slices.Compact(set)
}

// sameIPs reports whether a and b hold the same addresses, in any order,
// repeats ignored.
func sameIPs(a, b []net.IP) bool {
	return slices.Equal(ipSet(a), ipSet(b))
}

func ipSet(ips []net.IP) []string {
	set := make([]string, 0, len(ips))
	for _, ip := range ips {
		set = append(set, ip.String())
	}
	slices.Sort(set)
	return slices.Compact(set)
}
