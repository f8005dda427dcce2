package gitbed

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fluxcd/pkg/gittestserver"
)

// Serve starts a real git server over HTTP on loopback
// (github.com/fluxcd/pkg/gittestserver) that admits user with token,
// holding org/gitops.git whose main branch has files. It returns the
// repo's URL and its bare folder, for commits and merges made as a
// person would. The server stops and its folder goes when the test ends.
func Serve(t *testing.T, user, token string, files map[string]string) (url, bare string) {
	t.Helper()
	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(srv.Root()) })
	srv.Auth(user, token)
	if err := srv.StartHTTP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.StopHTTP)
	fixture := t.TempDir()
	WriteFiles(t, fixture, files)
	if err := srv.InitRepo(fixture, "main", "org/gitops.git"); err != nil {
		t.Fatal(err)
	}
	return srv.HTTPAddress() + "/org/gitops.git", filepath.Join(srv.Root(), "org", "gitops.git")
}
