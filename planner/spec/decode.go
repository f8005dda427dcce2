package spec

import (
	"fmt"

	yaml "go.yaml.in/yaml/v3"

	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// Error is one problem at one place of one file; its text is
// "file:line:col: field.path: message".
type Error = strictyaml.Error

// ErrorList is every problem found, in file and position order.
type ErrorList = strictyaml.ErrorList

// Limits bound the size and shape of an accepted file.
var Limits = strictyaml.DefaultLimits

// maxFileErrors is how many problems of one file are worth reading; past
// it, Decode stops at the next document.
const maxFileErrors = 100

// Decode decodes, defaults and validates every document of one file. It
// returns the clusters that are valid and an ErrorList naming every problem
// of the others; a file with errors should not be used at all.
func Decode(file string, data []byte) ([]Cluster, error) { return builtin.Decode(file, data) }

// Decode decodes, defaults and validates every document of one file, of
// the kinds s serves (see the function Decode).
func (s Served) Decode(file string, data []byte) ([]Cluster, error) {
	docs, errs := strictyaml.Parse(file, data, Limits)
	var out []Cluster
	for _, doc := range docs {
		if len(errs) >= maxFileErrors {
			errs = append(errs, &Error{File: file, Line: doc.Root.Line, Col: doc.Root.Column,
				Msg: fmt.Sprintf("more than %d problems in this file; stopping here", maxFileErrors)})
			break
		}
		c, derrs := s.decodeDoc(doc)
		errs = append(errs, derrs...)
		if len(derrs) == 0 {
			out = append(out, c)
		}
	}
	return out, errs.Err()
}

func (s Served) decodeDoc(doc strictyaml.Document) (Cluster, ErrorList) {
	at := func(n *yaml.Node, path, format string, args ...any) ErrorList {
		return ErrorList{{File: doc.File, Line: n.Line, Col: n.Column, Path: path, Msg: fmt.Sprintf(format, args...)}}
	}
	root := doc.Root
	if root.Kind != yaml.MappingNode {
		return nil, at(root, "", "a cluster document must be a mapping with apiVersion, kind, metadata and spec")
	}
	kindNode, apiNode := field(root, "kind"), field(root, "apiVersion")
	if kindNode == nil {
		return nil, at(root, "kind", "missing; valid kinds: %s", s.validKinds())
	}
	k, ok := s.kinds[kindNode.Value]
	if !ok || kindNode.Kind != yaml.ScalarNode {
		return nil, at(kindNode, "kind", "unknown kind %s; valid kinds: %s", strictyaml.Quote(kindNode.Value), s.validKinds())
	}
	if apiNode == nil {
		return nil, at(root, "apiVersion", "missing; %s is served as %q", kindNode.Value, k.APIVersion)
	}
	if apiNode.Kind != yaml.ScalarNode || apiNode.Value != k.APIVersion {
		return nil, at(apiNode, "apiVersion", "%s is served as %q, got %s", kindNode.Value, k.APIVersion, strictyaml.Quote(apiNode.Value))
	}
	c := k.New()
	pos, errs := strictyaml.Decode(doc, c, Limits)
	if len(errs) > 0 {
		return nil, errs
	}
	*c.Source() = Source{File: doc.File, Doc: doc.Index, pos: pos}
	c.SetDefaults()
	if errs := validate(c); len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// field returns the value node of key in a mapping, or nil. An alias is
// resolved once, as the decoder would.
func field(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Kind == yaml.ScalarNode && m.Content[i].Value == key {
			n := m.Content[i+1]
			if n.Kind == yaml.AliasNode && n.Alias != nil {
				n = n.Alias
			}
			return n
		}
	}
	return nil
}
