package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/testbed/gitbed"
)

// noKubeconfig makes the test's environment name no cluster: no
// $KUBECONFIG, no ~/.kube/config, not in a pod.
func noKubeconfig(t *testing.T) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
}

// TestExitCodesAreTheSameForTheSameMistake runs each mistake through
// every command it applies to: the same mistake gives the same code
// everywhere (docs/cli.md has the table).
func TestExitCodesAreTheSameForTheSameMistake(t *testing.T) {
	noKubeconfig(t)
	fleet := "../../examples/fleet"
	live := fleet + "/live.yaml"
	refused := writeRepo(t, map[string]string{"clusters/big.yaml": etcd8})
	bare := gitbed.New(t, exampleFiles(t))
	badKubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(badKubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mistake string
		args    []string
		code    int
		stderr  string
	}{
		// 1: invalid input, whichever flag names the missing file.
		{"missing --live file", []string{"plan", "--repo", fleet, "--live", "/nonexistent"}, exitInvalid, "read live state"},
		{"missing --live file", []string{"status", "--repo", fleet, "--live", "/nonexistent"}, exitInvalid, "read live state"},
		{"missing --live file", []string{"render", "--repo", writeRepo(t, exampleFiles(t)), "--live", "/nonexistent"}, exitInvalid, "read live state"},
		{"missing --kubeconfig file", []string{"plan", "--repo", fleet, "--kubeconfig", "/nonexistent"}, exitInvalid, "kubeconfig /nonexistent"},
		{"missing --kubeconfig file", []string{"observe", "--repo", fleet, "--kubeconfig", "/nonexistent"}, exitInvalid, "kubeconfig /nonexistent"},
		{"missing --kubeconfig file", []string{"status", "--repo", fleet, "--kubeconfig", "/nonexistent"}, exitInvalid, "kubeconfig /nonexistent"},
		{"missing --kubeconfig file", []string{"diff", "--repo", fleet, "--kubeconfig", "/nonexistent"}, exitInvalid, "kubeconfig /nonexistent"},
		{"missing --kubeconfig file", []string{"backup", "run", "kv", "--kubeconfig", "/nonexistent"}, exitInvalid, "kubeconfig /nonexistent"},
		{"unparsable kubeconfig", []string{"observe", "--repo", fleet, "--kubeconfig", badKubeconfig}, exitInvalid, "kubeconfig " + badKubeconfig},
		{"missing $KUBECONFIG file", []string{"observe", "--repo", fleet}, exitInvalid, "$KUBECONFIG (/nonexistent)"},
		{"invalid spec", []string{"status", "--repo", writeRepo(t, map[string]string{"clusters/x.yaml": "kind: Nope\n"})}, exitInvalid, "x.yaml"},
		{"token over http://", []string{"propose", "--repo", "http://git.example.com/o/r.git", "--token-file", tokenFile, "--live", live}, exitInvalid, "refusing to send them to git.example.com over http://"},
		{"missing secret file", []string{"reconcile", "--repo", bare, "--live", live, "--webhook-addr", "127.0.0.1:0", "--webhook-secret-file", "/nonexistent"}, exitInvalid, "--webhook-secret-file"},
		// 2: usage.
		{"no cluster to talk to", []string{"observe", "--repo", fleet}, exitUsage, "give --kubeconfig or --in-cluster"},
		{"no cluster to talk to", []string{"status", "--repo", fleet}, exitUsage, "give --kubeconfig or --in-cluster"},
		{"no cluster to talk to", []string{"diff", "--repo", fleet}, exitUsage, "give --kubeconfig or --in-cluster"},
		{"no cluster to talk to", []string{"backup", "run", "kv"}, exitUsage, "give --kubeconfig or --in-cluster"},
		{"two sources", []string{"status", "--repo", fleet, "--live", live, "--kubeconfig", "x"}, exitUsage, "give one"},
		{"two sources", []string{"plan", "--repo", fleet, "--live", live, "--in-cluster"}, exitUsage, "give one"},
		{"--context without a kubeconfig", []string{"plan", "--repo", fleet, "--context", "x"}, exitUsage, "--context needs --kubeconfig"},
		{"bad -o", []string{"status", "--repo", fleet, "--live", live, "-o", "xml"}, exitUsage, "-o must be"},
		{"bad -o", []string{"version", "-o", "xml"}, exitUsage, "-o must be"},
		{"bad -o", []string{"pr", "list", "--repo", bare, "-o", "xml"}, exitUsage, "-o must be"},
		{"bad -o", []string{"policy", "test", "--repo", fleet, "-o", "xml"}, exitUsage, "-o must be"},
		{"bad -o", []string{"backup", "list", "kv", "--location", "file:///x", "-o", "xml"}, exitUsage, "-o must be"},
		{"bad -o", []string{"plan", "--repo", fleet, "-o", "xml"}, exitUsage, "-o must be"},
		{"bad -o", []string{"pr", "show", "nope", "--repo", bare, "-o", "xml"}, exitUsage, "-o must be"},
		{"bad -o", []string{"propose", "--repo", bare, "--live", live, "-o", "xml"}, exitUsage, "-o must be"},
		{"no webhook secret", []string{"reconcile", "--repo", bare, "--live", live, "--webhook-addr", "127.0.0.1:0"}, exitUsage, "needs a secret"},
		{"token over http://", []string{"propose", "--repo", bare, "--live", live, "--github", "o/r", "--github-api", "http://api.example.com/", "--github-token-file", tokenFile}, exitUsage, "--github-api: "},
		// With --insecure-http the command goes on, to the clone.
		// 0.0.0.0 is not loopback, but a connection to it is refused at
		// once: refused without the flag, with it the clone is tried.
		{"token over http://", []string{"propose", "--repo", "http://0.0.0.0:1/o/r.git", "--token-file", tokenFile, "--live", live}, exitInvalid, "refusing to send them to 0.0.0.0 over http://"},
		{"token over http://, allowed", []string{"propose", "--repo", "http://0.0.0.0:1/o/r.git", "--insecure-http", "--token-file", tokenFile, "--live", live}, exitInvalid, "connection refused"},
		{"missing required flag", []string{"status"}, exitUsage, `required flag(s) "repo" not set`},
		{"missing required flag", []string{"diff"}, exitUsage, `required flag(s) "repo" not set`},
		{"extra argument", []string{"version", "x"}, exitUsage, "unknown command"},
		{"unknown cluster", []string{"status", "nope", "--repo", fleet, "--live", live}, exitUsage, `no cluster "nope"`},
		{"unknown branch", []string{"pr", "show", "nope", "--repo", bare}, exitUsage, `no pull request for branch "nope"`},
		{"bad --now", []string{"status", "--repo", fleet, "--live", live, "--now", "friday"}, exitUsage, "--now must be an RFC 3339 time"},
		// 3: refusals, in every command that plans.
		{"refused plan", []string{"plan", "--repo", refused}, exitRefusals, ""},
		{"refused plan", []string{"render", "--repo", refused}, exitRefusals, ""},
		{"refused plan", []string{"status", "--repo", refused, "--live", live}, exitRefusals, ""},
		{"refused plan", []string{"propose", "--repo", gitbed.New(t, map[string]string{"clusters/big.yaml": etcd8})}, exitRefusals, ""},
		// A rule that needs no live state refuses the spec itself: check
		// and validate call it invalid, at its file:line.
		{"spec a rule refuses", []string{"check", "--repo", refused}, exitInvalid, "big.yaml:6:9: spec.size: etcd size must be 1 to 7"},
		{"spec a rule refuses", []string{"validate", refused}, exitInvalid, "big.yaml:6:9: spec.size: etcd size must be 1 to 7"},
	}
	for _, tc := range tests {
		t.Run(tc.mistake+"/"+tc.args[0], func(t *testing.T) {
			if tc.mistake == "missing $KUBECONFIG file" {
				t.Setenv("KUBECONFIG", "/nonexistent")
			}
			code, _, errOut := cairn(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("%v: exit %d, want %d; stderr:\n%s\nwant it to contain %q", tc.args, code, tc.code, errOut, tc.stderr)
			}
		})
	}
}

// TestKubeconfigResolution: --kubeconfig, then $KUBECONFIG, then
// ~/.kube/config; --context picks a context of whichever it is.
func TestKubeconfigResolution(t *testing.T) {
	noKubeconfig(t)
	write := func(dir, server, ns string) string {
		p := filepath.Join(dir, "config")
		_ = os.MkdirAll(dir, 0o755)
		data := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: " + server + "}\nusers:\n- name: u\n  user: {token: t}\n" +
			"contexts:\n- name: main\n  context: {cluster: c, user: u, namespace: " + ns + "}\n- name: other\n  context: {cluster: c, user: u, namespace: other-ns}\ncurrent-context: main\n"
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	home := os.Getenv("HOME")
	homeConfig := write(filepath.Join(home, ".kube"), "https://home.example", "home-ns")
	envConfig := write(filepath.Join(t.TempDir(), "env"), "https://env.example", "env-ns")
	flagConfig := write(filepath.Join(t.TempDir(), "flag"), "https://flag.example", "flag-ns")
	for _, c := range []struct {
		name, flag, env, context string
		host, ns                 string
	}{
		{"home", "", "", "", "https://home.example", "home-ns"},
		{"env over home", "", envConfig, "", "https://env.example", "env-ns"},
		{"flag over env", flagConfig, envConfig, "", "https://flag.example", "flag-ns"},
		{"context", "", envConfig, "other", "https://env.example", "other-ns"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", c.env)
			got, err := resolveKube(c.flag, c.context, false)
			if err != nil || got.Config.Host != c.host || got.Namespace != c.ns {
				t.Fatalf("got %+v %v, want %s in %s", got, err, c.host, c.ns)
			}
		})
	}
	_ = homeConfig
}

// TestEveryCommandHasExamples walks the command tree: every command a
// person runs shows examples in its help.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		if c.Runnable() && strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(nil, nil))
}
