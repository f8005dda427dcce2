package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/testbed/alloc"
)

// hostileCase is an input built to cost time or memory, or to confuse the
// decoder. Every one must be refused with a useful error, quickly and
// without a panic.
type hostileCase struct {
	name string
	in   string
	// want are substrings of the error text, in order.
	want []string
	// maxAlloc bounds the bytes reading it allocates (TestWorstSpecCost).
	maxAlloc uint64
}

// laughs returns anchors a0..a<levels-1> as top-level keys (or, with
// indent, nested), each a list of ten aliases of the one before: expanded,
// the last is 10^levels values.
func laughs(indent string, levels int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sa0: &a0 {x: lol}\n", indent)
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "%sa%d: &a%d [%s]\n", indent, i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 10), ","))
	}
	return b.String()
}

func hostileCases() []hostileCase {
	header := strings.SplitAfter(pgHead, "spec:\n")[0]
	labels := func(body string) string {
		return sub(pgHead, `  name: "db"`, "  name: db\n  labels:\n"+body)
	}
	big := pgHead + "# " + strings.Repeat("x", 2<<20) + "\n"
	deepList := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	deepMap := strings.Repeat("{a: ", 10000) + "1" + strings.Repeat("}", 10000)
	wide := make([]string, Limits.MaxNodes+1)
	for i := range wide {
		wide[i] = fmt.Sprintf("    k%d: v", i)
	}
	manyErrors := make([]string, 150)
	for i := range manyErrors {
		manyErrors[i] = fmt.Sprintf("  unknown%d: x", i)
	}
	return []hostileCase{
		{name: "laughs in labels", in: labels(laughs("    ", 9)),
			want: []string{"f.yaml:6:9: metadata.labels.a0: must be a string, got a mapping", "f.yaml:14:9: metadata.labels.a8: must be a string, got a list"}},
		{name: "laughs in parameters", in: laughs("", 9) + pg("  postgresql:", "    parameters: *a8"),
			// The value is reported where the anchor defines it.
			want: []string{"f.yaml:9:1: a8: unknown field \"a8\"", "f.yaml:9:5: spec.postgresql.parameters: must be a mapping, got a list"}},
		{name: "laughs aliased into labels", in: laughs("", 9) + sub(pgHead, `  name: "db"`, "  name: db\n  labels: *a8"),
			want: []string{"f.yaml:9:5: metadata.labels: must be a mapping, got a list"}},
		{name: "laughs in unknown fields", in: laughs("", 9) + pg("  x: *a8", "  y: {z: *a8}"),
			want: []string{"f.yaml:1:1: a0: unknown field", "f.yaml:18:3: spec.x: unknown field \"x\"", "f.yaml:19:3: spec.y: unknown field \"y\""}},
		// Counted as written, once parsed: each alias is one value.
		{name: "one alias used many times", in: "s: &s lol\n" + labels(strings.Repeat("    k: *s\n", 1)+manyAliasLabels(Limits.MaxNodes)),
			want: []string{"f.yaml:20000:13: the document holds more than 20000 values"}},
		{name: "wide mapping", in: labels(strings.Join(wide, "\n") + "\n"),
			want: []string{"f.yaml:20000:13: the document holds more than 20000 values"}},
		{name: "wide mappings in many documents", in: strings.Repeat("---\n"+labels(strings.Join(wide[:3000], "\n")+"\n"), 7),
			want: []string{"the documents of this file hold more than 20000 values together; split them into more files"}},
		{name: "2 MiB file", in: big,
			want: []string{fmt.Sprintf("f.yaml: file is %d bytes; the limit is %d", len(big), Limits.MaxBytes)}},
		{name: "deep list", in: deepList,
			want: []string{"f.yaml:1:1: a cluster document must be a mapping"}},
		{name: "deep mapping", in: deepMap,
			want: []string{"f.yaml:1:1: kind: missing"}},
		{name: "deep list in spec", in: header + "  postgresql: " + deepList + "\n",
			want: []string{"f.yaml:6:15: spec.postgresql: must be a mapping of fields, got a list"}},
		{name: "deep mapping in spec", in: header + "  postgresql: {parameters: " + deepMap + "}\n",
			want: []string{"f.yaml:6:1: invalid YAML: exceeded max depth of 10000"}},
		{name: "NUL byte", in: sub(pgHead, "instances", "inst\x00ances"),
			want: []string{"f.yaml:7:7: file contains a NUL byte; specs must be text"}},
		{name: "invalid UTF-8", in: sub(pgHead, `"db"`, "\"d\xffb\""),
			want: []string{"f.yaml:4:11: file is not valid UTF-8"}},
		{name: "UTF-16", in: "\xff\xfea\x00:\x00",
			want: []string{"f.yaml:1:1: file is not valid UTF-8"}},
		{name: "200 documents", in: strings.Repeat("---\n"+pgHead, 200),
			want: []string{"f.yaml:901:1: more than 100 documents in one file"}},
		{name: "huge integer", in: sub(pgHead, "instances: 3", "instances: 99999999999999999999999999999999"),
			want: []string{`f.yaml:7:14: spec.instances: "99999999999999999999999999999999" is out of range`}},
		{name: "huge negative integer", in: pg("  synchronousStandbys: -9223372036854775809"),
			want: []string{`f.yaml:9:24: spec.synchronousStandbys: "-9223372036854775809" is out of range`}},
		{name: "long key", in: pg("  " + strings.Repeat("k", 1000) + ": 1"),
			want: []string{`f.yaml:9:3: spec.` + strings.Repeat("k", 1000) + `: unknown field "` + strings.Repeat("k", 40) + `"...; valid fields:`}},
		{name: "key over the YAML limit", in: pg("  " + strings.Repeat("k", 2000) + ": 1"),
			want: []string{"f.yaml:9:1: invalid YAML: could not find expected ':'"}},
		{name: "long value", in: sub(pgHead, `"db"`, strings.Repeat("d", 100000)),
			want: []string{`f.yaml:4:9: metadata.name: "dddddddddddddddddddddddddddddddddddddddd"... is not a valid name`}},
		{name: "newline in a quoted value", in: sub(pgHead, `"db"`, `"db\nf.yaml:1:1: forged"`),
			want: []string{`f.yaml:4:9: metadata.name: "db\nf.yaml:1:1: forged" is not a valid name`}},
		{name: "many problems", in: pg(manyErrors...),
			want: []string{"f.yaml:9:3: spec.unknown0: unknown field", "f.yaml:109:3: spec.unknown100: more than 100 problems in this document; stopping here"}},
		{name: "many bad documents", in: strings.Repeat("---\n"+sub(pgHead, "instances: 3", "instances: x\n  storageClass: 1"), 60),
			want: []string{"f.yaml:8:14: spec.instances:", "more than 100 problems in this file; stopping here"}},
		{name: "self-referencing labels", in: sub(pgHead, "metadata:\n  name: \"db\"", "metadata: &m\n  name: db\n  labels: *m"),
			want: []string{"f.yaml:3:11: metadata.labels.labels: must be a string, got a mapping"}},
		{name: "self-referencing spec", in: sub(pgHead, "spec:", "spec: &s\n  postgresql: *s"),
			want: []string{"spec.postgresql.instances: unknown field"}},
		{name: "self-referencing list", in: "a: &a [*a]\n" + pgHead,
			want: []string{`f.yaml:1:1: a: unknown field "a"`}},
		{name: "undefined alias", in: pg("  storageClass: *nope"),
			want: []string{"invalid YAML: unknown anchor 'nope' referenced"}},
		{name: "custom tag", in: sub(pgHead, "instances: 3", "instances: !!binary AAAA"),
			want: []string{`f.yaml:7:14: spec.instances: must be a whole number, got a value tagged "!!binary"`}},
	}
}

func manyAliasLabels(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "    k%d: *s\n", i)
	}
	return b.String()
}

func TestHostile(t *testing.T) {
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			cs, err := Decode("f.yaml", []byte(c.in))
			if err == nil {
				t.Fatalf("accepted, with %d clusters", len(cs))
			}
			msg := err.Error()
			rest := msg
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error does not say %q (in order):\n%.2000s", w, msg)
				}
				rest = rest[i+len(w):]
			}
			// The report stays readable: bounded, whatever the input.
			if len(msg) > 64<<10 {
				t.Errorf("error is %d bytes", len(msg))
			}
		})
	}
}

// worstSpecs are the 1 MiB files that cost the most to read: the densest
// values, refused by the count once yaml.v3 has built their tree (about
// 125 bytes allocated per byte: MaxBytes is what bounds it); and the most
// values the count lets through, labels decoded one by one, with the
// costliest bytes after them (plain words: yaml.v3 allocates 32 bytes for
// each space between two).
func worstSpecs() []hostileCase {
	dense := "[" + strings.Repeat("a,", Limits.MaxBytes/2-1) + "]"
	var b strings.Builder
	for i := range Limits.MaxFileValues - 11 { // 11 values besides: exactly the limit
		fmt.Fprintf(&b, "    k%d: v\n", i)
	}
	b.WriteString("    words: ")
	passed := sub(pgHead, `  name: "db"`, "  name: db\n  labels:\n"+b.String())
	passed = strings.Replace(passed, "    words: ", "    words: "+strings.Repeat("x ", (Limits.MaxBytes-len(passed)-1)/2), 1)
	return []hostileCase{
		{name: "1 MiB of [a,a,...]", in: dense, want: []string{"f.yaml:1:40000: the document holds more than 20000 values"}, maxAlloc: 160 << 20},
		{name: "the most values the count passes, then words", in: passed,
			want: []string{`f.yaml:19995:12: metadata.labels.words: label value "x x x x x x x x x x x x x x x x x x x x "... is not valid`}, maxAlloc: 48 << 20},
	}
}

// TestWorstSpecCost bounds the bytes allocated to read each of worstSpecs:
// the first costs about 132 MB, the second about 41 MB.
func TestWorstSpecCost(t *testing.T) {
	for _, c := range worstSpecs() {
		t.Run(c.name, func(t *testing.T) {
			if len(c.in) > Limits.MaxBytes {
				t.Fatalf("%d bytes", len(c.in))
			}
			var err error
			used := alloc.Bytes(func() { _, err = Decode("f.yaml", []byte(c.in)) })
			if err == nil || !strings.Contains(err.Error(), c.want[0]) {
				t.Fatalf("error %.300v\nwant %q", err, c.want[0])
			}
			if used > c.maxAlloc {
				t.Errorf("allocated %d bytes; the bound is %d", used, c.maxAlloc)
			}
			t.Logf("allocated %d KiB", used>>10)
		})
	}
}

// BenchmarkWorstSpec measures the time and memory of reading each of
// worstSpecs (go test -run '^$' -bench WorstSpec -benchtime 5x).
func BenchmarkWorstSpec(b *testing.B) {
	for _, c := range worstSpecs() {
		b.Run(c.name, func(b *testing.B) {
			data := []byte(c.in)
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode("f.yaml", data); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
