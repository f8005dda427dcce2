package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// Limits bound the work and memory one file may cost.
type Limits struct {
	// MaxBytes is the largest file accepted. Checked before parsing, it
	// bounds what parsing costs: yaml.v3 allocates up to about 125 bytes
	// per byte read.
	MaxBytes int
	// MaxDocuments is the most YAML documents one file may hold.
	MaxDocuments int
	// MaxNodes is the most nodes decoding one document may visit, counting
	// every expansion of an alias. Parse refuses a document that holds more
	// values as written: Decode would visit each one.
	MaxNodes int
	// MaxDepth is the deepest nesting decoding follows.
	MaxDepth int
	// MaxFileValues is the most values (scalars, aliases, lists and
	// mappings as written, keys not counted) all documents of one file
	// may hold together, so that decoding a file of many documents stays
	// within a budget too. A file Parse accepts holds at most two nodes
	// per value (a key and its value) besides its documents.
	MaxFileValues int
}

// DefaultLimits are generous for hand-written specs and tight enough that a
// hostile file is refused in milliseconds.
var DefaultLimits = Limits{
	MaxBytes:      1 << 20,
	MaxDocuments:  100,
	MaxNodes:      20000,
	MaxDepth:      32,
	MaxFileValues: 20000,
}

// Document is one YAML document of a file.
type Document struct {
	File string
	// Index is the document's place in its file, from 0.
	Index int
	// Root is the document's top node (never a DocumentNode).
	Root *yaml.Node
}

// Parse splits a file into its non-empty YAML documents. yaml.v3 builds
// each document's tree, one document at a time; Parse then counts the
// tree's values and refuses the file at the first value past lim.MaxNodes
// in a document or lim.MaxFileValues in all, and at the document past
// lim.MaxDocuments. lim.MaxBytes, checked first, bounds what parsing
// costs.
func Parse(file string, data []byte, lim Limits) (docs []Document, errs ErrorList) {
	if len(data) > lim.MaxBytes {
		return nil, ErrorList{{File: file, Msg: fmt.Sprintf("file is %d bytes; the limit is %d", len(data), lim.MaxBytes)}}
	}
	if err := checkBytes(file, data); err != nil {
		return nil, ErrorList{err}
	}
	defer func() {
		if r := recover(); r != nil {
			docs = nil
			errs = ErrorList{{File: file, Msg: fmt.Sprintf("cannot parse YAML: %v", r)}}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	c := counter{file: file, lim: lim}
	for i := 0; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, ErrorList{syntaxError(file, data, err)}
		}
		if err := c.document(&n); err != nil {
			return nil, ErrorList{err}
		}
		if i >= lim.MaxDocuments {
			return nil, ErrorList{{File: file, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf("more than %d documents in one file", lim.MaxDocuments)}}
		}
		if root := documentRoot(&n); root != nil {
			docs = append(docs, Document{File: file, Index: i, Root: root})
		}
	}
}

// documentRoot returns a document's top node, or nil for an empty
// document (e.g. after a trailing "---").
func documentRoot(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	return n
}

// checkBytes refuses input that is not text before the YAML parser sees it,
// so the error can point at the offending byte.
func checkBytes(file string, data []byte) *Error {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return &Error{File: file, Line: line, Col: col, Msg: "file is not valid UTF-8"}
		case r == 0:
			return &Error{File: file, Line: line, Col: col, Msg: "file contains a NUL byte; specs must be text"}
		case !printable(r):
			return &Error{File: file, Line: line, Col: col, Msg: fmt.Sprintf("file contains the control character %U; specs must be text", r)}
		case r == '\n':
			line, col = line+1, 1
		default:
			col++
		}
		i += size
	}
	return nil
}

// printable reports whether YAML allows r in a file: the YAML library
// refuses anything else, but without saying where.
func printable(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r', r == 0x85:
		return true
	case r >= 0x20 && r <= 0x7e, r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd:
		return true
	}
	return r >= 0x10000 && r <= 0x10ffff
}

var lineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the messages of the YAML library's parser, as opposed
// to its scanner. The library numbers the lines of parser errors from 0 and
// those of scanner errors from 1, and names no line for either on the
// first line (line 0 to it).
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

func syntaxError(file string, data []byte, err error) *Error {
	msg := err.Error()
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if parserProblems[m[2]] {
			line++
		}
		// At the end of the stream the library points past the last line.
		last := bytes.Count(data, []byte("\n"))
		if !bytes.HasSuffix(data, []byte("\n")) {
			last++
		}
		return &Error{File: file, Line: max(min(line, last), 1), Col: 1, Msg: "invalid YAML: " + m[2]}
	}
	msg = trimYAMLPrefix(msg)
	if strings.Contains(msg, "anchor") {
		// Raised while resolving aliases, with no position at all.
		return &Error{File: file, Msg: "invalid YAML: " + msg}
	}
	return &Error{File: file, Line: 1, Col: 1, Msg: "invalid YAML: " + msg}
}

func trimYAMLPrefix(s string) string {
	if len(s) > 6 && s[:6] == "yaml: " {
		return s[6:]
	}
	return s
}
