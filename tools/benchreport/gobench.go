package main

import (
	"bufio"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// benchLine matches a result line of go test -bench: the name without the
// -GOMAXPROCS suffix, the iterations, and the value-unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.+)$`)

// goBench holds the results of go test -bench, repeated with -count.
type goBench struct {
	names  []string                        // in order of first appearance
	values map[string]map[string][]float64 // name -> unit -> one value per run
	header map[string]string               // goos, goarch, pkg, cpu
}

func parseGoBench(r io.Reader) (*goBench, error) {
	g := &goBench{values: map[string]map[string][]float64{}, header: map[string]string{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.Contains(k, " ") && !strings.HasPrefix(k, "Benchmark") {
			g.header[k] = strings.TrimSpace(v)
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		if _, ok := g.values[m[1]]; !ok {
			g.names = append(g.names, m[1])
			g.values[m[1]] = map[string][]float64{}
		}
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			g.values[m[1]][f[i+1]] = append(g.values[m[1]][f[i+1]], v)
		}
	}
	return g, sc.Err()
}

// median returns the median of name's values in unit, and whether there
// were any.
func (g *goBench) median(name, unit string) (float64, bool) {
	v := slices.Clone(g.values[name][unit])
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

// spread returns the minimum and maximum of name's values in unit.
func (g *goBench) spread(name, unit string) (lo, hi float64) {
	v := g.values[name][unit]
	if len(v) == 0 {
		return 0, 0
	}
	return slices.Min(v), slices.Max(v)
}

// sub returns the value of key=value in a benchmark name's path, or "".
func sub(name, key string) string {
	for _, part := range strings.Split(name, "/") {
		if v, ok := strings.CutPrefix(part, key+"="); ok {
			return v
		}
	}
	return ""
}

// withSub returns name with key's value replaced by value.
func withSub(name, key, value string) string {
	parts := strings.Split(name, "/")
	for i, part := range parts {
		if strings.HasPrefix(part, key+"=") {
			parts[i] = key + "=" + value
		}
	}
	return strings.Join(parts, "/")
}
