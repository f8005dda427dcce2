package renderer

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// patchOp is one RFC 6902 operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// diff returns the operations that turn a into b: maps are compared key
// by key (in sorted order), lists of equal length element by element, and
// anything else is replaced whole. The result is minimal enough for a
// reviewer to read ("replace /spec/replicas 4") and deterministic.
func diff(a, b any) []patchOp {
	var ops []patchOp
	diffAt(a, b, "", &ops)
	return ops
}

func diffAt(a, b any, path string, ops *[]patchOp) {
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			diffMaps(av, bv, path, ops)
			return
		}
	case []any:
		if bv, ok := b.([]any); ok && diffLists(av, bv, path, ops) {
			return
		}
	}
	if !reflect.DeepEqual(a, b) {
		*ops = append(*ops, patchOp{Op: "replace", Path: path, Value: b})
	}
}

// diffLists diffs lists of equal length element by element, and a list
// that grew or shrank at its end by adding or removing the elements there.
// It reports false when the lists differ otherwise (replaced whole).
func diffLists(a, b []any, path string, ops *[]patchOp) bool {
	n := min(len(a), len(b))
	if len(a) != len(b) && !reflect.DeepEqual(a[:n], b[:n]) {
		return false
	}
	for i := range n {
		diffAt(a[i], b[i], path+"/"+strconv.Itoa(i), ops)
	}
	for i := n; i < len(b); i++ {
		*ops = append(*ops, patchOp{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: b[i]})
	}
	for i := len(a) - 1; i >= n; i-- {
		*ops = append(*ops, patchOp{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
	}
	return true
}

func diffMaps(a, b map[string]any, path string, ops *[]patchOp) {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := path + "/" + escapePointer(k)
		av, inA := a[k]
		bv, inB := b[k]
		switch {
		case !inB:
			*ops = append(*ops, patchOp{Op: "remove", Path: p})
		case !inA:
			*ops = append(*ops, patchOp{Op: "add", Path: p, Value: bv})
		default:
			diffAt(av, bv, p, ops)
		}
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
