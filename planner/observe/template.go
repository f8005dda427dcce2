package observe

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/cairn-dev/cairn/planner/contract"
)

// resourcesOf reads a container's requests and limits; nil when none are
// set.
func resourcesOf(r corev1.ResourceRequirements) *contract.Resources {
	get := func(l corev1.ResourceList, name corev1.ResourceName) string {
		if q, ok := l[name]; ok {
			return q.String()
		}
		return ""
	}
	out := contract.Resources{
		Requests: contract.ResourceList{CPU: get(r.Requests, corev1.ResourceCPU), Memory: get(r.Requests, corev1.ResourceMemory)},
		Limits:   contract.ResourceList{CPU: get(r.Limits, corev1.ResourceCPU), Memory: get(r.Limits, corev1.ResourceMemory)},
	}
	if out.IsZero() {
		return nil
	}
	return &out
}

// parameters reads the spec's parameters back from a rendered
// postgresql.conf: the "name = value" lines after
// contract.PostgresParametersHeader, values as written; nil when there
// are none. The revision line is not a spec parameter.
func parameters(conf string) map[string]string {
	_, rest, found := strings.Cut(conf, contract.PostgresParametersHeader+"\n")
	if !found {
		return nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(rest, "\n") {
		name, value, ok := strings.Cut(line, " = ")
		if !ok || name == contract.ConfigRevisionParameter {
			continue
		}
		out[name] = value
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
