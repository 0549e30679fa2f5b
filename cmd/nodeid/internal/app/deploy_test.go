package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

// TestDeployFiles: docs/deploy.md shows the files of examples/k8s as they
// are, and the Dockerfiles build the command as shipped and run it as a
// user other than root, with go.mod's Go. The manifests' command lines are
// checked by the tests of run and serve.
func TestDeployFiles(t *testing.T) {
	t.Parallel()
	root := clitest.RepoRoot
	doc, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"app.yaml", "serve.yaml", "role.sql", "Dockerfile"} {
		b, err := os.ReadFile(filepath.Join(root, "examples", "k8s", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "\n"+string(b)+"```") {
			t.Errorf("docs/deploy.md does not show examples/k8s/%s as it is", f)
		}
	}

	nodeidImage, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	app, err := os.ReadFile(filepath.Join(root, "examples", "k8s", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file string
		text []byte
		want []*regexp.Regexp
	}{
		{"Dockerfile", nodeidImage, []*regexp.Regexp{
			regexp.MustCompile(`(?m)^FROM \S+ AS build$`),
			regexp.MustCompile(`(?m)CGO_ENABLED=0 go build .*\./cmd/nodeid`),
			regexp.MustCompile(`(?m)^FROM scratch$`),
			regexp.MustCompile(`(?m)^COPY --from=build /out/nodeid /nodeid$`),
			regexp.MustCompile(`(?m)^ENTRYPOINT \["/nodeid"\]$`),
		}},
		{"examples/k8s/Dockerfile", app, []*regexp.Regexp{
			regexp.MustCompile(`(?m)^FROM \S+ AS nodeid$`),
			regexp.MustCompile(`(?m)^COPY --from=nodeid /nodeid /usr/local/bin/nodeid$`),
			regexp.MustCompile(`(?m)^ENTRYPOINT \["/usr/local/bin/nodeid"\]$`),
		}},
	} {
		for _, w := range c.want {
			if !w.Match(c.text) {
				t.Errorf("%s lacks %s", c.file, w)
			}
		}
		users := regexp.MustCompile(`(?m)^USER (\S+)$`).FindAllSubmatch(c.text, -1)
		if len(users) == 0 {
			t.Errorf("%s sets no USER: it would run as root", c.file)
		}
		for _, u := range users {
			if id := strings.Split(string(u[1]), ":")[0]; id == "0" || id == "root" {
				t.Errorf("%s runs as %s", c.file, u[1])
			}
		}
	}
	// The Go of the build stage is go.mod's.
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if goVer == nil || !strings.Contains(string(nodeidImage), "FROM golang:"+string(goVer[1])) {
		t.Errorf("the build stage's Go is not go.mod's go %s", goVer[1])
	}
}
