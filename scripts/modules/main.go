//go:build ignore

// Command modules is the Go half of "scripts/release --modules": it reads
// the repository's modules at a commit and writes a module's zip as the go
// command makes it from a tag. Standard library only, so that it builds
// anywhere the repository does; run it with "go run scripts/modules/main.go".
//
//	modules plan -repo DIR -rev REV [-unpublished DIR,...]
//
// lists the modules of go.work at REV that a release publishes, each after
// the ones it requires, one a line: folder ("." for the root), module path,
// the repository's published modules it requires, and the modules of the
// repository it has a replace of (comma-separated lists, "-" for none),
// tab-separated. A module is published unless its path has an
// "internal" element (a module that only the repository's own modules may
// import: tests) or its folder is one of -unpublished. It fails when a
// published module's folder does not match its path (the go command finds
// the module of tag FOLDER/vX.Y.Z in FOLDER), when one requires a module
// of the repository that is not published, when one has a replace of a
// module outside the repository, or an exclude (a go install of it would
// refuse), and when the published modules require each other in a cycle.
//
//	modules zip -repo DIR -rev REV -dir FOLDER -module PATH -version V -o OUT [-file NAME=PATH]...
//
// writes the zip of the module in FOLDER at REV, as the go command makes it
// from a tag (modfetch's coderepo and golang.org/x/mod/zip): git archive of
// REV's FOLDER, less nested modules, vendored packages, symbolic links and
// other irregular files; the repository's LICENSE when FOLDER has none;
// each file named module@version/NAME. -file puts PATH's content at NAME
// in place of REV's (the go.mod, go.sum and CHANGELOG.md of the release).
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: modules plan|zip [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "plan":
		err = plan(os.Args[2:])
	case "zip":
		err = zipModule(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q: plan or zip", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "modules:", err)
	os.Exit(1)
}

// git runs git in repo and returns its standard output.
func git(repo string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// editJSON returns "go mod edit -json" or "go work edit -json" of the file
// data (a go.mod or go.work), decoded into v.
func editJSON(tool string, data []byte, v any) error {
	dir, err := os.MkdirTemp("", "modules-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "go.mod")
	if tool == "work" {
		name = filepath.Join(dir, "go.work")
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		return err
	}
	cmd := exec.Command("go", tool, "edit", "-json", name)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go %s edit -json: %v: %s", tool, err, strings.TrimSpace(stderr.String()))
	}
	return json.Unmarshal(out, v)
}

type modVersion struct{ Path, Version string }

type goMod struct {
	Module  struct{ Path string }
	Require []modVersion
	Exclude []modVersion
	Replace []struct{ Old, New modVersion }
}

type module struct {
	dir, path string
	mod       goMod
	published bool
	requires  []string // published modules of the repository it requires
	replaces  []string // modules of the repository it has a replace of
}

func plan(args []string) error {
	fs := flag.NewFlagSet("plan", flag.ExitOnError)
	repo := fs.String("repo", ".", "the repository")
	rev := fs.String("rev", "HEAD", "the commit")
	unpub := fs.String("unpublished", "", "comma-separated folders of modules a release does not publish")
	fs.Parse(args)

	notPublished := map[string]bool{}
	for _, d := range strings.Split(*unpub, ",") {
		if d = strings.Trim(d, "/"); d != "" {
			notPublished[path.Clean(strings.TrimPrefix(d, "./"))] = true
		}
	}

	work, err := git(*repo, "show", *rev+":go.work")
	if err != nil {
		return err
	}
	var w struct{ Use []struct{ DiskPath string } }
	if err := editJSON("work", work, &w); err != nil {
		return err
	}
	var mods []*module
	byPath := map[string]*module{}
	for _, u := range w.Use {
		dir := path.Clean(filepath.ToSlash(u.DiskPath))
		if path.IsAbs(dir) || dir == ".." || strings.HasPrefix(dir, "../") {
			return fmt.Errorf("go.work uses %s, outside the repository", u.DiskPath)
		}
		gomod := "go.mod"
		if dir != "." {
			gomod = dir + "/go.mod"
		}
		data, err := git(*repo, "show", *rev+":"+gomod)
		if err != nil {
			return err
		}
		m := &module{dir: dir}
		if err := editJSON("mod", data, &m.mod); err != nil {
			return fmt.Errorf("%s: %v", gomod, err)
		}
		m.path = m.mod.Module.Path
		m.published = !notPublished[dir] && !hasElem(m.path, "internal")
		delete(notPublished, dir)
		mods = append(mods, m)
		byPath[m.path] = m
	}
	if len(notPublished) > 0 {
		var names []string
		for d := range notPublished {
			names = append(names, d)
		}
		sort.Strings(names)
		return fmt.Errorf("-unpublished names %s, not a module of go.work", strings.Join(names, ", "))
	}

	var root *module
	for _, m := range mods {
		if m.dir == "." {
			root = m
		}
	}
	if root == nil {
		return errors.New("go.work does not use the repository's root module (.)")
	}
	for _, m := range mods {
		if !m.published {
			continue
		}
		if want := root.path + "/" + m.dir; m.dir != "." && m.path != want {
			return fmt.Errorf("module %s is in %s/: the go command looks for a tag %s/vX.Y.Z of module %s there, so the path must be %s", m.path, m.dir, m.dir, m.path, want)
		}
		for _, r := range m.mod.Require {
			dep, ok := byPath[r.Path]
			if !ok {
				continue
			}
			if !dep.published {
				return fmt.Errorf("module %s (%s) is published, and requires %s (%s), which is not", m.path, m.dir, dep.path, dep.dir)
			}
			m.requires = append(m.requires, dep.path)
		}
		for _, r := range m.mod.Replace {
			if _, ok := byPath[r.Old.Path]; !ok {
				return fmt.Errorf("module %s (%s) is published and replaces %s: go install refuses a module with a replace, and a module that requires it ignores it", m.path, m.dir, r.Old.Path)
			}
			m.replaces = append(m.replaces, r.Old.Path)
		}
		if len(m.mod.Exclude) > 0 {
			return fmt.Errorf("module %s (%s) is published and excludes %s: go install refuses a module with an exclude", m.path, m.dir, m.mod.Exclude[0].Path)
		}
	}

	// Each module after those it requires; go.work's order otherwise.
	done := map[string]bool{}
	visiting := map[string]bool{}
	var order []*module
	var visit func(m *module) error
	visit = func(m *module) error {
		if done[m.path] {
			return nil
		}
		if visiting[m.path] {
			return fmt.Errorf("the published modules require each other in a cycle through %s", m.path)
		}
		visiting[m.path] = true
		for _, r := range m.requires {
			if err := visit(byPath[r]); err != nil {
				return err
			}
		}
		done[m.path] = true
		order = append(order, m)
		return nil
	}
	for _, m := range mods {
		if m.published {
			if err := visit(m); err != nil {
				return err
			}
		}
	}
	list := func(l []string) string {
		if len(l) == 0 {
			return "-"
		}
		return strings.Join(l, ",")
	}
	for _, m := range order {
		fmt.Printf("%s\t%s\t%s\t%s\n", m.dir, m.path, list(m.requires), list(m.replaces))
	}
	return nil
}

func hasElem(p, elem string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == elem {
			return true
		}
	}
	return false
}

// Limits of golang.org/x/mod/zip.
const (
	maxZipFile = 500 << 20
	maxGoMod   = 16 << 20
	maxLICENSE = 16 << 20
)

type file struct {
	name string
	mode os.FileMode
	data []byte
}

type fileFlags map[string]string

func (f fileFlags) String() string { return fmt.Sprint(map[string]string(f)) }
func (f fileFlags) Set(s string) error {
	name, p, ok := strings.Cut(s, "=")
	if !ok || name == "" || p == "" {
		return fmt.Errorf("-file %q: want NAME=PATH", s)
	}
	f[name] = p
	return nil
}

func zipModule(args []string) error {
	fs := flag.NewFlagSet("zip", flag.ExitOnError)
	repo := fs.String("repo", ".", "the repository")
	rev := fs.String("rev", "HEAD", "the commit")
	dir := fs.String("dir", ".", "the module's folder in the repository")
	modPath := fs.String("module", "", "the module's path")
	version := fs.String("version", "", "the version")
	out := fs.String("o", "", "the zip to write")
	overrides := fileFlags{}
	fs.Var(overrides, "file", "NAME=PATH: PATH's content at NAME, in place of REV's (repeatable)")
	fs.Parse(args)
	if *modPath == "" || *version == "" || *out == "" {
		return errors.New("zip needs -module, -version and -o")
	}
	subdir := strings.Trim(path.Clean(filepath.ToSlash(*dir)), "/")
	if subdir == "." {
		subdir = ""
	}

	// As the go command's git archive (codehost.gitRepo.ReadZip).
	archiveArgs := []string{"-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", "--prefix=prefix/", "--end-of-options", *rev}
	if subdir != "" {
		archiveArgs = append(archiveArgs, subdir)
	}
	archive, err := git(*repo, archiveArgs...)
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return err
	}
	var files []file
	seen := map[string]bool{}
	prefix := "prefix/"
	if subdir != "" {
		prefix += subdir + "/"
	}
	for _, zf := range zr.File {
		name, ok := strings.CutPrefix(zf.Name, prefix)
		if !ok || name == "" || strings.HasSuffix(name, "/") {
			continue
		}
		f := file{name: name, mode: zf.Mode()}
		if p, ok := overrides[name]; ok {
			f.data, err = os.ReadFile(p)
			f.mode = 0o644
		} else if f.mode.IsRegular() {
			f.data, err = readZipFile(zf)
		}
		if err != nil {
			return err
		}
		files = append(files, f)
		seen[name] = true
	}
	for name, p := range overrides {
		if seen[name] {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, file{name: name, mode: 0o644, data: data})
		seen[name] = true
	}
	if !seen["LICENSE"] && subdir != "" {
		if data, err := git(*repo, "cat-file", "blob", *rev+":LICENSE"); err == nil {
			files = append(files, file{name: "LICENSE", mode: 0o644, data: data})
		}
	}

	valid, err := checkFiles(files)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	w, err := os.Create(*out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(w)
	top := *modPath + "@" + *version + "/"
	for _, f := range valid {
		fw, err := zw.Create(top + f.name)
		if err != nil {
			return err
		}
		if _, err := fw.Write(f.data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return w.Close()
}

func readZipFile(zf *zip.File) ([]byte, error) {
	r, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// checkFiles keeps the files golang.org/x/mod/zip's Create keeps, and fails
// where it fails.
func checkFiles(files []file) ([]file, error) {
	haveGoMod := map[string]bool{}
	goVers := ""
	for _, f := range files {
		dir, base := path.Split(f.name)
		if strings.EqualFold(base, "go.mod") && f.mode.IsRegular() {
			haveGoMod[dir] = true
			if f.name == "go.mod" {
				goVers = goDirective(f.data)
			}
		}
	}
	inSubmodule := func(p string) bool {
		for {
			dir, _ := path.Split(p)
			if dir == "" {
				return false
			}
			if haveGoMod[dir] {
				return true
			}
			p = dir[:len(dir)-1]
		}
	}
	folded := map[string]string{}
	var valid []file
	var total int64
	for _, f := range files {
		p := f.name
		switch {
		case p != path.Clean(p) || path.IsAbs(p):
			return nil, fmt.Errorf("%s: not a clean relative path", p)
		case isVendoredPackage(p, goVers), inSubmodule(p), p == ".hg_archival.txt":
			continue
		}
		if err := checkFilePath(p); err != nil {
			return nil, err
		}
		if strings.ToLower(p) == "go.mod" && p != "go.mod" {
			return nil, fmt.Errorf("%s: go.mod files must have lowercase names", p)
		}
		// Names, and the folders they are in, that differ only in case.
		for q := p; q != "."; q = path.Dir(q) {
			l := strings.ToLower(q)
			if other, ok := folded[l]; ok && other != q {
				return nil, fmt.Errorf("%s: case-insensitive file name collision with %s", q, other)
			}
			folded[l] = q
		}
		if !f.mode.IsRegular() { // symbolic links and the like
			continue
		}
		total += int64(len(f.data))
		switch {
		case total > maxZipFile:
			return nil, fmt.Errorf("module source tree too large (max size is %d bytes)", maxZipFile)
		case p == "go.mod" && len(f.data) > maxGoMod:
			return nil, fmt.Errorf("go.mod file too large (max size is %d bytes)", maxGoMod)
		case p == "LICENSE" && len(f.data) > maxLICENSE:
			return nil, fmt.Errorf("LICENSE file too large (max size is %d bytes)", maxLICENSE)
		}
		valid = append(valid, f)
	}
	sort.Slice(valid, func(i, j int) bool { return valid[i].name < valid[j].name })
	return valid, nil
}

// goDirective returns the go line's version of a go.mod ("1.26.0"), "" if
// it has none.
func goDirective(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "go" {
			return f[1]
		}
	}
	return ""
}

// atLeastGo124 reports whether go.mod's version v is 1.24 or later.
func atLeastGo124(v string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 1 || major == 1 && minor >= 24
}

// isVendoredPackage is golang.org/x/mod/zip's: whether name is a file of a
// vendored package, which a module zip omits.
func isVendoredPackage(name, goVers string) bool {
	go124 := atLeastGo124(goVers)
	if go124 && name == "vendor/modules.txt" {
		return true
	}
	var i int
	if strings.HasPrefix(name, "vendor/") {
		i += len("vendor/")
	} else if j := strings.Index(name, "/vendor/"); j >= 0 {
		if go124 {
			i = j + len("/vendor/")
		} else {
			i += len("/vendor/")
		}
	} else {
		return false
	}
	return strings.Contains(name[i:], "/")
}

// checkFilePath is golang.org/x/mod/module's CheckFilePath: the names a
// module zip may hold (every system can write them).
func checkFilePath(p string) error {
	for _, elem := range strings.Split(p, "/") {
		if elem == "" || strings.Count(elem, ".") == len(elem) {
			return fmt.Errorf("%s: invalid path element %q", p, elem)
		}
		if strings.HasSuffix(elem, ".") {
			return fmt.Errorf("%s: trailing dot in path element", p)
		}
		for _, r := range elem {
			ok := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' ||
				r < utf8.RuneSelf && strings.ContainsRune("!#$%&()+,-.=@[]^_{}~ ", r) ||
				r >= utf8.RuneSelf && unicode.IsLetter(r)
			if !ok {
				return fmt.Errorf("%s: invalid char %q", p, r)
			}
		}
		short, _, _ := strings.Cut(elem, ".")
		for _, bad := range []string{"CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9"} {
			if strings.EqualFold(short, bad) {
				return fmt.Errorf("%s: %q is a name Windows reserves", p, elem)
			}
		}
	}
	return nil
}
