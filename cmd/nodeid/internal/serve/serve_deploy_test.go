package serve

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

// TestServeDeployManifest parses examples/k8s/serve.yaml, which runs
// "nodeid serve" as a highly available ID service, and checks its command
// line against the command's real flags, its probes, grace period and
// privileges, and that its Service and NetworkPolicy reach the port it
// listens on.
func TestServeDeployManifest(t *testing.T) {
	t.Parallel()
	root := clitest.RepoRoot
	objs := clitest.ReadManifests(t, filepath.Join(root, "examples", "k8s", "serve.yaml"))
	kinds := map[string]clitest.K8sObject{}
	for _, o := range objs {
		kinds[o.Str("kind")] = o
	}
	for _, k := range []string{"ServiceAccount", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"} {
		if kinds[k] == nil {
			t.Fatalf("no %s in serve.yaml", k)
		}
	}
	d := kinds["Deployment"]
	c, labels := clitest.CheckPod(t, d)
	args := clitest.ToStrings(t, c.Get("args"))
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("the container runs %q, not nodeid serve", args)
	}
	cmd := harness.ParseCommandLine(t, args)
	ttl := clitest.FlagDuration(t, cmd, "ttl", time.Minute)
	grace := clitest.FlagDuration(t, cmd, "grace", ttl/6)
	tg, _ := d.Get("spec", "template", "spec", "terminationGracePeriodSeconds").(int)
	if time.Duration(tg)*time.Second <= grace {
		t.Errorf("terminationGracePeriodSeconds %d is not above --grace %s", tg, grace)
	}
	network, addr, err := listenAddr(cmd.Flags().Lookup("listen").Value.String())
	if err != nil || network != "tcp" {
		t.Fatalf("--listen: %v", err)
	}
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	clitest.CheckProbe(t, "serve.yaml", c, "readinessProbe", "/healthz", p)
	svc := kinds["Service"]
	for k, v := range svc.Get("spec", "selector").(map[string]any) {
		if labels[k] != v {
			t.Errorf("the Service's selector %s=%v does not match the pods' labels %v", k, v, labels)
		}
	}
	if got := clitest.ContainerPort(t, c, svc.Get("spec", "ports", 0, "targetPort")); got != p {
		t.Errorf("the Service targets port %d, serve listens on %d", got, p)
	}
	// Two rules on serve's port: the clients, and Prometheus, whose peer
	// has both selectors (as two peers they would admit either).
	np := kinds["NetworkPolicy"]
	rules, _ := np.Get("spec", "ingress").([]any)
	if len(rules) != 2 {
		t.Fatalf("the NetworkPolicy has %d ingress rules, want 2: the clients and Prometheus", len(rules))
	}
	for i := range rules {
		if got, _ := np.Get("spec", "ingress", i, "ports", 0, "port").(int); got != p {
			t.Errorf("rule %d of the NetworkPolicy admits port %d, serve listens on %d", i, got, p)
		}
		if peers, _ := np.Get("spec", "ingress", i, "from").([]any); len(peers) != 1 {
			t.Errorf("rule %d of the NetworkPolicy has %d peers, want 1", i, len(peers))
		}
	}
	if v := np.Str("spec", "ingress", 0, "from", 0, "podSelector", "matchLabels", "nodeid-client"); v != "true" {
		t.Errorf("the first rule admits nodeid-client=%q, want the clients' label", v)
	}
	prom := []any{"spec", "ingress", 1, "from", 0}
	if ns, pod := np.Str(append(prom, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")...),
		np.Str(append(prom, "podSelector", "matchLabels", "app.kubernetes.io/name")...); ns != "monitoring" || pod != "prometheus" {
		t.Errorf("the second rule admits pods %q of namespace %q, want Prometheus's pods of monitoring in one peer", pod, ns)
	}
}
