package spec

import (
	"strings"
	"testing"
)

func TestDecodeSwitchover(t *testing.T) {
	req := func(to, id string) string {
		return pg("  switchover:", "    to: "+to, "    id: "+id)
	}
	runDecodeCases(t, []decodeCase{
		{name: "a replica", in: req("db-1", "before-node-maintenance"), check: func(t *testing.T, cs []Cluster) {
			s := cs[0].(*PostgresCluster).Spec.Switchover
			if s == nil || s.To != "db-1" || s.ID != "before-node-maintenance" {
				t.Errorf("switchover = %+v", s)
			}
		}},
		{name: "the last member", in: req("db-2", "x"), check: wantClusters(1)},
		{name: "member 0", in: req("db-0", `"2026-12-07"`), check: wantClusters(1)},
		{name: "beyond instances", in: req("db-3", "a"),
			want: `f.yaml:10:9: spec.switchover.to: db-3 is beyond spec.instances (3): the members are db-0 to db-2`},
		{name: "another cluster's member", in: req("other-1", "a"),
			want: `f.yaml:10:9: spec.switchover.to: "other-1" is not a member of db: members are named db-0, db-1, ...`},
		{name: "an ordinal alone", in: req(`"1"`, "a"),
			want: `f.yaml:10:9: spec.switchover.to: "1" is not a member of db: members are named db-0, db-1, ...`},
		{name: "a leading zero", in: req("db-01", "a"),
			want: `f.yaml:10:9: spec.switchover.to: "db-01" is not a member of db: members are named db-0, db-1, ...`},
		{name: "id with capitals", in: req("db-1", "Maint"),
			want: `f.yaml:11:9: spec.switchover.id: must be 1 to 40 lowercase letters, digits and -, starting and ending with a letter or digit, got "Maint"`},
		{name: "id with a slash", in: req("db-1", "a/b"),
			want: `f.yaml:11:9: spec.switchover.id: must be 1 to 40 lowercase letters, digits and -, starting and ending with a letter or digit, got "a/b"`},
		{name: "id too long", in: req("db-1", "a234567890123456789012345678901234567890x"),
			want: `f.yaml:11:9: spec.switchover.id: must be 1 to 40 lowercase letters, digits and -, starting and ending with a letter or digit, got "a234567890123456789012345678901234567890"...`},
		{name: "id starting with -", in: req("db-1", `"-a"`),
			want: `f.yaml:11:9: spec.switchover.id: must be 1 to 40 lowercase letters, digits and -, starting and ending with a letter or digit, got "-a"`},
		{name: "id ending with -", in: req("db-1", "a-"),
			want: `f.yaml:11:9: spec.switchover.id: must be 1 to 40 lowercase letters, digits and -, starting and ending with a letter or digit, got "a-"`},
		{name: "id of 40", in: req("db-1", strings.Repeat("a", 40)), check: wantClusters(1)},
		{name: "no id", in: pg("  switchover:", "    to: db-1"),
			want: `f.yaml:10:5: spec.switchover: missing required field "id"`},
		{name: "no target", in: pg("  switchover:", "    id: a"),
			want: `f.yaml:10:5: spec.switchover: missing required field "to"`},
		{name: "unknown field", in: pg("  switchover:", "    to: db-1", "    id: a", "    from: db-0"),
			want: `f.yaml:12:5: spec.switchover.from: unknown field "from"; valid fields: id, to`},
		{name: "etcd has none", in: etcd("  switchover: {to: etcd-1, id: a}"),
			want: `f.yaml:8:3: spec.switchover: unknown field "switchover"; valid fields: backup, compaction, maintenanceWindow, resources, restoreFrom, size, spaceQuota, storage, storageClass, tls, version`},
	})
}
