package contract

import (
	"slices"
	"strings"
	"testing"
)

func TestParseFailsafe(t *testing.T) {
	f := Failsafe{Primary: "pg-1", Timeline: 7, Members: []string{"pg-0", "pg-1", "pg-2"}}
	got, ok, err := ParseFailsafe(f.String())
	if err != nil || !ok || got.Primary != f.Primary || got.Timeline != f.Timeline || !slices.Equal(got.Members, f.Members) {
		t.Fatalf("round trip of %q: %+v, %v, %v", f.String(), got, ok, err)
	}
	if o := got.Others(); !slices.Equal(o, []string{"pg-0", "pg-2"}) {
		t.Fatalf("others %v", o)
	}
	if _, ok, err := ParseFailsafe(""); ok || err != nil {
		t.Fatalf("empty: %v, %v", ok, err)
	}
	for _, c := range []struct{ in, why string }{
		{"pg-1 7", "want"},
		{"pg-1 0 pg-0,pg-1", "timeline"},
		{"pg-1 x pg-0,pg-1", "timeline"},
		{"pg-1 7 pg-1,pg-0", "sorted"},
		{"pg-1 7 pg-0,pg-0,pg-1", "sorted"},
		{"pg-1 7 pg-0,pg-2", "not among"},
		{"pg-1 7 pg-0,PG-1", "DNS label"},
		{"pg-1 7 pg-0,pg-1;drop", "DNS label"},
		{"pg-1 7 pg-0,,pg-1", "member name"},
		{"pg-1  7 pg-0,pg-1", "want"},
	} {
		if _, _, err := ParseFailsafe(c.in); err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%q: got %v, want an error saying %q", c.in, err, c.why)
		}
	}
}
