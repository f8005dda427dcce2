package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/cairn-dev/cairn/testbed/alloc"
)

// yamlParse is Parse as it was before the builder: yaml.v3 builds each
// document's tree, and nothing is counted. The builder must give the same
// documents and the same errors for every input within the limits.
func yamlParse(file string, data []byte, lim Limits) (docs []Document, errs ErrorList) {
	if len(data) > lim.MaxBytes {
		return nil, ErrorList{{File: file, Msg: fmt.Sprintf("file is %d bytes; the limit is %d", len(data), lim.MaxBytes)}}
	}
	if err := checkBytes(file, data); err != nil {
		return nil, ErrorList{err}
	}
	defer func() {
		if r := recover(); r != nil {
			docs = nil
			errs = ErrorList{{File: file, Msg: fmt.Sprintf("cannot parse YAML: %v", r)}}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, ErrorList{syntaxError(file, data, err)}
		}
		if i >= lim.MaxDocuments {
			return nil, ErrorList{{File: file, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf("more than %d documents in one file", lim.MaxDocuments)}}
		}
		root := &n
		if len(root.Content) == 0 {
			continue
		}
		root = root.Content[0]
		if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
			continue
		}
		docs = append(docs, Document{File: file, Index: i, Root: root})
	}
}

// uncommented clears the comments of a tree, which the builder leaves
// out, and counts its values (nodes other than mapping keys).
func uncommented(n *yaml.Node, value bool, values *int) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	if value {
		*values++
	}
	for i, c := range n.Content {
		uncommented(c, n.Kind != yaml.MappingNode || i%2 == 1, values)
	}
}

var unlimited = Limits{MaxBytes: math.MaxInt, MaxDocuments: 100, MaxNodes: math.MaxInt, MaxDepth: 32, MaxFileValues: math.MaxInt}

// checkBuild is the property Parse rests on: without limits on values,
// the builder gives yaml.v3's trees and errors; with them, it refuses
// exactly the files whose trees hold too many values, and the trees of a
// file it accepts hold at most 2*MaxFileValues nodes.
func checkBuild(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := yamlParse("f", data, unlimited)
	got, gotErr := Parse("f", data, unlimited)
	if errText(gotErr) != errText(wantErr) {
		t.Fatalf("error\n%v\nyaml.v3's\n%v", gotErr, wantErr)
	}
	var values []int
	for i := range want {
		v := 0
		uncommented(want[i].Root, true, &v)
		values = append(values, v)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("documents differ from yaml.v3's:\n%s\n---\n%s", dump(got), dump(want))
	}
	if wantErr != nil {
		return
	}
	for _, max := range []int{1, 5, 100} {
		lim := unlimited
		lim.MaxNodes = max
		_, errs := Parse("f", data, lim)
		refused := errs != nil && strings.Contains(errs.Error(), "the document holds more than")
		if over := slices.ContainsFunc(values, func(v int) bool { return v > max }); refused != over {
			t.Fatalf("MaxNodes %d: refused %v, documents hold %v values", max, refused, values)
		}
		lim = unlimited
		lim.MaxFileValues = max
		docs, errs := Parse("f", data, lim)
		refused = errs != nil && strings.Contains(errs.Error(), "the documents of this file hold more than")
		nodes := 0
		for _, d := range docs {
			v := 0
			nodesOf(d.Root, &v)
			nodes += v
		}
		if nodes > 2*max {
			t.Fatalf("MaxFileValues %d: accepted %d nodes", max, nodes)
		}
		total := 0
		for _, v := range values {
			total += v
		}
		if over := total > max; refused != over {
			t.Fatalf("MaxFileValues %d: refused %v, the file holds %d values", max, refused, total)
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

func dump(docs []Document) string {
	var b strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&b, "%d: ", d.Index)
		dumpNode(&b, d.Root)
		b.WriteString("\n")
	}
	return b.String()
}

func dumpNode(b *strings.Builder, n *yaml.Node) {
	fmt.Fprintf(b, "{%d %d:%d %s %q %d &%s %v [", n.Kind, n.Line, n.Column, n.Tag, n.Value, n.Style, n.Anchor, n.Alias != nil)
	for _, c := range n.Content {
		dumpNode(b, c)
	}
	b.WriteString("]}")
}

// buildSeeds are shapes meant to make the builder and yaml.v3 disagree.
var buildSeeds = []string{
	"", "~", "---\n---\n...\n", "a: 1\n---\n- b\n", "# only a comment\n", "--- # c\na: 1 # d\n# e\nb: 2\n# f\n",
	"[a, a, a]", "[:, :]", "[a: b, c]", "{a, b: , : c}", "- - - a\n  - b\n- \n-\n",
	"? [a, b]\n: c\n? d\n", "[? a : b]", "{? : }", "<<: {a: 1}\n'<<': 2\n", "a: !!binary AAAA\nb: !x y\nc: ! 1\n",
	"a: &x [1, 2]\nb: *x\nc: {*x : 1}\n", "&a a: *a\n", "- &a\n- *a\n", "[!!str , ! a, &b ]", "a: &a 1\n---\nb: *a\n",
	"a: |\n  - x\n  - y\nb: >-\n  z\n", "a:\n- b\n- c\nd: e\n", "a: 1\n b: 2\n", "a: [1, 2\n", "a:\n  b: 1\n  # tail\nc: 2\n",
	"%YAML 1.1\n---\na: 1\n", "%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n", "a: 'x\n\n  y'\nb: \"\\t\"\n", "a: *nope\n",
	"a: 1\nb: [\n", "--- |\n  x\n--- >\n  y\n", "a: 1\n\tb: 2\n", "c: d: e\n", "- a\nb: 1\n", "a: 0x1F\nb: 1e3\nc: yes\nd: null\ne: 2001-12-14\n",
}

func TestBuildMatchesYAML(t *testing.T) {
	inputs := slices.Clone(buildSeeds)
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
	if len(inputs) < len(buildSeeds)+20 {
		t.Fatalf("only %d inputs", len(inputs))
	}
	for i, in := range inputs {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkBuild(t, []byte(in)) })
	}
}

func FuzzBuild(f *testing.F) {
	for _, s := range buildSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkBuild(t, data) })
}

// TestRefusedAtTheLimit: a file past the limits is refused where it
// crosses them, for the cost of the values before.
func TestRefusedAtTheLimit(t *testing.T) {
	lim := Limits{MaxBytes: 4 << 20, MaxDocuments: 100, MaxNodes: 1_000_000, MaxDepth: 32, MaxFileValues: 1_000_000}
	for _, c := range []struct {
		name     string
		in       string
		want     string
		maxAlloc uint64
	}{
		{"4 MiB of [a,a,...]", "[" + strings.Repeat("a,", 2<<20-2) + "a]",
			"f:1:2000000: the document holds more than 1000000 values", 320 << 20},
		{"4 MiB of empty documents", strings.Repeat("---\n", 1<<20),
			"f:101:1: more than 100 documents in one file", 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			var errs ErrorList
			data := []byte(c.in)
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
