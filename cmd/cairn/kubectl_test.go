package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/version"
)

// kubectl runs the binary as kubectl-cairn, and its completions as
// kubectl_complete-cairn: argv[0] decides the name help shows, and the
// completion program's arguments become cobra's __complete request.
func TestInvocation(t *testing.T) {
	for _, tc := range []struct {
		argv        []string
		wantDisplay string
		wantArgs    []string
	}{
		{[]string{"/usr/local/bin/cairn", "render", "--repo", "."}, "cairn", []string{"render", "--repo", "."}},
		{[]string{"/home/u/.krew/bin/kubectl-cairn", "status"}, "kubectl cairn", []string{"status"}},
		{[]string{`C:\krew\bin\kubectl-cairn.exe`, "version"}, "kubectl cairn", []string{"version"}},
		{[]string{"kubectl_complete-cairn", "ren"}, "kubectl cairn", []string{"__complete", "ren"}},
		{[]string{"kubectl-cairn-old", "status"}, "cairn", []string{"status"}},
		{nil, "cairn", nil},
	} {
		t.Run(strings.Join(tc.argv, " "), func(t *testing.T) {
			display, args := invocation(tc.argv)
			if display != tc.wantDisplay || !slices.Equal(args, tc.wantArgs) {
				t.Errorf("invocation(%q) = %q, %q; want %q, %q", tc.argv, display, args, tc.wantDisplay, tc.wantArgs)
			}
		})
	}
}

// As a kubectl plugin, help and usage say `kubectl cairn`, down to the
// subcommands; as cairn, they say cairn.
func TestHelpAsKubectlPlugin(t *testing.T) {
	for _, tc := range []struct {
		display string
		args    []string
		want    string
		notWant string
	}{
		{"kubectl cairn", []string{"--help"}, "\n  kubectl cairn [command]\n", "\n  cairn [command]\n"},
		{"kubectl cairn", []string{"render", "--help"}, "\n  kubectl cairn render --repo DIR", "\n  cairn render --repo DIR"},
		{"kubectl cairn", []string{"completion", "bash", "--help"}, "kubectl cairn completion bash", ""},
		{"cairn", []string{"--help"}, "\n  cairn [command]\n", "kubectl cairn"},
	} {
		t.Run(tc.display+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := runAs(tc.display, tc.args, &out, &errOut); code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("no %q in\n%s", tc.want, out.String())
			}
			if tc.notWant != "" && strings.Contains(out.String(), tc.notWant) {
				t.Errorf("%q in\n%s", tc.notWant, out.String())
			}
		})
	}
}

// `cairn completion` writes a script for each shell docs/cli.md names, and
// the completion program answers kubectl's requests with cairn's
// subcommands.
func TestCompletion(t *testing.T) {
	for _, tc := range []struct{ shell, want string }{
		{"bash", "# bash completion V2 for cairn"},
		{"zsh", "#compdef cairn"},
		{"fish", "# fish completion for cairn"},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			code, out, errOut := cairn(t, "completion", tc.shell)
			if code != exitOK || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, stderr %s; no %q in the script:\n%.300s", code, errOut, tc.want, out)
			}
		})
	}
	var out, errOut bytes.Buffer
	display, args := invocation([]string{"kubectl_complete-cairn", "ren"})
	if code := runAs(display, args, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "render\t") {
		t.Errorf("completions of ren:\n%s", out.String())
	}
}

// `cairn version -o json` names the version, commit and date.
func TestVersionJSON(t *testing.T) {
	code, out, errOut := cairn(t, "version", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if got["version"] != version.Release || got["goVersion"] == "" || got["platform"] == "" {
		t.Errorf("version -o json:\n%s", out)
	}
	v := version.Get()
	if v.Revision != "" && got["commit"] != v.Revision || v.Date != "" && got["date"] != v.Date {
		t.Errorf("version -o json:\n%s\nwant commit %q date %q", out, v.Revision, v.Date)
	}
}
