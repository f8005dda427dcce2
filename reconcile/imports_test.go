package reconcile

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The loop knows no kind: it imports none of what does (doc.go).
func TestImportsNoKindsPackage(t *testing.T) {
	forbidden := []string{
		"github.com/cairn-dev/cairn/planner", "github.com/cairn-dev/cairn/planner/gates",
		"github.com/cairn-dev/cairn/planner/observe", "github.com/cairn-dev/cairn/runtime",
		"github.com/cairn-dev/cairn/testbed", "github.com/cairn-dev/cairn/cmd", "k8s.io/client-go",
	}
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == bad || (bad != "github.com/cairn-dev/cairn/planner" && strings.HasPrefix(path, bad+"/")) {
					t.Errorf("%s imports %s", f, path)
				}
			}
		}
	}
}
