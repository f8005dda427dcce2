package plan

import (
	"strings"
	"testing"
)

func TestAutoMerge(t *testing.T) {
	merge := Decision{Policy: "prod/auto-merge", Verdict: Allow, AutoMerge: true}
	tests := []struct {
		name       string
		kind       Kind
		reversible bool
		decisions  []Decision
		want       bool
		why        string
	}{
		{"no policy asks", EtcdAddMember, true, []Decision{{Policy: "w", Verdict: Allow}}, false, ""},
		{"a policy asks", EtcdAddMember, true, []Decision{merge}, true, "policy prod/auto-merge"},
		{"irreversible this time", UpgradeMember, false, []Decision{merge}, false, "irreversible"},
		{"irreversible kind", ExpandStorage, true, []Decision{merge}, false, "irreversible"},
		{"held", EtcdAddMember, true, []Decision{{Policy: "w", Verdict: Hold}, merge}, false, "held by w"},
		{"denied", EtcdAddMember, true, []Decision{merge, {Policy: "r", Verdict: Deny}}, false, "denied by r"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Step{Kind: tc.kind, Reversible: tc.reversible, Decisions: tc.decisions}
			got, why := s.AutoMerge()
			if got != tc.want || (tc.why == "" && why != "") || !strings.Contains(why, tc.why) {
				t.Fatalf("AutoMerge() = %v, %q; want %v, %q", got, why, tc.want, tc.why)
			}
		})
	}
}

func TestIrreversibleKinds(t *testing.T) {
	for _, k := range []Kind{ExpandStorage, PostgresMajorUpgrade} {
		if !k.Irreversible() {
			t.Errorf("%s is irreversible", k)
		}
	}
	for _, k := range []Kind{UpgradeMember, EtcdAddMember, ScaleIn, CreateCluster} {
		if k.Irreversible() {
			t.Errorf("%s steps may be reversible", k)
		}
	}
}
