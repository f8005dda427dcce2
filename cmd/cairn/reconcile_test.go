package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"github.com/cairn-dev/cairn/renderer"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/publish"
)

func outcomeOf(t *testing.T, out []publish.Outcome, cluster string) publish.Outcome {
	t.Helper()
	for _, o := range out {
		if o.Cluster == cluster {
			return o
		}
	}
	t.Fatalf("no outcome for %s in %+v", cluster, out)
	return publish.Outcome{}
}

func TestReconcileHoldsUntilTheMergedStepShowsDone(t *testing.T) {
	ctx := context.Background()
	bare := gitopsRepo(t, exampleFiles(t))
	liveFile := filepath.Join(t.TempDir(), "live.yaml")
	base, _ := os.ReadFile("../../examples/fleet/live.yaml")
	setLive := func(s string) { _ = os.WriteFile(liveFile, []byte(s), 0o644) }
	setLive(string(base))
	r, cleanup, err := newReconciler(ctx, remoteOptions{repo: bare, base: "main"}, githubOptions{}, liveSource{file: liveFile}, "clusters", renderer.Options{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	etcdOf := func() publish.Outcome {
		out, err := r.pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return outcomeOf(t, out, "EtcdCluster/my-etcd-cluster")
	}
	if o := etcdOf(); o.Action != publish.ActionOpened || o.Step != "etcd-add-1" {
		t.Fatalf("first pass: %+v", o)
	}
	merge(t, bare, "cairn/my-etcd-cluster/etcd-add-1")
	if o := etcdOf(); o.Action != publish.ActionHeld || !strings.Contains(o.Note, "waiting for merged step etcd-add-1") {
		t.Fatalf("after merge: %+v", o)
	}
	// The pod exists but is not ready: still held, whatever the planner says.
	joined := strings.Replace(string(base), "statefulSet: {replicas: 1,", "statefulSet: {replicas: 2,", 1)
	joined = strings.Replace(joined, "role: leader}\n", "role: leader}\n      - {name: my-etcd-cluster-1, version: \"3.2.13\", ready: false, role: follower}\n", 1)
	setLive(joined)
	if o := etcdOf(); o.Action != publish.ActionHeld || !strings.Contains(o.Note, "my-etcd-cluster-1 is ready") {
		t.Fatalf("member not ready: %+v", o)
	}
	// Ready and voting: the gates pass and the next step's pull request opens.
	setLive(strings.Replace(joined, "ready: false", "ready: true", 1))
	if o := etcdOf(); o.Action != publish.ActionOpened || o.Step != "etcd-add-2" {
		t.Fatalf("after the step showed done: %+v", o)
	}
}

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func TestWebhook(t *testing.T) {
	trigger := make(chan struct{}, 1)
	h := &webhook{secret: []byte("s3cret"), base: "main", trigger: trigger, log: slog.New(slog.DiscardHandler)}
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
