package main

import (
	_ "embed"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	bench "github.com/nodeid/nodeid/cmd/nodeid/internal/bench/report"
)

// reportTemplate is the report's text, with the figures left to fill in.
//
//go:embed report.md.tmpl
var reportTemplate string

// directiveLine matches a line that holds nothing but actions that print
// nothing themselves ({{if}}, {{else}}, {{end}}, {{range}}, {{with}},
// {{define}}, {{block}}, {{template}}, {{break}}, {{continue}}, one-line
// comments), with its line break.
var directiveLine = regexp.MustCompile(`(?m)^[ \t]*(?:\{\{-?[ \t]*(?:(?:if|else|end|range|with|define|block|template|break|continue)\b[^{}\n]*|/\*[^\n]*?\*/[ \t]*-?)\}\}[ \t]*)+\n`)

// parseTemplate parses the report's template. A line that holds only
// directives prints no line of its own, so that the template can give each
// {{if}}, {{range}} and {{end}} a line and still read like the Markdown it
// writes.
func parseTemplate() (*template.Template, error) { return parse(reportTemplate) }

// parse parses a template of the report's kind.
func parse(text string) (*template.Template, error) {
	text = directiveLine.ReplaceAllStringFunc(text, strings.TrimSpace)
	return template.New("report").Funcs(template.FuncMap{
		"thousands": thousandsOf,
		"pct":       pct,
		"spread":    func(verb string, s bench.Spread) string { return s.Format(verb) },
	}).Parse(text)
}

// render writes the report of r.
func render(w io.Writer, r *report) error {
	t, err := parseTemplate()
	if err != nil {
		return err
	}
	return t.Execute(w, r)
}

// thousandsOf formats an integer or a float rounded to one with thousands
// separators.
func thousandsOf(v any) (string, error) {
	switch n := v.(type) {
	case int:
		return thousands(float64(n)), nil
	case int64:
		return thousands(float64(n)), nil
	case float64:
		return thousands(n), nil
	}
	return "", fmt.Errorf("thousands: %v is a %T, not a number", v, v)
}

// thousands formats n with thousands separators.
func thousands(n float64) string {
	s := fmt.Sprintf("%.0f", math.Round(n))
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// pct formats a fraction as a percentage with at most one decimal.
func pct(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", 100*f), "0"), ".") + "%"
}

// minutes formats d as "N minutes", or "a minute".
func minutes(d time.Duration) string {
	if n := int(d.Round(time.Minute) / time.Minute); n > 1 {
		return fmt.Sprintf("%d minutes", n)
	}
	return "a minute"
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// settings lists the non-default settings, leaving out those that only
// name where the server's files and sockets are.
func settings(ss []bench.Setting) string {
	var parts []string
	for _, s := range ss {
		switch s.Name {
		case "port", "unix_socket_directories", "listen_addresses":
			continue
		}
		parts = append(parts, "`"+s.Name+"="+s.Value+"`")
	}
	return strings.Join(parts, ", ")
}

func ratioOf(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func per(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// waitsOf lists the wait events with one of the prefixes, most waiters
// first (then by name), at most five, or "none".
func waitsOf(events map[string]int, prefixes ...string) string {
	var names []string
	for e := range events {
		for _, p := range prefixes {
			if strings.HasPrefix(e, p) {
				names = append(names, e)
				break
			}
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if events[a] != events[b] {
			return events[b] - events[a]
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, n := range names[:min(len(names), 5)] {
		parts = append(parts, fmt.Sprintf("%s %d", n, events[n]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// dflags returns pgbench's -D flags for vars.
func dflags(vars []string) string {
	var parts []string
	for _, v := range vars {
		parts = append(parts, "-D "+v)
	}
	return strings.Join(parts, " ")
}
