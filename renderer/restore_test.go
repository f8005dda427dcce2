package renderer

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/planner"
	"github.com/cairn-dev/cairn/planner/spec"
)

// The create step of a spec with restoreFrom tells the members which
// backup to start from; the steps after it do not.
func TestCreateFromBackupConfig(t *testing.T) {
	cs, err := spec.Decode("e.yaml", []byte(`apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata: {name: e}
spec:
  size: 3
  version: "3.7.3"
  restoreFrom: {storageLocation: "s3://backups/etcd", cluster: old, backup: 20261130T020000Z-1a2b3c, trustForeignBucket: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	pl := planner.New(planner.Etcd(), planner.Postgres()).Plan(cs, nil, nil).Plans[0]
	r, err := New(Options{}, Etcd(), Postgres())
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := r.Render(cs[0], pl, "create")
	if err != nil {
		t.Fatal(err)
	}
	create := string(tree["rendered/e/steps/create/cairn-config.yaml"])
	for _, want := range []string{"restore.storage-location: s3://backups/etcd", "restore.cluster: old", "restore.backup: 20261130T020000Z-1a2b3c", "bootstrap: new"} {
		if !strings.Contains(create, want) {
			t.Errorf("create step's config lacks %q:\n%s", want, create)
		}
	}
	sealed, err := Build(tree, "rendered/e/steps/seal-bootstrap")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "restore.") {
		t.Errorf("the step after the create step still asks for a restore:\n%s", sealed)
	}
}
