package reconcile

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// GitHub sends a webhook as application/json or, its default, as
// application/x-www-form-urlencoded with the JSON in the payload field;
// the signature is over the body as sent. Both trigger alike; anything
// else is refused and said to be.
func TestWebhookFormats(t *testing.T) {
	push := `{"ref":"refs/heads/main"}`
	form := func(payload string) string { return url.Values{"payload": {payload}}.Encode() }
	for _, tc := range []struct {
		name, contentType, body string
		code                    int
		triggers                bool
	}{
		{"json", "application/json", push, 202, true},
		{"json with a charset", "application/json; charset=utf-8", push, 202, true},
		{"form", "application/x-www-form-urlencoded", form(push), 202, true},
		{"form, push elsewhere", "application/x-www-form-urlencoded", form(`{"ref":"refs/heads/x"}`), 202, false},
		{"form, closed pull request", "application/x-www-form-urlencoded", form(`{"action":"closed"}`), 202, true},
		{"form with other fields first", "application/x-www-form-urlencoded", "a=b&" + form(push), 202, true},
		{"form without a payload", "application/x-www-form-urlencoded", "ref=refs%2Fheads%2Fmain", 400, false},
		{"form, malformed", "application/x-www-form-urlencoded", "payload=%zz", 400, false},
		{"form whose payload is not JSON", "application/x-www-form-urlencoded", form("ref"), 400, false},
		{"json that is not JSON", "application/json", form(push), 400, false},
		{"no content type", "", push, 415, false},
		{"text", "text/plain", push, 415, false},
		{"a malformed content type", "application/json; =", push, 415, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trigger := make(chan struct{}, 1)
			h := &Webhook{Secret: []byte("k"), Base: "main", Trigger: trigger}
			kind := "push"
			if strings.Contains(tc.name, "pull request") {
				kind = "pull_request"
			}
			req := event(kind, tc.body, sign("k", tc.body))
			req.Header.Set("Content-Type", tc.contentType)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code || (len(trigger) == 1) != tc.triggers {
				t.Fatalf("code %d, triggered %v; want %d, %v (%s)", rec.Code, len(trigger) == 1, tc.code, tc.triggers, rec.Body)
			}
			if tc.code == http.StatusUnsupportedMediaType && rec.Body.String() != "Content-Type must be application/json or application/x-www-form-urlencoded\n" {
				t.Errorf("415 says %q", rec.Body)
			}
		})
	}
}
