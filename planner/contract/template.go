package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
)

// Resources are the compute requests and limits of a member's database
// container, as the manifests set them and the pods run them: Kubernetes
// quantities as written ("500m", "4Gi"); empty means unset.
type Resources struct {
	Requests ResourceList `json:"requests,omitempty"`
	Limits   ResourceList `json:"limits,omitempty"`
}

// ResourceList is CPU and memory.
type ResourceList struct {
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
}

// IsZero reports whether nothing is set.
func (r Resources) IsZero() bool { return r == Resources{} }

// AnnotationTemplateRevision, on the pod template of a member StatefulSet
// and so on every pod created from it, names the revision of what a
// rolling restart step changed in the template: its resources and the
// PostgreSQL parameters that only take effect at a restart. A changed
// value is what makes the StatefulSet controller restart the members at
// or above the partition; a pod's value says which revision it runs.
// Absent until a cluster's first rolling restart.
const AnnotationTemplateRevision = "cairn.dev/template-revision"

// PostgreSQL config revisions. The rendered postgresql.conf sets the
// placeholder parameter ConfigRevisionParameter to a hash of the spec's
// parameters; the cairn ConfigMap repeats it under KeyConfigRevision. A
// member runs the rendered config once current_setting() of the
// placeholder equals it and pg_settings shows nothing pending a restart.
const (
	ConfigRevisionParameter = "cairn.config_revision"
	KeyConfigRevision       = "postgres.config-revision"
	// PostgresParametersHeader starts the spec's parameters in the
	// rendered postgresql.conf, one "name = value" line each up to the
	// revision line or the end; the observer reads them back.
	PostgresParametersHeader = "# spec.postgresql.parameters"
)

// StatusKeyPostgresConfig, in the status ConfigMap, holds a
// PostgresConfigStatus.
const StatusKeyPostgresConfig = "postgres-config.json"

// PostgresConfigStatus is what the runtime reports of the configuration
// each PostgreSQL member runs.
type PostgresConfigStatus struct {
	// ObservedAt is when the runtime last asked the members (RFC 3339).
	ObservedAt string                          `json:"observedAt"`
	Members    map[string]PostgresMemberConfig `json:"members"`
}

// PostgresMemberConfig is one member's configuration in effect.
type PostgresMemberConfig struct {
	// Revision is the member's current_setting of ConfigRevisionParameter:
	// the rendered config it last loaded; empty before the first revision.
	Revision string `json:"revision,omitempty"`
	// PendingRestart lists the parameters whose file value waits for a
	// restart (pg_settings.pending_restart), sorted.
	PendingRestart []string `json:"pendingRestart,omitempty"`
	// TLS: the runtime reached the member over TLS and the member proved
	// itself with the cluster's server certificate (verify-full).
	TLS bool `json:"tls,omitempty"`
}

// ParsePostgresConfigStatus reads the status ConfigMap's key; empty data
// is an empty status.
func ParsePostgresConfigStatus(data string) (PostgresConfigStatus, error) {
	var st PostgresConfigStatus
	if data == "" {
		return st, nil
	}
	if err := json.Unmarshal([]byte(data), &st); err != nil {
		return st, fmt.Errorf("postgres config status: %w", err)
	}
	return st, nil
}

// ConfigRevisionOf is the config revision of a set of parameters (name to
// value as rendered): a short hash, the same for the same parameters.
func ConfigRevisionOf(params map[string]string) string {
	return revision("config", params)
}

// ConfigRevisionWithTLS is the config revision of parameters rendered
// with TLS mode tls: ConfigRevisionOf(params) while TLS is off, so
// configs rendered before TLS keep their revision.
func ConfigRevisionWithTLS(params map[string]string, tls string) string {
	if !TLSOn(tls) {
		return ConfigRevisionOf(params)
	}
	return revision("config", params, map[string]string{KeyTLS: tls})
}

// TemplateRevisionOf is the template revision of a rolling restart that
// brings these resources and these restart-only parameters.
func TemplateRevisionOf(r Resources, restartParams map[string]string) string {
	return revision("template", map[string]string{
		"requests.cpu": r.Requests.CPU, "requests.memory": r.Requests.Memory,
		"limits.cpu": r.Limits.CPU, "limits.memory": r.Limits.Memory,
	}, restartParams)
}

func revision(kind string, sets ...map[string]string) string {
	h := sha256.New()
	h.Write([]byte(kind))
	for _, m := range sets {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(h, "\x00%s=%s", k, m[k])
		}
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
