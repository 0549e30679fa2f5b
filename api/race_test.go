//go:build race

package api

// With -race, listFlags makes "go list -export" read the export data
// that the race detector's build of the packages left in the build cache
// (CI's tests run with -race), instead of compiling them again without it.
func init() { listFlags = append(listFlags, "-race") }
