package nodeid_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unicode"

	"github.com/nodeid/nodeid/internal/testkit/pgtest"
)

// The README's quick start is the program examples/quickstart, word for
// word, and that program runs against a real PostgreSQL: it leases node ID
// 0, mints three IDs, releases the node ID and exits with 0.
func TestREADMEQuickStart(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	program, err := os.ReadFile(filepath.Join("examples", "quickstart", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) != 1 {
		t.Fatalf("README.md has %d Go blocks; the test knows one, the quick start", len(blocks))
	}
	if blocks[0][1] != string(program) {
		t.Fatal("the README's quick start differs from examples/quickstart/main.go: copy the program into the README")
	}

	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "quickstart")
	if out, err := exec.Command(goTool, "build", "-o", bin, "./examples/quickstart").CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/quickstart: %v\n%s", err, out)
	}
	_, dsn := pgtest.NewDB(t)
	run := func() ([]byte, error) {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn)
		return cmd.CombinedOutput()
	}
	out, err := run()
	if err != nil {
		t.Fatalf("the quick start failed: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 || lines[0] != "node 0, epoch 1" {
		t.Fatalf("the quick start printed:\n%s\nwant node 0, epoch 1 and three IDs", out)
	}
	// It released the node ID: a second run gets node 0 again, at epoch 2.
	if out, err := run(); err != nil || !strings.HasPrefix(string(out), "node 0, epoch 2\n") {
		t.Fatalf("the second run: %v\n%s\nwant node 0, epoch 2: the first run must have released it", err, out)
	}
}

// TestREADMESetUp: the README's "Try it" runs the demo, and its
// "Develop" runs the test command CI runs (.ci/run), character for
// character: the demo is not presented beside a 12-minute test run as if
// both were set-up.
func TestREADMESetUp(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := func(section string) []string {
		t.Helper()
		m := regexp.MustCompile("(?s)\n## " + section + "\n(.*?)\n## ").FindSubmatch(readme)
		if m == nil {
			t.Fatalf("README.md has no section ## %s", section)
		}
		b := regexp.MustCompile("(?s)```sh\n(.*?)```").FindSubmatch(m[1])
		if b == nil {
			t.Fatalf("README.md has no sh block under ## %s", section)
		}
		var commands []string
		for _, line := range strings.Split(strings.TrimSpace(string(b[1])), "\n") {
			cmd, _, _ := strings.Cut(line, "#")
			commands = append(commands, strings.TrimSpace(cmd))
		}
		return commands
	}
	ci, err := os.ReadFile(filepath.Join(".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var ciTest string
	for _, line := range strings.Split(string(ci), "\n") {
		if strings.HasPrefix(line, "go test ") {
			ciTest = line
		}
	}
	if ciTest == "" {
		t.Fatal(".ci/run runs no go test command of its own")
	}
	if got, want := block("Try it"), []string{"go run ./cmd/nodeid demo"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the README's Try it runs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := block("Develop"), []string{ciTest}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the README's Develop runs\n%s\nwant\n%s\n(the test command must be .ci/run's)", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !regexp.MustCompile(`first .go run.[^.]*minutes`).Match(readme) {
		t.Error("the README does not say that the first go run takes minutes")
	}
}

// docPages returns the Markdown pages of the documentation: README.md,
// CONTRIBUTING.md and every page under docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir("docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// markdownText returns the lines of a page, those of its code blocks
// blanked, and the backquotes of inline code spans removed.
func markdownText(t *testing.T, page string) []string {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		lines  []string
		inCode bool
	)
	code := regexp.MustCompile("`[^`]*`")
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			line = ""
		}
		if inCode {
			line = ""
		}
		// The words stay: a heading's anchor is made of them.
		lines = append(lines, code.ReplaceAllStringFunc(line, func(span string) string { return strings.Trim(span, "`") }))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// anchors returns the anchors GitHub gives the headings of a page: the
// heading in lower case, without punctuation, spaces made hyphens, and -1,
// -2, ... after repeats.
func anchors(t *testing.T, page string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range markdownText(t, page) {
		title, ok := strings.CutPrefix(line, "#")
		if !ok {
			continue
		}
		title = strings.TrimSpace(strings.TrimLeft(title, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocsLinks: every relative link of the README, CONTRIBUTING.md and
// docs/ leads to a file that exists, and a link to a heading of a Markdown
// page to a heading the page has.
func TestDocsLinks(t *testing.T) {
	t.Parallel()
	link := regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	checked := 0
	for _, page := range docPages(t) {
		for i, line := range markdownText(t, page) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s:%d: the link %s leads to no file: %v", page, i+1, target, err)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[anchor] {
					t.Errorf("%s:%d: the link %s leads to no heading of %s", page, i+1, target, path)
				}
			}
		}
	}
	t.Logf("%d relative links checked", checked)
	if checked < 50 {
		t.Errorf("only %d relative links checked: the pattern misses links", checked)
	}
}

// TestDocsGuarantees: the package documentation stays short (an example
// and the promise) and points to docs/guarantees.md, which numbers the
// rules the code and its tests cite: rules 1 to 7, each a bold sentence.
func TestDocsGuarantees(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), "\n// "); n > 60 {
		t.Errorf("doc.go's package comment has %d lines: the guarantees belong in docs/guarantees.md, the package doc is an example and a promise", n)
	}
	if !strings.Contains(string(src), "docs/guarantees.md") {
		t.Error("doc.go does not point to docs/guarantees.md")
	}
	page, err := os.ReadFile(filepath.Join("docs", "guarantees.md"))
	if err != nil {
		t.Fatal(err)
	}
	rules := numberedItems(strings.NewReplacer("`", "").Replace(string(page)))
	if len(rules) < 7 {
		t.Fatalf("docs/guarantees.md numbers %d rules, want at least 7", len(rules))
	}
	for i, r := range rules[:7] {
		if !strings.HasPrefix(r, "**") {
			t.Errorf("rule %d of docs/guarantees.md does not open with its sentence in bold: %.80s", i+1, r)
		}
	}
}

// numberedItems returns the items of the numbered lists of text ("1. ..."
// at the start of a line, possibly indented, and their continuation lines),
// in order, each with its whitespace collapsed. Only the next number
// starts an item: a line that begins with another is text.
func numberedItems(text string) []string {
	item := regexp.MustCompile(`^\s*(\d+)\. (.*)$`)
	var items []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		if m := item.FindStringSubmatch(line); m != nil && m[1] == fmt.Sprint(len(items)+1) {
			items = append(items, m[2])
			in = true
			continue
		}
		switch {
		case strings.TrimSpace(line) == "" || !strings.HasPrefix(line, " "):
			in = false
		case in:
			items[len(items)-1] += " " + strings.TrimSpace(line)
		}
	}
	for i := range items {
		items[i] = strings.Join(strings.Fields(items[i]), " ")
	}
	return items
}
