package main

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// k8sObject is one manifest, as parsed.
type k8sObject map[string]any

// get walks path (map keys, or list indices as numbers) and returns what
// is there, or nil.
func (o k8sObject) get(path ...any) any {
	var cur any = map[string]any(o)
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[k]
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			cur = l[k]
		}
	}
	return cur
}

func (o k8sObject) str(path ...any) string { s, _ := o.get(path...).(string); return s }

// readManifests parses every document of a YAML file.
func readManifests(t *testing.T, path string) []k8sObject {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var objs []k8sObject
	dec := yaml.NewDecoder(f)
	for {
		var m map[string]any // not k8sObject, which nested maps would take
		err := dec.Decode(&m)
		o := k8sObject(m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if o == nil {
			continue
		}
		for _, k := range []string{"apiVersion", "kind"} {
			if o.str(k) == "" {
				t.Errorf("%s: a document without %s", path, k)
			}
		}
		if o.str("metadata", "name") == "" {
			t.Errorf("%s: a %s without metadata.name", path, o.str("kind"))
		}
		objs = append(objs, o)
	}
	return objs
}

// parseCommandLine parses args with the command tree's own flags and
// returns the command, with its flags set.
func parseCommandLine(t *testing.T, args []string) *cobra.Command {
	t.Helper()
	a, _, _ := testApp("", nil)
	root := a.rootCommand()
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root {
		t.Fatalf("%q: no such command: %v", args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return cmd
}

// flagDuration returns a duration flag's value, or def if not given.
func flagDuration(t *testing.T, cmd *cobra.Command, name string, def time.Duration) time.Duration {
	t.Helper()
	f := cmd.Flags().Lookup(name)
	if !f.Changed {
		return def
	}
	d, err := time.ParseDuration(f.Value.String())
	if err != nil {
		t.Fatalf("--%s %s: %v", name, f.Value, err)
	}
	return d
}

// containerPort resolves a probe's port (a number or a port's name).
func containerPort(t *testing.T, c k8sObject, port any) int {
	t.Helper()
	switch p := port.(type) {
	case int:
		return p
	case string:
		ports, _ := c.get("ports").([]any)
		for _, x := range ports {
			po := k8sObject(x.(map[string]any))
			if po.str("name") == p {
				n, _ := po.get("containerPort").(int)
				return n
			}
		}
	}
	t.Fatalf("port %v is not a port of container %s", port, c.str("name"))
	return 0
}

// checkPod checks what every pod of the manifests must have: no API
// token, not root, no privilege escalation, a read-only root, the DSN
// from a Secret.
func checkPod(t *testing.T, d k8sObject) (k8sObject, map[string]any) {
	t.Helper()
	name := d.str("metadata", "name")
	spec := k8sObject(d.get("spec", "template", "spec").(map[string]any))
	if spec.get("automountServiceAccountToken") != false {
		t.Errorf("%s: automountServiceAccountToken is not false: the pods need no API token", name)
	}
	if spec.get("securityContext", "runAsNonRoot") != true {
		t.Errorf("%s: runAsNonRoot is not true", name)
	}
	labels, _ := d.get("spec", "template", "metadata", "labels").(map[string]any)
	sel, _ := d.get("spec", "selector", "matchLabels").(map[string]any)
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("%s: the selector %s=%v does not match the pods' labels %v", name, k, v, labels)
		}
	}
	cs, _ := spec.get("containers").([]any)
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers, want 1", name, len(cs))
	}
	c := k8sObject(cs[0].(map[string]any))
	if c.get("securityContext", "allowPrivilegeEscalation") != false || c.get("securityContext", "readOnlyRootFilesystem") != true ||
		c.get("securityContext", "capabilities", "drop", 0) != "ALL" {
		t.Errorf("%s: the container's securityContext is not least privilege: %v", name, c.get("securityContext"))
	}
	envs, _ := c.get("env").([]any)
	dsn := false
	for _, e := range envs {
		eo := k8sObject(e.(map[string]any))
		if eo.str("name") == EnvDatabaseURL {
			dsn = eo.str("valueFrom", "secretKeyRef", "key") != "" && eo.get("value") == nil
		}
	}
	if !dsn {
		t.Errorf("%s: %s does not come from a Secret", name, EnvDatabaseURL)
	}
	return c, labels
}

// checkProbe checks that a probe asks path on port.
func checkProbe(t *testing.T, name string, c k8sObject, probe, path string, port int) {
	t.Helper()
	p, ok := c.get(probe).(map[string]any)
	if !ok {
		t.Errorf("%s: no %s", name, probe)
		return
	}
	po := k8sObject(p)
	if got := po.str("httpGet", "path"); got != path {
		t.Errorf("%s: %s asks %q, want %s", name, probe, got, path)
	}
	if got := containerPort(t, c, po.get("httpGet", "port")); got != port {
		t.Errorf("%s: %s asks port %d, want %d", name, probe, got, port)
	}
}

// TestServeDeployManifests parses the Kubernetes manifests of
// examples/k8s, checks their command lines against the commands' real
// flags, their probes, grace periods and privileges, and that
// docs/deploy.md shows them as they are; and checks the Dockerfiles.
func TestServeDeployManifests(t *testing.T) {
	root := filepath.Join("..", "..")
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

	t.Run("run", func(t *testing.T) {
		objs := readManifests(t, filepath.Join(root, "examples", "k8s", "app.yaml"))
		var d k8sObject
		for _, o := range objs {
			if o.str("kind") == "Deployment" {
				d = o
			}
		}
		if d == nil {
			t.Fatal("no Deployment in app.yaml")
		}
		c, _ := checkPod(t, d)
		args := toStrings(t, c.get("args"))
		if len(args) == 0 || args[0] != "run" {
			t.Fatalf("the container runs %q, not nodeid run", args)
		}
		cmd := parseCommandLine(t, args)
		if cmd.Flags().ArgsLenAtDash() < 0 && len(cmd.Flags().Args()) == 0 {
			t.Fatalf("%q: no command after --", args)
		}
		ttl := flagDuration(t, cmd, "ttl", time.Minute)
		grace := flagDuration(t, cmd, "grace", ttl/6)
		tg, _ := d.get("spec", "template", "spec", "terminationGracePeriodSeconds").(int)
		if time.Duration(tg)*time.Second <= grace {
			t.Errorf("terminationGracePeriodSeconds %d is not above --grace %s", tg, grace)
		}
		_, port, err := net.SplitHostPort(cmd.Flags().Lookup("metrics-addr").Value.String())
		if err != nil {
			t.Fatalf("--metrics-addr: %v", err)
		}
		p, _ := strconv.Atoi(port)
		for _, probe := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
			checkProbe(t, "app.yaml", c, probe, "/healthz", p)
		}
		exports := cmd.Flags().Lookup("export").Value.(*exportFlags)
		if len(exports.list) == 0 {
			t.Error("no --export")
		}
		r := defaultRange
		if f := cmd.Flags().Lookup("range"); f.Changed {
			if r, err = parseRange(f.Value.String()); err != nil {
				t.Fatal(err)
			}
		}
		if err := exports.distinct(r); err != nil {
			t.Error(err)
		}
	})

	t.Run("serve", func(t *testing.T) {
		objs := readManifests(t, filepath.Join(root, "examples", "k8s", "serve.yaml"))
		kinds := map[string]k8sObject{}
		for _, o := range objs {
			kinds[o.str("kind")] = o
		}
		for _, k := range []string{"ServiceAccount", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"} {
			if kinds[k] == nil {
				t.Fatalf("no %s in serve.yaml", k)
			}
		}
		d := kinds["Deployment"]
		c, labels := checkPod(t, d)
		args := toStrings(t, c.get("args"))
		if len(args) == 0 || args[0] != "serve" {
			t.Fatalf("the container runs %q, not nodeid serve", args)
		}
		cmd := parseCommandLine(t, args)
		ttl := flagDuration(t, cmd, "ttl", time.Minute)
		grace := flagDuration(t, cmd, "grace", ttl/6)
		tg, _ := d.get("spec", "template", "spec", "terminationGracePeriodSeconds").(int)
		if time.Duration(tg)*time.Second <= grace {
			t.Errorf("terminationGracePeriodSeconds %d is not above --grace %s", tg, grace)
		}
		network, addr, err := listenAddr(cmd.Flags().Lookup("listen").Value.String())
		if err != nil || network != "tcp" {
			t.Fatalf("--listen: %v", err)
		}
		_, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		checkProbe(t, "serve.yaml", c, "readinessProbe", "/healthz", p)
		svc := kinds["Service"]
		for k, v := range svc.get("spec", "selector").(map[string]any) {
			if labels[k] != v {
				t.Errorf("the Service's selector %s=%v does not match the pods' labels %v", k, v, labels)
			}
		}
		if got := containerPort(t, c, svc.get("spec", "ports", 0, "targetPort")); got != p {
			t.Errorf("the Service targets port %d, serve listens on %d", got, p)
		}
		if got, _ := kinds["NetworkPolicy"].get("spec", "ingress", 0, "ports", 0, "port").(int); got != p {
			t.Errorf("the NetworkPolicy admits port %d, serve listens on %d", got, p)
		}
	})

	t.Run("Dockerfiles", func(t *testing.T) {
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
	})
}

// toStrings returns a YAML list of strings.
func toStrings(t *testing.T, v any) []string {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%v is not a list", v)
	}
	out := make([]string, len(l))
	for i, x := range l {
		s, ok := x.(string)
		if !ok {
			t.Fatalf("%v is not a string", x)
		}
		out[i] = s
	}
	return out
}
