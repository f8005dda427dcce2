package admission

import (
	"bytes"
	_ "embed"
)

//go:embed runtime-policy.yaml
var runtimePolicy []byte

// PolicyName names the ValidatingAdmissionPolicy and its binding.
const PolicyName = "cairn-runtime-sets-only-roles"

// RuntimePolicy is runtime-policy.yaml: the policy and its binding, a
// YAML stream of cluster-scoped objects.
func RuntimePolicy() []byte { return bytes.Clone(runtimePolicy) }
