package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-dev/cairn/testbed/promtest"
)

// cairn reconcile's webhook, as wired: a form-encoded push (GitHub's
// default) triggers a pass, a forged one is refused, and both are
// counted in the process's metrics and the refusal logged.
func TestServeWebhookAsWired(t *testing.T) {
	t.Setenv("CAIRN_WEBHOOK_SECRET", "s3cret")
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	trigger := make(chan struct{}, 1)
	stop, addr, err := serveWebhook("127.0.0.1:0", "", "main", trigger, slog.New(slog.NewTextHandler(&logs, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	body := url.Values{"payload": {`{"ref":"refs/heads/main"}`}}.Encode()
	send := func(secret, delivery string) int {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(body))
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", delivery)
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send("forged", "d-1"); code != http.StatusUnauthorized {
		t.Errorf("forged: %d", code)
	}
	if code := send("s3cret", "d-2"); code != http.StatusAccepted || len(trigger) != 1 {
		t.Errorf("signed form push: %d, %d triggers", code, len(trigger))
	}
	stop()
	got := promtest.Series(t, reg)
	if got[`cairn_reconcile_webhook_refused_total{reason="signature"}`] != 1 || got["cairn_reconcile_webhook_deliveries_total{}"] != 1 {
		t.Errorf("metrics %v", got)
	}
	if !strings.Contains(logs.String(), "reason=signature") || strings.Contains(logs.String(), "s3cret") {
		t.Errorf("log %q", logs.String())
	}
	if _, _, err := serveWebhook("256.0.0.1:0", "", "main", trigger, slog.New(slog.DiscardHandler), nil); err == nil || !strings.Contains(err.Error(), "webhook listener") {
		t.Errorf("a bad address: %v", err)
	}
}
