package spec

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/cairn-dev/cairn/planner/contract"
)

// The rules of cairn validate that a JSON Schema can say, node by node.
// Each one is built from the table or the function validation uses
// (versions_table.go, sizes.go, pgparams*.go, the time zones Go embeds),
// so the two cannot drift apart; TestSchemaCorpus (cmd/cairn) and the
// property tests of schema_agree_test.go check that they agree. Patterns
// use only what RE2 (Go) and ECMA-262 with the u flag (editors) read
// alike: no lookaround, no inline flags, no \s or \w.

// Patterns of names, as k8s.io/apimachinery/pkg/util/validation checks
// them.
const (
	dnsLabel     = `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
	dnsSubdomain = dnsLabel + `(\.` + dnsLabel + `)*`
	labelName    = `[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?`
)

// refine narrows the node of one field to what validation accepts:
// the rules every kind shares, then the kind's own.
func (g *schemaGen) refine(path string, n *schemaNode) {
	switch path {
	case "metadata.name":
		n.Pattern, n.MaxLength = "^"+dnsLabel+"$", MaxNameLength
		n.PatternErrorMessage = "lowercase letters, digits and '-', starting and ending with a letter or digit"
	case "metadata.namespace":
		n.Pattern, n.MaxLength = "^("+dnsLabel+")?$", 63
		n.PatternErrorMessage = "a namespace: lowercase letters, digits and '-'"
		n.Not = &schemaNode{Enum: anys(ReservedNamespaces)}
		n.ErrorMessage = "Kubernetes' own namespaces (" + strings.Join(ReservedNamespaces, ", ") + ") never hold a database"
	case "metadata.labels":
		n.PropertyNames = labelKeyNode()
		n.AdditionalProperties = &schemaNode{Type: []string{"string", "null"}, Pattern: "^(" + labelName + ")?$", MaxLength: 63,
			PatternErrorMessage: "a label value: at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"}
	case "spec.storageClass":
		n.Pattern, n.MaxLength = "^("+dnsSubdomain+")?$", 253
		n.PatternErrorMessage = "a StorageClass name: lowercase letters, digits, '-' and '.'"
	case "spec.backup.timeZone", "spec.maintenanceWindow.timeZone":
		n.Ref, n.Type = "#/$defs/timeZone", nil
	case "spec.backup.retention.count":
		n.Minimum = num(0) // 0 is not set; the retention's anyOf wants count or maxAge
	case "spec.tls.issuerRef.name":
		n.Pattern, n.MaxLength = "^"+dnsSubdomain+"$", 253
		n.PatternErrorMessage = "an issuer name: lowercase letters, digits, '-' and '.'"
	case "spec.tls.issuerRef.kind":
		n.Enum = anys([]string{contract.IssuerKind, contract.ClusterIssuerKind})
	case "spec.tls.issuerRef.group":
		n.Pattern, n.MaxLength = "^("+dnsSubdomain+")?$", 253
		n.PatternErrorMessage = "an API group: lowercase letters, digits, '-' and '.'"
	case "spec.restoreFrom.cluster":
		n.Pattern, n.MaxLength = "^("+dnsLabel+")?$", MaxNameLength
		n.PatternErrorMessage = "a cluster name: lowercase letters, digits and '-'"
	case "spec.restoreFrom.backup":
		id := `[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}`
		if backupIDRE.String() != "^"+id+"$" {
			panic("spec: the schema's backup ID pattern differs from backupIDRE")
		}
		n.Pattern = "^(" + contract.RestoreLatest + "|" + id + ")?$"
		n.PatternErrorMessage = "a backup ID such as 20261130T020000Z-1a2b3c (cairn backup list shows them), or latest"
	}
	if g.rules != nil {
		g.rules.refineSchema(path, n)
	}
}

// refineObject adds the rules of one object that tie its fields together.
func (g *schemaGen) refineObject(path string, n *schemaNode) {
	switch {
	case path == "spec.backup.retention":
		n.AnyOf = []*schemaNode{
			{Required: []string{"count"}, Properties: map[string]*schemaNode{"count": {Type: "integer", Minimum: num(1)}}},
			{Required: []string{"maxAge"}, Properties: map[string]*schemaNode{"maxAge": {Type: "string"}}},
		}
		n.ErrorMessage = "set count (1 or more) and/or maxAge, or leave retention out to keep every backup"
	}
	if g.rules != nil {
		g.rules.refineSchemaObject(path, n)
	}
}

// kindSchema is what a kind adds to its schema beyond its tags and the
// rules every kind shares: the fields it requires, the nodes it narrows
// (after the shared rules) and the objects whose fields it ties together.
// A kind without it has the shared rules only.
type kindSchema interface {
	schemaRequires(path string) bool
	refineSchema(path string, n *schemaNode)
	refineSchemaObject(path string, n *schemaNode)
}

// requiredByKind reports fields the kind requires beyond their tags.
func (g *schemaGen) requiredByKind(path string) bool {
	return g.rules != nil && g.rules.schemaRequires(path)
}

func labelKeyNode() *schemaNode {
	reserved := []string{contract.LabelName, contract.LabelInstance, contract.LabelComponent, contract.LabelManagedBy}
	return &schemaNode{
		Pattern:             "^(" + dnsSubdomain + "/)?" + labelName + "$",
		PatternErrorMessage: "a label key: an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' and '.'",
		Not: &schemaNode{AnyOf: []*schemaNode{
			{Enum: anys(reserved)},
			{Pattern: "^" + regexp.QuoteMeta(contract.LabelPrefix)},
			{Pattern: "^[^/]{254,}/"}, // a prefix longer than a DNS subdomain may be
		}},
		ErrorMessage: "cairn sets the label keys " + strings.Join(reserved, ", ") + " and " + contract.LabelPrefix + "*; choose another key",
	}
}

// positiveQuantity is Kubernetes' quantity syntax with a mantissa that is
// not zero: cairn's quantities are all greater than zero.
const positiveQuantity = `^\+?([0-9]*[1-9][0-9]*(\.[0-9]*)?|[0-9]*\.[0-9]*[1-9][0-9]*)([KMGTPE]i|[numkMGTPE]|[eE][-+]?[0-9]+)?$`

func quantityNode() *schemaNode {
	return &schemaNode{Type: []string{"string", "integer"}, Pattern: positiveQuantity, Minimum: num(1),
		PatternErrorMessage: "a Kubernetes quantity greater than zero, such as 100Gi or 500m"}
}

// goDuration is what time.ParseDuration reads, without the sign.
const goDuration = `(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)`

func durationNode() *schemaNode {
	return &schemaNode{Type: "string", Pattern: `^([0-9]{1,4}[dw]|\+?` + goDuration + `)$`,
		PatternErrorMessage: "a duration such as 90m, 6h or 30d"}
}

// locationNode says what checkLocation accepts: s3://bucket/prefix or
// file:///path (url.Parse lower-cases the scheme and allows an empty
// query or fragment), without . or .. segments.
func locationNode() *schemaNode {
	const (
		pathChar  = `([^?#%\x00-\x1f\x7f]|%[0-9A-Fa-f]{2})`
		firstChar = `([^/?#%\x00-\x1f\x7f]|%[0-9A-Fa-f]{2})` // file:/x; file://x names a host
		tail      = `\??#?`
	)
	return &schemaNode{
		Type: "string",
		Pattern: `^([sS]3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/` + pathChar + `*)?` +
			`|[fF][iI][lL][eE]:(///` + pathChar + `+|/` + firstChar + pathChar + `*))` + tail + `$`,
		PatternErrorMessage: "s3://bucket/prefix or file:///absolute/path",
		Not: &schemaNode{AnyOf: []*schemaNode{
			{Pattern: `^[sS]3://[^/]*\.\.`},
			{Pattern: `^[^:]*:/*[^/?#]*(/[^?#]*)?/\.\.?(/|[?#]|$)`},
		}},
		ErrorMessage: "a bucket name holds no '..', and a path no . or .. segment",
	}
}

func postgresVersionNode() *schemaNode {
	var versions []any
	for _, m := range postgresMajors {
		for minor := 0; minor <= m.LastMinor; minor++ {
			if _, bad := m.Blocked[minor]; !bad {
				versions = append(versions, fmt.Sprintf("%d.%d", m.Major, minor))
			}
		}
	}
	return &schemaNode{Type: "string", Enum: versions}
}

func etcdVersionNode() *schemaNode {
	var versions []any
	for _, l := range etcdLines {
		for patch := 0; patch <= l.LastPatch; patch++ {
			if _, bad := l.Blocked[patch]; !bad {
				versions = append(versions, fmt.Sprintf("3.%d.%d", l.Minor, patch))
			}
		}
	}
	return &schemaNode{Type: "string", Enum: versions}
}

// timeZoneNode lists the zones validation accepts on every machine: those
// of the tz database Go embeds (time/tzdata), "" and null (the default,
// UTC). Validation refuses Local.
func timeZoneNode() *schemaNode {
	zones := []any{"", nil}
	for _, z := range embeddedTimeZones {
		zones = append(zones, z)
	}
	return &schemaNode{Description: "An IANA time zone such as UTC or Europe/Berlin.", Enum: zones,
		ErrorMessage: "an IANA time zone such as UTC or Europe/Berlin"}
}

// spaces are the characters strings.Fields and strings.TrimSpace split
// on, written out: \s differs between RE2 and ECMA-262.
var spaces = func() string {
	var b strings.Builder
	for r := rune(0); r <= 0x3000; r++ {
		if unicode.IsSpace(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}()

// cronNode says what Schedule.Parse accepts: robfig/cron's parser with
// an optional seconds field and descriptors, its leniencies included
// (empty list items, "*-x", leading zeros and '+'). It cannot say that a
// range's start is not after its end.
func cronNode() *schemaNode {
	ws := "[" + spaces + "]"
	number := func(alternatives string) string { return `\+?0*(` + alternatives + `)` }
	names := func(list ...string) string {
		var alt []string
		for _, n := range list {
			alt = append(alt, caseless(n))
		}
		return strings.Join(alt, "|")
	}
	field := func(value string) string {
		low := `[*?](-[^/,` + spaces + `]*)?|(` + value + `)(-(` + value + `))?`
		rng := `(` + low + `)(/\+?0*[1-9][0-9]{0,17})?`
		return `(,+|,*(` + rng + `)(,+(` + rng + `))*,*)`
	}
	minute := field(number(`[1-5]?[0-9]`))
	hour := field(number(`1?[0-9]|2[0-3]`))
	dom := field(number(`[1-9]|[12][0-9]|3[01]`))
	month := field(number(`[1-9]|1[0-2]`) + "|" + names("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))
	dow := field(number(`[0-6]`) + "|" + names("sun", "mon", "tue", "wed", "thu", "fri", "sat"))
	fields := "(" + minute + ws + "+)?" + minute + ws + "+" + hour + ws + "+" + dom + ws + "+" + month + ws + "+" + dow
	descriptors := `@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every [-+]?` + goDuration
	return &schemaNode{
		Description:         "A cron expression: 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or @hourly, @daily, @weekly, @monthly, @yearly, @every <duration>.",
		Type:                "string",
		Pattern:             "^" + ws + "*(" + descriptors + "|" + fields + ")" + ws + "*$",
		PatternErrorMessage: `a cron expression: 5 fields such as "0 2 * * *" (minute 0-59, hour 0-23, day 1-31, month 1-12 or jan-dec, weekday 0-6 or sun-sat), 6 with seconds first, or @daily and the like`,
	}
}

// caseless is a pattern matching s in any case (ECMA-262 has no inline
// flags).
func caseless(s string) string {
	var b strings.Builder
	for _, r := range s {
		if u, l := unicode.ToUpper(r), unicode.ToLower(r); u != l {
			b.WriteString("[" + string(u) + string(l) + "]")
		} else {
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return b.String()
}

func anys[T any](list []T) []any {
	out := make([]any, len(list))
	for i, v := range list {
		out[i] = v
	}
	return out
}
