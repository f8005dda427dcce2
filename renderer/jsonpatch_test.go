package renderer

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want []patchOp
	}{
		{"scalar", `{"spec":{"replicas":3}}`, `{"spec":{"replicas":4}}`, []patchOp{{Op: "replace", Path: "/spec/replicas", Value: 4.0}}},
		{"added and removed keys", `{"data":{"a":"1","b":"2"}}`, `{"data":{"b":"2","c":"3"}}`,
			[]patchOp{{Op: "remove", Path: "/data/a"}, {Op: "add", Path: "/data/c", Value: "3"}}},
		{"keys with / and ~", `{"m":{"a/b":"1","c~d":"1"}}`, `{"m":{"a/b":"2","c~d":"2"}}`,
			[]patchOp{{Op: "replace", Path: "/m/a~1b", Value: "2"}, {Op: "replace", Path: "/m/c~0d", Value: "2"}}},
		{"list grows at the end", `{"l":[1,2]}`, `{"l":[1,2,3]}`, []patchOp{{Op: "add", Path: "/l/2", Value: 3.0}}},
		{"list shrinks at the end", `{"l":[1,2,3,4]}`, `{"l":[1,2]}`, []patchOp{{Op: "remove", Path: "/l/3"}, {Op: "remove", Path: "/l/2"}}},
		{"list changed elsewhere is replaced", `{"l":[1,2,3]}`, `{"l":[0,2]}`, []patchOp{{Op: "replace", Path: "/l", Value: []any{0.0, 2.0}}}},
		{"equal", `{"a":[{"b":1}]}`, `{"a":[{"b":1}]}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a, b any
			_ = json.Unmarshal([]byte(tc.a), &a)
			_ = json.Unmarshal([]byte(tc.b), &b)
			if got := diff(a, b); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("diff = %+v, want %+v", got, tc.want)
			}
		})
	}
}
