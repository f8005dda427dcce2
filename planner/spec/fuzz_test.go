package spec

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzDecode checks that Decode never panics, that every cluster it
// returns has a valid name, and that it is deterministic: the same input
// gives the same clusters and the same error text.
//
// Seeds are the reference and valid documents, the hostile cases small
// enough to mutate, and testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	for _, doc := range ReferenceDocuments {
		f.Add([]byte(doc))
	}
	f.Add([]byte(ReferenceDocuments[PostgresKind] + "---\n" + ReferenceDocuments[EtcdKind]))
	for _, doc := range validDocuments {
		f.Add([]byte(doc))
	}
	for _, c := range hostileCases() {
		if len(c.in) <= 16<<10 {
			f.Add([]byte(c.in))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := Decode("f.yaml", data)
		for _, c := range cs {
			name := c.Ref().Name
			if errs := validation.IsDNS1123Label(name); len(errs) > 0 || len(name) > MaxNameLength {
				t.Fatalf("cluster with invalid name %q accepted", name)
			}
			if c.Source().File != "f.yaml" {
				t.Fatalf("cluster %s from file %q", name, c.Source().File)
			}
		}
		again, err2 := Decode("f.yaml", data)
		if errText(err) != errText(err2) {
			t.Fatalf("errors differ between runs:\n%v\n---\n%v", err, err2)
		}
		if !reflect.DeepEqual(cs, again) {
			t.Fatalf("clusters differ between runs:\n%+v\n---\n%+v", cs, again)
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
