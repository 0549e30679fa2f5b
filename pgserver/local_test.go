//go:build unix

package pgserver

import "testing"

// TestVersion: the newest server binaries are found by the major version
// in the directory's name, whichever packager named it.
func TestVersion(t *testing.T) {
	for _, c := range []struct {
		dir  string
		want int
	}{
		{"/usr/lib/postgresql/15/bin", 15},
		{"/opt/homebrew/opt/postgresql@16/bin", 16},
		{"/usr/local/opt/postgresql@14/bin", 14},
		{"/Applications/Postgres.app/Contents/Versions/17/bin", 17},
		{"/Applications/Postgres.app/Contents/Versions/latest/bin", 0},
	} {
		if got := version(c.dir); got != c.want {
			t.Errorf("version(%q) = %d, want %d", c.dir, got, c.want)
		}
	}
}
