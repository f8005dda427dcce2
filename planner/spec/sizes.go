package spec

// The member counts cairn runs. The planner refuses others
// (planner/rules.go: postgres-instances-range, etcd-size-range,
// etcd-size-even) and the JSON Schemas carry the same bounds, so an
// editor refuses what cairn validate refuses.
const (
	MaxPostgresInstances = 16
	MaxEtcdSize          = 7
)

// EtcdSizes are the sizes an etcd spec may ask for: odd, 1 to
// MaxEtcdSize. An even size tolerates no more failures than the odd
// size below it; even sizes occur only between the steps of a plan.
func EtcdSizes() []int {
	var out []int
	for n := 1; n <= MaxEtcdSize; n += 2 {
		out = append(out, n)
	}
	return out
}
