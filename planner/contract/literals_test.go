package contract_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The names of the contract are spelled in this package only: every other
// product file and the test beds use the constants and functions, so the
// two sides of the contract cannot drift apart. Test files may spell a
// value to check it.
var literals = []*regexp.Regexp{
	regexp.MustCompile(`"cairn\.dev/[a-z-]+"`),
	regexp.MustCompile(`"app\.kubernetes\.io/(name|instance|component|managed-by)"`),
	regexp.MustCompile(`"-cairn(-status)?"`),
	regexp.MustCompile(`"-(runtime|member|superuser|replication|backup|rw|ro|hl|client)"`),
	regexp.MustCompile(`"(etcd|postgres|backup)\.json"`),
	regexp.MustCompile(`"(bootstrap|initial-members|initial-cluster-token|synchronous-standbys)"`),
	regexp.MustCompile(`"(backup|restore|request)\.[a-z.-]+"`),
	regexp.MustCompile(`"data-"`),
	regexp.MustCompile(`== "(fenced|replica|primary)"`),
	regexp.MustCompile(`"(EtcdCluster|PostgresCluster)"`),
	regexp.MustCompile(`"(POD_NAME|POD_NAMESPACE|CAIRN_CLUSTER|PGDATA|POSTGRES_PASSWORD|CAIRN_REPLICATION_PASSWORD)"`),
	regexp.MustCompile(`"/etc/(cairn|postgresql-cairn|podinfo)"`),
}

func TestNoContractLiteralOutsideContract(t *testing.T) {
	root := filepath.Join("..", "..")
	allowed := map[string]bool{
		// The spec API defines the kinds' names, and its reference
		// documents spell them.
		filepath.Join("planner", "spec", "etcd.go"):      true,
		filepath.Join("planner", "spec", "postgres.go"):  true,
		filepath.Join("planner", "spec", "reference.go"): true,
		// "primary" is a kind of GitHub rate limit there.
		filepath.Join("publish", "githubpr", "githubtest", "server.go"): true,
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || rel == filepath.Join("planner", "contract") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || allowed[rel] {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if code, _, _ := strings.Cut(line, "//"); code != "" {
				for _, re := range literals {
					if m := re.FindString(code); m != "" {
						t.Errorf("%s:%d: %s is a name of planner/contract; use its constant", rel, i+1, m)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
