package etcd

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// The status the runtime writes is the JSON planner/observe reads: both
// decode the same example.
func TestStatusMatchesObserve(t *testing.T) {
	data, err := os.ReadFile("../../../planner/observe/testdata/etcd-status.json")
	if err != nil {
		t.Fatal(err)
	}
	var st etcdStatus
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(st)
	var a, b map[string]any
	_ = json.Unmarshal(data, &a)
	_ = json.Unmarshal(again, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the runtime's status type loses fields of the shared example:\n%s\n%s", data, again)
	}
}
