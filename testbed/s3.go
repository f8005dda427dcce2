package testbed

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// S3 test credentials: the only ones S3Server accepts.
const (
	S3AccessKey = "cairn-test-key"
	S3SecretKey = "cairn-test-secret"
)

// S3Server is a real S3-protocol server on loopback (gofakes3 over
// HTTPS) with one bucket, refusing other access keys. It sets this
// process's S3 environment (endpoint, region, credentials, CA bundle) to
// reach it, as a pod's <cluster>-backup Secret would, and returns the
// bucket's location.
func S3Server(t testing.TB, bucket string) string {
	t.Helper()
	srv := s3Server(t, bucket, nil)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"CAIRN_S3_ENDPOINT": srv.URL, "AWS_REGION": "us-east-1", "AWS_CA_BUNDLE": ca,
		"AWS_ACCESS_KEY_ID": S3AccessKey, "AWS_SECRET_ACCESS_KEY": S3SecretKey,
	} {
		t.Setenv(k, v)
	}
	return "s3://" + bucket + "/backups"
}

// S3Endpoint is an S3Server another host reaches: the bucket's location,
// and the settings a <cluster>-backup Secret carries for the rendered
// pods (its keys are the variables backup.S3ConfigFromEnv reads).
type S3Endpoint struct {
	Location string
	Env      map[string]string
}

// S3ServerAt starts an S3Server listening on ip (a real node's link to
// the machine, kubenode.Cluster.HostIP) with a certificate for that
// address from a CA of its own, whose PEM the settings carry
// (CAIRN_S3_CA). It changes nothing in this process's environment.
func S3ServerAt(t testing.TB, bucket string, ip net.IP) S3Endpoint {
	t.Helper()
	ca, cert := selfSigned(t, ip)
	srv := s3Server(t, bucket, &listenAt{ip: ip, cert: cert})
	return S3Endpoint{Location: "s3://" + bucket + "/backups", Env: map[string]string{
		"CAIRN_S3_ENDPOINT": srv.URL, "AWS_REGION": "us-east-1", "CAIRN_S3_CA": string(ca),
		"AWS_ACCESS_KEY_ID": S3AccessKey, "AWS_SECRET_ACCESS_KEY": S3SecretKey,
	}}
}

// listenAt is where an S3 server listens and the certificate it serves.
type listenAt struct {
	ip   net.IP
	cert tls.Certificate
}

// s3Server starts the server: on loopback with httptest's certificate,
// or as at says. It stops when the test ends.
func s3Server(t testing.TB, bucket string, at *listenAt) *httptest.Server {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	s3 := gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Authorization"), "Credential="+S3AccessKey+"/") {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>`))
			return
		}
		s3.ServeHTTP(w, r)
	}))
	if at != nil {
		l, err := net.Listen("tcp", net.JoinHostPort(at.ip.String(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener.Close()
		srv.Listener = l
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{at.cert}, MinVersion: tls.VersionTLS12}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// selfSigned makes a CA and a server certificate it signs for ip; it
// returns the CA's PEM and the server's key pair.
func selfSigned(t testing.TB, ip net.IP) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cairn test S3 CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip.String()},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{ip},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
