package strictyaml

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// Scalar is a YAML scalar as written, handed to a ScalarUnmarshaler.
type Scalar struct {
	// Value is the scalar's text.
	Value string
	// Tag is the resolved short tag: "!!str", "!!int", "!!float", "!!bool"
	// or "!!timestamp".
	Tag string
}

// ScalarUnmarshaler is implemented (on the pointer) by types that decode
// themselves from one scalar. The returned error's text becomes the
// message; the position and path are added by the decoder.
type ScalarUnmarshaler interface {
	UnmarshalScalar(s Scalar) error
}

// Pos is a position in a file.
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

// Positions maps field paths of a decoded document to where they were
// written, so later validation can point at the source.
type Positions map[string]Pos

// Lookup returns the position of path, or of its nearest written ancestor.
func (p Positions) Lookup(path string) Pos {
	for {
		if pos, ok := p[path]; ok {
			return pos
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return p[""]
		}
		path = path[:i]
	}
}

// Decode decodes doc into v, a non-nil pointer to a struct, and returns the
// positions of every field written.
func Decode(doc Document, v any, lim Limits) (Positions, ErrorList) {
	d := &decoder{file: doc.File, lim: lim, pos: Positions{}}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("strictyaml: Decode needs a non-nil pointer")
	}
	d.pos[""] = Pos{doc.Root.Line, doc.Root.Column}
	d.value(doc.Root, rv.Elem(), "", 0)
	d.errs.Sort()
	return d.pos, d.errs
}

type decoder struct {
	file    string
	lim     Limits
	pos     Positions
	errs    ErrorList
	nodes   int
	aborted bool
}

// maxErrors bounds the problems reported for one document: past it, a
// hostile file would cost more to describe than to read.
const maxErrors = 100

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	if d.aborted {
		return
	}
	if len(d.errs) >= maxErrors {
		d.errs = append(d.errs, &Error{File: d.file, Line: n.Line, Col: n.Column, Path: path,
			Msg: fmt.Sprintf("more than %d problems in this document; stopping here", maxErrors)})
		d.aborted = true
		return
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: n.Line, Col: n.Column, Path: path, Msg: fmt.Sprintf(format, args...)})
}

var scalarUnmarshalerType = reflect.TypeFor[ScalarUnmarshaler]()

func (d *decoder) value(n *yaml.Node, v reflect.Value, path string, depth int) {
	if d.aborted {
		return
	}
	// An alias counts as a level, so a self-referencing anchor ends at the
	// depth limit below.
	for n.Kind == yaml.AliasNode && depth <= d.lim.MaxDepth {
		if n.Alias == nil {
			d.fail(n, path, "alias cannot be resolved")
			return
		}
		n, depth = n.Alias, depth+1
	}
	d.nodes++
	if d.nodes > d.lim.MaxNodes {
		d.fail(n, path, "document expands to more than %d values (too large, or too many aliases)", d.lim.MaxNodes)
		d.aborted = true
		return
	}
	if depth > d.lim.MaxDepth {
		d.fail(n, path, "nested more than %d levels deep", d.lim.MaxDepth)
		d.aborted = true
		return
	}
	d.pos[path] = Pos{n.Line, n.Column}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // null or empty: the field stays unset
	}
	if v.CanAddr() && v.Addr().Type().Implements(scalarUnmarshalerType) {
		d.custom(n, v.Addr().Interface().(ScalarUnmarshaler), path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.value(n, v.Elem(), path, depth)
	case reflect.Struct:
		d.structValue(n, v, path, depth)
	case reflect.Map:
		d.mapValue(n, v, path, depth)
	case reflect.Slice:
		d.sliceValue(n, v, path, depth)
	case reflect.String:
		if s, ok := d.scalar(n, path, "!!str", "a string"); ok {
			v.SetString(s)
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		d.intValue(n, v, path)
	case reflect.Bool:
		if s, ok := d.scalar(n, path, "!!bool", "true or false"); ok {
			var b bool
			if err := n.Decode(&b); err != nil {
				d.fail(n, path, "must be true or false, got %s", Quote(s))
				return
			}
			v.SetBool(b)
		}
	default:
		panic(fmt.Sprintf("strictyaml: unsupported field type %s at %s", v.Type(), path))
	}
}

func (d *decoder) custom(n *yaml.Node, u ScalarUnmarshaler, path string) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "must be a single value, got %s", describe(n))
		return
	}
	if err := u.UnmarshalScalar(Scalar{Value: n.Value, Tag: n.ShortTag()}); err != nil {
		d.fail(n, path, "%s", err.Error())
	}
}

// scalar returns the scalar's text when n is a scalar of the wanted tag.
func (d *decoder) scalar(n *yaml.Node, path, tag, want string) (string, bool) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == tag {
		return n.Value, true
	}
	msg := fmt.Sprintf("must be %s, got %s", want, describe(n))
	if tag == "!!str" && n.Kind == yaml.ScalarNode {
		msg += fmt.Sprintf("; quote it to keep it as written: %q", n.Value)
		if n.ShortTag() == "!!float" {
			msg += " (unquoted, 14.10 would be read as the number 14.1)"
		}
	}
	d.fail(n, path, "%s", msg)
	return "", false
}

var digitsRE = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)

func (d *decoder) intValue(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" && digitsRE.MatchString(n.Value) {
		// Too large for 64 bits, so the YAML library resolved it as a float.
		d.fail(n, path, "%s is out of range", Quote(n.Value))
		return
	}
	s, ok := d.scalar(n, path, "!!int", "a whole number")
	if !ok {
		return
	}
	// Every count in cairn's documents (an int field) fits in 32 bits;
	// anything larger is a typo or an attack, and refusing it keeps
	// planning bounded. An int64 field holds what needs 64 bits (bytes of
	// a database, store revisions) and takes the whole range. An !!int
	// fails to decode only when it overflows 64 bits.
	lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
	if v.Kind() == reflect.Int64 {
		lo, hi = math.MinInt64, math.MaxInt64
	}
	var i int64
	if err := n.Decode(&i); err != nil || i > hi || i < lo {
		d.fail(n, path, "%s is out of range", Quote(s))
		return
	}
	v.SetInt(i)
}

func (d *decoder) structValue(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "must be a mapping of fields, got %s", describe(n))
		return
	}
	fields := fieldsOf(v.Type())
	d.pairs(n, path, func(key string, kn, vn *yaml.Node) {
		f, ok := fields.byName[key]
		if !ok {
			d.fail(kn, join(path, key), "unknown field %s%s; valid fields: %s",
				Quote(key), suggest(key, fields.names), strings.Join(fields.names, ", "))
			return
		}
		d.value(vn, v.Field(f), join(path, key), depth+1)
	})
}

func (d *decoder) mapValue(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "must be a mapping, got %s", describe(n))
		return
	}
	if v.Type().Key().Kind() != reflect.String {
		panic("strictyaml: map keys must be strings")
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	d.pairs(n, path, func(key string, kn, vn *yaml.Node) {
		elem := reflect.New(v.Type().Elem()).Elem()
		p := MapPath(path, key)
		d.value(vn, elem, p, depth+1)
		v.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), elem)
	})
}

func (d *decoder) sliceValue(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "must be a list, got %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, en := range n.Content {
		d.value(en, s.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1)
		if d.aborted {
			return
		}
	}
	v.Set(s)
}

// pairs walks a mapping's key/value pairs, refusing non-string keys,
// merge keys and duplicates.
func (d *decoder) pairs(n *yaml.Node, path string, fn func(key string, kn, vn *yaml.Node)) {
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content) && !d.aborted; i += 2 {
		// at is where the key is written; kn is what it means, which for
		// an alias is the anchored node elsewhere in the file.
		at, vn := n.Content[i], n.Content[i+1]
		kn := at
		if kn.Kind == yaml.AliasNode && kn.Alias != nil {
			kn = kn.Alias
		}
		switch {
		case kn.Kind != yaml.ScalarNode:
			d.fail(at, path, "keys must be plain strings, got %s", describe(kn))
			continue
		case kn.ShortTag() == "!!merge":
			d.fail(at, path, "merge keys (<<) are not supported; write the fields out")
			continue
		case kn.ShortTag() != "!!str":
			d.fail(at, path, "keys must be strings, got %s", describe(kn))
			continue
		}
		if first, dup := seen[kn.Value]; dup {
			d.fail(at, join(path, kn.Value), "duplicate key %s (first at line %d)", Quote(kn.Value), first)
			continue
		}
		seen[kn.Value] = at.Line
		fn(kn.Value, at, vn)
	}
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		return "the number " + Quote(n.Value)
	case "!!bool":
		return "the boolean " + Quote(n.Value)
	case "!!null":
		return "null"
	case "!!timestamp":
		return "the timestamp " + Quote(n.Value)
	case "!!str":
		return "the string " + Quote(n.Value)
	}
	return "a value tagged " + Quote(n.Tag)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// MapPath returns the field path of key within the map at path, as errors
// and Positions spell it: path.key for plain keys, path["key"] otherwise.
func MapPath(path, key string) string {
	if key != "" && strings.IndexFunc(key, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return join(path, key)
	}
	return path + "[" + strconv.Quote(key) + "]"
}

type fieldSet struct {
	byName map[string]int
	names  []string
}

var fieldCache sync.Map // reflect.Type -> *fieldSet

func fieldsOf(t reflect.Type) *fieldSet {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{byName: map[string]int{}}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		fs.byName[name] = i
		fs.names = append(fs.names, name)
	}
	slices.Sort(fs.names)
	fieldCache.Store(t, fs)
	return fs
}

// suggest returns a "did you mean" hint for a misspelt key.
func suggest(key string, names []string) string {
	best, bestDist := "", 3
	lk := strings.ToLower(key)
	for _, n := range names {
		if dist := levenshtein(lk, strings.ToLower(n)); dist < bestDist {
			best, bestDist = n, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func levenshtein(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 10
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
