package reconcile

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

var deliveries atomic.Int64

// event is a request as GitHub sends it, with a fresh delivery ID.
func event(kind, body, sig string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewBufferString(body))
	req.Header.Set("X-GitHub-Event", kind)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", sig)
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("72d3162e-cc78-11e3-81ab-%012d", deliveries.Add(1)))
	return req
}

func TestWebhook(t *testing.T) {
	trigger := make(chan struct{}, 1)
	h := &Webhook{Secret: []byte("s3cret"), Base: "main", Trigger: trigger}
	tests := []struct {
		name, event, body, sig string
		code                   int
		triggers               bool
	}{
		{"push to the base", "push", `{"ref":"refs/heads/main"}`, sign("s3cret", `{"ref":"refs/heads/main"}`), 202, true},
		{"push elsewhere", "push", `{"ref":"refs/heads/feature"}`, sign("s3cret", `{"ref":"refs/heads/feature"}`), 202, false},
		{"merged pull request", "pull_request", `{"action":"closed"}`, sign("s3cret", `{"action":"closed"}`), 202, true},
		{"a pull request opened", "pull_request", `{"action":"opened"}`, sign("s3cret", `{"action":"opened"}`), 202, true},
		{"a push to a pull request", "pull_request", `{"action":"synchronize"}`, sign("s3cret", `{"action":"synchronize"}`), 202, true},
		{"a pull request labelled", "pull_request", `{"action":"labeled"}`, sign("s3cret", `{"action":"labeled"}`), 202, false},
		{"bad signature", "push", `{"ref":"refs/heads/main"}`, sign("other", `{"ref":"refs/heads/main"}`), 401, false},
		{"no signature", "push", `{"ref":"refs/heads/main"}`, "", 401, false},
		{"ping", "ping", `{}`, sign("s3cret", `{}`), 202, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, event(tc.event, tc.body, tc.sig))
			got := false
			select {
			case <-trigger:
				got = true
			case <-time.After(10 * time.Millisecond):
			}
			if rec.Code != tc.code || got != tc.triggers {
				t.Fatalf("code %d triggered %v, want %d %v", rec.Code, got, tc.code, tc.triggers)
			}
		})
	}
}

// countingReader counts the bytes read of a body.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func TestWebhookRefusesWhatItCannotCheck(t *testing.T) {
	body := `{"ref":"refs/heads/main"}`
	big := strings.Repeat("x", 64<<20)
	for _, tc := range []struct {
		name    string
		secret  string
		method  string
		body    string
		header  func(r *http.Request)
		code    int
		maxRead int64
	}{
		{"GET", "s", http.MethodGet, body, nil, http.StatusMethodNotAllowed, 0},
		{"no secret configured", "", http.MethodPost, body, nil, http.StatusUnauthorized, 0},
		{"a body announced over the bound", "s", http.MethodPost, big, nil, http.StatusRequestEntityTooLarge, 0},
		{"a body over the bound, unannounced", "s", http.MethodPost, big, func(r *http.Request) { r.ContentLength = -1 },
			http.StatusRequestEntityTooLarge, maxWebhookBody + 64<<10},
		{"a malformed signature", "s", http.MethodPost, body, func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", "sha256=zz") }, http.StatusUnauthorized, 0},
		{"a short signature", "s", http.MethodPost, body, func(r *http.Request) { r.Header.Set("X-Hub-Signature-256", "sha256=abcd") }, http.StatusUnauthorized, 0},
		{"no delivery ID", "s", http.MethodPost, body, func(r *http.Request) { r.Header.Del("X-GitHub-Delivery") }, http.StatusBadRequest, 0},
		{"a forged delivery ID", "s", http.MethodPost, body, func(r *http.Request) { r.Header.Set("X-GitHub-Delivery", "a\nb") }, http.StatusBadRequest, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trigger := make(chan struct{}, 1)
			h := &Webhook{Secret: []byte(tc.secret), Base: "main", Trigger: trigger}
			req := event("push", "", sign(tc.secret, tc.body))
			req.Method = tc.method
			counter := &countingReader{r: strings.NewReader(tc.body)}
			req.Body, req.ContentLength = io.NopCloser(counter), int64(len(tc.body))
			if tc.header != nil {
				tc.header(req)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code || len(trigger) != 0 {
				t.Fatalf("code %d, %d triggers; want %d and none", rec.Code, len(trigger), tc.code)
			}
			if n := counter.n.Load(); n > tc.maxRead {
				t.Errorf("read %d bytes of the body; the bound is %d", n, tc.maxRead)
			}
		})
	}
}

func TestWebhookRefusesReplays(t *testing.T) {
	trigger := make(chan struct{}, 10)
	h := &Webhook{Secret: []byte("k"), Base: "main", Trigger: trigger}
	body := `{"ref":"refs/heads/main","after":"1"}`
	first := event("push", body, sign("k", body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, first)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("first delivery: %d", rec.Code)
	}
	same := event("push", body, sign("k", body))
	same.Header.Set("X-GitHub-Delivery", first.Header.Get("X-GitHub-Delivery"))
	newID := event("push", body, sign("k", body))
	other := `{"ref":"refs/heads/main","after":"2"}`
	sameIDOtherBody := event("push", other, sign("k", other))
	sameIDOtherBody.Header.Set("X-GitHub-Delivery", first.Header.Get("X-GitHub-Delivery"))
	for name, req := range map[string]*http.Request{"the same delivery": same, "the same body under a new ID": newID, "the same ID with another body": sameIDOtherBody} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusConflict {
			t.Errorf("%s: %d, want 409", name, rec.Code)
		}
	}
	if len(trigger) != 1 {
		t.Errorf("%d passes triggered, want 1", len(trigger))
	}
	// A bad signature is not remembered: the real delivery still goes through.
	third := `{"ref":"refs/heads/main","after":"3"}`
	forged := event("push", third, sign("wrong", third))
	h.ServeHTTP(httptest.NewRecorder(), forged)
	real := event("push", third, sign("k", third))
	real.Header.Set("X-GitHub-Delivery", forged.Header.Get("X-GitHub-Delivery"))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, real)
	if rec.Code != http.StatusAccepted {
		t.Errorf("a delivery after a forged one with its ID: %d", rec.Code)
	}
}

func TestRecentSetIsBounded(t *testing.T) {
	s := newRecentSet(3)
	for i := range 10 {
		if !s.add(fmt.Sprint(i)) {
			t.Fatalf("%d refused", i)
		}
	}
	if len(s.keys) != 3 || s.add("9") || !s.add("0") {
		t.Errorf("keys %d; the last three are kept, older ones forgotten", len(s.keys))
	}
}

func TestValidSignature(t *testing.T) {
	body := []byte(`{}`)
	for _, tc := range []struct {
		name, header string
		want         bool
	}{
		{"right", sign("k", `{}`), true},
		{"another key", sign("j", `{}`), false},
		{"no prefix", strings.TrimPrefix(sign("k", `{}`), "sha256="), false},
		{"not hex", "sha256=zz", false},
		{"sha1", "sha1=" + strings.TrimPrefix(sign("k", `{}`), "sha256="), false},
	} {
		if got := validSignature([]byte("k"), body, tc.header); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if validSignature(nil, body, sign("", `{}`)) {
		t.Error("an empty secret accepts a signature")
	}
}
