package strictyaml

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/cairn-dev/cairn/testbed/alloc"
)

// values lists where each value of a tree is written (nodes other than
// mapping keys, aliases not followed), in the order they are written.
func values(n *yaml.Node, value bool, at *[]Pos) {
	if value {
		*at = append(*at, Pos{n.Line, n.Column})
	}
	for i, c := range n.Content {
		values(c, n.Kind != yaml.MappingNode || i%2 == 1, at)
	}
}

var unlimited = Limits{MaxBytes: math.MaxInt, MaxDocuments: 100, MaxNodes: math.MaxInt, MaxDepth: 32, MaxFileValues: math.MaxInt}

// checkCount is the property Parse's count rests on: it refuses exactly
// the files whose documents hold too many values, at the first value past
// the limit, and the trees of a file it accepts hold at most
// 2*MaxFileValues nodes.
func checkCount(t *testing.T, data []byte) {
	t.Helper()
	docs, errs := Parse("f", data, unlimited)
	if errs != nil {
		if msg := errs.Error(); strings.Contains(msg, "the document holds") || strings.Contains(msg, "the documents of this file hold") {
			t.Fatalf("refused without limits: %v", errs)
		}
		return
	}
	var perDoc [][]Pos
	var all []Pos
	for _, d := range docs {
		var at []Pos
		values(d.Root, true, &at)
		perDoc = append(perDoc, at)
		all = append(all, at...)
	}
	for _, max := range []int{1, 5, 100} {
		lim := unlimited
		lim.MaxNodes = max
		_, errs := Parse("f", data, lim)
		want := ""
		if i := slices.IndexFunc(perDoc, func(at []Pos) bool { return len(at) > max }); i >= 0 {
			p := perDoc[i][max]
			want = fmt.Sprintf("f:%d:%d: the document holds more than %d values", p.Line, p.Col, max)
		}
		if errText(errs) != want {
			t.Fatalf("MaxNodes %d: got %q, want %q", max, errText(errs), want)
		}
		lim = unlimited
		lim.MaxFileValues = max
		docs, errs := Parse("f", data, lim)
		want = ""
		if len(all) > max {
			p := all[max]
			want = fmt.Sprintf("f:%d:%d: the documents of this file hold more than %d values together; split them into more files", p.Line, p.Col, max)
		}
		if errText(errs) != want {
			t.Fatalf("MaxFileValues %d: got %q, want %q", max, errText(errs), want)
		}
		nodes := 0
		for _, d := range docs {
			nodesOf(d.Root, &nodes)
		}
		if nodes > 2*max {
			t.Fatalf("MaxFileValues %d: accepted %d nodes", max, nodes)
		}
	}
}

func nodesOf(n *yaml.Node, nodes *int) {
	*nodes++
	for _, c := range n.Content {
		nodesOf(c, nodes)
	}
}

func errText(l ErrorList) string {
	if l == nil {
		return ""
	}
	return l.Error()
}

// countSeeds are shapes meant to trip the count: keys that are lists,
// empty values, aliases, many documents, comments.
var countSeeds = []string{
	"", "~", "---\n---\n...\n", "a: 1\n---\n- b\n", "# only a comment\n", "--- # c\na: 1 # d\n# e\nb: 2\n# f\n",
	"[a, a, a]", "[:, :]", "[a: b, c]", "{a, b: , : c}", "- - - a\n  - b\n- \n-\n",
	"? [a, b]\n: c\n? d\n", "[? a : b]", "{? : }", "<<: {a: 1}\n'<<': 2\n", "a: !!binary AAAA\nb: !x y\nc: ! 1\n",
	"a: &x [1, 2]\nb: *x\nc: {*x : 1}\n", "&a a: *a\n", "- &a\n- *a\n", "[!!str , ! a, &b ]", "a: &a 1\n---\nb: *a\n",
	"a: |\n  - x\n  - y\nb: >-\n  z\n", "a:\n- b\n- c\nd: e\n", "a: 1\n b: 2\n", "a: [1, 2\n", "a:\n  b: 1\n  # tail\nc: 2\n",
	"%YAML 1.1\n---\na: 1\n", "%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n", "a: 'x\n\n  y'\nb: \"\\t\"\n", "a: *nope\n",
	"a: 1\nb: [\n", "--- |\n  x\n--- >\n  y\n", "a: 1\n\tb: 2\n", "c: d: e\n", "- a\nb: 1\n", "a: 0x1F\nb: 1e3\nc: yes\nd: null\ne: 2001-12-14\n",
	"--- &n\n--- [*n, *n]\n---\n# c\n--- {a: [1, 2], b: {c: d}}\n", "? {a: [b, c]}\n: [d]\n",
}

func TestCount(t *testing.T) {
	inputs := slices.Clone(countSeeds)
	for _, dir := range []string{"../testdata", "../../live/testdata", "../../../policies/testdata", "../../../examples"} {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				inputs = append(inputs, string(b))
			}
			return nil
		})
	}
	if len(inputs) < len(countSeeds)+20 {
		t.Fatalf("only %d inputs", len(inputs))
	}
	for i, in := range inputs {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkCount(t, []byte(in)) })
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range countSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkCount(t, data) })
}

// TestRefusedPastTheLimits: a file past the limits is refused at the
// first value, or document, past them. yaml.v3 builds a document's whole
// tree before its values are counted, so MaxBytes, checked first, is what
// bounds the cost of parsing one: yaml.v3 allocates about 125 bytes per
// byte of the densest input. Documents are parsed one at a time, so a
// file of too many is refused at the first past the limit, for the cost
// of those before.
func TestRefusedPastTheLimits(t *testing.T) {
	lim := DefaultLimits
	for _, c := range []struct {
		name     string
		in       string
		want     string
		maxAlloc uint64
	}{
		{"1 MiB of [a,a,...]", "[" + strings.Repeat("a,", 1<<19-2) + "a]",
			"f:1:40000: the document holds more than 20000 values", 160 * uint64(lim.MaxBytes)},
		{"1 MiB of empty documents", strings.Repeat("---\n", 1<<18),
			"f:101:1: more than 100 documents in one file", 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			var errs ErrorList
			data := []byte(c.in)
			if len(data) > lim.MaxBytes {
				t.Fatalf("%d bytes", len(data))
			}
			used := alloc.Bytes(func() { _, errs = Parse("f", data, lim) })
			if errs.Err() == nil || errs.Error() != c.want {
				t.Fatalf("got %v, want %q", errs.Err(), c.want)
			}
			if used > c.maxAlloc {
				t.Errorf("allocated %d bytes; the bound is %d", used, c.maxAlloc)
			}
			t.Logf("allocated %d KiB", used>>10)
		})
	}
}
