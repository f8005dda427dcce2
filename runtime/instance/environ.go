package instance

import (
	"os"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/planner/contract"
)

// secretEnv are the variables of the instance manager's environment that
// hold secrets: the database passwords and the backup store's
// credentials. The instance manager reads them; the database servers and
// the programs it runs never get them (a program that needs a password
// gets it in its own extra variables, PGPASSWORD for one connection).
var secretEnv = []string{
	contract.EnvSuperuserPassword, contract.EnvReplicationPassword,
	"PGPASSWORD", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID",
}

// ChildEnv is the environment of a program the instance manager starts:
// its own without the secrets, then extra.
func ChildEnv(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !isSecretEnv(name) {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// SecretEnv lists the variables ChildEnv leaves out.
func SecretEnv() []string { return slices.Clone(secretEnv) }

func isSecretEnv(name string) bool {
	for _, s := range secretEnv {
		if name == s {
			return true
		}
	}
	return false
}
