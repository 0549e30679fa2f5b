package clitest

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// K8sObject is one Kubernetes manifest, as parsed: examples/k8s holds
// those of the deployment guide, which tests check against the commands.
type K8sObject map[string]any

// Get walks path (map keys, or list indices as numbers) and returns what
// is there, or nil.
func (o K8sObject) Get(path ...any) any {
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

// Str is Get for a string: "" if there is none.
func (o K8sObject) Str(path ...any) string { s, _ := o.Get(path...).(string); return s }

// ReadManifests parses every document of a YAML file.
func ReadManifests(t testing.TB, path string) []K8sObject {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var objs []K8sObject
	dec := yaml.NewDecoder(f)
	for {
		var m map[string]any // not K8sObject, which nested maps would take
		err := dec.Decode(&m)
		o := K8sObject(m)
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
			if o.Str(k) == "" {
				t.Errorf("%s: a document without %s", path, k)
			}
		}
		if o.Str("metadata", "name") == "" {
			t.Errorf("%s: a %s without metadata.name", path, o.Str("kind"))
		}
		objs = append(objs, o)
	}
	return objs
}

// ParseCommandLine parses args with the flags of the harness's commands
// and returns the command, with its flags set.
func (h Harness) ParseCommandLine(t testing.TB, args []string) *cobra.Command {
	t.Helper()
	env, _, _ := Env("", nil)
	top := cli.NewCommand(env, h.Commands(env)...)
	cmd, rest, err := top.Find(args)
	if err != nil || cmd == top {
		t.Fatalf("%q: no such command: %v", args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return cmd
}

// FlagDuration returns a duration flag's value, or def if not given.
func FlagDuration(t testing.TB, cmd *cobra.Command, name string, def time.Duration) time.Duration {
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

// ContainerPort resolves a probe's port (a number or a port's name).
func ContainerPort(t testing.TB, c K8sObject, port any) int {
	t.Helper()
	switch p := port.(type) {
	case int:
		return p
	case string:
		ports, _ := c.Get("ports").([]any)
		for _, x := range ports {
			po := K8sObject(x.(map[string]any))
			if po.Str("name") == p {
				n, _ := po.Get("containerPort").(int)
				return n
			}
		}
	}
	t.Fatalf("port %v is not a port of container %s", port, c.Str("name"))
	return 0
}

// CheckPod checks what every pod of the manifests must have: no API
// token, not the root user, no privilege escalation, a read-only root
// file system, the DSN from a Secret.
func CheckPod(t testing.TB, d K8sObject) (K8sObject, map[string]any) {
	t.Helper()
	name := d.Str("metadata", "name")
	spec := K8sObject(d.Get("spec", "template", "spec").(map[string]any))
	if spec.Get("automountServiceAccountToken") != false {
		t.Errorf("%s: automountServiceAccountToken is not false: the pods need no API token", name)
	}
	if spec.Get("securityContext", "runAsNonRoot") != true {
		t.Errorf("%s: runAsNonRoot is not true", name)
	}
	labels, _ := d.Get("spec", "template", "metadata", "labels").(map[string]any)
	sel, _ := d.Get("spec", "selector", "matchLabels").(map[string]any)
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("%s: the selector %s=%v does not match the pods' labels %v", name, k, v, labels)
		}
	}
	cs, _ := spec.Get("containers").([]any)
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers, want 1", name, len(cs))
	}
	c := K8sObject(cs[0].(map[string]any))
	if c.Get("securityContext", "allowPrivilegeEscalation") != false || c.Get("securityContext", "readOnlyRootFilesystem") != true ||
		c.Get("securityContext", "capabilities", "drop", 0) != "ALL" {
		t.Errorf("%s: the container's securityContext is not least privilege: %v", name, c.Get("securityContext"))
	}
	envs, _ := c.Get("env").([]any)
	dsn := false
	for _, e := range envs {
		eo := K8sObject(e.(map[string]any))
		if eo.Str("name") == cli.EnvDatabaseURL {
			dsn = eo.Str("valueFrom", "secretKeyRef", "key") != "" && eo.Get("value") == nil
		}
	}
	if !dsn {
		t.Errorf("%s: %s does not come from a Secret", name, cli.EnvDatabaseURL)
	}
	return c, labels
}

// CheckProbe checks that a probe asks path on port.
func CheckProbe(t testing.TB, name string, c K8sObject, probe, path string, port int) {
	t.Helper()
	p, ok := c.Get(probe).(map[string]any)
	if !ok {
		t.Errorf("%s: no %s", name, probe)
		return
	}
	po := K8sObject(p)
	if got := po.Str("httpGet", "path"); got != path {
		t.Errorf("%s: %s asks %q, want %s", name, probe, got, path)
	}
	if got := ContainerPort(t, c, po.Get("httpGet", "port")); got != port {
		t.Errorf("%s: %s asks port %d, want %d", name, probe, got, port)
	}
}

// ToStrings returns a YAML list of strings.
func ToStrings(t testing.TB, v any) []string {
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
