package postgres

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseSyncNames(t *testing.T) {
	cases := []struct {
		in      string
		want    syncQuorum
		wantErr string
	}{
		{in: "", want: syncQuorum{}},
		{in: "   ", want: syncQuorum{}},
		{in: `FIRST 1 ("pg-1", "pg-2")`, want: syncQuorum{K: 1, Names: []string{"pg-1", "pg-2"}}},
		{in: `first 2 (a, B, "C")`, want: syncQuorum{K: 2, Names: []string{"a", "b", "C"}}},
		{in: `ANY 2 (a,b,c)`, want: syncQuorum{K: 2, Names: []string{"a", "b", "c"}}},
		{in: `2 (a, b)`, want: syncQuorum{K: 2, Names: []string{"a", "b"}}},
		{in: `a, b`, want: syncQuorum{K: 1, Names: []string{"a", "b"}}},
		{in: `s1`, want: syncQuorum{K: 1, Names: []string{"s1"}}},
		{in: `"first"`, want: syncQuorum{K: 1, Names: []string{"first"}}},
		{in: `"a""b"`, want: syncQuorum{K: 1, Names: []string{`a"b`}}},
		{in: `ANY 1 (*)`, want: syncQuorum{K: 1, Any: true}},
		{in: `*`, want: syncQuorum{K: 1, Any: true}},
		{in: `FIRST 1 (a, *)`, want: syncQuorum{K: 1, Names: []string{"a"}, Any: true}},
		{in: `FIRST 0 (a)`, wantErr: "not a number"},
		{in: `FIRST x (a)`, wantErr: "not a number"},
		{in: `FIRST 1 a`, wantErr: `"(" expected`},
		{in: `FIRST 1 (a`, wantErr: `")" expected`},
		{in: `"a`, wantErr: "unterminated"},
		{in: `a b`, wantErr: "unexpected"},
		{in: `a, `, wantErr: "ends where a name"},
		{in: `a;b`, wantErr: "unexpected"},
	}
	for _, c := range cases {
		got, err := parseSyncNames(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: got %+v, %v; want error %q", c.in, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

// What cairn sets, it reads back as set.
func TestParseSyncNamesReadsSyncSetting(t *testing.T) {
	ms := []pgMember{{Name: "a"}, {Name: "d", NoPromote: true}, {Name: "c"}, {Name: "b"}}
	for n := 1; n <= 3; n++ {
		q, err := parseSyncNames(syncSetting(ms, "a", n))
		if err != nil || q.K != n || q.Any || !reflect.DeepEqual(q.Names, []string{"b", "c", "d"}) {
			t.Fatalf("n=%d: %+v, %v", n, q, err)
		}
	}
}
