package spec

import "github.com/cairn-dev/cairn/planner/contract"

// Contract returns the resources as the manifests write them; nil when
// none are set.
func (r *Resources) Contract() *contract.Resources {
	if r == nil {
		return nil
	}
	var out contract.Resources
	if l := r.Requests; l != nil {
		out.Requests = contract.ResourceList{CPU: string(l.CPU), Memory: string(l.Memory)}
	}
	if l := r.Limits; l != nil {
		out.Limits = contract.ResourceList{CPU: string(l.CPU), Memory: string(l.Memory)}
	}
	if out.IsZero() {
		return nil
	}
	return &out
}

// SameResources reports whether two sets of resources ask for the same
// amounts: quantities compare by value ("1024Mi" is "1Gi", as the API
// server writes it back), unset only equals unset.
func SameResources(a, b *contract.Resources) bool {
	var x, y contract.Resources
	if a != nil {
		x = *a
	}
	if b != nil {
		y = *b
	}
	return sameQuantity(x.Requests.CPU, y.Requests.CPU) && sameQuantity(x.Requests.Memory, y.Requests.Memory) &&
		sameQuantity(x.Limits.CPU, y.Limits.CPU) && sameQuantity(x.Limits.Memory, y.Limits.Memory)
}

func sameQuantity(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	return Quantity(a).Cmp(Quantity(b)) == 0
}

// RenderedParameters are the spec's PostgreSQL parameters as the
// rendered postgresql.conf writes them, name to quoted value, and, with a
// backup policy, the WAL archiving settings it brings
// (contract.PostgresArchiveSettings); nil when there are none. Archiving
// goes with the policy as any parameter does: a cluster that gains or
// loses one restarts its members one at a time (archive_mode needs a
// restart), in a step of its own.
func (s *PostgresSpec) RenderedParameters() map[string]string {
	n := len(contract.PostgresArchiveSettings)
	if s.Backup == nil {
		n = 0
	}
	if s.PostgreSQL != nil {
		n += len(s.PostgreSQL.Parameters)
	}
	if n == 0 {
		return nil
	}
	out := make(map[string]string, n)
	if s.PostgreSQL != nil {
		for k, v := range s.PostgreSQL.Parameters {
			out[k] = v.Quoted()
		}
	}
	if s.Backup != nil {
		for k, v := range contract.PostgresArchiveSettings {
			out[k] = ParamValue(v).Quoted()
		}
	}
	return out
}
