package app

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionInfo: what "nodeid version" makes of each kind of build: a
// release's -ldflags -X values, Go's VCS stamp (clean, modified), the module
// version of go install PATH@VERSION, and nothing at all.
func TestVersionInfo(t *testing.T) {
	t.Parallel()
	const (
		rev   = "0123456789abcdef0123456789abcdef01234567"
		other = "fedcba9876543210fedcba9876543210fedcba98"
		when  = "2026-03-01T12:00:00Z"
		built = "2026-03-02T08:30:00Z"
	)
	plat := " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	stamped := func(version string, modified bool) *debug.BuildInfo {
		m := "false"
		if modified {
			m = "true"
		}
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/nodeid/nodeid", Version: version}, Settings: []debug.BuildSetting{
			{Key: "-trimpath", Value: "true"}, {Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: when}, {Key: "vcs.modified", Value: m},
		}}
	}
	for _, c := range []struct {
		name   string
		b      Build
		bi     *debug.BuildInfo
		line   string
		source string
	}{
		{"no build info", Build{}, nil,
			"nodeid devel (no version information: built without VCS stamping)", sourceNone},
		{"(devel), no VCS stamp", Build{}, &debug.BuildInfo{Main: debug.Module{Path: "github.com/nodeid/nodeid", Version: "(devel)"}},
			"nodeid devel (no version information: built without VCS stamping)", sourceNone},
		{"go install @version", Build{}, &debug.BuildInfo{Main: debug.Module{Path: "github.com/nodeid/nodeid", Version: "v1.4.0"}},
			"nodeid v1.4.0", sourceModule},
		{"tagged checkout", Build{}, stamped("v1.4.0", false),
			"nodeid v1.4.0 (commit " + rev + ", committed " + when + ")", sourceVCS},
		{"modified checkout", Build{}, stamped("v0.0.0-20260301120000-0123456789ab+dirty", true),
			"nodeid v0.0.0-20260301120000-0123456789ab+dirty (commit " + rev + ", modified, committed " + when + ")", sourceVCS},
		{"VCS stamp, no module version", Build{}, stamped("(devel)", false),
			"nodeid devel (commit " + rev + ", committed " + when + ")", sourceVCS},
		{"release", Build{Version: "v1.5.0", Commit: rev, Date: built}, stamped("v0.0.0-20260301120000-0123456789ab", false),
			"nodeid v1.5.0 (commit " + rev + ", committed " + when + ", built " + built + ")", sourceLdflags},
		{"release of a modified tree", Build{Version: "v1.5.0-dirty", Commit: rev, Date: built}, stamped("v0.0.0-20260301120000-0123456789ab+dirty", true),
			"nodeid v1.5.0-dirty (commit " + rev + ", modified, committed " + when + ", built " + built + ")", sourceLdflags},
		{"release without VCS stamp", Build{Version: "v1.5.0", Commit: rev, Date: built}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"nodeid v1.5.0 (commit " + rev + ", built " + built + ")", sourceLdflags},
		{"release commit other than the stamp's", Build{Version: "v1.5.0", Commit: other}, stamped("v1.4.0", true),
			"nodeid v1.5.0 (commit " + other + ")", sourceLdflags},
		{"release date only", Build{Date: built}, nil,
			"nodeid devel (built " + built + ")", sourceLdflags},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := NewVersionInfo(c.b, c.bi)
			if got := v.String(); got != c.line+plat {
				t.Errorf("line:\n got %q\nwant %q", got, c.line+plat)
			}
			if strings.Contains(v.String(), "(devel)") {
				t.Errorf("a bare (devel): %q", v.String())
			}
			if v.Source != c.source {
				t.Errorf("source %q, want %q", v.Source, c.source)
			}
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if doc["go"] != runtime.Version() || doc["os"] != runtime.GOOS || doc["arch"] != runtime.GOARCH || doc["source"] != c.source {
				t.Errorf("JSON %s", b)
			}
			if _, ok := doc["modified"]; ok != (v.Commit != "" && v.Modified != nil) {
				t.Errorf("JSON %s: modified is there only when known", b)
			}
		})
	}
}

// TestVersionOutput: -o json has the fields; a format version does not
// offer is a usage error naming it.
func TestVersionOutput(t *testing.T) {
	t.Parallel()
	r := harness.Run(t, "version", "-o", "json")
	var doc VersionInfo
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &doc) != nil || doc.Go != runtime.Version() || doc.Source == "" {
		t.Errorf("version -o json: %+v", r)
	}
	// The same version in both forms, "devel" for a build that knows none.
	if text := strings.Fields(harness.Must(t, "version")); len(text) < 2 || doc.Version == "" || text[1] != doc.Version {
		t.Errorf("version says %q, version -o json %q", text, doc.Version)
	}
	if v := NewVersionInfo(Build{}, nil); v.Version != "devel" || !strings.HasPrefix(v.String(), "nodeid devel (no version information") {
		t.Errorf("a build without version information: %q, %q", v.Version, v.String())
	}
	if r := harness.Run(t, "version", "-o", "yaml"); r.Code != 0 || !strings.Contains(r.Stdout, "go: "+runtime.Version()) {
		t.Errorf("version -o yaml: %+v", r)
	}
	if r := harness.Run(t, "version", "-o", "wide"); r.Code != 2 || !strings.Contains(r.Stderr, `-o "wide"`) || !strings.Contains(r.Stderr, "text, json, yaml") {
		t.Errorf("version -o wide: %+v", r)
	}
}
