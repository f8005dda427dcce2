package live

import (
	"strings"
	"testing"
)

func TestReadExample(t *testing.T) {
	s, err := ReadFile("../../examples/fleet/live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pg := s.Find("PostgresCluster", "my-production-db")
	if pg == nil || len(pg.Members) != 2 || pg.Members[0].Role != RolePrimary || pg.Backup.LastSuccessful.Time().IsZero() {
		t.Fatalf("%+v", pg)
	}
	if s.Find("EtcdCluster", "nope") != nil || (*Snapshot)(nil).Find("EtcdCluster", "x") != nil {
		t.Error("Find of a missing cluster")
	}
}

func TestDecodeErrors(t *testing.T) {
	head := "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n"
	tests := []struct {
		name, doc, want string
	}{
		{"wrong kind", "apiVersion: cairn.dev/v1alpha1\nkind: Other\n", `f.yaml:1:1: apiVersion and kind must be "cairn.dev/v1alpha1" and "LiveState"`},
		{"unknown field", head + "- kind: EtcdCluster\n  name: e\n  sizes: 3\n", `f.yaml:6:3: clusters[0].sizes: unknown field "sizes"`},
		{"unknown cluster kind", head + "- kind: Redis\n  name: r\n", `f.yaml:4:9: clusters[0].kind: unknown kind "Redis"`},
		{"bad member name", head + "- kind: EtcdCluster\n  name: e\n  members:\n  - {name: x-0, role: leader}\n", `f.yaml:7:12: clusters[0].members[0].name: member "x-0" must be named e-<ordinal>`},
		{"role of the other kind", head + "- kind: EtcdCluster\n  name: e\n  members:\n  - {name: e-0, role: primary}\n", `clusters[0].members[0].role: role "primary" is not one of`},
		{"duplicate member", head + "- kind: EtcdCluster\n  name: e\n  members:\n  - {name: e-0, role: leader}\n  - {name: e-0, role: follower}\n", `member e-0 is listed twice`},
		{"duplicate cluster", head + "- {kind: EtcdCluster, name: e}\n- {kind: EtcdCluster, name: e}\n", `cluster EtcdCluster/e is listed twice`},
		{"bad time", head + "- kind: EtcdCluster\n  name: e\n  backup: {lastSuccessful: yesterday}\n", `f.yaml:6:28: clusters[0].backup.lastSuccessful: must be an RFC 3339 time`},
		{"bad quantity", head + "- {kind: EtcdCluster, name: e, storage: lots}\n", `clusters[0].storage: must be a Kubernetes quantity`},
		{"negative replicas", head + "- {kind: EtcdCluster, name: e, statefulSet: {replicas: -1}}\n", `replicas and updatePartition must be 0 to 1000`},
		{"huge replicas", head + "- {kind: EtcdCluster, name: e, statefulSet: {replicas: 20000000}}\n", `replicas and updatePartition must be 0 to 1000`},
		{"upgrade check backwards", head + "- {kind: PostgresCluster, name: p, upgradeCheck: {from: 15, to: 13}}\n", `clusters[0].upgradeCheck: from (15) and to (13) must be PostgreSQL majors`},
		{"upgrade check result", head + "- {kind: PostgresCluster, name: p, upgradeCheck: {from: 13, to: 15, result: maybe}}\n", `clusters[0].upgradeCheck.result: must be passed, failed or empty`},
		{"upgrade check scratch", head + "- {kind: PostgresCluster, name: p, upgradeCheck: {from: 13, to: 15, scratch: lots}}\n", `clusters[0].upgradeCheck.scratch: must be a Kubernetes quantity`},
		{"upgrade check claim without a size", head + "- {kind: PostgresCluster, name: p, upgradeCheck: {from: 13, to: 15, scratchClaim: true}}\n", `clusters[0].upgradeCheck.scratch: must be set when scratchClaim is`},
		{"upgrade check class without a claim", head + "- {kind: PostgresCluster, name: p, upgradeCheck: {from: 13, to: 15, scratch: 1Gi, scratchClass: fast}}\n", `clusters[0].upgradeCheck.scratchClass: is set without scratchClaim`},
		{"upgrade check class name", head + "- {kind: PostgresCluster, name: p, upgradeCheck: {from: 13, to: 15, scratch: 1Gi, scratchClaim: true, scratchClass: Fast/SSD}}\n", `clusters[0].upgradeCheck.scratchClass: must be a StorageClass name`},
		{"two documents", head + "---\n" + head, `exactly one document, found 2`},
		{"not yaml", "a: [", `f.yaml:1:1: invalid YAML`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode("f.yaml", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
}

func TestMembersAreSortedByOrdinal(t *testing.T) {
	doc := "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- kind: EtcdCluster\n  name: e\n  members:\n  - {name: e-10, role: follower}\n  - {name: e-2, role: leader}\n"
	s, err := Decode("f.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if s.Clusters[0].Members[0].Name != "e-2" {
		t.Errorf("%+v", s.Clusters[0].Members)
	}
}

func TestEtcdSpaceIsChecked(t *testing.T) {
	doc := func(extra, member string) string {
		return "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- kind: EtcdCluster\n  name: e\n  storage: 8Gi\n" + extra +
			"  statefulSet: {replicas: 1, version: \"3.7.3\"}\n  members:\n  - {name: e-0, version: \"3.7.3\", ready: true, role: leader" + member + "}\n"
	}
	s, err := Decode("live.yaml", []byte(doc("  compaction: {mode: revision, retention: \"1000\", applied: true}\n  spaceQuota: \"4194304\"\n  alarms: [{member: e-0, alarm: NOSPACE, since: \"2026-11-30T02:00:00Z\"}]\n", ", dbSize: 4000000, dbSizeInUse: 1000000")))
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Clusters[0]; c.Compaction == nil || !c.Compaction.Applied || c.SpaceQuota != "4194304" || len(c.Alarms) != 1 || c.Members[0].DBSizeInUse != 1000000 {
		t.Errorf("decoded %+v", c)
	}
	for _, bad := range []struct{ extra, member, want string }{
		{"  spaceQuota: 4Mi\n", "", "spaceQuota: must be a number of bytes"},
		{"  alarms: [{member: e-0}]\n", "", "alarms[0].alarm"},
		{"", ", dbSize: 10, dbSizeInUse: 20", "dbSizeInUse is at most dbSize"},
	} {
		if _, err := Decode("live.yaml", []byte(doc(bad.extra, bad.member))); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q %q: %v, want %q", bad.extra, bad.member, err, bad.want)
		}
	}
}

func TestPostgresTLSIsChecked(t *testing.T) {
	doc := func(extra string) string {
		return "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n- kind: PostgresCluster\n  name: pg\n  storage: 8Gi\n" + extra +
			"  statefulSet: {replicas: 1, version: \"15.4\"}\n  members:\n  - {name: pg-0, version: \"15.4\", ready: true, role: primary, tls: true}\n"
	}
	s, err := Decode("live.yaml", []byte(doc("  tls: require\n  tlsIssuer: {name: company-ca, kind: ClusterIssuer, group: cert-manager.io}\n")))
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Clusters[0]; c.TLS != "require" || c.TLSIssuer == nil || c.TLSIssuer.Name != "company-ca" || !c.Members[0].TLS {
		t.Errorf("decoded %+v", c)
	}
	for _, bad := range []struct{ extra, want string }{
		{"  tls: sometimes\n", "tls: must be one of off, accept, require"},
		{"  tls: require\n  tlsIssuer: {name: Company_CA, kind: Issuer}\n", "tlsIssuer.name"},
		{"  tls: require\n  tlsIssuer: {name: ca, kind: Certificate}\n", "tlsIssuer.kind: must be Issuer or ClusterIssuer"},
	} {
		if _, err := Decode("live.yaml", []byte(doc(bad.extra))); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.extra, err, bad.want)
		}
	}
}

// The fields that hold bytes of a database or store revisions are 64-bit
// and take numbers past 2^31 (an 8 GiB etcd database, a busy store's
// revision); the counts stay 32-bit.
func TestSixtyFourBitFields(t *testing.T) {
	head := "apiVersion: cairn.dev/v1alpha1\nkind: LiveState\nclusters:\n"
	doc := head + "- kind: EtcdCluster\n  name: e\n" +
		"  quorumLost: {since: '2026-11-30T02:00:00Z', revision: 9000000000}\n" +
		"  backup: {lastRevision: 8589934593}\n" +
		"  members:\n" +
		"  - {name: e-0, role: leader, dbSize: 8589934592, dbSizeInUse: 6442450944, spaceQuota: 9223372036854775807, revision: 4294967296}\n"
	s, err := Decode("f.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Clusters[0]
	m := c.Members[0]
	if m.DBSize != 8<<30 || m.DBSizeInUse != 6<<30 || m.SpaceQuota != 1<<63-1 || m.Revision != 1<<32 || c.QuorumLost.Revision != 9_000_000_000 || c.Backup.LastRevision != 8<<30+1 {
		t.Errorf("decoded %+v, %+v, %+v", m, c.QuorumLost, c.Backup)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"past int64", head + "- {kind: EtcdCluster, name: e, members: [{name: e-0, role: leader, dbSize: 9223372036854775808}]}\n", `dbSize: "9223372036854775808" is out of range`},
		{"a count past int32", head + "- {kind: EtcdCluster, name: e, statefulSet: {replicas: 2147483648}}\n", `replicas: "2147483648" is out of range`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode("f.yaml", []byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
