package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The schema of spec.postgresql.parameters, built from the allow-list
// tables (pgparams*.go): one property per parameter PostgreSQL knows,
// typed as validation types it, or refused with validation's reason;
// the contrib extensions' parameters by pattern; anything else refused
// (additionalProperties). What differs between majors is said by one
// if/then rule per supported major on spec.version. The value of a
// parameter is judged by asking validation (checkParameter) about the
// JSON types it can stand for: null is "", true and false, 0 and 1.

// textClass are the characters checkParamText refuses (unicode.IsControl,
// the line separators and U+FFFD), for the inside of a character class.
const textClass = `\x00-\x1f\x7f-\x9f` + "\u2028\u2029\ufffd"

// paramTextNode is a value of a string parameter: one line of printable
// text, or a number or a boolean (kept as written).
func paramTextNode(pattern string) *schemaNode {
	if pattern == "" {
		pattern = "^[^" + textClass + "]*$"
	}
	return &schemaNode{Type: []string{"string", "number", "boolean", "null"}, Pattern: pattern, MaxLength: maxParamValue,
		PatternErrorMessage: "one line of printable characters"}
}

type parameterSchemas struct {
	base     map[string]*schemaNode         // by name: the node valid for every major
	perMajor map[int]map[string]*schemaNode // by major, by name: where majors differ
}

var parameterTables = sync.OnceValue(func() parameterSchemas {
	names := map[string]bool{}
	for _, m := range []map[string]bool{keysOf(pgParams), keysOf(pgAdded), keysOf(refusedParameters)} {
		maps.Copy(names, m)
	}
	out := parameterSchemas{base: map[string]*schemaNode{}, perMajor: map[int]map[string]*schemaNode{}}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		var nodes []*schemaNode
		var texts []string
		for _, m := range postgresMajors {
			n := parameterNode(name, m.Major)
			b, _ := json.Marshal(n)
			nodes, texts = append(nodes, n), append(texts, string(b))
		}
		// The base node must accept what any major accepts: the one typed
		// node when the others are refusals (or the one refusal), else
		// anything, narrowed per major.
		var typed []string
		for i, n := range nodes {
			if n.Not == nil {
				typed = append(typed, texts[i])
			}
		}
		typed = slices.Compact(typed)
		base := &schemaNode{Description: "Its type depends on the PostgreSQL major of spec.version."}
		switch {
		case len(slices.Compact(slices.Clone(texts))) == 1:
			base = nodes[0]
		case len(typed) == 1:
			base = nodes[slices.Index(texts, typed[0])]
		}
		out.base[name] = base
		baseText, _ := json.Marshal(base)
		for i, m := range postgresMajors {
			if texts[i] == string(baseText) {
				continue
			}
			if out.perMajor[m.Major] == nil {
				out.perMajor[m.Major] = map[string]*schemaNode{}
			}
			out.perMajor[m.Major][name] = nodes[i]
		}
	}
	return out
})

func keysOf[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// parametersNode is the node of spec.postgresql.parameters.
func parametersNode(desc string) *schemaNode {
	var ext []string
	for _, p := range extensionPrefixes {
		ext = append(ext, regexp.QuoteMeta(p))
	}
	extNode := paramTextNode("")
	extNode.Description = "A parameter of one of PostgreSQL's contrib modules."
	return &schemaNode{
		Description:   desc,
		Type:          "object",
		MaxProperties: MaxParameters,
		PropertyNames: &schemaNode{Pattern: paramNameRE.String(),
			PatternErrorMessage: "a PostgreSQL parameter name: lowercase letters, digits and _, e.g. max_connections"},
		Properties:           parameterTables().base,
		PatternProperties:    map[string]*schemaNode{`^(` + strings.Join(ext, "|") + `)\.[a-z][a-z0-9_]*$`: extNode},
		AdditionalProperties: false,
	}
}

// parameterVersionRules narrow the parameters to those of the major
// spec.version names.
func parameterVersionRules() []*schemaNode {
	t := parameterTables()
	var out []*schemaNode
	for _, m := range postgresMajors {
		if len(t.perMajor[m.Major]) == 0 {
			continue
		}
		params := &schemaNode{Properties: t.perMajor[m.Major]}
		out = append(out, &schemaNode{
			If: &schemaNode{Required: []string{"version"}, Properties: map[string]*schemaNode{"version": {Pattern: fmt.Sprintf(`^%d\.`, m.Major)}}},
			Then: &schemaNode{Properties: map[string]*schemaNode{"postgresql": {Properties: map[string]*schemaNode{
				"parameters": params}}}},
		})
	}
	return out
}

// parameterNameRefused reports whether validation refuses name, whatever
// its value, on the given major: checkParameter's checks of the name, in
// its order.
func parameterNameRefused(name string, major int) bool {
	if _, ok := refusedParameters[name]; ok || strings.HasPrefix(name, "include") {
		return true
	}
	if _, known := pgParams[name]; !known {
		for _, s := range refusedBySuffix {
			if strings.HasSuffix(name, s.suffix) {
				return true
			}
		}
	}
	p, why := lookupParameter(name, major)
	return why != "" || p.typ == pgReadOnly
}

// parameterNode is what validation accepts for name on one major.
func parameterNode(name string, major int) *schemaNode {
	if parameterNameRefused(name, major) {
		return nothing(checkParameter(name, "", major))
	}
	p, _ := lookupParameter(name, major)
	ok := func(v string) bool { return checkParamText(v) == nil && checkParameter(name, v, major) == "" }
	n := &schemaNode{MaxLength: maxParamValue}
	types := []string{"string"}
	switch p.typ {
	case pgBool, pgEnum:
		words := boolWords
		n.Description = "A boolean: on, off, true, false, yes, no, 1 or 0."
		if p.typ == pgEnum {
			// Only the words validation takes (TLS versions at cairn's
			// floor; the empty word as PostgreSQL's table has it).
			words = slices.DeleteFunc(strings.Split(p.enum, ","), func(w string) bool { return w != "" && !ok(w) })
			n.Description = "One of " + strings.Join(words, ", ") + "."
			if slicesContainFold(words, "on") && slicesContainFold(words, "off") {
				words = append(words, boolWords...)
			}
		}
		var alt []string
		for _, w := range words {
			alt = append(alt, caseless(w))
		}
		n.Pattern = "^(" + strings.Join(slices.Compact(alt), "|") + ")$"
		if ok("true") && ok("false") {
			types = append(types, "boolean")
		}
		if ok("0") && ok("1") {
			types = append(types, "integer")
			n.Minimum, n.Maximum = num(0), num(1)
		}
	case pgInt, pgReal:
		types = []string{"number", "string"}
		n.Description = map[pgType]string{pgInt: "An integer", pgReal: "A number"}[p.typ] + ", " + rangeText(p) + "."
		numberBounds(n, p)
		n.Pattern = numberPattern(p)
	default:
		n.Description = "A string."
		n.Pattern = stringPattern(name, major)
		if ok("1") {
			types = append(types, "number")
		}
		if ok("true") {
			types = append(types, "boolean")
		}
	}
	if ok("") {
		types = append(types, "null")
	}
	n.Type = types
	n.PatternErrorMessage = strings.TrimSuffix(n.Description, ".")
	return n
}

// numberBounds bounds a number written as a number. An integer
// parameter's value is rounded half to even first, as PostgreSQL (and
// checkNumber) round it.
func numberBounds(n *schemaNode, p pgParam) {
	if p.typ == pgReal {
		n.Minimum, n.Maximum = num(p.min), num(p.max)
		return
	}
	even := func(x float64) bool { return math.Mod(x, 2) == 0 }
	if lo := p.min - 0.5; even(p.min) {
		n.Minimum = num(lo)
	} else {
		n.ExclusiveMinimum = num(lo)
	}
	if hi := p.max + 0.5; even(p.max) {
		n.Maximum = num(hi)
	} else {
		n.ExclusiveMaximum = num(hi)
	}
}

// numberPattern is numberRE with the parameter's units: a value written
// as a string (quoted, or with a unit) is checked against the range by
// validation only.
func numberPattern(p pgParam) string {
	pat := `^-?(0|[1-9][0-9]{0,19})(\.[0-9]{1,20})?`
	if p.typ == pgReal {
		pat += `([eE][-+]?[0-9]{1,3})?`
	}
	pat += ` *`
	if p.unit != "" {
		pat += "(" + strings.Join(unitNames(p.unit), "|") + ")?"
	}
	return pat + "$"
}

// stringPattern is what valueChecks accept of a string parameter.
func stringPattern(name string, major int) string {
	switch name {
	case "log_filename":
		return `^[^/\\` + textClass + `]*$`
	case "search_path", "temp_tablespaces":
		return identifierList(nil)
	case "log_destination":
		var dests []string
		for _, d := range []string{"stderr", "csvlog", "syslog", "jsonlog"} {
			if checkParameter(name, d, major) == "" {
				dests = append(dests, d)
			}
		}
		return identifierList(dests)
	}
	if valueChecks[name] != nil {
		panic("spec: no schema pattern for the value check of " + name)
	}
	return "^[^" + textClass + "]*$"
}

// identifierList is the pattern of checkIdentifiers: names plain or in
// double quotes, separated by commas and spaces; with allowed, each one
// of them in any case.
func identifierList(allowed []string) string {
	item := `"([^"` + textClass + `]|"")+"|[^", ` + textClass + `][^, ` + textClass + `]*`
	if allowed != nil {
		var alt []string
		for _, a := range allowed {
			alt = append(alt, caseless(a), `"`+caseless(a)+`"`)
		}
		item = strings.Join(alt, "|")
	}
	return `^ *((` + item + `)( *, *(` + item + `))* *)?$`
}
