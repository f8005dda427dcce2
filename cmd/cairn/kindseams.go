package main

import (
	"github.com/cairn-dev/cairn/planner/live"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/publish"
)

// What the layers get from the table of kinds (kinds.go), one column
// each. A row without a column's implementation is left out, so that
// layer refuses the kind by name.

// specKinds decodes the documents of every kind of the table.
func specKinds() spec.Served {
	var k []spec.Kind
	for _, row := range kinds {
		if row.spec.New != nil {
			k = append(k, row.spec)
		}
	}
	return spec.Serve(k...)
}

// liveKinds are the kinds of the table in a live state, with their roles.
func liveKinds() live.Kinds {
	out := make(live.Kinds, len(kinds))
	for _, k := range kinds {
		if len(k.roles.Roles) > 0 {
			out[k.name] = k.roles
		}
	}
	return out
}

// wordings are what pull requests say of each kind of the table.
func wordings() map[string]publish.Wording {
	out := make(map[string]publish.Wording, len(kinds))
	for _, k := range kinds {
		out[k.name] = k.wording
	}
	return out
}
