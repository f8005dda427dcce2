package spec

import (
	"fmt"
	"sort"
	"strings"
)

// kinds are the kinds the spec API serves, each with its apiVersion and a
// constructor; the decoder, the schemas and the reference page read it.
// A new kind adds its types (a file of its own, implementing Cluster and
// kindRules) and one line here.
var kinds = map[string]struct {
	apiVersion string
	newCluster func() servedCluster
}{
	PostgresKind: {PostgresAPIVersion, func() servedCluster { return &PostgresCluster{} }},
	EtcdKind:     {EtcdAPIVersion, func() servedCluster { return &EtcdCluster{} }},
}

// servedCluster is a Cluster of a kind the spec API serves.
type servedCluster interface {
	Cluster
	kindRules
}

// kindRules are what a kind's documents get after decoding: its defaults,
// then its validation (the checks the schema tags cannot say).
type kindRules interface {
	setDefaults()
	validate(v *validator)
}

// APIVersion is the apiVersion a kind is served as; ok is false for a kind
// the spec API does not serve.
func APIVersion(kind string) (apiVersion string, ok bool) {
	k, ok := kinds[kind]
	return k.apiVersion, ok
}

func validKinds() string {
	var out []string
	for k, v := range kinds {
		out = append(out, fmt.Sprintf("%s (%s)", k, v.apiVersion))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
