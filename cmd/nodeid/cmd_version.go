package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3"; otherwise the module version of the
// build, or "(devel)".
var version = ""

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of nodeid",
		Example: `  nodeid version`,
		Args:    exactArgs(0, "no arguments"),
		RunE: a.action(func(_ *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(a.stdout, versionString())
			return err
		}),
	}
}

// versionString is "nodeid VERSION (REVISION[, modified]) GOVERSION OS/ARCH".
func versionString() string {
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
