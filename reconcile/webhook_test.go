package reconcile

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
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
		{"bad signature", "push", `{"ref":"refs/heads/main"}`, sign("other", `{"ref":"refs/heads/main"}`), 401, false},
		{"no signature", "push", `{"ref":"refs/heads/main"}`, "", 401, false},
		{"ping", "ping", `{}`, sign("s3cret", `{}`), 202, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/", bytes.NewBufferString(tc.body))
			req.Header.Set("X-GitHub-Event", tc.event)
			req.Header.Set("X-Hub-Signature-256", tc.sig)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
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

func TestWebhookRefusesWhatItCannotCheck(t *testing.T) {
	body := `{"ref":"refs/heads/main"}`
	for _, tc := range []struct {
		name   string
		h      Webhook
		method string
		body   string
		code   int
	}{
		{"GET", Webhook{Secret: []byte("s")}, http.MethodGet, body, http.StatusMethodNotAllowed},
		{"no secret configured", Webhook{}, http.MethodPost, body, http.StatusUnauthorized},
		{"a body over the bound", Webhook{Secret: []byte("s")}, http.MethodPost, strings.Repeat("x", maxWebhookBody+1), http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trigger := make(chan struct{}, 1)
			tc.h.Trigger = trigger
			req := httptest.NewRequest(tc.method, "/", strings.NewReader(tc.body))
			req.Header.Set("X-GitHub-Event", "push")
			req.Header.Set("X-Hub-Signature-256", sign(string(tc.h.Secret), tc.body))
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, req)
			if rec.Code != tc.code || len(trigger) != 0 {
				t.Fatalf("code %d, %d triggers; want %d and none", rec.Code, len(trigger), tc.code)
			}
		})
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
