package strictyaml

import (
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// counter counts the values of a file's documents, as yaml.v3 built
// them, against Limits.MaxNodes per document and Limits.MaxFileValues
// for the file.
//
// A value is a node other than a mapping key: a scalar, an alias (counted
// once, where it is written, and not followed), a list or a mapping. The
// nodes within a key are values. A document's null root (an empty
// document) is not counted. Decode visits each value at least once in a
// document it accepts, so a document refused here for MaxNodes would be
// refused by Decode.
type counter struct {
	file     string
	lim      Limits
	doc, all int
}

// document counts the values of one document, a yaml.DocumentNode, and
// returns the error at the first value past a limit, in the order the
// values are written.
func (c *counter) document(n *yaml.Node) *Error {
	c.doc = 0
	if root := documentRoot(n); root != nil {
		return c.walk(root, true)
	}
	return nil
}

// walk counts n, when it is a value, and the values within it, depth
// first. yaml.v3 refuses trees nested more than 10,000 deep, and aliases
// are not followed, so the recursion is bounded.
func (c *counter) walk(n *yaml.Node, value bool) *Error {
	if value {
		c.doc++
		c.all++
		switch {
		case c.doc > c.lim.MaxNodes:
			return &Error{File: c.file, Line: n.Line, Col: n.Column,
				Msg: fmt.Sprintf("the document holds more than %d values", c.lim.MaxNodes)}
		case c.all > c.lim.MaxFileValues:
			return &Error{File: c.file, Line: n.Line, Col: n.Column,
				Msg: fmt.Sprintf("the documents of this file hold more than %d values together; split them into more files", c.lim.MaxFileValues)}
		}
	}
	for i, k := range n.Content {
		if err := c.walk(k, n.Kind != yaml.MappingNode || i%2 == 1); err != nil {
			return err
		}
	}
	return nil
}
