package publish

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Read by its lines or decoded whole, a document has the same key: over
// every manifest the renderer's golden trees hold, and over documents
// written to trip the line reader.
func TestPlainKeyIsTheDecodedKey(t *testing.T) {
	var docs []string
	err := filepath.WalkDir("../renderer/testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, doc := range documents(string(data)) {
			docs = append(docs, strings.Join(doc.lines, ""))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 100 {
		t.Fatalf("only %d documents in the golden trees", len(docs))
	}
	tricky := []string{
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: db\n  namespace: prod\n",
		"kind: Service\nmetadata:\n  name: db\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n    labels:\n      name: not-this\n    name: db\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  labels:\n    name: not-this\n  name: db\n",
		"apiVersion: v1\nkind: \"Service\"\nmetadata:\n  name: db\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: 'db'\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: db, namespace: x}\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: db # a comment\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: &n db\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: !!str db\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: 123\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: true\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: null\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: |\n    db\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: db\n  name: other\n",
		"apiVersion: v1\nkind: Service\nkind: Pod\nmetadata:\n  name: db\n",
		"apiVersion : v1\nkind: Service\nmetadata:\n  name: db\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name : db\n",
		"{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {\"name\": \"db\"}}\n",
		"apiVersion: v1\nkind: Service\ndata: |\n  name: not-this\nmetadata:\n  name: db\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: db\nspec:\n  metadata:\n    name: not-this\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: db\nmetadata:\n  name: again\n",
		"apiVersion: v1\n<<: {kind: Service}\nmetadata:\n  name: db\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: d\u00e9j\u00e0\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n\tname: db\n",
		"# only a comment\n",
		"",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: db:x\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: -db\n",
		"apiVersion: v1\nkind: Role\nmetadata:\n  name: r\nrules:\n- kind: not-this\n  name: not-this\n",
		"apiVersion: v1\nsubjects:\n- kind: ServiceAccount\n  name: sa\nkind: RoleBinding\nmetadata:\n  name: rb\n",
	}
	for _, doc := range append(docs, tricky...) {
		if k, ok := plainKey(doc); ok {
			if want := decodedKey(doc); k != want {
				t.Errorf("plainKey = %q, decoded %q, of:\n%s", k, want, doc)
			}
		}
	}
	// The line reader takes the manifests kustomize writes: they are why
	// it exists.
	plain, named := 0, 0
	for _, doc := range docs {
		if decodedKey(doc) == "" {
			continue // a patch, a kustomization: no object
		}
		named++
		if _, ok := plainKey(doc); ok {
			plain++
		}
	}
	if plain < named*9/10 {
		t.Errorf("the line reader keyed %d of the %d rendered objects", plain, named)
	}
}

func BenchmarkObjectKey(b *testing.B) {
	doc := "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  labels:\n    app: db\n  name: db\n  namespace: prod\nspec:\n" + strings.Repeat("  replicas: 3\n", 200)
	for b.Loop() {
		objectKey(doc)
	}
}
