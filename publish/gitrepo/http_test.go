package gitrepo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/gittestserver"
)

// A real git server over HTTP, with the token a GitHub App would use.
func TestPublishOverHTTPWithAToken(t *testing.T) {
	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(srv.Root()) })
	srv.Auth("x-access-token", "t0ken")
	if err := srv.StartHTTP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.StopHTTP)
	fixture := t.TempDir()
	if err := os.MkdirAll(filepath.Join(fixture, "clusters"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fixture, "clusters", "db.yaml"), []byte("spec\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := srv.InitRepo(fixture, "main", "org/gitops.git"); err != nil {
		t.Fatal(err)
	}
	url := srv.HTTPAddress() + "/org/gitops.git"

	_, err = Clone(context.Background(), Remote{URL: url, Auth: TokenAuth("wrong-t0ken")}, filepath.Join(t.TempDir(), "w"))
	if err == nil || strings.Contains(err.Error(), "wrong-t0ken") {
		t.Fatalf("a wrong token: %v", err)
	}

	r, err := Clone(context.Background(), Remote{URL: url, Auth: TokenAuth("t0ken")}, filepath.Join(t.TempDir(), "w"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Publish(context.Background(), "cairn/db/create", change("v1\n"))
	if err != nil || !res.Pushed {
		t.Fatalf("%+v %v", res, err)
	}
	again, err := r.Publish(context.Background(), "cairn/db/create", change("v1\n"))
	if err != nil || again.Pushed {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if got := readBranch(t, filepath.Join(srv.Root(), "org/gitops.git"), "cairn/db/create"); got["rendered/db/kustomization.yaml"] != "v1\n" {
		t.Fatalf("branch: %v", got)
	}
}
