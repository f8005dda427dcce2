package gitrepo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

func TestSignedCommits(t *testing.T) {
	entity, err := openpgp.NewEntity("cairn", "", "cairn@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Write the key as a person would hand it to cairn, then read it back.
	var priv bytes.Buffer
	w, _ := armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err := entity.SerializePrivate(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	keyFile := filepath.Join(t.TempDir(), "key.asc")
	_ = os.WriteFile(keyFile, priv.Bytes(), 0o600)
	key, err := ReadSignKey(keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	var pub bytes.Buffer
	w, _ = armor.Encode(&pub, openpgp.PublicKeyType, nil)
	_ = entity.Serialize(w)
	w.Close()

	bare := newRemote(t, map[string]string{"clusters/db.yaml": "spec\n"})
	r := clone(t, bare)
	r.SignKey = key
	res, err := r.Publish(context.Background(), "cairn/db/s", change("v1\n"))
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := git.PlainOpen(bare)
	c, err := repo.CommitObject(plumbing.NewHash(res.Commit.String()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Verify(pub.String()); err != nil {
		t.Fatalf("the commit is not signed by the key: %v", err)
	}
	// A signature carries its own time, so the commit hash changes, but a
	// repeated run still pushes nothing: same tree, same base.
	again, err := clone(t, bare).Publish(context.Background(), "cairn/db/s", change("v1\n"))
	if err != nil || again.Pushed {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	// A merge commit of auto-merge is signed too: a step made on an older
	// base is merged with one.
	other, err := r.Publish(context.Background(), "cairn/other/s", stepChange("rendered/other", "o\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Merge(context.Background(), "cairn/db/s", res.Commit.String(), "rendered/db", "merge db", object.Signature{Name: "cairn", Email: "cairn@example.com"}); err != nil {
		t.Fatal(err)
	}
	merged, err := r.Merge(context.Background(), "cairn/other/s", other.Commit.String(), "rendered/other", "merge other", object.Signature{Name: "cairn", Email: "cairn@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := repo.CommitObject(merged); err != nil || m.NumParents() != 2 {
		t.Fatalf("merge commit %v %v", m, err)
	} else if _, err := m.Verify(pub.String()); err != nil {
		t.Fatalf("the merge commit is not signed by the key: %v", err)
	}
	if _, err := ReadSignKey(filepath.Join(t.TempDir(), "none"), ""); err == nil {
		t.Error("a missing key file is an error")
	}
}
