// Package yamlevents is the scanner and parser of go.yaml.in/yaml/v3
// v3.0.5, copied (see LICENSE and NOTICE) with its emitter removed, one
// allocation fixed (marked "cairn:" in scannerc.go) and this file added.
// It lets strictyaml walk a file's event stream, the events yaml.v3 builds
// its node tree from (one node per scalar, alias, sequence or mapping
// start), and count what the tree would hold before building it: the
// library does not export that stream.
//
// Only this file and the marked lines are cairn's; keep the rest as
// upstream's. strictyaml's tests compare the counts with the trees yaml.v3
// builds, so a bump of go.yaml.in/yaml/v3 that changes the grammar fails
// them until these files are copied again from the new version.
package yamlevents

// Kind is the kind of an event.
type Kind int

// The events a Scan reports: each of Scalar, Alias, SequenceStart and
// MappingStart is one node of yaml.v3's tree.
const (
	DocumentStart Kind = iota + 1
	DocumentEnd
	Scalar
	Alias
	SequenceStart
	SequenceEnd
	MappingStart
	MappingEnd
)

// Event is one event, where it starts. Line and Col count from 1, as
// yaml.v3's Node.Line and Node.Column do.
type Event struct {
	Kind      Kind
	Line, Col int
}

func kindOf(t yaml_event_type_t) Kind {
	switch t {
	case yaml_DOCUMENT_START_EVENT:
		return DocumentStart
	case yaml_DOCUMENT_END_EVENT:
		return DocumentEnd
	case yaml_SCALAR_EVENT:
		return Scalar
	case yaml_ALIAS_EVENT:
		return Alias
	case yaml_SEQUENCE_START_EVENT:
		return SequenceStart
	case yaml_SEQUENCE_END_EVENT:
		return SequenceEnd
	case yaml_MAPPING_START_EVENT:
		return MappingStart
	case yaml_MAPPING_END_EVENT:
		return MappingEnd
	}
	return 0 // stream start, tail comments
}

// Scan reports the events of data to fn, in order, until fn returns false
// or the stream ends. It returns false at the first syntax error, saying
// nothing more: yaml.v3, which reads the same grammar, words the error.
func Scan(data []byte, fn func(Event) bool) bool {
	var p yaml_parser_t
	if !yaml_parser_initialize(&p) {
		return false
	}
	defer yaml_parser_delete(&p)
	if len(data) == 0 {
		data = []byte{'\n'} // as yaml.v3's own parser does
	}
	yaml_parser_set_input_string(&p, data)
	for {
		var ev yaml_event_t
		if !yaml_parser_parse(&p, &ev) || p.error != yaml_NO_ERROR {
			return false
		}
		if ev.typ == yaml_STREAM_END_EVENT {
			return true
		}
		k := kindOf(ev.typ)
		if k != 0 && !fn(Event{Kind: k, Line: ev.start_mark.line + 1, Col: ev.start_mark.column + 1}) {
			return true
		}
	}
}
