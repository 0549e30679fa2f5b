package app

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
)

// Build is what a release says of its build, in the variables of package
// main it sets with -ldflags -X (scripts/release does); the zero Build for
// a build that set none, whose version command reads the build's own stamp
// instead (debug.ReadBuildInfo).
type Build struct {
	Version string // the release: "v1.2.3"
	Commit  string // the commit it was built from
	Date    string // when it was built, as the release wrote it (RFC 3339)
}

// VersionInfo is what "nodeid version" prints: -o json and -o yaml have
// its fields.
type VersionInfo struct {
	// Version is the release set at build time, else the main module's
	// version as Go stamped it: a tag (v1.2.3), or a pseudo-version of the
	// commit with +dirty for a modified tree; "devel" when the build says
	// none.
	Version string `json:"version"`
	// Commit is the commit the binary was built from, "" when unknown;
	// Modified says whether the tree had changes not committed (nil when
	// unknown), and CommitTime when the commit was made.
	Commit     string `json:"commit,omitempty"`
	Modified   *bool  `json:"modified,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	// BuildDate is when a release was built (-ldflags -X), "" otherwise.
	BuildDate string `json:"build_date,omitempty"`
	// Source says where the version came from: "ldflags" (set by a
	// release), "vcs" (Go's stamp of a build in a git checkout), "module"
	// (the module version of go install PATH@VERSION) or "none".
	Source string `json:"source"`
	Go     string `json:"go"`
	OS     string `json:"os"`
	Arch   string `json:"arch"`
}

// Sources of VersionInfo.
const (
	sourceLdflags = "ldflags"
	sourceVCS     = "vcs"
	sourceModule  = "module"
	sourceNone    = "none"
)

// NewVersionInfo returns the version of a build from what the release set
// (b) and the build's own stamp (bi, nil if the binary has none): each
// field the release set wins; the rest come from the stamp. The stamp's
// "modified" and commit time are kept only for the commit they describe.
func NewVersionInfo(b Build, bi *debug.BuildInfo) VersionInfo {
	v := VersionInfo{Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Source: sourceNone}
	var rev, revTime string
	var modified *bool
	if bi != nil {
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			v.Version = mv
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				revTime = s.Value
			case "vcs.modified":
				m := s.Value == "true"
				modified = &m
			}
		}
	}
	switch {
	case rev != "":
		v.Source = sourceVCS
	case v.Version != "":
		v.Source = sourceModule
	}
	v.Commit = rev
	if b.Version != "" || b.Commit != "" || b.Date != "" {
		v.Source = sourceLdflags
	}
	if b.Version != "" {
		v.Version = b.Version
	}
	if b.Commit != "" && b.Commit != rev {
		v.Commit, modified, revTime = b.Commit, nil, ""
	}
	if v.Commit != "" {
		v.Modified, v.CommitTime = modified, revTime
	}
	v.BuildDate = b.Date
	if v.Version == "" {
		v.Version = devel // as the text says it: one word for one fact
	}
	return v
}

// devel is the version of a build that knows none.
const devel = "devel"

// String is the one line of "nodeid version":
//
//	nodeid VERSION (commit REV[, modified][, committed TIME][, built DATE]) GOVERSION OS/ARCH
//
// with "devel" for an unknown version, and the parenthesis saying that
// nothing is known when nothing is.
func (v VersionInfo) String() string {
	var b strings.Builder
	b.WriteString("nodeid ")
	if v.Version != "" {
		b.WriteString(v.Version)
	} else {
		b.WriteString(devel)
	}
	var about []string
	if v.Commit != "" {
		about = append(about, "commit "+v.Commit)
		if v.Modified != nil && *v.Modified {
			about = append(about, "modified")
		}
		if v.CommitTime != "" {
			about = append(about, "committed "+v.CommitTime)
		}
	}
	if v.BuildDate != "" {
		about = append(about, "built "+v.BuildDate)
	}
	if (v.Version == "" || v.Version == devel) && v.Commit == "" && v.BuildDate == "" {
		about = append(about, "no version information: built without VCS stamping")
	}
	if len(about) > 0 {
		b.WriteString(" (" + strings.Join(about, ", ") + ")")
	}
	fmt.Fprintf(&b, " %s %s/%s", v.Go, v.OS, v.Arch)
	return b.String()
}

// VersionOptions are the flags of version.
type VersionOptions struct {
	Out    io.Writer
	Build  Build
	Output cli.OutputFlag
}

// Validate checks the output format.
func (o *VersionOptions) Validate() error { return o.Output.Check() }

// NewCmdVersion returns "nodeid version"; b is what the release set at
// build time (the zero Build for none). runF, if not nil, runs instead of
// the command's own work once the options are valid.
func NewCmdVersion(env *cli.Env, b Build, runF func(context.Context, *VersionOptions) error) *cobra.Command {
	o := &VersionOptions{Out: env.Out, Build: b}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of nodeid, its commit and build date",
		Long: `Print the version of nodeid, the commit it was built from (and whether the
tree had changes not committed), when that commit was made or when the
release was built, the Go version and the platform.

A release sets its version, commit and build date when it is built
(scripts/release); a build in a git checkout (go build, go install) has Go's
stamp of the commit and a pseudo-version of it (v0.0.0-DATE-COMMIT, +dirty
for a modified tree); go install PATH@VERSION has the module's version. A
build with none of these says so.`,
		Example: `  nodeid version
  nodeid version -o json`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(cmd *cobra.Command, _ []string, _ *cli.Conn) error {
			return cli.Run(cmd.Context(), o, runF, versionRun)
		}),
	}
	o.Output.Register(cmd, cli.OutText, cli.OutJSON, cli.OutYAML)
	return cmd
}

func versionRun(_ context.Context, o *VersionOptions) error {
	bi, _ := debug.ReadBuildInfo()
	v := NewVersionInfo(o.Build, bi)
	if o.Output.Document() {
		return cli.WriteDoc(o.Out, o.Output.Value, v)
	}
	_, err := fmt.Fprintln(o.Out, v)
	return err
}
