package strictyaml

import (
	"fmt"

	yaml "go.yaml.in/yaml/v3"

	"github.com/cairn-dev/cairn/planner/spec/strictyaml/internal/yamlevents"
)

// builder builds yaml.v3 node trees from a stream's events, node for node
// as yaml.v3's own parser does (comments left out: nothing reads them),
// and counts values as it goes, so that a file holding too many is
// refused where the limit is crossed instead of after its tree is built.
//
// A value is a node other than a mapping key: a scalar, an alias (counted
// once, where it is written), a list or a mapping. Decode visits each one
// at least once in a document it accepts, so a document refused here for
// MaxNodes would be refused by Decode; and since every key comes with a
// value, a file within MaxFileValues holds at most 2*MaxFileValues nodes
// besides its documents. yaml.v3 allocates about 250 bytes per node.
type builder struct {
	file    string
	data    []byte
	lim     Limits
	events  *yamlevents.Parser
	anchors map[string]*yaml.Node // for the whole stream, as yaml.v3 keeps them
	// stack holds the open nodes, from the document down.
	stack     []*yaml.Node
	doc, all  int
	tailAfter *yaml.Node // the mapping whose value just ended
}

func newBuilder(file string, data []byte, lim Limits) *builder {
	return &builder{file: file, data: data, lim: lim, events: yamlevents.NewParser(data), anchors: map[string]*yaml.Node{}}
}

// document returns the next document's DocumentNode, or nil at the end of
// the stream.
func (b *builder) document() (*yaml.Node, *Error) {
	ev, err := b.events.Next()
	switch {
	case err != nil:
		return nil, b.syntax(err)
	case ev.Kind == yamlevents.StreamEnd:
		return nil, nil
	case ev.Kind != yamlevents.DocumentStart:
		return nil, b.internal(ev)
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Line: ev.Line, Column: ev.Col}
	b.stack, b.doc = append(b.stack[:0], doc), 0
	for {
		if ev, err = b.events.Next(); err != nil {
			return nil, b.syntax(err)
		}
		done, e := b.event(ev)
		if e != nil || done {
			return doc, e
		}
	}
}

// event takes one event within a document and reports the document's end.
func (b *builder) event(ev yamlevents.Event) (bool, *Error) {
	tailAfter := b.tailAfter
	b.tailAfter = nil
	switch ev.Kind {
	case yamlevents.DocumentEnd:
		if len(b.stack) != 1 {
			return false, b.internal(ev)
		}
		return true, nil
	case yamlevents.SequenceEnd, yamlevents.MappingEnd:
		if len(b.stack) < 2 {
			return false, b.internal(ev)
		}
		b.stack = b.stack[:len(b.stack)-1]
		b.ended()
		return false, nil
	case yamlevents.TailComment:
		// yaml.v3 takes one right after a mapping's value, and panics at
		// any other.
		if tailAfter == nil || tailAfter != b.stack[len(b.stack)-1] {
			return false, &Error{File: b.file, Msg: "cannot parse YAML: internal error: unexpected tail comment event (please report)"}
		}
		return false, nil
	case yamlevents.Scalar, yamlevents.Alias, yamlevents.SequenceStart, yamlevents.MappingStart:
		return false, b.node(ev)
	}
	return false, b.internal(ev)
}

// node adds the node an event starts to the open collection, counting it
// unless it is a key or a document's null root (Parse skips those).
func (b *builder) node(ev yamlevents.Event) *Error {
	parent := b.stack[len(b.stack)-1]
	n := newNode(ev)
	key := parent.Kind == yaml.MappingNode && len(parent.Content)%2 == 0
	empty := parent.Kind == yaml.DocumentNode && n.Kind == yaml.ScalarNode && n.Tag == "!!null"
	if !key && !empty {
		b.doc++
		b.all++
		switch {
		case b.doc > b.lim.MaxNodes:
			return &Error{File: b.file, Line: ev.Line, Col: ev.Col,
				Msg: fmt.Sprintf("the document holds more than %d values", b.lim.MaxNodes)}
		case b.all > b.lim.MaxFileValues:
			return &Error{File: b.file, Line: ev.Line, Col: ev.Col,
				Msg: fmt.Sprintf("the documents of this file hold more than %d values together; split them into more files", b.lim.MaxFileValues)}
		}
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias = b.anchors[n.Value]; n.Alias == nil {
			return b.syntax(fmt.Errorf("yaml: unknown anchor '%s' referenced", n.Value))
		}
	} else if ev.Anchor != "" {
		n.Anchor = ev.Anchor
		b.anchors[n.Anchor] = n
	}
	parent.Content = append(parent.Content, n)
	if n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode {
		b.stack = append(b.stack, n)
	} else {
		b.ended()
	}
	return nil
}

// ended notes that a node ended: after a mapping's value, yaml.v3 takes
// one tail comment.
func (b *builder) ended() {
	if top := b.stack[len(b.stack)-1]; top.Kind == yaml.MappingNode && len(top.Content)%2 == 0 {
		b.tailAfter = top
	}
}

// newNode sets a node's kind, tag, style and value as yaml.v3's
// parser.node does.
func newNode(ev yamlevents.Event) *yaml.Node {
	n := &yaml.Node{Line: ev.Line, Column: ev.Col}
	var defaultTag string
	switch ev.Kind {
	case yamlevents.Scalar:
		n.Kind, n.Value = yaml.ScalarNode, ev.Value
		switch {
		case ev.DoubleQuoted:
			n.Style = yaml.DoubleQuotedStyle
		case ev.SingleQuoted:
			n.Style = yaml.SingleQuotedStyle
		case ev.Literal:
			n.Style = yaml.LiteralStyle
		case ev.Folded:
			n.Style = yaml.FoldedStyle
		}
		switch {
		case n.Style != 0:
			defaultTag = "!!str"
		case n.Value == "<<":
			defaultTag = "!!merge"
		}
	case yamlevents.Alias:
		n.Kind, n.Value = yaml.AliasNode, ev.Anchor
		return n
	case yamlevents.SequenceStart:
		n.Kind, defaultTag = yaml.SequenceNode, "!!seq"
	case yamlevents.MappingStart:
		n.Kind, defaultTag = yaml.MappingNode, "!!map"
	}
	if ev.Flow {
		n.Style |= yaml.FlowStyle
	}
	switch {
	case ev.Tag != "" && ev.Tag != "!":
		n.Tag = (&yaml.Node{Tag: ev.Tag}).ShortTag() // yaml.v3's shortTag
		n.Style |= yaml.TaggedStyle
	case defaultTag != "":
		n.Tag = defaultTag
	default: // a plain scalar: resolved from its value
		n.Tag = (&yaml.Node{Kind: yaml.ScalarNode, Value: n.Value}).ShortTag()
	}
	return n
}

// syntax words a syntax error of the stream as Parse always has.
func (b *builder) syntax(err error) *Error {
	return syntaxError(b.file, b.data, err)
}

// internal is an event out of place, which yaml.v3's parser would panic
// at, saying "please report"; Parse turns such panics into errors.
func (b *builder) internal(ev yamlevents.Event) *Error {
	return &Error{File: b.file, Line: ev.Line, Col: ev.Col, Msg: fmt.Sprintf("cannot parse YAML: internal error: unexpected event %d", ev.Kind)}
}
