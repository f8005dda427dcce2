package plan

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// MarshalJSON encodes a list with two-space indentation and a final newline.
// Empty step and refusal lists are written as [] so readers need not treat
// null specially.
func (l List) MarshalJSON() ([]byte, error) {
	type list List
	norm := l
	norm.Plans = make([]Plan, len(l.Plans))
	for i, p := range l.Plans {
		if p.Steps == nil {
			p.Steps = []Step{}
		}
		if p.Refusals == nil {
			p.Refusals = []Refusal{}
		}
		for j := range p.Steps {
			if p.Steps[j].Gates == nil {
				p.Steps[j].Gates = []Gate{}
			}
		}
		norm.Plans[i] = p
	}
	if norm.Plans == nil {
		norm.Plans = []Plan{}
	}
	return json.Marshal(list(norm))
}

// EncodeJSON writes the list as indented JSON.
func (l List) EncodeJSON() ([]byte, error) {
	data, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, data, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// EncodeYAML writes the list as YAML, with the same field names as JSON.
func (l List) EncodeYAML() ([]byte, error) {
	data, err := json.Marshal(l)
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
