package spec

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/cairn-dev/cairn/planner/spec/strictyaml"
)

// maxParamValue bounds one parameter's value.
const maxParamValue = 1024

// checkParamText refuses a value that is not one line of printable text:
// control characters (newlines, tabs, escapes) and line separators have
// no place in a setting, and would make postgresql.conf or a review hard
// to read even where the writer quotes them safely.
func checkParamText(v string) error {
	if len(v) > maxParamValue {
		return fmt.Errorf("must be one line of at most %d characters", maxParamValue)
	}
	for _, r := range v {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == unicode.ReplacementChar {
			return fmt.Errorf("must be one line of printable characters; %s holds %U", strictyaml.Quote(v), r)
		}
	}
	return nil
}

// checkValue returns why PostgreSQL would refuse value for a parameter of
// p's type, or "". It accepts a subset of what PostgreSQL does: each
// form it accepts, PostgreSQL reads the same way (no octal or hex
// integers, no unit abbreviations it does not know).
func checkValue(p pgParam, value string) string {
	var err error
	switch p.typ {
	case pgBool:
		err = checkBool(value)
	case pgEnum:
		err = checkEnum(p.enum, value)
	case pgInt, pgReal:
		err = checkNumber(p, value)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

var boolWords = []string{"on", "off", "true", "false", "yes", "no", "1", "0"}

func checkBool(v string) error {
	for _, w := range boolWords {
		if strings.EqualFold(v, w) {
			return nil
		}
	}
	return fmt.Errorf("must be a boolean (on, off, true, false, yes, no, 1, 0), got %s", strictyaml.Quote(v))
}

func checkEnum(values, v string) error {
	list := strings.Split(values, ",")
	if slicesContainFold(list, "on") && slicesContainFold(list, "off") {
		// PostgreSQL accepts every spelling of a boolean for these.
		list = append(list, boolWords...)
	}
	if slicesContainFold(list, v) {
		return nil
	}
	return fmt.Errorf("must be one of %s, got %s", strings.Join(strings.Split(values, ","), ", "), strictyaml.Quote(v))
}

func slicesContainFold(list []string, v string) bool {
	for _, w := range list {
		if strings.EqualFold(w, v) {
			return true
		}
	}
	return false
}

// numberRE is the numbers accepted: decimal, with an optional fraction,
// an exponent (for reals) and a unit after optional spaces.
var numberRE = regexp.MustCompile(`^(-?(?:0|[1-9][0-9]{0,19})(?:\.[0-9]{1,20})?)((?:[eE][-+]?[0-9]{1,3})?) *([a-zA-Z]{0,3})$`)

func checkNumber(p pgParam, v string) error {
	what := map[pgType]string{pgInt: "an integer", pgReal: "a number"}[p.typ]
	if p.unit != "" {
		what += " with an optional unit (" + strings.Join(unitNames(p.unit), ", ") + ")"
	}
	m := numberRE.FindStringSubmatch(v)
	if m == nil || (p.typ == pgInt && m[2] != "") {
		return fmt.Errorf("must be %s, got %s", what, strictyaml.Quote(v))
	}
	x, err := strconv.ParseFloat(m[1]+m[2], 64)
	if err != nil || math.IsInf(x, 0) {
		return fmt.Errorf("must be %s, got %s", what, strictyaml.Quote(v))
	}
	if m[3] != "" {
		if x, err = toBaseUnit(x, m[3], p.unit); err != nil {
			return fmt.Errorf("must be %s, got %s: %v", what, strictyaml.Quote(v), err)
		}
	}
	if p.typ == pgInt {
		x = math.RoundToEven(x) // rint, as PostgreSQL rounds
		if x > math.MaxInt32 || x < math.MinInt32 {
			return fmt.Errorf("%s is out of range", strictyaml.Quote(v))
		}
	}
	if x < p.min || x > p.max {
		return fmt.Errorf("%s is outside the valid range %s", strictyaml.Quote(v), rangeText(p))
	}
	return nil
}

func rangeText(p pgParam) string {
	f := func(x float64) string {
		if x == math.MaxFloat64 {
			return "any"
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	unit := ""
	if p.unit != "" {
		unit = " " + p.unit
	}
	return fmt.Sprintf("%s to %s%s", f(p.min), f(p.max), unit)
}

// unitConversion is one row of PostgreSQL's unit tables (guc.c): a unit a
// value may carry, and how many of the base unit it is.
type unitConversion struct {
	unit, base string
	mult       float64
}

// unitTable is PostgreSQL's memory_unit_conversion_table and
// time_unit_conversion_table (guc.c), row for row: within one base, each
// row is followed by the next smaller unit. Memory multipliers are powers
// of two; time multipliers are written as PostgreSQL writes them, so that
// they round alike.
var unitTable = []unitConversion{
	{"TB", "B", 1024 * 1024 * 1024 * 1024}, {"GB", "B", 1024 * 1024 * 1024}, {"MB", "B", 1024 * 1024}, {"kB", "B", 1024}, {"B", "B", 1},
	{"TB", "kB", 1024 * 1024 * 1024}, {"GB", "kB", 1024 * 1024}, {"MB", "kB", 1024}, {"kB", "kB", 1}, {"B", "kB", 1.0 / 1024},
	{"TB", "MB", 1024 * 1024}, {"GB", "MB", 1024}, {"MB", "MB", 1}, {"kB", "MB", 1.0 / 1024}, {"B", "MB", 1.0 / (1024 * 1024)},
	{"TB", "8kB", (1024 * 1024 * 1024) / 8}, {"GB", "8kB", (1024 * 1024) / 8}, {"MB", "8kB", 1024 / 8}, {"kB", "8kB", 1.0 / 8}, {"B", "8kB", 1.0 / 8192},

	{"d", "ms", 1000 * 60 * 60 * 24}, {"h", "ms", 1000 * 60 * 60}, {"min", "ms", 1000 * 60}, {"s", "ms", 1000}, {"ms", "ms", 1}, {"us", "ms", 1.0 / 1000},
	{"d", "s", 60 * 60 * 24}, {"h", "s", 60 * 60}, {"min", "s", 60}, {"s", "s", 1}, {"ms", "s", 1.0 / 1000}, {"us", "s", 1.0 / (1000 * 1000)},
	{"d", "min", 60 * 24}, {"h", "min", 60}, {"min", "min", 1}, {"s", "min", 1.0 / 60}, {"ms", "min", 1.0 / (1000 * 60)}, {"us", "min", 1.0 / (1000 * 1000 * 60)},
}

// toBaseUnit converts x unit to the base unit as PostgreSQL's
// convert_to_base_unit does: a fraction is rounded to the nearest
// multiple of the next smaller unit.
func toBaseUnit(x float64, unit, base string) (float64, error) {
	if base == "" {
		return 0, errors.New("this parameter takes no unit")
	}
	for i, row := range unitTable {
		if row.base != base || row.unit != unit {
			continue
		}
		v := x * row.mult
		if i+1 < len(unitTable) && unitTable[i+1].base == base {
			next := unitTable[i+1].mult
			v = math.RoundToEven(v/next) * next
		}
		return v, nil
	}
	return 0, fmt.Errorf("unknown unit %s (units are case-sensitive)", strictyaml.Quote(unit))
}

func unitNames(base string) []string {
	var out []string
	for _, row := range unitTable {
		if row.base == base {
			out = append(out, row.unit)
		}
	}
	return out
}
