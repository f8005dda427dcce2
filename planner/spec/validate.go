package spec

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // time zones resolve the same on every machine

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cairn-dev/cairn/planner/contract"
	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// MaxNameLength is the longest cluster name: a StatefulSet's pods carry a
// controller-revision-hash label of the name plus 11 characters, and label
// values stop at 63.
const MaxNameLength = 52

type Validator struct {
	src  *Source
	errs ErrorList
}

func (v *Validator) Fail(path, format string, args ...any) {
	line, col := v.src.Position(path)
	v.errs = append(v.errs, &Error{File: v.src.File, Line: line, Col: col, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func validate(c Document) ErrorList {
	v := &Validator{src: c.Source()}
	v.required(reflect.ValueOf(c).Elem(), "")
	if len(v.errs) > 0 {
		return v.errs
	}
	c.Validate(v)
	v.errs.Sort()
	return v.errs
}

// required reports fields tagged schema:"required" that were not written,
// inside every struct that was.
func (v *Validator) required(rv reflect.Value, path string) {
	t := rv.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		p := name
		if path != "" {
			p = path + "." + name
		}
		required := slices.Contains(strings.Split(f.Tag.Get("schema"), ","), "required")
		if !v.src.Has(p) {
			if required {
				v.Fail(path, "missing required field %q", name)
			}
			continue
		}
		fv := rv.Field(i)
		if required && fv.IsZero() && (fv.Kind() == reflect.String || fv.Kind() == reflect.Pointer) {
			// Written, but null or "": the decoder leaves it unset.
			v.Fail(p, "required; it cannot be empty")
			continue
		}
		if fv.Kind() == reflect.Pointer && !fv.IsNil() {
			fv = fv.Elem()
		}
		if fv.Kind() == reflect.Struct {
			v.required(fv, p)
		}
	}
}

func (v *Validator) Meta(m ObjectMeta) {
	if errs := validation.IsDNS1123Label(m.Name); len(errs) > 0 {
		v.Fail("metadata.name", "%s is not a valid name: %s; use lowercase letters, digits and '-', starting and ending with a letter or digit", strictyaml.Quote(m.Name), errs[0])
	} else if len(m.Name) > MaxNameLength {
		v.Fail("metadata.name", "%s is %d characters; the limit is %d (pod labels carry the name plus a hash and stop at 63)", strictyaml.Quote(m.Name), len(m.Name), MaxNameLength)
	}
	if m.Namespace != "" {
		if errs := validation.IsDNS1123Label(m.Namespace); len(errs) > 0 {
			v.Fail("metadata.namespace", "%s is not a valid namespace: %s", strictyaml.Quote(m.Namespace), errs[0])
		} else if slices.Contains(ReservedNamespaces, m.Namespace) {
			v.Fail("metadata.namespace", "%s is Kubernetes' own namespace; a database never runs there", strictyaml.Quote(m.Namespace))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m.Labels)) {
		p := strictyaml.MapPath("metadata.labels", k)
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			v.Fail(p, "label key %s is not valid: %s", strictyaml.Quote(k), errs[0])
		} else if reservedLabel(k) {
			v.Fail(p, "label key %s is set by cairn (its Services and runtime select on it); choose another key", strictyaml.Quote(k))
		}
		if errs := validation.IsValidLabelValue(m.Labels[k]); len(errs) > 0 {
			v.Fail(p, "label value %s is not valid: %s", strictyaml.Quote(m.Labels[k]), errs[0])
		}
	}
}

// issuer checks spec.tls.issuerRef: a name and group Kubernetes accepts,
// one of cert-manager's two issuer kinds.
func (v *Validator) issuer(r IssuerRef) {
	if errs := validation.IsDNS1123Subdomain(r.Name); len(errs) > 0 {
		v.Fail("spec.tls.issuerRef.name", "%s is not a valid issuer name: %s", strictyaml.Quote(r.Name), errs[0])
	}
	if r.Kind != "" && r.Kind != contract.IssuerKind && r.Kind != contract.ClusterIssuerKind {
		v.Fail("spec.tls.issuerRef.kind", "must be %s or %s, got %s", contract.IssuerKind, contract.ClusterIssuerKind, strictyaml.Quote(r.Kind))
	}
	if r.Group != "" {
		if errs := validation.IsDNS1123Subdomain(r.Group); len(errs) > 0 {
			v.Fail("spec.tls.issuerRef.group", "%s is not a valid API group: %s", strictyaml.Quote(r.Group), errs[0])
		}
	}
}

func (v *Validator) Common(c Common, r *Resources) {
	if q, err := c.Storage.Parse(); c.Storage != "" && err == nil && (q.Cmp(MinStorage) < 0 || q.Cmp(MaxStorage) > 0) {
		v.Fail("spec.storage", "each member's volume must be %s to %s, got %s", MinStorage.String(), MaxStorage.String(), c.Storage)
	}
	if c.StorageClass != "" {
		if errs := validation.IsDNS1123Subdomain(c.StorageClass); len(errs) > 0 {
			v.Fail("spec.storageClass", "%s is not a valid StorageClass name: %s", strictyaml.Quote(c.StorageClass), errs[0])
		}
	}
	v.resources(r)
	if c.TLSIssuer != nil {
		v.issuer(*c.TLSIssuer)
	}
	if b := c.Backup; b != nil {
		v.timeZone("spec.backup.timeZone", b.TimeZone)
		if err := b.Schedule.CheckFires(); err != nil {
			v.Fail("spec.backup.schedule", "%v", err)
		}
		if r := b.Retention; r != nil {
			if r.Count < 0 || (r.Count == 0 && r.MaxAge == "") {
				v.Fail("spec.backup.retention", "set count (1 or more) and/or maxAge, or leave retention out to keep every backup")
			}
			if d, err := r.MaxAge.Parse(); r.MaxAge != "" && err == nil && d < time.Hour {
				v.Fail("spec.backup.retention.maxAge", "must be at least 1h, got %s", r.MaxAge)
			}
		}
	}
	if r := c.RestoreFrom; r != nil {
		if r.Cluster != "" {
			if err := CheckName(r.Cluster); err != nil {
				v.Fail("spec.restoreFrom.cluster", "%v", err)
			}
		}
		if r.Backup != "" && r.Backup != contract.RestoreLatest && !backupIDRE.MatchString(r.Backup) {
			v.Fail("spec.restoreFrom.backup", "%s is not a backup ID such as 20261130T020000Z-1a2b3c (cairn backup list shows them), nor latest", strictyaml.Quote(r.Backup))
		}
		if t := r.TargetTime; t != "" && t != contract.RestoreLatest {
			if _, err := time.Parse(time.RFC3339Nano, t); err != nil {
				v.Fail("spec.restoreFrom.targetTime", "%s is not an RFC 3339 time such as 2026-11-30T14:05:00Z, nor latest", strictyaml.Quote(t))
			}
		}
		if foreign, own := ForeignBucket(c.Backup, r.StorageLocation); foreign && !r.TrustForeignBucket {
			v.Fail("spec.restoreFrom.storageLocation", "%s is not the cluster's own bucket (%s): the new cluster's data, roles and passwords would come from whoever can write there. "+
				"If that is meant, say so with trustForeignBucket: true under restoreFrom, which the create step's pull request shows for review", strictyaml.Quote(string(r.StorageLocation)), own)
		}
	}
	if w := c.MaintenanceWindow; w != nil {
		v.timeZone("spec.maintenanceWindow.timeZone", w.TimeZone)
		if err := w.Schedule.CheckFires(); err != nil {
			v.Fail("spec.maintenanceWindow.schedule", "%v", err)
		}
		if d, err := w.Duration.Parse(); err == nil && d > 7*24*time.Hour {
			v.Fail("spec.maintenanceWindow.duration", "must be at most 7d, got %s", w.Duration)
		}
	}
}

func (v *Validator) resources(r *Resources) {
	if r == nil || r.Requests == nil || r.Limits == nil {
		return
	}
	check := func(name string, req, lim Quantity) {
		if req != "" && lim != "" && req.Cmp(lim) > 0 {
			v.Fail("spec.resources.limits."+name, "limit %s is below the request %s", lim, req)
		}
	}
	check("cpu", r.Requests.CPU, r.Limits.CPU)
	check("memory", r.Requests.Memory, r.Limits.Memory)
}

func (v *Validator) timeZone(path, tz string) {
	if tz == "Local" {
		v.Fail(path, "Local depends on the machine; name a zone such as UTC or Europe/Berlin")
		return
	}
	if _, err := time.LoadLocation(tz); err != nil {
		v.Fail(path, "%s is not an IANA time zone such as UTC or Europe/Berlin", strictyaml.Quote(tz))
	}
}

// ReservedNamespaces are Kubernetes' own namespaces, which no spec may
// target.
var ReservedNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// reservedLabel reports label keys cairn sets on what it renders: the
// selector labels and the runtime's role label.
func reservedLabel(k string) bool {
	switch k {
	case contract.LabelName, contract.LabelInstance, contract.LabelComponent, contract.LabelManagedBy:
		return true
	}
	return strings.HasPrefix(k, contract.LabelPrefix)
}

// backupIDRE matches the IDs of cairn's backups.
var backupIDRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}$`)

// CheckName checks a cluster name given outside a spec (a command's
// argument) as metadata.name is checked, before it reaches an object
// key, a path or an API call.
func CheckName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("cluster name %s is not valid: %s", strictyaml.Quote(name), errs[0])
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("cluster name %s is %d characters; the limit is %d", strictyaml.Quote(name), len(name), MaxNameLength)
	}
	return nil
}
