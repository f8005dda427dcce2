package spec

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// corpusCase is one document of testdata/schema-corpus. Its first line
// says what is expected of it:
//
//	# valid: ...                both the schema and cairn validate accept it
//	# invalid: ...              both refuse it
//	# validate-only <rule>: ... the schema accepts it, cairn validate refuses
//	                            it (a rule of validateOnly)
type corpusCase struct {
	Name, Want, Rule, Doc string
}

var corpusHeader = regexp.MustCompile(`^# (valid|invalid|validate-only ([a-z-]+)): (.+)\n`)

// readCorpus reads every case of the corpus; cmd/cairn's copy of this
// function reads the same files.
func readCorpus(t *testing.T) []corpusCase {
	t.Helper()
	files, err := filepath.Glob("testdata/schema-corpus/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var out []corpusCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			m := corpusHeader.FindStringSubmatch(doc)
			if m == nil {
				t.Fatalf("%s: a case starts with # valid:, # invalid: or # validate-only RULE:, got %.60q", f, doc)
			}
			want := strings.Fields(m[1])[0]
			out = append(out, corpusCase{Name: filepath.Base(f) + ": " + m[3], Want: want, Rule: m[2], Doc: doc})
		}
	}
	return out
}

// TestSchemaCorpus runs the corpus through the schema. Whether cairn
// validate agrees, case by case, is TestSchemaCorpusAgreesWithValidate in
// cmd/cairn (validate includes the planner's rules); the rules only the
// spec package checks are checked here too.
func TestSchemaCorpus(t *testing.T) {
	cases := readCorpus(t)
	kinds := map[string]int{}
	rules := map[string]int{}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			err := schemaCheck(t, c.Doc)
			switch {
			case c.Want == "invalid" && err == nil:
				t.Errorf("the schema accepts a case marked invalid:\n%s", c.Doc)
			case c.Want != "invalid" && err != nil:
				t.Errorf("the schema refuses a case marked %s: %v", c.Want, err)
			}
			if c.Want == "valid" {
				if err := decodeOK(c.Doc); err != nil {
					t.Errorf("Decode refuses a case marked valid: %v", err)
				}
			}
		})
		for _, k := range Kinds() {
			if strings.Contains(c.Doc, "kind: \""+k+"\"") {
				kinds[k+" "+c.Want]++
			}
		}
		if c.Rule != "" {
			rules[c.Rule]++
		}
	}
	if len(cases) < 40 {
		t.Errorf("only %d cases", len(cases))
	}
	for _, k := range Kinds() {
		for _, want := range []string{"valid", "invalid", "validate-only"} {
			if kinds[k+" "+want] == 0 {
				t.Errorf("no %s case of %s", want, k)
			}
		}
	}
	var ids []string
	for _, r := range validateOnly {
		ids = append(ids, r.ID)
		if rules[r.ID] == 0 {
			t.Errorf("the validate-only rule %s has no case in the corpus", r.ID)
		}
	}
	for r := range rules {
		if !slices.Contains(ids, r) {
			t.Errorf("the corpus marks a case validate-only %s, which validateOnly (docs/spec-reference.md) does not list", r)
		}
	}
}
