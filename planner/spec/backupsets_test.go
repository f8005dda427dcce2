package spec

import (
	"path/filepath"
	"strings"
	"testing"
)

// backedUp is a PostgreSQL (or etcd) spec named name with the given backup
// location and extra lines under spec.
func backedUp(kind, name, backup string, extra ...string) string {
	head := sub(pgHead, `"db"`, name)
	if kind == EtcdKind {
		head = sub(etcdHead, `"etcd"`, name)
	}
	if backup != "" {
		extra = append([]string{"  backup:", `    schedule: "0 2 * * *"`, "    storageLocation: " + backup}, extra...)
	}
	return head + joinLines(extra)
}

// Every cluster's backup set stays apart from every other's: across the
// repo, a cluster that would back up into the set it restores from, or
// inside another cluster's set or WAL folder, is refused at its
// spec.backup.storageLocation, naming both clusters.
func TestBackupSetsDoNotMix(t *testing.T) {
	restore := func(loc, cluster string) []string {
		lines := []string{"  restoreFrom:", "    storageLocation: " + loc}
		if cluster != "" {
			lines = append(lines, "    cluster: "+cluster)
		}
		return lines
	}
	cases := []struct {
		name  string
		files map[string]string
		want  []string // each error says all of these; none: loads
	}{
		{name: "a copy backs up into the set it restores from (the source named by default)", files: map[string]string{
			"clusters/orders.yaml": backedUp(PostgresKind, "orders", "s3://bkp/pg", restore("s3://bkp/pg", "")...),
		}, want: []string{"orders.yaml:11:22: spec.backup.storageLocation: orders would back up into the set it restores from (s3://bkp/pg, cluster orders)", "the cluster orders it was copied from", "latest may pick the copy's", "retention may delete the other's"}},
		{name: "the same set written another way (trailing slash, named cluster)", files: map[string]string{
			"clusters/orders.yaml": backedUp(PostgresKind, "orders", "s3://bkp/pg/", restore("s3://bkp//pg", "orders")...),
		}, want: []string{"orders would back up into the set it restores from (s3://bkp/pg, cluster orders)"}},
		{name: "etcd too", files: map[string]string{
			"clusters/e.yaml": backedUp(EtcdKind, "e", "file:///var/backups", append(restore("file:///var/backups/", ""), "    backup: 20261130T020000Z-1a2b3c")...),
		}, want: []string{"e would back up into the set it restores from (file:///var/backups, cluster e)"}},
		{name: "a copy of another cluster into the same location keeps its own set", files: map[string]string{
			"clusters/orders.yaml": backedUp(PostgresKind, "orders", "s3://bkp/pg"),
			"clusters/copy.yaml":   backedUp(PostgresKind, "orders-copy", "s3://bkp/pg", restore("s3://bkp/pg", "orders")...),
		}},
		{name: "restored from its own name at another location", files: map[string]string{
			"clusters/orders.yaml": backedUp(PostgresKind, "orders", "s3://bkp/pg-new", restore("s3://bkp/pg", "")...),
		}},
		{name: "a location inside another cluster's set", files: map[string]string{
			"clusters/orders.yaml": backedUp(PostgresKind, "orders", "s3://bkp/pg"),
			"clusters/other.yaml":  backedUp(EtcdKind, "other", "s3://bkp/pg/orders/etcd"),
		}, want: []string{"other.yaml:10:22: spec.backup.storageLocation: other would back up inside the backup set of orders (s3://bkp/pg/orders/)", "orders lists that folder"}},
		{name: "a location that is another cluster's set", files: map[string]string{
			"clusters/orders.yaml": backedUp(PostgresKind, "orders", "s3://bkp/pg"),
			"clusters/other.yaml":  backedUp(PostgresKind, "other", "s3://bkp/pg/orders/"),
		}, want: []string{"other would back up inside the backup set of orders"}},
		{name: "a location inside the WAL folder", files: map[string]string{
			"clusters/orders.yaml": backedUp(PostgresKind, "orders", "file:///b"),
			"clusters/other.yaml":  backedUp(PostgresKind, "other", "file:///b/_wal"),
		}, want: []string{"other would back up inside the archived-WAL folder that orders backs up to (file:///b/_wal/)"}},
		{name: "a name that only starts like another's folder", files: map[string]string{
			"clusters/orders.yaml": backedUp(PostgresKind, "orders", "s3://bkp/pg"),
			"clusters/other.yaml":  backedUp(PostgresKind, "other", "s3://bkp/pg/orders-2"),
		}},
		{name: "many clusters in one location", files: map[string]string{
			"clusters/a.yaml": backedUp(PostgresKind, "a", "s3://bkp/pg"),
			"clusters/b.yaml": backedUp(PostgresKind, "b", "s3://bkp/pg"),
			"clusters/c.yaml": backedUp(EtcdKind, "c", "s3://bkp/pg"),
		}},
		{name: "another bucket", files: map[string]string{
			"clusters/orders.yaml": backedUp(PostgresKind, "orders", "s3://bkp/pg"),
			"clusters/other.yaml":  backedUp(PostgresKind, "other", "s3://bkp2/pg/orders"),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			for name, content := range tc.files {
				writeFile(t, filepath.Join(repo, filepath.FromSlash(name)), content)
			}
			_, err := LoadRepo(repo, Layout{})
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("loaded; want it refused")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != 1 {
				t.Errorf("%d errors, want one:\n%v", n, err)
			}
		})
	}
}

// A restore from a bucket that is not the cluster's own (another s3
// bucket, another file:// folder, any when the cluster has no backup)
// is refused at spec.restoreFrom.storageLocation, saying why and how to
// opt in; with trustForeignBucket: true it loads.
func TestRestoreFromAForeignBucketNeedsTheOptIn(t *testing.T) {
	restore := func(loc string, extra ...string) []string {
		return append([]string{"  restoreFrom:", "    storageLocation: " + loc}, extra...)
	}
	trust := "    trustForeignBucket: true"
	for _, tt := range []struct {
		name, doc string
		want      []string // none: loads
	}{
		{"the cluster's own bucket, another prefix", backedUp(PostgresKind, "copy", "s3://ours/pg", restore("s3://ours/old-pg")...), nil},
		{"the cluster's own file folder", backedUp(PostgresKind, "copy", "file:///var/backups", append(restore("file:///var/backups/"), "    cluster: orders")...), nil},
		{"another bucket", backedUp(PostgresKind, "copy", "s3://ours/pg", restore("s3://theirs/pg")...),
			[]string{"f.yaml:13:22: spec.restoreFrom.storageLocation: \"s3://theirs/pg\" is not the cluster's own bucket (s3://ours)", "whoever can write there", "trustForeignBucket: true"}},
		{"another bucket of the same name on another scheme", backedUp(PostgresKind, "copy", "s3://ours/pg", restore("file:///ours/pg")...),
			[]string{"spec.restoreFrom.storageLocation: \"file:///ours/pg\" is not the cluster's own bucket (s3://ours)"}},
		{"another file folder", backedUp(PostgresKind, "copy", "file:///var/backups", restore("file:///tmp/planted")...),
			[]string{"\"file:///tmp/planted\" is not the cluster's own bucket (file:///var/backups)"}},
		{"no backup of its own", backedUp(PostgresKind, "copy", "", restore("s3://ours/pg")...),
			[]string{"f.yaml:10:22: spec.restoreFrom.storageLocation: \"s3://ours/pg\" is not the cluster's own bucket (the cluster has no spec.backup, so no bucket of its own)"}},
		{"etcd too", backedUp(EtcdKind, "copy", "s3://ours/e", restore("s3://theirs/e", "    backup: 20261130T020000Z-1a2b3c")...),
			[]string{"spec.restoreFrom.storageLocation: \"s3://theirs/e\" is not the cluster's own bucket (s3://ours)"}},
		{"another bucket, trusted", backedUp(PostgresKind, "copy", "s3://ours/pg", restore("s3://theirs/pg", trust)...), nil},
		{"no backup, trusted", backedUp(PostgresKind, "copy", "", restore("s3://ours/pg", trust)...), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("f.yaml", []byte(tt.doc))
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v\n%s", err, tt.doc)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded:\n%s", tt.doc)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q\n%s", err, w, tt.doc)
				}
			}
		})
	}
}
