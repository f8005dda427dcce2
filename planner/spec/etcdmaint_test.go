package spec

import (
	"strings"
	"testing"
)

func TestEtcdMaintenanceFields(t *testing.T) {
	doc := func(lines ...string) string {
		return "apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata: {name: e}\nspec:\n  size: 3\n  version: \"3.5.21\"\n" +
			"  " + strings.Join(lines, "\n  ") + "\n"
	}
	for _, tc := range []struct {
		name, doc string
		err       string // a substring; "" for valid
		check     func(t *testing.T, s EtcdSpec)
	}{
		{name: "defaults", doc: doc("storage: 8Gi"), check: func(t *testing.T, s EtcdSpec) {
			if s.Compaction != nil || s.SpaceQuota != "" {
				t.Errorf("defaults written into the spec: %+v %q", s.Compaction, s.SpaceQuota)
			}
			if p := s.CompactionPolicy(); p.Mode != "periodic" || p.Retention != "1h" || s.QuotaBytes() != 2<<30 {
				t.Errorf("policy %+v, quota %d", p, s.QuotaBytes())
			}
		}},
		{name: "revision mode", doc: doc("compaction: {mode: revision, retention: 10000}"), check: func(t *testing.T, s EtcdSpec) {
			if n, err := s.Compaction.Retention.Revisions(); n != 10000 || err != nil {
				t.Errorf("revisions %d, %v", n, err)
			}
		}},
		{name: "quota", doc: doc("storage: 8Gi", "spaceQuota: 4Gi"), check: func(t *testing.T, s EtcdSpec) {
			if s.QuotaBytes() != 4<<30 {
				t.Errorf("quota %d", s.QuotaBytes())
			}
		}},
		{name: "a small quota for tests", doc: doc("storage: 1Gi", "spaceQuota: 4Mi")},
		{name: "unknown mode", doc: doc("compaction: {mode: hourly, retention: 1h}"), err: "spec.compaction.mode: must be periodic or revision"},
		{name: "periodic with a count", doc: doc("compaction: {mode: periodic, retention: 1000}"), err: "in periodic mode it must be a duration"},
		{name: "periodic too short", doc: doc("compaction: {mode: periodic, retention: 30s}"), err: "must be at least 1m0s"},
		{name: "revision with a duration", doc: doc("compaction: {mode: revision, retention: 1h}"), err: "in revision mode it must be a number of revisions"},
		{name: "revision too many", doc: doc("compaction: {mode: revision, retention: \"9999999999\"}"), err: "1 to 1000000000"},
		{name: "retention missing", doc: doc("compaction: {mode: periodic}"), err: "missing required field \"retention\""},
		{name: "quota too small", doc: doc("spaceQuota: 100Ki"), err: "must be at least 1Mi"},
		{name: "quota above 10Gi", doc: doc("storage: 100Gi", "spaceQuota: 11Gi"), err: "must be at most 10Gi"},
		{name: "quota above half the volume", doc: doc("storage: 4Gi", "spaceQuota: 3Gi"), err: "needs storage of at least twice as much"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := Decode("e.yaml", []byte(tc.doc))
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			}
			if tc.check != nil && err == nil {
				tc.check(t, cs[0].(*EtcdCluster).Spec)
			}
		})
	}
}
