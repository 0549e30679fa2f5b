package run

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nodeid/nodeid/cmd/nodeid/internal/cli"
	"github.com/nodeid/nodeid/cmd/nodeid/internal/clitest"
)

// TestRunDeployManifest parses the Deployment of examples/k8s/app.yaml,
// which runs an application under "nodeid run", and checks its command
// line against the command's real flags, its probes, its grace period and
// privileges, and that its exports tell the node IDs apart.
func TestRunDeployManifest(t *testing.T) {
	t.Parallel()
	root := clitest.RepoRoot
	objs := clitest.ReadManifests(t, filepath.Join(root, "examples", "k8s", "app.yaml"))
	var d clitest.K8sObject
	for _, o := range objs {
		if o.Str("kind") == "Deployment" {
			d = o
		}
	}
	if d == nil {
		t.Fatal("no Deployment in app.yaml")
	}
	c, _ := clitest.CheckPod(t, d)
	args := clitest.ToStrings(t, c.Get("args"))
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("the container runs %q, not nodeid run", args)
	}
	cmd := harness.ParseCommandLine(t, args)
	if cmd.Flags().ArgsLenAtDash() < 0 && len(cmd.Flags().Args()) == 0 {
		t.Fatalf("%q: no command after --", args)
	}
	ttl := clitest.FlagDuration(t, cmd, "ttl", time.Minute)
	grace := clitest.FlagDuration(t, cmd, "grace", ttl/6)
	tg, _ := d.Get("spec", "template", "spec", "terminationGracePeriodSeconds").(int)
	if time.Duration(tg)*time.Second <= grace {
		t.Errorf("terminationGracePeriodSeconds %d is not above --grace %s", tg, grace)
	}
	_, port, err := net.SplitHostPort(cmd.Flags().Lookup("metrics-addr").Value.String())
	if err != nil {
		t.Fatalf("--metrics-addr: %v", err)
	}
	p, _ := strconv.Atoi(port)
	for _, probe := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
		clitest.CheckProbe(t, "app.yaml", c, probe, "/healthz", p)
	}
	exports := cmd.Flags().Lookup("export").Value.(*exportFlags)
	if len(exports.list) == 0 {
		t.Error("no --export")
	}
	r := cli.DefaultRange
	if f := cmd.Flags().Lookup("range"); f.Changed {
		if r, err = cli.ParseRange(f.Value.String()); err != nil {
			t.Fatal(err)
		}
	}
	if err := exports.distinct(r, "the range "+r.String(), false); err != nil {
		t.Error(err)
	}
}
