package backup

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// S3ServerForBench starts the benchmark's S3 server (streamingS3 over
// HTTPS on loopback, objects in memory) with a bucket "backups", and
// returns its URL, its CA certificate, and how long it has spent so far
// completing multipart uploads. (s3Server takes a *testing.T; a
// benchmark has a *testing.B.)
func S3ServerForBench(tb testing.TB) (endpoint string, ca []byte, completing func() time.Duration) {
	tb.Helper()
	s3 := newStreamingS3("backups", testAccessKey)
	var spent atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s3.ServeHTTP(w, r)
		if r.Method == http.MethodPost && r.URL.Query().Has("uploadId") {
			spent.Add(int64(time.Since(start)))
		}
	}))
	tb.Cleanup(srv.Close)
	ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv.URL, ca, func() time.Duration { return time.Duration(spent.Load()) }
}

// S3StoreForBench is the store of bucket "backups" at a server of
// S3ServerForBench, at the default part size and parts in flight.
func S3StoreForBench(tb testing.TB, endpoint string, ca []byte) Store {
	tb.Helper()
	st, err := NewS3Store(Location{Scheme: "s3", Bucket: "backups", Prefix: "bench"}, s3Config(endpoint, ca))
	if err != nil {
		tb.Fatal(err)
	}
	return st
}
