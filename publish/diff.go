package publish

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"
)

// maxDiffCells bounds the work of one object's diff (its lines before
// times its lines after).
const maxDiffCells = 8_000_000

// diffContext is the lines of context around a change, as diff -u has.
const diffContext = 3

// unifiedDiff returns the diff of two multi-document YAML texts object by
// object, as cairn diff shows it: the objects are paired by apiVersion,
// kind, namespace and name, never by where their lines fall, so a removed
// object is never read as a change of another. Each changed object has a
// unified diff of its own (3 lines of context) headed
// `--- base/<apiVersion>/<Kind>[/<namespace>]/<name>` and
// `+++ step/...`; an added object's old side and a removed one's new side
// is /dev/null. The objects come in the new text's order, the removed ones
// after in the old text's; equal ones are left out. A document naming no
// kind or name is paired by its place among such documents.
func unifiedDiff(a, b string) string {
	old, cur := documents(a), documents(b)
	oldByKey := map[string][]int{}
	for i, d := range old {
		oldByKey[d.key] = append(oldByKey[d.key], i)
	}
	paired := make([]bool, len(old))
	var out strings.Builder
	for _, d := range cur {
		from := document{key: d.key}
		if idx := oldByKey[d.key]; len(idx) > 0 {
			from = old[idx[0]]
			oldByKey[d.key] = idx[1:]
			paired[idx[0]] = true
		}
		out.WriteString(objectDiff(from, d))
	}
	for i, d := range old {
		if !paired[i] {
			out.WriteString(objectDiff(d, document{key: d.key}))
		}
	}
	return out.String()
}

// document is one object of a YAML stream: its key and its lines.
type document struct {
	key   string
	lines []string // each with its newline
}

// objectDiff is the unified diff of one object, or "" when it is the
// same; a side with no lines is /dev/null.
func objectDiff(a, b document) string {
	if strings.Join(a.lines, "") == strings.Join(b.lines, "") {
		return ""
	}
	from, to := "base/"+a.key, "step/"+b.key
	if len(a.lines) == 0 {
		from = "/dev/null"
	}
	if len(b.lines) == 0 {
		to = "/dev/null"
	}
	if len(a.lines)*len(b.lines) > maxDiffCells {
		return fmt.Sprintf("--- %s\n+++ %s\n(%d lines before, %d after: too large to diff here; compare the branch)\n",
			from, to, len(a.lines), len(b.lines))
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: a.lines, B: b.lines, FromFile: from, ToFile: to, Context: diffContext})
	if err != nil { // difflib fails only on its writer, a strings.Builder
		return fmt.Sprintf("--- %s\n+++ %s\n(not diffed: %v)\n", from, to, err)
	}
	return d
}

// documents splits a multi-document YAML text at its "---" lines into
// its objects, each keyed apiVersion/Kind[/namespace]/name; a document
// that names no kind or name (or does not parse) is keyed by its place
// among those, and one of only blank and comment lines is left out.
func documents(text string) []document {
	var docs []document
	unnamed := 0
	add := func(lines []string) {
		if blank(lines) {
			return
		}
		key := objectKey(strings.Join(lines, ""))
		if key == "" {
			unnamed++
			key = fmt.Sprintf("document-%d", unnamed)
		}
		docs = append(docs, document{key: key, lines: lines})
	}
	var cur []string
	for _, l := range splitAfter(text) {
		if strings.TrimRight(l, "\n") == "---" {
			add(cur)
			cur = nil
			continue
		}
		cur = append(cur, l)
	}
	add(cur)
	return docs
}

// objectKey is apiVersion/Kind[/namespace]/name of one YAML document,
// or "" when it names no kind or no name. Most documents are read by
// their lines (plainKey): a pass over a fleet's built manifests keys tens
// of thousands of objects, and decoding each whole was most of a no-op
// cairn propose's time.
func objectKey(doc string) string {
	if k, ok := plainKey(doc); ok {
		return k
	}
	return decodedKey(doc)
}

// plainKey reads the key of a document whose apiVersion, kind and
// metadata's name and namespace are plain one-line scalars at their
// place (apiVersion and kind at the top level, name and namespace the
// direct children of a block metadata), as kustomize writes them. ok is
// false for anything else (a quote, a flow collection, an anchor, a tag,
// a block scalar, a comment, a key seen twice): decodedKey reads those.
func plainKey(doc string) (key string, ok bool) {
	var apiVersion, kind, name, namespace string
	var seen [4]bool
	inMeta, childIndent := false, -1
	set := func(i int, dst *string, v string) bool {
		if seen[i] || !plainScalar(v) {
			return false
		}
		seen[i], *dst = true, v
		return true
	}
	for len(doc) > 0 {
		line, rest, _ := strings.Cut(doc, "\n")
		doc = rest
		if strings.TrimSpace(line) == "" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		text := line[indent:]
		if strings.HasPrefix(text, "#") || strings.HasPrefix(text, "\t") {
			return "", false
		}
		if indent == 0 && (text == "-" || strings.HasPrefix(text, "- ")) {
			// an entry of the sequence a top-level key holds ("rules:"
			// then "- apiGroups: ..." at its column)
			inMeta = false
			continue
		}
		if indent == 0 {
			inMeta = false
			k, v, found := strings.Cut(text, ":")
			if !found {
				continue
			}
			if strings.ContainsAny(k, " \t") {
				return "", false
			}
			v = strings.TrimSpace(v)
			switch k {
			case "apiVersion":
				if !set(0, &apiVersion, v) {
					return "", false
				}
			case "kind":
				if !set(1, &kind, v) {
					return "", false
				}
			case "metadata":
				if v != "" || seen[2] || seen[3] || childIndent >= 0 {
					return "", false
				}
				inMeta = true
			default:
				if strings.ContainsAny(k, "\"'{[&*!?|>") || strings.HasPrefix(k, "<<") {
					return "", false
				}
			}
			continue
		}
		if !inMeta {
			continue
		}
		if childIndent < 0 {
			childIndent = indent
		}
		if indent != childIndent {
			continue
		}
		k, v, found := strings.Cut(text, ":")
		if !found || strings.ContainsAny(k, " \t") {
			return "", false
		}
		v = strings.TrimSpace(v)
		switch k {
		case "name":
			if !set(2, &name, v) {
				return "", false
			}
		case "namespace":
			if !set(3, &namespace, v) {
				return "", false
			}
		default:
			if strings.ContainsAny(k, "\"'{[&*!?|>") || strings.HasPrefix(k, "<<") {
				return "", false
			}
		}
	}
	if kind == "" || name == "" {
		return "", false
	}
	parts := []string{apiVersion, kind}
	if apiVersion == "" {
		parts = parts[1:]
	}
	if namespace != "" {
		parts = append(parts, namespace)
	}
	return strings.Join(append(parts, name), "/"), true
}

// plainScalar says whether v, a value on a key's line, is a plain scalar
// that means itself as a string: not empty, no quote, flow collection,
// anchor, alias, tag, block scalar, comment, or value YAML would read as
// something else (null, a boolean, a number).
func plainScalar(v string) bool {
	if v == "" || strings.ContainsAny(v[:1], "\"'{[&*!|>%@`#-?:,") || strings.Contains(v, " #") || strings.Contains(v, ": ") {
		return false
	}
	for _, r := range v {
		if r < '!' || r > '~' {
			return false // spaces, tabs, non-ASCII: leave them to the decoder
		}
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return false
	}
	switch strings.ToLower(v) {
	case "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", ".inf", "-.inf", ".nan":
		return false
	}
	return true
}

// decodedKey is objectKey by decoding the whole document.
func decodedKey(doc string) string {
	var o struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &o); err != nil || o.Kind == "" || o.Metadata.Name == "" {
		return ""
	}
	parts := []string{o.APIVersion, o.Kind}
	if o.APIVersion == "" {
		parts = parts[1:]
	}
	if o.Metadata.Namespace != "" {
		parts = append(parts, o.Metadata.Namespace)
	}
	return strings.Join(append(parts, o.Metadata.Name), "/")
}

func blank(lines []string) bool {
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// splitAfter splits text after each newline, adding one to a last line
// without; no lines for "".
func splitAfter(text string) []string {
	if text == "" {
		return nil
	}
	out := strings.SplitAfter(text, "\n")
	if out[len(out)-1] == "" {
		return out[:len(out)-1]
	}
	out[len(out)-1] += "\n"
	return out
}
