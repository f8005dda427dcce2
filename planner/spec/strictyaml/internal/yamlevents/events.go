// Package yamlevents is the scanner and parser of go.yaml.in/yaml/v3
// v3.0.5, copied (see LICENSE and NOTICE) with its emitter removed, one
// allocation fixed (marked "cairn:" in scannerc.go) and this file added.
// The library builds a whole document's node tree before its caller sees
// a node and does not export the event stream it builds it from; this
// copy does, so that strictyaml can build the same tree while counting
// its values, and stop at a limit instead of after the tree is built.
//
// Only this file and the marked lines are cairn's; keep the rest as
// upstream's. strictyaml's tests compare the trees built from these
// events with those yaml.v3 builds, so a bump of go.yaml.in/yaml/v3 that
// changes the grammar fails them until these files are copied again from
// the new version.
package yamlevents

import (
	"errors"
	"strconv"
)

// Kind is the kind of an event.
type Kind int

// The events of a stream. Each of Scalar, Alias, SequenceStart and
// MappingStart is one node of yaml.v3's tree.
const (
	StreamEnd Kind = iota + 1
	DocumentStart
	DocumentEnd
	Scalar
	Alias
	SequenceStart
	SequenceEnd
	MappingStart
	MappingEnd
	// TailComment is a comment left after a mapping's value.
	TailComment
)

// Event is one event. Line and Col are where it starts, counted from 1
// as yaml.v3's Node.Line and Node.Column are.
type Event struct {
	Kind      Kind
	Line, Col int
	// Anchor is the anchor a node defines, or the one an alias names.
	Anchor string
	// Tag is a node's tag as written with its handle resolved, for
	// example "tag:yaml.org,2002:str" for "!!str", or "".
	Tag   string
	Value string
	// Quoted, Literal and Folded are a scalar's style; Flow is a
	// collection's.
	SingleQuoted, DoubleQuoted, Literal, Folded, Flow bool
}

// Parser reads the events of one stream.
type Parser struct {
	p    yaml_parser_t
	done bool
}

// NewParser returns a parser of data.
func NewParser(data []byte) *Parser {
	p := &Parser{}
	if !yaml_parser_initialize(&p.p) {
		panic("yamlevents: cannot initialize the parser")
	}
	yaml_parser_set_input_string(&p.p, data)
	return p
}

// Next returns the next event. After the stream's end it returns
// StreamEnd again; after an error, the error again. The error's text is
// the one yaml.v3 gives for the same input.
func (p *Parser) Next() (Event, error) {
	for {
		if p.done {
			return Event{Kind: StreamEnd}, nil
		}
		var ev yaml_event_t
		if !yaml_parser_parse(&p.p, &ev) || p.p.error != yaml_NO_ERROR {
			return Event{}, p.err()
		}
		e := Event{Line: ev.start_mark.line + 1, Col: ev.start_mark.column + 1,
			Anchor: string(ev.anchor), Tag: string(ev.tag), Value: string(ev.value)}
		switch ev.typ {
		case yaml_STREAM_START_EVENT:
			continue
		case yaml_STREAM_END_EVENT:
			p.done = true
			e.Kind = StreamEnd
		case yaml_DOCUMENT_START_EVENT:
			e.Kind = DocumentStart
		case yaml_DOCUMENT_END_EVENT:
			e.Kind = DocumentEnd
		case yaml_SCALAR_EVENT:
			e.Kind = Scalar
			s := ev.scalar_style()
			e.SingleQuoted = s&yaml_SINGLE_QUOTED_SCALAR_STYLE != 0
			e.DoubleQuoted = s&yaml_DOUBLE_QUOTED_SCALAR_STYLE != 0
			e.Literal = s&yaml_LITERAL_SCALAR_STYLE != 0
			e.Folded = s&yaml_FOLDED_SCALAR_STYLE != 0
		case yaml_ALIAS_EVENT:
			e.Kind = Alias
		case yaml_SEQUENCE_START_EVENT:
			e.Kind = SequenceStart
			e.Flow = ev.sequence_style()&yaml_FLOW_SEQUENCE_STYLE != 0
		case yaml_SEQUENCE_END_EVENT:
			e.Kind = SequenceEnd
		case yaml_MAPPING_START_EVENT:
			e.Kind = MappingStart
			e.Flow = ev.mapping_style()&yaml_FLOW_MAPPING_STYLE != 0
		case yaml_MAPPING_END_EVENT:
			e.Kind = MappingEnd
		case yaml_TAIL_COMMENT_EVENT:
			e.Kind = TailComment
		default:
			return Event{}, errors.New("yaml: internal error: unknown event " + ev.typ.String())
		}
		return e, nil
	}
}

// err words the parser's error as yaml.v3's parser.fail does.
func (p *Parser) err() error {
	var line int
	if p.p.context_mark.line != 0 {
		line = p.p.context_mark.line
	} else if p.p.problem_mark.line != 0 {
		line = p.p.problem_mark.line
	}
	if line != 0 && p.p.error == yaml_SCANNER_ERROR {
		line++ // scanner errors don't iterate line before returning
	}
	where := ""
	if line != 0 {
		where = "line " + strconv.Itoa(line) + ": "
	}
	msg := p.p.problem
	if msg == "" {
		msg = "unknown problem parsing YAML content"
	}
	return errors.New("yaml: " + where + msg)
}
