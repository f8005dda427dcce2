package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// WithSwitchover returns a spec file with spec.switchover of the
// PostgresCluster cluster set to req, every other byte as it was: the
// lines of an earlier spec.switchover are replaced, or new lines are added
// after the last line of spec, indented as spec's own fields are. The
// result is decoded again and must hold the same clusters, but for that
// one field; otherwise WithSwitchover returns an error and the file is
// left for a person to edit. file names the file in errors.
func WithSwitchover(file string, data []byte, cluster string, req Switchover) ([]byte, error) {
	if err := CheckSwitchoverID(req.ID); err != nil {
		return nil, fmt.Errorf("switchover id: %w", err)
	}
	before, err := Decode(file, data)
	if err != nil {
		return nil, err
	}
	target := -1
	for i, c := range before {
		if c.Ref().Name == cluster {
			target = i
		}
	}
	if target < 0 {
		return nil, fmt.Errorf("%s holds no cluster %s", file, cluster)
	}
	pg, ok := before[target].(*PostgresCluster)
	if !ok {
		return nil, fmt.Errorf("%s: %s is of kind %s: only a PostgresCluster takes a switchover (etcd moves leadership on its own, and cairn moves it away from a member it removes)",
			file, cluster, before[target].Ref().Kind)
	}
	docs, errs := strictyaml.Parse(file, data, strictyaml.DefaultLimits)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	var root *yaml.Node
	for _, d := range docs {
		if d.Index == pg.Source().Doc {
			root = d.Root
		}
	}
	if root == nil {
		return nil, fmt.Errorf("%s: document %d not found", file, pg.Source().Doc)
	}
	out, err := editSwitchover(file, data, root, req)
	if err != nil {
		return nil, err
	}
	after, err := Decode(file, out)
	if err != nil {
		return nil, err // the request itself is refused: a member beyond spec.instances
	}
	if err := sameButSwitchover(before, after, target, req); err != nil {
		return nil, fmt.Errorf("%s: cairn could not add spec.switchover without changing something else (%v); add it by hand:\n  switchover:\n    to: %q\n    id: %q", file, err, req.To, req.ID)
	}
	return out, nil
}

// editSwitchover replaces or adds the lines of spec.switchover under the
// document root.
func editSwitchover(file string, data []byte, root *yaml.Node, req Switchover) ([]byte, error) {
	specNode := mapValue(root, "spec")
	specKey := mapKey(root, "spec")
	if specNode == nil || specNode.Kind != yaml.MappingNode || len(specNode.Content) == 0 {
		return nil, fmt.Errorf("%s: spec is not a mapping", file)
	}
	if specNode.Style&yaml.FlowStyle != 0 {
		return nil, fmt.Errorf("%s:%d:%d: spec is written as a flow mapping ({...}); cairn adds spec.switchover only to a block mapping (one field per line): write it by hand, or spec as a block first",
			file, specNode.Line, specNode.Column)
	}
	nl := "\n"
	if bytes.Contains(data, []byte("\r\n")) {
		nl = "\r\n"
	}
	lines := strings.SplitAfter(string(data), "\n")
	indent := strings.Repeat(" ", specNode.Content[0].Column-1)
	step := strings.Repeat(" ", max(specNode.Content[0].Column-specKey.Column, 2))
	block := []string{
		indent + "switchover:" + nl,
		indent + step + "to: " + strconv.Quote(req.To) + nl,
		indent + step + "id: " + strconv.Quote(req.ID) + nl,
	}
	// from and to are 0-based line indexes: lines[from:to] are replaced.
	var from, to int
	if k := mapKey(specNode, "switchover"); k != nil {
		from, to = k.Line-1, lastLine(mapValue(specNode, "switchover"))
	} else {
		from = lastLine(specNode)
		to = from
	}
	if to > len(lines) {
		return nil, fmt.Errorf("%s: spec ends past the end of the file", file)
	}
	if from > 0 && !strings.HasSuffix(lines[from-1], "\n") {
		lines[from-1] += nl // the file's last line had no newline
	}
	edited := append(append(append([]string{}, lines[:from]...), block...), lines[to:]...)
	return []byte(strings.Join(edited, "")), nil
}

// lastLine is the 1-based line of the last value written under n: the
// line index after n's text, as far as its nodes show.
func lastLine(n *yaml.Node) int {
	last := n.Line
	for _, c := range n.Content {
		last = max(last, lastLine(c))
	}
	return last
}

func mapKey(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// sameButSwitchover checks that the edited file holds the clusters it
// held, the one at target with spec.switchover req.
func sameButSwitchover(before, after []Cluster, target int, req Switchover) error {
	if len(after) != len(before) {
		return fmt.Errorf("%d clusters, not %d", len(after), len(before))
	}
	for i := range after {
		a, b := after[i], before[i]
		if i == target {
			pa, pb := *a.(*PostgresCluster), *b.(*PostgresCluster)
			if pa.Spec.Switchover == nil || *pa.Spec.Switchover != req {
				return fmt.Errorf("spec.switchover reads %+v", pa.Spec.Switchover)
			}
			pa.Spec.Switchover, pb.Spec.Switchover = nil, nil
			a, b = &pa, &pb
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			return fmt.Errorf("%s changed", b.Ref().Name)
		}
	}
	return nil
}
