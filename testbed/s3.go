package testbed

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	s3 := gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Authorization"), "Credential="+S3AccessKey+"/") {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>`))
			return
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
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
