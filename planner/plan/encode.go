package plan

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// normalized returns a copy of the list whose empty step, gate and
// refusal lists are empty arrays, so readers need not treat null specially.
func (l List) normalized() List {
	out := List{Plans: make([]Plan, len(l.Plans))}
	for i, p := range l.Plans {
		if p.Steps == nil {
			p.Steps = []Step{}
		}
		if p.Refusals == nil {
			p.Refusals = []Refusal{}
		}
		steps := make([]Step, len(p.Steps))
		for j, s := range p.Steps {
			if s.Gates == nil {
				s.Gates = []Gate{}
			}
			steps[j] = s
		}
		p.Steps = steps
		out.Plans[i] = p
	}
	return out
}

// EncodeJSON writes the list as JSON with two-space indentation and a
// final newline, without HTML escaping ("->" stays "->").
func (l List) EncodeJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(l.normalized()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// EncodeJSON writes one plan as indented JSON, as EncodeJSON of a list
// does.
func (p Plan) EncodeJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(List{Plans: []Plan{p}}.normalized().Plans[0]); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// EncodeYAML writes the list as YAML, with the same field names as JSON.
func (l List) EncodeYAML() ([]byte, error) {
	data, err := l.EncodeJSON()
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(data)
}

// DecodeList reads a list written by EncodeJSON or EncodeYAML, refusing
// unknown fields and plans that fail Validate.
func DecodeList(data []byte) (List, error) {
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return List{}, fmt.Errorf("decode plans: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(jsonData))
	dec.DisallowUnknownFields()
	var l List
	if err := dec.Decode(&l); err != nil {
		return List{}, fmt.Errorf("decode plans: %w", err)
	}
	for i := range l.Plans {
		if err := l.Plans[i].Validate(); err != nil {
			return List{}, fmt.Errorf("decode plans: %w", err)
		}
	}
	return l, nil
}
