package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/cairn-dev/cairn/planner/contract"
)

// ClusterRef names the cluster a plan is for.
type ClusterRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
}

// String returns "Kind/name".
func (r ClusterRef) String() string { return r.Kind + "/" + r.Name }

// Status sums up a plan.
type Status string

// The statuses of a plan.
const (
	// StatusConverged: the cluster runs what its spec asks for.
	StatusConverged Status = "Converged"
	// StatusPlanned: there are steps to take; the first is next.
	StatusPlanned Status = "Planned"
	// StatusWaiting: a change is in flight; the plan waits for the gates in
	// Waiting before it plans anything more.
	StatusWaiting Status = "Waiting"
	// StatusRefused: the spec asks for something a rule forbids; nothing
	// is planned until the spec is fixed.
	StatusRefused Status = "Refused"
)

// Plan is the plan for one cluster.
type Plan struct {
	Cluster ClusterRef `json:"cluster"`
	// ID identifies the plan: the cluster, the spec it was made for and its
	// steps. Re-planning the same change gives the same ID.
	ID string `json:"id"`
	// SpecFingerprint and ObservedFingerprint are sha256 digests of the
	// defaulted spec and of the observed state the plan was computed from.
	SpecFingerprint     string `json:"specFingerprint"`
	ObservedFingerprint string `json:"observedFingerprint"`
	Status              Status `json:"status"`
	// Baseline is what runs when the plan was made, as the rendered
	// manifests set it; nil for a cluster that does not exist yet. The
	// renderer renders it as the base the step overlays patch.
	Baseline *Baseline `json:"baseline,omitempty"`
	// Waiting lists what must become true before the next step can be
	// planned, when Status is Waiting.
	Waiting  []Gate    `json:"waiting,omitempty"`
	Steps    []Step    `json:"steps"`
	Refusals []Refusal `json:"refusals"`
	// Notes say what the spec asks that no step changes, and why: a
	// field read only when the cluster is created, set on one that runs.
	// They change neither the status nor the steps.
	Notes []Note `json:"notes,omitempty"`
}

// Note is a spec field the plan leaves as it is, with why.
type Note struct {
	// Field is the spec field, for example "spec.restoreFrom".
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Baseline holds the settings of a running cluster that steps change.
type Baseline struct {
	Replicas        int    `json:"replicas"`
	UpdatePartition int    `json:"updatePartition"`
	Version         string `json:"version"`
	// Storage is the size of the members' volumes; TemplateStorage the
	// size in the StatefulSet's volumeClaimTemplates, which cannot change
	// after creation (grown volumes are rendered as PVCs of their own).
	Storage             string          `json:"storage"`
	TemplateStorage     string          `json:"templateStorage"`
	Backup              *BackupSettings `json:"backup,omitempty"`
	SynchronousStandbys int             `json:"synchronousStandbys,omitempty"`
	// UpgradeFrom is the PostgreSQL major of the template's pg_upgrade
	// init container, kept after a major upgrade; 0 when there is none.
	UpgradeFrom int `json:"upgradeFrom,omitempty"`
	// Resources are the database container's requests and limits in the
	// pod template; nil when none are set.
	Resources *contract.Resources `json:"resources,omitempty"`
	// StorageClass is the volumeClaimTemplates' storage class.
	StorageClass string `json:"storageClass,omitempty"`
	// Images are the pod template's images by container name.
	Images map[string]string `json:"images,omitempty"`
	// TemplateRevision is the pod template's revision annotation
	// (contract.AnnotationTemplateRevision); empty when there is none.
	TemplateRevision string `json:"templateRevision,omitempty"`
	// Parameters are the PostgreSQL parameters the rendered config sets,
	// as written there; ConfigRevision that config's revision.
	Parameters     map[string]string `json:"parameters,omitempty"`
	ConfigRevision string            `json:"configRevision,omitempty"`
	// Compaction is the etcd compaction policy the rendered config sets;
	// nil when it sets none. SpaceQuota is the etcd space quota it sets,
	// in bytes; empty when it sets none (etcd's default).
	Compaction *CompactionSettings `json:"compaction,omitempty"`
	SpaceQuota string              `json:"spaceQuota,omitempty"`
	// TLS is the TLS mode the rendered config sets
	// (contract.TLSModes); empty for off.
	TLS string `json:"tls,omitempty"`
	// TLSIssuer is the cert-manager issuer of the certificates; nil when
	// the runtime issues them.
	TLSIssuer *contract.IssuerRef `json:"tlsIssuer,omitempty"`
	// Network is the network mode the rendered config sets
	// (contract.NetworkModes); empty for open.
	Network string `json:"network,omitempty"`
	// ReadOnlyRoot: the pod template's containers have read-only root
	// filesystems.
	ReadOnlyRoot bool `json:"readOnlyRootFilesystem,omitempty"`
	// RuntimeReadOnlyRoot: the runtime Deployment's container has a
	// read-only root filesystem.
	RuntimeReadOnlyRoot bool `json:"runtimeReadOnlyRootFilesystem,omitempty"`
	// RuntimeNoMemoryLimit: the runtime Deployment's container has no
	// memory request or limit (rendered before cairn set them).
	RuntimeNoMemoryLimit bool `json:"runtimeNoMemoryLimit,omitempty"`
	// UpgradeCheck is the pre-flight check Job of a major upgrade the
	// manifests hold (a merged PostgresUpgradeCheck step's, until the
	// upgrade's step removes it); nil when there is none.
	UpgradeCheck *UpgradeCheckJob `json:"upgradeCheck,omitempty"`
	// SwitchoverServed is the spec.switchover request the manifests
	// record as served (contract.KeySwitchoverServed); empty for none.
	SwitchoverServed string `json:"switchoverServed,omitempty"`
}

// Refusal is a spec change a rule forbids.
type Refusal struct {
	// Rule names the rule, for example "storage-shrink".
	Rule string `json:"rule"`
	// Field is the spec field at fault, for example "spec.storage".
	Field string `json:"field,omitempty"`
	// Reason says what is wrong and what would be allowed.
	Reason string `json:"reason"`
}

// List is the output of `cairn plan -o json`.
type List struct {
	Plans []Plan `json:"plans"`
}

var stepIDRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$`)

// ValidStepID reports whether id can name a step: lowercase letters,
// digits, '.' and '-', at most 63 characters, so that it is safe in a
// branch name, a file path and a Kubernetes label.
func ValidStepID(id string) bool { return stepIDRE.MatchString(id) }

// Validate checks a plan read from outside: known kinds, one parameter
// struct per step matching its kind, valid and unique step IDs.
func (p *Plan) Validate() error {
	seen := map[string]bool{}
	for i, s := range p.Steps {
		if !ValidStepID(s.ID) {
			return fmt.Errorf("plan %s: steps[%d]: invalid step id %q", p.Cluster, i, s.ID)
		}
		if seen[s.ID] {
			return fmt.Errorf("plan %s: steps[%d]: duplicate step id %q", p.Cluster, i, s.ID)
		}
		seen[s.ID] = true
		if err := s.Params.check(s.Kind); err != nil {
			return fmt.Errorf("plan %s: step %s: %w", p.Cluster, s.ID, err)
		}
	}
	return nil
}

// Fingerprint returns "sha256:" and the hex digest of v's JSON encoding.
// encoding/json sorts map keys, so equal values give equal fingerprints.
func Fingerprint(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("plan: fingerprint of unencodable value: %v", err))
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ComputeID derives a plan ID from its cluster, spec fingerprint and
// steps (their IDs, kinds, parameters and flags; not the policies'
// decisions, which change with the time): 12 hex digits.
func ComputeID(ref ClusterRef, specFingerprint string, steps []Step) string {
	type key struct {
		ID         string `json:"id"`
		Kind       Kind   `json:"kind"`
		Params     Params `json:"params"`
		Disruptive bool   `json:"disruptive"`
		Reversible bool   `json:"reversible"`
	}
	keys := make([]key, len(steps))
	for i, s := range steps {
		keys[i] = key{s.ID, s.Kind, s.Params, s.Disruptive, s.Reversible}
	}
	sum := sha256.Sum256([]byte(ref.String() + "\n" + specFingerprint + "\n" + Fingerprint(keys)))
	return hex.EncodeToString(sum[:6])
}
