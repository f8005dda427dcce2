package spec

import (
	"strings"
	"testing"
)

func TestWithSwitchover(t *testing.T) {
	req := Switchover{To: "db-2", ID: "maint-1"}
	const commented = `# the payments database
apiVersion: "db.example.com/v1alpha1"
kind: "PostgresCluster"
metadata:
  name: "db"   # do not rename
spec:
    version: "14.5"   # keep quoted
    instances: 3

    storage: "100Gi"
    # backups every night
    backup: {schedule: "0 2 * * *", storageLocation: "s3://bkp/db"}
# end of db
`
	cases := []struct {
		name, in, cluster string
		req               Switchover
		want              string // the whole file; "" when an error is wanted
		err               string // a substring of the error
	}{
		{name: "added after spec's last line, in spec's indentation, comments and blank lines kept", in: commented, cluster: "db", req: req,
			want: strings.Replace(commented, "    backup: {schedule: \"0 2 * * *\", storageLocation: \"s3://bkp/db\"}\n",
				"    backup: {schedule: \"0 2 * * *\", storageLocation: \"s3://bkp/db\"}\n    switchover:\n        to: \"db-2\"\n        id: \"maint-1\"\n", 1)},
		{name: "an earlier block request is replaced", in: pg("  switchover:", "    to: db-1", "    id: old", "  synchronousStandbys: 1"), cluster: "db", req: req,
			want: pg("  switchover:", `    to: "db-2"`, `    id: "maint-1"`, "  synchronousStandbys: 1")},
		{name: "an earlier flow request is replaced", in: pg("  switchover: {to: db-1, id: old}  # last time"), cluster: "db", req: req,
			want: pg("  switchover:", `    to: "db-2"`, `    id: "maint-1"`)},
		{name: "spec before metadata", in: "kind: PostgresCluster\napiVersion: db.example.com/v1alpha1\nspec:\n  version: \"14.5\"\n  instances: 3\n  storage: 1Gi\nmetadata: {name: db}\n",
			cluster: "db", req: req,
			want: "kind: PostgresCluster\napiVersion: db.example.com/v1alpha1\nspec:\n  version: \"14.5\"\n  instances: 3\n  storage: 1Gi\n  switchover:\n    to: \"db-2\"\n    id: \"maint-1\"\nmetadata: {name: db}\n"},
		{name: "the second document of three", in: etcd() + "---\n" + pg() + "---\n" + strings.Replace(pg(), `name: "db"`, `name: "other"`, 1), cluster: "db", req: req,
			want: etcd() + "---\n" + pg(`  switchover:`, `    to: "db-2"`, `    id: "maint-1"`) + "---\n" + strings.Replace(pg(), `name: "db"`, `name: "other"`, 1)},
		{name: "no newline at the end", in: strings.TrimSuffix(pg(), "\n"), cluster: "db", req: req,
			want: pg(`  switchover:`, `    to: "db-2"`, `    id: "maint-1"`)},
		{name: "CRLF line ends", in: strings.ReplaceAll(pg(), "\n", "\r\n"), cluster: "db", req: req,
			want: strings.ReplaceAll(pg(`  switchover:`, `    to: "db-2"`, `    id: "maint-1"`), "\n", "\r\n")},
		{name: "a member beyond instances", in: pg(), cluster: "db", req: Switchover{To: "db-3", ID: "a"},
			err: `f.yaml:10:9: spec.switchover.to: db-3 is beyond spec.instances (3)`},
		{name: "a bad id", in: pg(), cluster: "db", req: Switchover{To: "db-1", ID: "Maint"}, err: `switchover id: must be 1 to 40 lowercase letters`},
		{name: "spec as a flow mapping", in: "apiVersion: db.example.com/v1alpha1\nkind: PostgresCluster\nmetadata: {name: db}\nspec: {version: \"14.5\", instances: 3, storage: 1Gi}\n",
			cluster: "db", req: req, err: "f.yaml:4:7: spec is written as a flow mapping"},
		{name: "an etcd cluster", in: etcd(), cluster: "etcd", req: Switchover{To: "etcd-1", ID: "a"}, err: "etcd is of kind EtcdCluster: only a PostgresCluster takes a switchover"},
		{name: "no such cluster", in: pg(), cluster: "nosuch", req: req, err: "f.yaml holds no cluster nosuch"},
		{name: "an invalid file", in: pg("  verison: 1"), cluster: "db", req: req, err: `unknown field "verison"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := WithSwitchover("f.yaml", []byte(c.in), c.cluster, c.req)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
