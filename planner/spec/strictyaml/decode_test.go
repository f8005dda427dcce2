package strictyaml

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

type upper string

func (u *upper) UnmarshalScalar(s Scalar) error {
	if s.Value != strings.ToUpper(s.Value) {
		return fmt.Errorf("must be upper case, got %s (tag %s)", Quote(s.Value), s.Tag)
	}
	*u = upper(s.Value)
	return nil
}

type inner struct {
	N int  `json:"n"`
	B bool `json:"b,omitempty"`
}

type doc struct {
	Name   string            `json:"name"`
	Count  int               `json:"count,omitempty"`
	Big    int64             `json:"big,omitempty"`
	On     bool              `json:"on,omitempty"`
	Code   upper             `json:"code,omitempty"`
	Inner  *inner            `json:"inner,omitempty"`
	Items  []inner           `json:"items,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Hidden string            `json:"-"`
	skip   string
}

// tree nests without end, to reach the depth limit.
type tree struct {
	Kids []tree `json:"kids"`
}

func decode(t *testing.T, src string, v any, lim Limits) (Positions, string) {
	t.Helper()
	docs, perrs := Parse("t.yaml", []byte(src), lim)
	if len(perrs) > 0 {
		return nil, perrs.Error()
	}
	if len(docs) != 1 {
		t.Fatalf("%d documents", len(docs))
	}
	pos, errs := Decode(docs[0], v, lim)
	if err := errs.Err(); err != nil {
		return pos, err.Error()
	}
	return pos, ""
}

func TestDecodePositions(t *testing.T) {
	src := `name: x
inner:
  n: 3
items:
  - n: 1
  - {n: 2, b: true}
labels:
  plain_key-1: a
  app.kubernetes.io/name: b
  "": c
code: ~
`
	var d doc
	pos, err := decode(t, src, &d, DefaultLimits)
	if err != "" {
		t.Fatal(err)
	}
	want := Positions{
		"": {1, 1}, "name": {1, 7}, "inner": {3, 3}, "inner.n": {3, 6},
		"items": {5, 3}, "items[0]": {5, 5}, "items[0].n": {5, 8},
		"items[1]": {6, 5}, "items[1].n": {6, 9}, "items[1].b": {6, 15},
		"labels": {8, 3}, "labels.plain_key-1": {8, 16}, `labels["app.kubernetes.io/name"]`: {9, 27}, `labels[""]`: {10, 7},
		"code": {11, 7},
	}
	if !reflect.DeepEqual(pos, want) {
		t.Errorf("positions:\ngot  %v\nwant %v", pos, want)
	}
	wantDoc := doc{Name: "x", Inner: &inner{N: 3}, Items: []inner{{N: 1}, {N: 2, B: true}},
		Labels: map[string]string{"plain_key-1": "a", "app.kubernetes.io/name": "b", "": "c"}}
	if !reflect.DeepEqual(d, wantDoc) {
		t.Errorf("decoded %+v, want %+v", d, wantDoc)
	}
}

func TestLookup(t *testing.T) {
	p := Positions{"": {1, 1}, "spec": {2, 3}, "spec.backup": {3, 5}, `spec.labels["a.b"]`: {4, 7}, "items[0]": {5, 3}}
	cases := map[string]Pos{
		"spec.backup":                    {3, 5},
		"spec.backup.schedule":           {3, 5},
		"spec.backup.retention.count":    {3, 5},
		"spec.version":                   {2, 3},
		"spec":                           {2, 3},
		"metadata.name":                  {1, 1},
		"":                               {1, 1},
		`spec.labels["a.b"]`:             {4, 7},
		`spec.labels["c"]`:               {2, 3},
		"items[0].n":                     {5, 3},
		"items[1].n":                     {1, 1},
		`spec.labels["a.b"].x`:           {4, 7},
		"spec.postgresql.parameters.x.y": {2, 3},
	}
	for path, want := range cases {
		if got := p.Lookup(path); got != want {
			t.Errorf("Lookup(%q) = %v, want %v", path, got, want)
		}
	}
	if got := (Positions{}).Lookup("a.b"); got != (Pos{}) {
		t.Errorf("empty Lookup = %v", got)
	}
}

func TestMapPath(t *testing.T) {
	cases := []struct{ path, key, want string }{
		{"labels", "app", "labels.app"},
		{"labels", "a_b-C9", "labels.a_b-C9"},
		{"labels", "a.b", `labels["a.b"]`},
		{"labels", "", `labels[""]`},
		{"labels", `q"uote`, `labels["q\"uote"]`},
		{"labels", "é", `labels["é"]`},
		{"", "top", "top"},
	}
	for _, c := range cases {
		if got := MapPath(c.path, c.key); got != c.want {
			t.Errorf("MapPath(%q, %q) = %q, want %q", c.path, c.key, got, c.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"merge key", "base: &b {n: 1}\ninner:\n  <<: *b\n",
			"t.yaml:1:1: base: unknown field \"base\" (did you mean \"name\"?); valid fields: big, code, count, inner, items, labels, name, on\n" +
				"t.yaml:3:3: inner: merge keys (<<) are not supported; write the fields out"},
		{"int key", "name: x\n1: y\n", `t.yaml:2:1: keys must be strings, got the number "1"`},
		{"bool key", "true: y\n", `t.yaml:1:1: keys must be strings, got the boolean "true"`},
		{"null key", "~: y\n", `t.yaml:1:1: keys must be strings, got null`},
		{"list key", "? [a]\n: y\n", `t.yaml:1:3: keys must be plain strings, got a list`},
		{"alias key at its use", "name: &k count\n*k : 3\n", ""},
		{"duplicate alias key", "name: &k x\nlabels: {x: a, *k : b}\n", `t.yaml:2:16: labels.x: duplicate key "x" (first at line 2)`},
		{"duplicate key", "name: a\nname: b\n", `t.yaml:2:1: name: duplicate key "name" (first at line 1)`},
		{"did you mean", "nmae: x\n", `t.yaml:1:1: nmae: unknown field "nmae" (did you mean "name"?); valid fields: big, code, count, inner, items, labels, name, on`},
		{"far from every field", "zzzzzz: x\n", `t.yaml:1:1: zzzzzz: unknown field "zzzzzz"; valid fields: big, code, count, inner, items, labels, name, on`},
		{"json:- field", "Hidden: x\n", `t.yaml:1:1: Hidden: unknown field "Hidden"; valid fields: big, code, count, inner, items, labels, name, on`},
		{"unexported field", "skip: x\n", `t.yaml:1:1: skip: unknown field "skip"; valid fields: big, code, count, inner, items, labels, name, on`},
		{"max int32", "count: 2147483647\n", ""},
		{"min int32", "count: -2147483648\n", ""},
		{"over int32", "count: 2147483648\n", `t.yaml:1:8: count: "2147483648" is out of range`},
		{"over int64", "big: 9223372036854775808\n", `t.yaml:1:6: big: "9223372036854775808" is out of range`},
		{"int64 above int32", "big: 2147483648\n", ""},
		{"max int64", "big: 9223372036854775807\n", ""},
		{"min int64", "big: -9223372036854775808\n", ""},
		{"under int32 in an int", "count: -2147483649\n", `t.yaml:1:8: count: "-2147483649" is out of range`},
		{"hex", "count: 0x10\n", ""},
		{"float for int", "count: 1.0\n", `t.yaml:1:8: count: must be a whole number, got the number "1.0"`},
		{"exponent for int", "count: 1e3\n", `t.yaml:1:8: count: must be a whole number, got the number "1e3"`},
		{"string for int", "count: '3'\n", `t.yaml:1:8: count: must be a whole number, got the string "3"`},
		{"bool", "on: true\n", ""},
		{"yes is a string", "on: yes\n", `t.yaml:1:5: on: must be true or false, got the string "yes"`},
		{"int for bool", "on: 1\n", `t.yaml:1:5: on: must be true or false, got the number "1"`},
		{"float for string", "name: 1.10\n", `t.yaml:1:7: name: must be a string, got the number "1.10"; quote it to keep it as written: "1.10" (unquoted, 14.10 would be read as the number 14.1)`},
		{"timestamp for string", "name: 2024-01-02\n", `t.yaml:1:7: name: must be a string, got the timestamp "2024-01-02"; quote it to keep it as written: "2024-01-02"`},
		{"list for string", "name: [a]\n", `t.yaml:1:7: name: must be a string, got a list`},
		{"mapping for list", "items: {n: 1}\n", `t.yaml:1:8: items: must be a list, got a mapping`},
		{"scalar for struct", "inner: 3\n", `t.yaml:1:8: inner: must be a mapping of fields, got the number "3"`},
		{"scalar for map", "labels: a=b\n", `t.yaml:1:9: labels: must be a mapping, got the string "a=b"`},
		{"custom scalar", "code: abc\n", `t.yaml:1:7: code: must be upper case, got "abc" (tag !!str)`},
		{"custom scalar, int", "code: 12\n", ""},
		{"custom scalar, mapping", "code: {a: b}\n", `t.yaml:1:7: code: must be a single value, got a mapping`},
		{"error in a list", "items:\n  - n: 1\n  - n: x\n", `t.yaml:3:8: items[1].n: must be a whole number, got the string "x"`},
		{"error in a quoted map key", "labels: {a.b: [1]}\n", `t.yaml:1:15: labels["a.b"]: must be a string, got a list`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d doc
			if _, got := decode(t, c.src, &d, DefaultLimits); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestDecodeNullLeavesUnset(t *testing.T) {
	var d doc
	pos, err := decode(t, "name: ~\ninner:\ncount: null\nitems: []\n", &d, DefaultLimits)
	if err != "" {
		t.Fatal(err)
	}
	if d.Name != "" || d.Inner != nil || d.Count != 0 || d.Items == nil || len(d.Items) != 0 {
		t.Errorf("decoded %+v", d)
	}
	for _, p := range []string{"name", "inner", "count", "items"} {
		if _, ok := pos[p]; !ok {
			t.Errorf("position of %s not recorded", p)
		}
	}
}

func TestDecodeAliases(t *testing.T) {
	t.Run("within budget", func(t *testing.T) {
		src := "name: &n x\ninner: &i {n: 7}\nitems: [*i, *i, {n: 1}]\nlabels: {a: *n, b: *n}\n"
		var d doc
		pos, err := decode(t, src, &d, DefaultLimits)
		if err != "" {
			t.Fatal(err)
		}
		want := doc{Name: "x", Inner: &inner{N: 7}, Items: []inner{{N: 7}, {N: 7}, {N: 1}}, Labels: map[string]string{"a": "x", "b": "x"}}
		if !reflect.DeepEqual(d, want) {
			t.Errorf("decoded %+v", d)
		}
		// An aliased value is positioned where its anchor defines it.
		if pos["items[1].n"] != (Pos{2, 15}) || pos["labels.b"] != (Pos{1, 7}) {
			t.Errorf("positions %v", pos)
		}
	})
	t.Run("over the node budget", func(t *testing.T) {
		src := "a: &a {n: 1}\nb: &b [*a, *a, *a, *a]\nitems: [*a, *a, *a, *a, *a, *a, *a, *a]\n"
		var d struct {
			A     inner   `json:"a"`
			B     []inner `json:"b"`
			Items []inner `json:"items"`
		}
		lim := DefaultLimits
		lim.MaxNodes = 20
		_, err := decode(t, src, &d, lim)
		if want := `t.yaml:1:11: items[3].n: document expands to more than 20 values (too large, or too many aliases)`; err != want {
			t.Errorf("got  %q\nwant %q", err, want)
		}
	})
	t.Run("over the depth limit", func(t *testing.T) {
		var d tree
		_, err := decode(t, "kids: &k [{kids: *k}]\n", &d, DefaultLimits)
		if !strings.HasSuffix(err, "nested more than 32 levels deep") || strings.Count(err, "\n") != 0 {
			t.Errorf("got %q", err)
		}
	})
	t.Run("branching self-reference", func(t *testing.T) {
		var d tree
		_, err := decode(t, "kids: &k ["+strings.Repeat("{kids: *k}, ", 9)+"{kids: *k}]\n", &d, DefaultLimits)
		// Depth first: the first branch reaches the depth limit, and the
		// decoder stops there with one error.
		if !strings.HasSuffix(err, "nested more than 32 levels deep") || strings.Count(err, "\n") != 0 {
			t.Errorf("got %q", err)
		}
	})
	t.Run("deep without aliases", func(t *testing.T) {
		var d tree
		src := strings.Repeat("{kids: [", 20) + strings.Repeat("]}", 20) + "\n"
		_, err := decode(t, src, &d, DefaultLimits)
		if want := "t.yaml:1:136: kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids[0].kids: nested more than 32 levels deep"; err != want {
			t.Errorf("got  %q\nwant %q", err, want)
		}
	})
}

func TestDecodeStopsAfterManyErrors(t *testing.T) {
	var b strings.Builder
	for i := range 150 {
		fmt.Fprintf(&b, "x%d: 1\n", i)
	}
	var d doc
	docs, _ := Parse("t.yaml", []byte(b.String()), DefaultLimits)
	_, errs := Decode(docs[0], &d, DefaultLimits)
	if len(errs) != maxErrors+1 {
		t.Fatalf("%d errors", len(errs))
	}
	if last := errs[len(errs)-1].Error(); last != `t.yaml:101:1: x100: more than 100 problems in this document; stopping here` {
		t.Errorf("last error %q", last)
	}
}

func TestDecodeNeedsPointer(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a non-pointer")
		}
	}()
	docs, _ := Parse("t.yaml", []byte("a: 1\n"), DefaultLimits)
	Decode(docs[0], doc{}, DefaultLimits)
}

func TestParse(t *testing.T) {
	small := Limits{MaxBytes: 64, MaxDocuments: 2, MaxNodes: 10, MaxDepth: 4, MaxFileValues: 12}
	cases := []struct {
		name, src string
		lim       Limits
		docs      []int // indexes of the documents returned
		want      string
	}{
		{name: "empty", src: "", lim: DefaultLimits},
		{name: "separators and comments", src: "---\n# c\n---\n...\n", lim: DefaultLimits},
		{name: "empty documents keep their index", src: "---\n---\na: 1\n---\n~\n---\nb: 2\n", lim: DefaultLimits, docs: []int{1, 3}},
		{name: "too many documents", src: "a: 1\n---\nb: 1\n---\nc: 1\n", lim: small, want: "t.yaml:4:1: more than 2 documents in one file"},
		{name: "values in a document", src: "[1,2,3,4,5,6,7,8,9,10]", lim: small, want: "t.yaml:1:20: the document holds more than 10 values"},
		{name: "values in a file", src: "[1,2,3,4,5,6,7]\n---\n[1,2,3,4,5,6,7]\n", lim: small, want: "t.yaml:3:8: the documents of this file hold more than 12 values together; split them into more files"},
		{name: "keys are not values", src: "{a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9}", lim: small, docs: []int{0}},
		{name: "too large", src: strings.Repeat("#", 65), lim: small, want: "t.yaml: file is 65 bytes; the limit is 64"},
		{name: "NUL", src: "a: 1\nb: \x00\n", lim: DefaultLimits, want: "t.yaml:2:4: file contains a NUL byte; specs must be text"},
		{name: "control character", src: "a: 1\n  b: \x1b[31m\n", lim: DefaultLimits, want: "t.yaml:2:6: file contains the control character U+001B; specs must be text"},
		{name: "C1 control character", src: "a: \u0080\n", lim: DefaultLimits, want: "t.yaml:1:4: file contains the control character U+0080; specs must be text"},
		{name: "invalid UTF-8", src: "a: é\nb: \xc3\n", lim: DefaultLimits, want: "t.yaml:2:4: file is not valid UTF-8"},
		{name: "tabs, CR and NEL are text", src: "a: \"x\ty\"\r\nb: \u0085\n", lim: DefaultLimits, docs: []int{0}},
		{name: "byte order mark", src: "\ufeffa: 1\n", lim: DefaultLimits, docs: []int{0}},
		// The YAML library counts parser (not scanner) lines from 0, leaves
		// out line 1 and points past the last line at the end of the
		// stream; Parse corrects all three.
		{name: "parser error at the end", src: "a: 1\nb: [\n", lim: DefaultLimits, want: "t.yaml:2:1: invalid YAML: did not find expected node content"},
		{name: "parser error at the end, no newline", src: "a: [", lim: DefaultLimits, want: "t.yaml:1:1: invalid YAML: did not find expected node content"},
		{name: "parser error", src: "a: 1\nb: 2\n- x\nc: 3\n", lim: DefaultLimits, want: "t.yaml:3:1: invalid YAML: did not find expected key"},
		{name: "parser error in a flow", src: "a: 1\nb: {x: 1\nc: 2\n", lim: DefaultLimits, want: "t.yaml:2:1: invalid YAML: did not find expected ',' or '}'"},
		{name: "parser error on line 2", src: "- x\ny: 1\n", lim: DefaultLimits, want: "t.yaml:2:1: invalid YAML: did not find expected '-' indicator"},
		{name: "scanner error", src: "a: 1\nb: 2\nc: d: e\n", lim: DefaultLimits, want: "t.yaml:3:1: invalid YAML: mapping values are not allowed in this context"},
		{name: "scanner error on line 1", src: "c: d: e\n", lim: DefaultLimits, want: "t.yaml:1:1: invalid YAML: mapping values are not allowed in this context"},
		{name: "tab", src: "a: 1\n\tb: 1\n", lim: DefaultLimits, want: "t.yaml:2:1: invalid YAML: found a tab character that violates indentation"},
		{name: "unknown anchor", src: "a: *x\n", lim: DefaultLimits, want: "t.yaml: invalid YAML: unknown anchor 'x' referenced"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			docs, errs := Parse("t.yaml", []byte(c.src), c.lim)
			got := ""
			if err := errs.Err(); err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
			var idx []int
			for _, d := range docs {
				idx = append(idx, d.Index)
				if d.File != "t.yaml" || d.Root == nil {
					t.Errorf("document %+v", d)
				}
			}
			if !reflect.DeepEqual(idx, c.docs) {
				t.Errorf("documents %v, want %v", idx, c.docs)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	var none ErrorList
	if none.Err() != nil {
		t.Error("empty list is an error")
	}
	l := ErrorList{
		{File: "b.yaml", Line: 1, Col: 1, Msg: "m"},
		{File: "a.yaml", Line: 2, Col: 0, Path: "x", Msg: "no column"},
		{File: "a.yaml", Msg: "whole file"},
		{File: "a.yaml", Line: 2, Col: 0, Path: "a", Msg: "same place"},
	}
	err := l.Err()
	want := "a.yaml: whole file\na.yaml:2:1: a: same place\na.yaml:2:1: x: no column\nb.yaml:1:1: m"
	if err.Error() != want {
		t.Errorf("got  %q\nwant %q", err, want)
	}
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 4 {
		t.Error("Err does not return the ErrorList")
	}
	if q := Quote(strings.Repeat("é", 50)); q != `"`+strings.Repeat("é", 40)+`"...` {
		t.Errorf("Quote cut %q", q)
	}
	if q := Quote("a\nb\x1b"); q != `"a\nb\x1b"` {
		t.Errorf("Quote escaped %q", q)
	}
}

func TestLevenshtein(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"version", "verison", 2},
		{strings.Repeat("a", 65), "a", 1 << 10},
	}
	for _, c := range cases {
		if got := levenshtein(c.a, c.b); got != c.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
