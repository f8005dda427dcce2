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
	if _, err := ReadSignKey(filepath.Join(t.TempDir(), "none"), ""); err == nil {
		t.Error("a missing key file is an error")
	}
}
