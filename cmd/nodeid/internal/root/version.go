package root

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
)

// NewCmdVersion returns "nodeid version"; version is the release set at
// build time, or "" for the module version of the build, or "(devel)".
func NewCmdVersion(env *cli.Env, version string) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of nodeid",
		Example: `  nodeid version`,
		Args:    cli.ExactArgs(0, "no arguments"),
		RunE: cli.Action(env, func(*cobra.Command, []string, *cli.Conn) error {
			_, err := fmt.Fprintln(env.Out, versionString(version))
			return err
		}),
	}
}

// versionString is "nodeid VERSION (REVISION[, modified]) GOVERSION OS/ARCH".
func versionString(version string) string {
	v, rev := version, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
				if len(rev) > 12 {
					rev = rev[:12]
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" && modified {
			rev += ", modified"
		}
	}
	if v == "" {
		v = "(devel)"
	}
	s := "nodeid " + v
	if rev != "" {
		s += " (" + rev + ")"
	}
	return fmt.Sprintf("%s %s %s/%s", s, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
