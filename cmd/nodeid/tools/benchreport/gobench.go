package main

import (
	"bufio"
	"fmt"
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

// sideBySide is what BenchmarkSideBySide of the snowflake package
// reports: per implementation, the fraction of the cap sustained and the
// cost per ID from 1 and 8 goroutines, each a median over chunks run in
// alternation (then over the -count runs).
type sideBySide struct {
	impls []string
	cap   map[string]string // impl -> "median [min–max]"
	ns    map[string]map[string]string
	ratio map[string]map[string]string
}

func parseSideBySide(g *goBench) *sideBySide {
	if g == nil {
		return nil
	}
	sb := &sideBySide{cap: map[string]string{}, ns: map[string]map[string]string{}, ratio: map[string]map[string]string{}}
	add := func(impl string) {
		if !slices.Contains(sb.impls, impl) {
			sb.impls = append(sb.impls, impl)
		}
	}
	found := false
	for _, name := range g.names {
		rest, ok := strings.CutPrefix(name, "BenchmarkSideBySide/")
		if !ok {
			continue
		}
		units := make([]string, 0, len(g.values[name]))
		for u := range g.values[name] {
			units = append(units, u)
		}
		slices.Sort(units)
		for _, u := range units {
			v, _ := g.median(name, u)
			lo, hi := g.spread(name, u)
			verb := "%.2f"
			if strings.HasSuffix(u, "-ns/id") {
				verb = "%.1f"
			} else if strings.HasSuffix(u, "-cap-fraction") {
				verb = "%.3f"
			}
			text := fmt.Sprintf(verb+" ["+verb+"–"+verb+"]", v, lo, hi)
			switch {
			case rest == "cap" && strings.HasSuffix(u, "-cap-fraction"):
				impl := strings.TrimSuffix(u, "-cap-fraction")
				add(impl)
				sb.cap[impl] = text
				found = true
			case strings.HasSuffix(u, "-ns/id"):
				impl := strings.TrimSuffix(u, "-ns/id")
				add(impl)
				if sb.ns[rest] == nil {
					sb.ns[rest] = map[string]string{}
				}
				sb.ns[rest][impl] = text
				found = true
			case strings.HasSuffix(u, "/bwmarrin"):
				impl := strings.TrimSuffix(u, "/bwmarrin")
				add(impl)
				if sb.ratio[rest] == nil {
					sb.ratio[rest] = map[string]string{}
				}
				sb.ratio[rest][impl] = text
				found = true
			}
		}
	}
	if !found {
		return nil
	}
	return sb
}

// generationTargets returns the targets table's rows of the generation
// figures, which have no numeric target: they are reported, per
// implementation.
func generationTargets(g *goBench) []target {
	sb := parseSideBySide(g)
	if sb == nil {
		return nil
	}
	var impls []string
	for _, impl := range sb.impls {
		if impl != "bwmarrin" {
			impls = append(impls, impl)
		}
	}
	row := func(name string, get func(string) string) target {
		var vals []string
		for _, impl := range impls {
			vals = append(vals, impl+" "+orDash(get(impl)))
		}
		return target{Target: name, Result: strings.Join(vals, "; "), Reported: true}
	}
	return []target{
		row("generation: fraction of the layout's cap sustained (side by side)", func(i string) string { return sb.cap[i] }),
		row("generation: cost per ID / a raw bwmarrin Node's, 1 goroutine", func(i string) string { return sb.ratio["g=1"][i] }),
		row("generation: cost per ID / a raw bwmarrin Node's, 8 goroutines", func(i string) string { return sb.ratio["g=8"][i] }),
	}
}
