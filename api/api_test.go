// Package api holds the exported API of the library's public packages,
// one file per package (api/<name>.txt), in the spirit of Go's own api
// files: one line per exported name, with its full signature, sorted. The
// test keeps the files equal to the packages, so that every change of the
// API is a reviewed diff; after an intended change, regenerate them:
//
//	go test ./api -update
package api

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite api/*.txt from the packages")

// module is the library's module path.
const module = "github.com/nodeid/nodeid"

// packages are the public packages: their import paths and files.
var packages = []struct{ path, file string }{
	{module, "nodeid.txt"},
	{module + "/snowflake", "snowflake.txt"},
	{module + "/postgres", "postgres.txt"},
	{module + "/nodeidtest", "nodeidtest.txt"},
	{module + "/admin", "admin.txt"},
}

// TestPublicPackages: the library module's packages outside internal/ are
// (but its programs) are exactly the ones recorded here; a new one is an
// API change too.
func TestPublicPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-f", `{{if and .GoFiles (eq .Module.Path "github.com/nodeid/nodeid") (ne .Name "main")}}{{.ImportPath}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list %s/...: %v", module, err)
	}
	var got, want []string
	for _, p := range strings.Fields(string(out)) {
		if p != module+"/internal" && !strings.HasPrefix(p, module+"/internal/") {
			got = append(got, p)
		}
	}
	for _, p := range packages {
		want = append(want, p.path)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the library module's public packages are %q; api/ records %q", got, want)
	}
}

func TestAPI(t *testing.T) {
	pkgs := load(t)
	for _, p := range packages {
		got := describe(pkgs[p.path])
		if *update {
			if err := os.WriteFile(p.file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(p.file)
		if err != nil {
			t.Fatalf("%v (go test ./api -update writes it)", err)
		}
		if line, g, w := firstDiff(got, string(want)); line != 0 {
			t.Errorf("api/%s disagrees with package %s at line %d:\n  package: %s\n  file:    %s\n"+
				"an API change is reviewed as a diff of api/*.txt: go test ./api -update rewrites them",
				p.file, p.path, line, g, w)
		}
	}
}

// listFlags are the build flags of "go list -export": the test binary's
// own (race_test.go), so that it finds the packages' export data in the
// build cache.
var listFlags []string

// load type-checks the public packages from the export data of the build
// cache, which "go list -export" fills (the standard library only: no
// loader module).
func load(t *testing.T) map[string]*types.Package {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, listFlags...)
	for _, p := range packages {
		args = append(args, p.path)
	}
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	pkgs := map[string]*types.Package{}
	for _, p := range packages {
		pkg, err := imp.Import(p.path)
		if err != nil {
			t.Fatal(err)
		}
		pkgs[p.path] = pkg
	}
	return pkgs
}

// firstDiff returns the first line (from 1) where got and want differ,
// and the two lines ("(end)" past the end); 0 if they are equal.
func firstDiff(got, want string) (int, string, string) {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		gl, wl := "(end)", "(end)"
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return i + 1, gl, wl
		}
	}
	return 0, "", ""
}

// describe returns the API of pkg: one line per exported name, its
// methods and its struct fields or interface methods, sorted.
func describe(pkg *types.Package) string {
	// Other packages are named as in Go's api files, by their name, or by
	// their path where the name is this package's (bwmarrin's snowflake).
	q := func(p *types.Package) string {
		switch {
		case p == pkg:
			return ""
		case p.Name() == pkg.Name():
			return p.Path()
		}
		return p.Name()
	}
	typ := func(t types.Type) string { return types.TypeString(t, q) }
	var lines []string
	add := func(format string, args ...any) {
		lines = append(lines, "pkg "+pkg.Path()+", "+fmt.Sprintf(format, args...))
	}
	// members lists the methods and fields of named type n under name: a
	// type of the package, or an alias of one of an internal package, whose
	// methods and fields are this package's API too.
	members := func(name string, n *types.Named) {
		for i := 0; i < n.NumMethods(); i++ {
			m := n.Method(i)
			if !m.Exported() {
				continue
			}
			recv := name
			if _, ok := m.Signature().Recv().Type().(*types.Pointer); ok {
				recv = "*" + name
			}
			add("method (%s) %s%s", recv, m.Name(), signature(m.Signature(), typ))
		}
		switch u := n.Underlying().(type) {
		case *types.Struct:
			for i := 0; i < u.NumFields(); i++ {
				f := u.Field(i)
				if !f.Exported() {
					continue
				}
				if f.Embedded() {
					add("type %s struct, embedded %s", name, typ(f.Type()))
				} else {
					add("type %s struct, %s %s", name, f.Name(), typ(f.Type()))
				}
			}
		case *types.Interface:
			for i := 0; i < u.NumMethods(); i++ {
				if m := u.Method(i); m.Exported() {
					add("type %s interface, %s%s", name, m.Name(), signature(m.Signature(), typ))
				}
			}
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			if b, ok := o.Type().(*types.Basic); ok && b.Info()&types.IsUntyped != 0 {
				add("const %s = %s", name, o.Val().ExactString())
			} else {
				add("const %s %s = %s", name, typ(o.Type()), o.Val().ExactString())
			}
		case *types.Var:
			add("var %s %s", name, typ(o.Type()))
		case *types.Func:
			add("func %s%s", name, signature(o.Signature(), typ))
		case *types.TypeName:
			if o.IsAlias() {
				add("type %s = %s", name, typ(types.Unalias(o.Type())))
				if n, ok := types.Unalias(o.Type()).(*types.Named); ok && n.Obj().Pkg() != nil &&
					strings.Contains(n.Obj().Pkg().Path(), "/internal/") {
					members(name, n)
				}
				continue
			}
			n := o.Type().(*types.Named)
			switch u := n.Underlying().(type) {
			case *types.Struct:
				add("type %s struct", name)
			case *types.Interface:
				var ms []string
				for i := 0; i < u.NumMethods(); i++ {
					ms = append(ms, u.Method(i).Name())
				}
				add("type %s interface { %s }", name, strings.Join(ms, ", "))
			default:
				add("type %s %s", name, typ(u))
			}
			members(name, n)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// signature writes sig without parameter names: (T1, ...T2) (R1, R2).
func signature(sig *types.Signature, typ func(types.Type) string) string {
	list := func(tup *types.Tuple, variadic bool) []string {
		var out []string
		for i := 0; i < tup.Len(); i++ {
			t := tup.At(i).Type()
			if variadic && i == tup.Len()-1 {
				out = append(out, "..."+typ(t.(*types.Slice).Elem()))
				continue
			}
			out = append(out, typ(t))
		}
		return out
	}
	s := "(" + strings.Join(list(sig.Params(), sig.Variadic()), ", ") + ")"
	switch res := list(sig.Results(), false); len(res) {
	case 0:
	case 1:
		s += " " + res[0]
	default:
		s += " (" + strings.Join(res, ", ") + ")"
	}
	return s
}
