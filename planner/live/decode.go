package live

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec"
	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// MaxReplicas bounds StatefulSet counts in an observed state: far above
// any cluster cairn plans (16 members), low enough that a typo cannot make
// planning expensive.
const MaxReplicas = 1000

// Limits bound an observed-state file. It is written by machines and may
// describe a whole fleet (a cluster takes 300 to 800 bytes: 4 MiB holds
// the 5,000 clusters a repo may have), so it gets more room than a
// hand-written spec, still within a fixed budget of time and memory:
// parsing allocates up to about 125 bytes per byte read, so the densest
// 4 MiB file is refused at its 1,000,001st value for about 525 MB
// allocated, and the costliest file within the limits (1,000,000 values,
// each decoded) costs about 0.84 GB and 3 s, once (BenchmarkWorstLive).
var Limits = strictyaml.Limits{MaxBytes: 4 << 20, MaxDocuments: 2, MaxNodes: 1_000_000, MaxDepth: 32, MaxFileValues: 1_000_000}

// ReadFile reads an observed-state file: a regular file within
// Limits.MaxBytes, refused before it is read otherwise (a FIFO, a device
// such as /dev/zero, a folder, a larger file).
func ReadFile(path string) (*Snapshot, error) { return builtin.ReadFile(path) }

// ReadFile reads an observed-state file of the kinds k describes (see the
// function ReadFile).
func (k Kinds) ReadFile(path string) (*Snapshot, error) {
	data, err := spec.ReadBounded(spec.OS, path, Limits.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("read live state %s: %w", spec.DisplayPath(path), err)
	}
	return k.Decode(path, data)
}

// Decode decodes and checks an observed-state document. Errors name the
// file, line, column and field.
func Decode(file string, data []byte) (*Snapshot, error) { return builtin.Decode(file, data) }

// Decode decodes and checks an observed-state document of the kinds k
// describes (see the function Decode).
func (k Kinds) Decode(file string, data []byte) (*Snapshot, error) {
	docs, errs := strictyaml.Parse(file, data, Limits)
	if len(errs) > 0 {
		return nil, errs.Err()
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s: a live-state file holds exactly one document, found %d", file, len(docs))
	}
	var s Snapshot
	pos, errs := strictyaml.Decode(docs[0], &s, Limits)
	if len(errs) > 0 {
		return nil, errs.Err()
	}
	c := &checker{file: file, pos: pos, kinds: k}
	c.snapshot(&s)
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	return &s, nil
}

type checker struct {
	kinds Kinds
	file  string
	pos   strictyaml.Positions
	errs  strictyaml.ErrorList
}

// maxProblems bounds the problems reported for one file.
const maxProblems = 100

func (c *checker) fail(path, format string, args ...any) {
	switch {
	case len(c.errs) > maxProblems:
		return
	case len(c.errs) == maxProblems:
		format, args = "more than %d problems; stopping here", []any{maxProblems}
	}
	p := c.pos.Lookup(path)
	c.errs = append(c.errs, &strictyaml.Error{File: c.file, Line: p.Line, Col: p.Col, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) snapshot(s *Snapshot) {
	if s.APIVersion != APIVersion || s.Kind != Kind {
		c.fail("", "apiVersion and kind must be %q and %q", APIVersion, Kind)
	}
	seen := map[string]bool{}
	for i := range s.Clusters {
		cl := &s.Clusters[i]
		path := fmt.Sprintf("clusters[%d]", i)
		if seen[cl.Kind+"/"+cl.Name] {
			c.fail(path+".name", "cluster %s/%s is listed twice", cl.Kind, cl.Name)
		}
		seen[cl.Kind+"/"+cl.Name] = true
		c.cluster(cl, path)
	}
}

func (c *checker) cluster(cl *Cluster, path string) {
	k, ok := c.kinds[cl.Kind]
	if !ok {
		c.fail(path+".kind", "unknown kind %s; valid: %s", strictyaml.Quote(cl.Kind), strings.Join(slices.Sorted(maps.Keys(c.kinds)), ", "))
		return
	}
	valid := k.Roles
	if errs := validation.IsDNS1123Label(cl.Name); len(errs) > 0 {
		c.fail(path+".name", "%s is not a valid name: %s", strictyaml.Quote(cl.Name), errs[0])
		return
	}
	sts := cl.StatefulSet
	if sts.Replicas < 0 || sts.UpdatePartition < 0 || sts.Replicas > MaxReplicas || sts.UpdatePartition > MaxReplicas {
		c.fail(path+".statefulSet", "replicas and updatePartition must be 0 to %d", MaxReplicas)
	}
	if _, err := resource.ParseQuantity(cl.Storage); cl.Storage != "" && err != nil {
		c.fail(path+".storage", "must be a Kubernetes quantity such as 100Gi, got %s", strictyaml.Quote(cl.Storage))
	}
	if r := sts.Resources; r != nil {
		for _, f := range [][2]string{{"requests.cpu", r.Requests.CPU}, {"requests.memory", r.Requests.Memory}, {"limits.cpu", r.Limits.CPU}, {"limits.memory", r.Limits.Memory}} {
			field, q := f[0], f[1]
			if _, err := resource.ParseQuantity(q); q != "" && err != nil {
				c.fail(path+".statefulSet.resources."+field, "must be a Kubernetes quantity such as 500m or 4Gi, got %s", strictyaml.Quote(q))
			}
		}
	}
	c.etcdSpace(cl, path)
	c.upgradeCheck(cl.UpgradeCheck, path+".upgradeCheck")
	ordinals := map[int]bool{}
	for j, m := range cl.Members {
		mp := fmt.Sprintf("%s.members[%d]", path, j)
		ord, ok := contract.MemberOrdinal(cl.Name, m.Name)
		if !ok {
			c.fail(mp+".name", "member %s must be named %s-<ordinal>", strictyaml.Quote(m.Name), cl.Name)
			continue
		}
		if ordinals[ord] {
			c.fail(mp+".name", "member %s is listed twice", m.Name)
		}
		ordinals[ord] = true
		if !slices.Contains(valid, m.Role) {
			c.fail(mp+".role", "role %s is not one of %v for %s", strictyaml.Quote(string(m.Role)), valid, cl.Kind)
		}
	}
	slices.SortFunc(cl.Members, func(a, b Member) int { return a.Ordinal() - b.Ordinal() })
}

// etcdSpace checks an etcd cluster's space (a quota in bytes, named
// alarms, sizes that are not negative) and the modes a rendered config
// sets (network, TLS and its issuer).
func (c *checker) etcdSpace(cl *Cluster, path string) {
	if _, ok := contract.NetworkMode(cl.Network); !ok {
		c.fail(path+".network", "must be one of %s, got %s", strings.Join(contract.NetworkModes, ", "), strictyaml.Quote(cl.Network))
	}
	if _, ok := contract.TLSMode(cl.TLS); !ok {
		c.fail(path+".tls", "must be one of %s, got %s", strings.Join(contract.TLSModes, ", "), strictyaml.Quote(cl.TLS))
	}
	if i := cl.TLSIssuer; i != nil {
		if errs := validation.IsDNS1123Subdomain(i.Name); len(errs) > 0 {
			c.fail(path+".tlsIssuer.name", "%s is not a valid issuer name: %s", strictyaml.Quote(i.Name), errs[0])
		}
		if i.Kind != contract.IssuerKind && i.Kind != contract.ClusterIssuerKind {
			c.fail(path+".tlsIssuer.kind", "must be %s or %s, got %s", contract.IssuerKind, contract.ClusterIssuerKind, strictyaml.Quote(i.Kind))
		}
	}
	if n, err := strconv.ParseInt(cl.SpaceQuota, 10, 64); cl.SpaceQuota != "" && (err != nil || n <= 0) {
		c.fail(path+".spaceQuota", "must be a number of bytes greater than zero, got %s", strictyaml.Quote(cl.SpaceQuota))
	}
	for i, a := range cl.Alarms {
		if a.Alarm == "" {
			c.fail(fmt.Sprintf("%s.alarms[%d].alarm", path, i), "names the alarm, such as NOSPACE or CORRUPT")
		}
	}
	for j, m := range cl.Members {
		if m.DBSize < 0 || m.DBSizeInUse < 0 || m.SpaceQuota < 0 || m.DBSizeInUse > m.DBSize {
			c.fail(fmt.Sprintf("%s.members[%d]", path, j), "dbSize, dbSizeInUse and spaceQuota are bytes, not negative, and dbSizeInUse is at most dbSize")
		}
	}
}

// upgradeCheck bounds a major upgrade's pre-flight check: majors cairn
// accepts, a known result, a reason within a termination message.
func (c *checker) upgradeCheck(u *UpgradeCheck, path string) {
	if u == nil {
		return
	}
	if u.From < 1 || u.To <= u.From || u.To > 100 {
		c.fail(path, "from (%d) and to (%d) must be PostgreSQL majors, to the later", u.From, u.To)
	}
	if u.Result != "" && u.Result != UpgradeCheckPassed && u.Result != UpgradeCheckFailed {
		c.fail(path+".result", "must be %s, %s or empty, got %s", UpgradeCheckPassed, UpgradeCheckFailed, strictyaml.Quote(u.Result))
	}
	if _, err := resource.ParseQuantity(u.Scratch); u.Scratch != "" && err != nil {
		c.fail(path+".scratch", "must be a Kubernetes quantity such as 100Gi, got %s", strictyaml.Quote(u.Scratch))
	}
	if u.ScratchClaim && u.Scratch == "" {
		c.fail(path+".scratch", "must be set when scratchClaim is: a claim needs a size")
	}
	if u.ScratchClass != "" && !u.ScratchClaim {
		c.fail(path+".scratchClass", "is set without scratchClaim: only a claim has a StorageClass")
	}
	if errs := validation.IsDNS1123Subdomain(u.ScratchClass); u.ScratchClass != "" && len(errs) > 0 {
		c.fail(path+".scratchClass", "must be a StorageClass name (%s), got %s", strings.Join(errs, "; "), strictyaml.Quote(u.ScratchClass))
	}
	if len(u.Reason) > contract.TerminationMessageMax {
		c.fail(path+".reason", "is %d bytes; at most %d", len(u.Reason), contract.TerminationMessageMax)
	}
}
