package plan

import (
	"bytes"
	"strings"
	"testing"
)

func samplePlan() Plan {
	return Plan{
		Cluster:             ClusterRef{APIVersion: "etcd.database.coreos.com/v1beta2", Kind: "EtcdCluster", Name: "e"},
		ID:                  "0123456789ab",
		SpecFingerprint:     Fingerprint("spec"),
		ObservedFingerprint: Fingerprint("observed"),
		Status:              StatusPlanned,
		Steps: []Step{{
			ID: "etcd-add-3", Kind: EtcdAddMember, Summary: "Add e-3", Reversible: true, Rollback: "lower size",
			Gates:     []Gate{{Kind: GateMemberVoter, When: After, Member: "e-3", Description: "e-3 votes"}},
			Params:    Params{EtcdAddMember: &EtcdAddMemberParams{Member: "e-3", Ordinal: 3, Replicas: 4, Learner: true}},
			Decisions: []Decision{{Policy: "p", Verdict: Hold, Reason: "later"}, {Policy: "q/auto-merge", Verdict: Allow, AutoMerge: true}},
		}, {
			ID: "upgrade-2-to-3.6.16", Kind: UpgradeMember, Summary: "Upgrade e-2", Disruptive: false, Reversible: false,
			Gates:  []Gate{},
			Params: Params{UpgradeMember: &UpgradeMemberParams{Member: "e-2", Ordinal: 2, From: "3.5.21", To: "3.6.16", Partition: 2, Replicas: 3}},
		}},
		Refusals: []Refusal{},
	}
}

func TestRoundTrip(t *testing.T) {
	l := List{Plans: []Plan{samplePlan()}}
	for name, encode := range map[string]func() ([]byte, error){"json": l.EncodeJSON, "yaml": l.EncodeYAML} {
		t.Run(name, func(t *testing.T) {
			data, err := encode()
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeList(data)
			if err != nil {
				t.Fatalf("decode: %v\n%s", err, data)
			}
			again, _ := back.EncodeJSON()
			orig, _ := l.EncodeJSON()
			if !bytes.Equal(orig, again) {
				t.Fatalf("round trip changed the plan:\n%s\n%s", orig, again)
			}
		})
	}
}

func TestDecodeRefusesBadPlans(t *testing.T) {
	tests := []struct {
		name string
		edit func(p *Plan)
		want string
	}{
		{"params of another kind", func(p *Plan) { p.Steps[0].Kind = ScaleIn }, `kind "ScaleIn" needs exactly its own parameters, got [EtcdAddMember]`},
		{"two parameter structs", func(p *Plan) { p.Steps[0].Params.ScaleIn = &ScaleInParams{} }, "got [ScaleIn, EtcdAddMember]"},
		{"no parameters", func(p *Plan) { p.Steps[0].Params = Params{} }, "got []"},
		{"duplicate id", func(p *Plan) { p.Steps[1].ID = p.Steps[0].ID }, `duplicate step id "etcd-add-3"`},
		{"id unsafe for a branch", func(p *Plan) { p.Steps[0].ID = "../x" }, `invalid step id "../x"`},
		{"upper case id", func(p *Plan) { p.Steps[0].ID = "Add" }, `invalid step id "Add"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := samplePlan()
			tc.edit(&p)
			data, _ := List{Plans: []Plan{p}}.EncodeJSON()
			_, err := DecodeList(data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := DecodeList([]byte(`{"plans":[{"cluster":{},"bogus":1}]}`)); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown field: %v", err)
	}
}

func TestEmptyListsAreArrays(t *testing.T) {
	data, _ := List{Plans: []Plan{{Cluster: ClusterRef{Name: "x"}, Status: StatusConverged}}}.EncodeJSON()
	if !bytes.Contains(data, []byte(`"steps": []`)) || !bytes.Contains(data, []byte(`"refusals": []`)) {
		t.Errorf("%s", data)
	}
	empty, _ := List{}.EncodeJSON()
	if string(empty) != "{\n  \"plans\": []\n}\n" {
		t.Errorf("%q", empty)
	}
}

func TestComputeIDIsStable(t *testing.T) {
	p := samplePlan()
	a := ComputeID(p.Cluster, p.SpecFingerprint, p.Steps)
	if a != ComputeID(p.Cluster, p.SpecFingerprint, p.Steps) || len(a) != 12 {
		t.Fatal(a)
	}
	if a == ComputeID(p.Cluster, p.SpecFingerprint, p.Steps[:1]) {
		t.Error("different steps, same id")
	}
}
