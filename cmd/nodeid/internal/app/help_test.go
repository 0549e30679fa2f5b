package app

import (
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
	"github.com/spf13/cobra"
)

// TestHelpOnEveryCommand: every command has an example, and --help shows
// it and exits with 0.
func TestHelpOnEveryCommand(t *testing.T) {
	t.Parallel()
	env, _, _ := clitest.Env("", nil)
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Name() == "help" {
			return
		}
		n++
		path := strings.Fields(c.CommandPath())[1:]
		if c.Example == "" && !strings.HasPrefix(c.CommandPath(), "nodeid completion") {
			t.Errorf("%s has no example", c.CommandPath())
		}
		r := harness.Run(t, append(path, "--help")...)
		if r.Code != 0 || !strings.Contains(r.Stdout, "Usage:") || (c.Example != "" && !strings.Contains(r.Stdout, "Examples:")) {
			t.Errorf("%s --help: %+v", c.CommandPath(), r)
		}
	}
	top := NewCmd(env, Build{})
	top.InitDefaultCompletionCmd()
	walk(top)
	if n < 14 {
		t.Errorf("only %d commands seen", n)
	}
}

// TestFlagsInHelp: the flags of the command line's output, timing and ID
// forms appear in the help of each command that takes them.
func TestFlagsInHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd   []string
		wants []string
	}{
		{[]string{"list"}, []string{"--no-headers", "table, wide (with exact times), json or yaml", "--timeout duration", "(default 10s)"}},
		{[]string{"watch"}, []string{"--no-headers", "table, wide (with exact times), json or yaml", "--timeout duration"}},
		{[]string{"show"}, []string{"table, wide (with exact times), json or yaml", "--timeout duration"}},
		{[]string{"decode"}, []string{"--format form", "(default auto)", "table, json or yaml"}},
		{[]string{"who"}, []string{"--format form", "--max-skew duration", "table, json or yaml", "--timeout duration"}},
		{[]string{"evict"}, []string{"--timeout duration"}},
		{[]string{"prune"}, []string{"--timeout duration"}},
		{[]string{"init"}, []string{"--timeout duration"}},
	} {
		out := harness.Must(t, append(tc.cmd, "--help")...)
		for _, w := range tc.wants {
			if !strings.Contains(out, w) {
				t.Errorf("nodeid %s --help lacks %q", strings.Join(tc.cmd, " "), w)
			}
		}
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := harness.Run(t, "completion", shell)
		if r.Code != 0 || !strings.Contains(r.Stdout, "nodeid") || len(r.Stdout) < 1000 {
			t.Errorf("completion %s: code %d, %d bytes", shell, r.Code, len(r.Stdout))
		}
	}
	// An unknown shell, or none, is bad usage, not a request for help.
	clitest.WantExit(t, harness.Run(t, "completion", "ksh"), cli.ExitUsage, `unknown shell "ksh"`, "bash, fish, powershell or zsh")
	clitest.WantExit(t, harness.Run(t, "completion"), cli.ExitUsage, "needs a shell: bash, fish, powershell or zsh")
	// Dynamic completion of flag values.
	r := harness.Run(t, "__complete", "list", "--state", "")
	if r.Code != 0 || !strings.Contains(r.Stdout, "expired") {
		t.Errorf("completion of --state: %+v", r)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	out := harness.Must(t, "version")
	if !strings.HasPrefix(out, "nodeid ") || !strings.Contains(out, runtime.Version()) || strings.Count(out, "\n") != 1 {
		t.Errorf("version: %q", out)
	}
	release := clitest.Harness{Top: func(env *cli.Env) *cobra.Command { return NewCmd(env, Build{Version: "v9.8.7"}) }}
	if out := release.Must(t, "version"); !strings.HasPrefix(out, "nodeid v9.8.7") {
		t.Errorf("version set at build time: %q", out)
	}
}

// TestHelpUnknownTopic: "help" of a topic that is no command is bad usage,
// exit 2, as a script needs; of a command, its help.
func TestHelpUnknownTopic(t *testing.T) {
	t.Parallel()
	clitest.WantExit(t, harness.Run(t, "help", "nope"), cli.ExitUsage, `unknown help topic "nope"`)
	if r := harness.Run(t, "help", "list"); r.Code != 0 || !strings.Contains(r.Stdout, "Usage:\n  nodeid list") {
		t.Errorf("help list: %+v", r)
	}
}

// TestHelpListsExitCodes: "nodeid --help" names every exit code that
// docs/commands.md lists.
func TestHelpListsExitCodes(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(clitest.DocsPage)
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(page), "## Exit codes")
	table, _, _ = strings.Cut(table, "\n## ")
	codes := regexp.MustCompile(`(?m)^\| ([0-9]+) \|`).FindAllStringSubmatch(table, -1)
	if len(codes) < 7 {
		t.Fatalf("only %d exit codes in the table of %s", len(codes), clitest.DocsPage)
	}
	help := strings.Join(strings.Fields(harness.Must(t, "--help")), " ")
	for _, c := range codes {
		if !regexp.MustCompile(`[:;] ` + c[1] + ` `).MatchString(help) {
			t.Errorf("nodeid --help does not list exit code %s:\n%s", c[1], help)
		}
	}
}
