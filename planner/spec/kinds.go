package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Kind is one kind of cluster document: its name, its apiVersion and an
// empty document of it, which the decoder fills, defaults and validates.
// Each kind's lives in a file of its own (etcd.go, postgres.go).
type Kind struct {
	Name       string
	APIVersion string
	New        func() Document
}

// Document is a cluster document of a kind: what the decoder fills
// (through its json tags), then gives its defaults, then validates beyond
// its tags. A kind of this package may also implement kindSchema
// (schema_rules.go).
type Document interface {
	Cluster
	// SetDefaults fills in the fields left out.
	SetDefaults()
	// Validate reports through v what the schema tags cannot say; the
	// decoder has checked the required fields already.
	Validate(v *Validator)
}

// Served is the set of kinds a decoder serves; a kind it does not hold is
// refused with the list of those it does. cmd/cairn builds it from its
// table of kinds.
type Served struct{ kinds map[string]Kind }

// Serve returns the decoder of the given kinds.
func Serve(kinds ...Kind) Served {
	s := Served{kinds: make(map[string]Kind, len(kinds))}
	for _, k := range kinds {
		s.kinds[k.Name] = k
	}
	return s
}

// builtin are the kinds cairn ships, served by the package's functions
// (Decode, LoadRepo, LoadPaths, Schema, Reference). A new kind adds one
// entry here.
var builtin = Serve(Etcd(), Postgres())

// APIVersion is the apiVersion a kind is served as; ok is false for a kind
// the spec API does not serve.
func APIVersion(kind string) (apiVersion string, ok bool) { return builtin.APIVersion(kind) }

// APIVersion is the apiVersion a kind is served as; ok is false for a kind
// s does not serve.
func (s Served) APIVersion(kind string) (apiVersion string, ok bool) {
	k, ok := s.kinds[kind]
	return k.APIVersion, ok
}

// Names returns the kinds s serves, sorted.
func (s Served) Names() []string {
	return slices.Sorted(maps.Keys(s.kinds))
}

func (s Served) validKinds() string {
	var out []string
	for _, k := range s.Names() {
		out = append(out, fmt.Sprintf("%s (%s)", k, s.kinds[k].APIVersion))
	}
	return strings.Join(out, ", ")
}
