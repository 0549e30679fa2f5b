// Package helm holds the tests of the Helm chart in nodeid/: rendered with
// Helm's own engine, every manifest decoded strictly into its Kubernetes
// or prometheus-operator type, and the fields that matter checked.
package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

const (
	chartDir  = "nodeid"
	namespace = "ids"
)

// values are the least a user must give: the image and the Secret.
func values() map[string]any {
	return map[string]any{
		"image":    map[string]any{"repository": "registry.example.com/nodeid", "tag": "1.0"},
		"database": map[string]any{"secretName": "nodeid-serve"},
	}
}

// set sets a dotted key of vals.
func set(vals map[string]any, key string, v any) map[string]any {
	m := vals
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
	return vals
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	// The loader logs the symbolic link files/nodeid.rules.yml; that is
	// expected here.
	log.SetOutput(io.Discard)
	defer log.SetOutput(os.Stderr)
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// withOperator is a cluster with prometheus-operator's CRDs installed:
// Helm's default capabilities and the kinds of monitoring.coreos.com/v1.
func withOperator() *chartutil.Capabilities {
	caps := *chartutil.DefaultCapabilities
	caps.APIVersions = append(append(chartutil.VersionSet(nil), caps.APIVersions...), "monitoring.coreos.com/v1",
		"monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule", "monitoring.coreos.com/v1/PodMonitor")
	return &caps
}

// monitoring are values with the ServiceMonitor and PrometheusRule
// enabled.
func monitoring() map[string]any {
	vals := set(values(), "serviceMonitor.enabled", true)
	return set(vals, "prometheusRule.enabled", true)
}

// render renders the chart as "helm install nodeid" into namespace would,
// on a cluster with prometheus-operator's CRDs.
func render(t *testing.T, vals map[string]any) (*manifests, error) {
	t.Helper()
	return renderOn(t, vals, withOperator())
}

// renderOn renders the chart as "helm install nodeid" into namespace
// would, on a cluster with the capabilities caps (nil: Helm's defaults, no
// CRDs).
func renderOn(t *testing.T, vals map[string]any, caps *chartutil.Capabilities) (*manifests, error) {
	t.Helper()
	c := loadChart(t)
	rv, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: "nodeid", Namespace: namespace, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(c, rv)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	m := &manifests{}
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			m.add(t, name, []byte(doc))
		}
	}
	return m, nil
}

func mustRender(t *testing.T, vals map[string]any) *manifests {
	t.Helper()
	m, err := render(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// manifests are the rendered objects, decoded strictly: a field that its
// type does not have (a typo, a wrong level) fails the test.
type manifests struct {
	kinds           []string
	serviceAccount  *corev1.ServiceAccount
	job             *batchv1.Job
	deployment      *appsv1.Deployment
	service         *corev1.Service
	pdb             *policyv1.PodDisruptionBudget
	networkPolicy   *networkingv1.NetworkPolicy
	serviceMonitor  *monitoringv1.ServiceMonitor
	podMonitor      *monitoringv1.PodMonitor
	prometheusRule  *monitoringv1.PrometheusRule
	prometheusRules map[string]any // the PrometheusRule's spec, untyped
}

func (m *manifests) add(t *testing.T, file string, doc []byte) {
	t.Helper()
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		t.Fatalf("%s: %v\n%s", file, err, doc)
	}
	var obj any
	switch meta.APIVersion + " " + meta.Kind {
	case "v1 ServiceAccount":
		m.serviceAccount = &corev1.ServiceAccount{}
		obj = m.serviceAccount
	case "batch/v1 Job":
		m.job = &batchv1.Job{}
		obj = m.job
	case "apps/v1 Deployment":
		m.deployment = &appsv1.Deployment{}
		obj = m.deployment
	case "v1 Service":
		m.service = &corev1.Service{}
		obj = m.service
	case "policy/v1 PodDisruptionBudget":
		m.pdb = &policyv1.PodDisruptionBudget{}
		obj = m.pdb
	case "networking.k8s.io/v1 NetworkPolicy":
		m.networkPolicy = &networkingv1.NetworkPolicy{}
		obj = m.networkPolicy
	case "monitoring.coreos.com/v1 ServiceMonitor":
		m.serviceMonitor = &monitoringv1.ServiceMonitor{}
		obj = m.serviceMonitor
	case "monitoring.coreos.com/v1 PodMonitor":
		m.podMonitor = &monitoringv1.PodMonitor{}
		obj = m.podMonitor
	case "monitoring.coreos.com/v1 PrometheusRule":
		m.prometheusRule = &monitoringv1.PrometheusRule{}
		obj = m.prometheusRule
		var raw struct {
			Spec map[string]any `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &raw); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		m.prometheusRules = raw.Spec
	default:
		t.Fatalf("%s: an object the test does not know: %s %s", file, meta.APIVersion, meta.Kind)
	}
	for _, k := range m.kinds {
		if k == meta.Kind {
			t.Fatalf("%s: a second %s", file, meta.Kind)
		}
	}
	m.kinds = append(m.kinds, meta.Kind)
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		t.Fatalf("%s: %s: %v\n%s", file, meta.Kind, err, doc)
	}
}

// flags returns the --name=value arguments of a container.
func flags(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		if name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok && strings.HasPrefix(a, "--") {
			out[name] = value
		}
	}
	return out
}

func duration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// containerPort resolves a port (a number or a port's name) of c.
func containerPort(t *testing.T, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	t.Fatalf("container %s has no port %s", c.Name, p.StrVal)
	return 0
}

// secretEnv returns the Secret and key that env var name comes from.
func secretEnv(t *testing.T, c corev1.Container, name string) (string, string) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == name {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Fatalf("container %s: %s does not come from a Secret", c.Name, name)
			}
			return e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key
		}
	}
	t.Fatalf("container %s has no %s", c.Name, name)
	return "", ""
}

// checkPod checks what every pod of the chart must have: no API token, not
// root, no privilege escalation, a read-only root, requests and limits of
// CPU and memory; it returns the one container.
func checkPod(t *testing.T, what string, spec corev1.PodSpec) corev1.Container {
	t.Helper()
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken is not false", what)
	}
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("%s: not runAsNonRoot with a user other than root", what)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers", what, len(spec.Containers))
	}
	c := spec.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("%s: the container's securityContext is not least privilege: %+v", what, c.SecurityContext)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
			t.Errorf("%s: %s request %s and limit %s: both are needed, the request at most the limit", what, r, req.String(), lim.String())
		}
	}
	if c.Image != "registry.example.com/nodeid:1.0" {
		t.Errorf("%s: image %q", what, c.Image)
	}
	return c
}

// selects reports whether a label selector selects a set of labels.
func selects(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return s.Matches(labels.Set(set))
}

// pod is a pod as a NetworkPolicy sees it.
type pod struct {
	namespaceLabels, labels map[string]string
}

// admits reports whether np admits a connection from p to port of the
// pods it selects, as Kubernetes evaluates an Ingress policy.
func admits(t *testing.T, np *networkingv1.NetworkPolicy, c corev1.Container, p pod, port int32) bool {
	t.Helper()
	for _, rule := range np.Spec.Ingress {
		portOK := len(rule.Ports) == 0
		for _, rp := range rule.Ports {
			if rp.Port == nil || containerPort(t, c, *rp.Port) == port {
				portOK = true
			}
		}
		fromOK := len(rule.From) == 0
		for _, peer := range rule.From {
			var nsOK bool
			if peer.NamespaceSelector == nil {
				nsOK = p.namespaceLabels["kubernetes.io/metadata.name"] == namespace
			} else {
				nsOK = selects(t, peer.NamespaceSelector, p.namespaceLabels)
			}
			podOK := peer.PodSelector == nil || selects(t, peer.PodSelector, p.labels)
			if peer.IPBlock == nil && nsOK && podOK {
				fromOK = true
			}
		}
		if portOK && fromOK {
			return true
		}
	}
	return false
}

var (
	prometheusPod = pod{map[string]string{"kubernetes.io/metadata.name": "monitoring"}, map[string]string{"app.kubernetes.io/name": "prometheus"}}
	otherInMon    = pod{map[string]string{"kubernetes.io/metadata.name": "monitoring"}, map[string]string{"app.kubernetes.io/name": "grafana"}}
	clientPod     = pod{map[string]string{"kubernetes.io/metadata.name": namespace}, map[string]string{"nodeid-client": "true"}}
	otherPod      = pod{map[string]string{"kubernetes.io/metadata.name": namespace}, map[string]string{"app": "web"}}
	clientElse    = pod{map[string]string{"kubernetes.io/metadata.name": "web"}, map[string]string{"nodeid-client": "true"}}
)

// TestChart renders the chart with its defaults and checks every object.
func TestChart(t *testing.T) {
	m := mustRender(t, monitoring())
	want := []string{"Deployment", "Job", "NetworkPolicy", "PodDisruptionBudget", "PrometheusRule", "Service", "ServiceAccount", "ServiceMonitor"}
	got := append([]string(nil), m.kinds...)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	var vals struct {
		Table struct {
			Name, Range, MaxTTL string
		}
		Serve struct {
			TTL, Grace string
			Port       int32
		}
	}
	b, _ := json.Marshal(loadChart(t).Values)
	if err := json.Unmarshal(b, &vals); err != nil {
		t.Fatal(err)
	}

	// The Job: nodeid init of the table, as its owner, before install and upgrade.
	job := m.job
	if hooks := strings.Split(job.Annotations["helm.sh/hook"], ","); !reflect.DeepEqual(hooks, []string{"pre-install", "pre-upgrade"}) {
		t.Errorf("the Job's hooks are %v, want pre-install and pre-upgrade", hooks)
	}
	ic := checkPod(t, "Job", job.Spec.Template.Spec)
	if len(ic.Command) != 0 || len(ic.Args) == 0 || ic.Args[0] != "init" {
		t.Errorf("the Job runs %q %q, not the image's nodeid with init", ic.Command, ic.Args)
	}
	f := flags(ic.Args)
	if f["table"] != vals.Table.Name || f["range"] != vals.Table.Range || f["max-ttl"] != vals.Table.MaxTTL {
		t.Errorf("the Job's flags %v are not the table's values %+v", f, vals.Table)
	}
	if _, ok := f["replication"]; ok {
		t.Error("the Job sets --replication by default: it would change a table's mode")
	}
	if s, _ := secretEnv(t, ic, "DATABASE_URL"); s != "nodeid-serve" {
		t.Errorf("the Job's DSN comes from Secret %s, want database.secretName's", s)
	}
	if p := job.Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyNever {
		t.Errorf("the Job's restartPolicy is %s", p)
	}

	// The Deployment: nodeid serve on the table, probes, grace.
	d := m.deployment
	if !selects(t, d.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("the Deployment's selector %v does not select its pods %v", d.Spec.Selector, d.Spec.Template.Labels)
	}
	if d.Spec.Template.Spec.ServiceAccountName != m.serviceAccount.Name || m.serviceAccount.AutomountServiceAccountToken == nil || *m.serviceAccount.AutomountServiceAccountToken {
		t.Errorf("the pods' ServiceAccount %q is not the chart's, without a token", d.Spec.Template.Spec.ServiceAccountName)
	}
	c := checkPod(t, "Deployment", d.Spec.Template.Spec)
	if len(c.Command) != 0 || len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("the Deployment runs %q %q, not the image's nodeid with serve", c.Command, c.Args)
	}
	f = flags(c.Args)
	port := vals.Serve.Port
	if f["listen"] != fmt.Sprintf("0.0.0.0:%d", port) || f["table"] != vals.Table.Name || f["owner"] != "$(POD_NAME)" {
		t.Errorf("serve's flags %v: want --listen=0.0.0.0:%d, --table=%s, --owner=$(POD_NAME)", f, port, vals.Table.Name)
	}
	ttl, grace := duration(t, f["ttl"]), duration(t, f["grace"])
	if ttl > duration(t, vals.Table.MaxTTL) || grace > ttl/2 {
		t.Errorf("--ttl %s, --grace %s: the TTL must be at most the table's maximum %s, the grace at most TTL/2", ttl, grace, vals.Table.MaxTTL)
	}
	if tg := d.Spec.Template.Spec.TerminationGracePeriodSeconds; tg == nil || time.Duration(*tg)*time.Second <= grace {
		t.Errorf("terminationGracePeriodSeconds %v is not above --grace %s", tg, grace)
	}
	if s, k := secretEnv(t, c, "DATABASE_URL"); s != "nodeid-serve" || k != "database-url" {
		t.Errorf("serve's DSN comes from %s/%s", s, k)
	}
	if r := c.ReadinessProbe; r == nil || r.HTTPGet == nil || r.HTTPGet.Path != "/healthz" || containerPort(t, c, r.HTTPGet.Port) != port {
		t.Errorf("the readiness probe is not /healthz on %d: %+v", port, r)
	}
	if l := c.LivenessProbe; l == nil || l.TCPSocket == nil || containerPort(t, c, l.TCPSocket.Port) != port {
		t.Errorf("the liveness probe is not a TCP connect to %d: %+v", port, l)
	}
	pods := d.Spec.Template.Labels

	// The Service, and the ServiceMonitor that scrapes /metrics through it.
	svc := m.service
	if !selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, pods) {
		t.Errorf("the Service's selector %v does not select the pods %v", svc.Spec.Selector, pods)
	}
	if len(svc.Spec.Ports) != 1 || containerPort(t, c, svc.Spec.Ports[0].TargetPort) != port {
		t.Fatalf("the Service does not target serve's port %d: %+v", port, svc.Spec.Ports)
	}
	sm := m.serviceMonitor
	if !selects(t, &sm.Spec.Selector, svc.Labels) {
		t.Errorf("the ServiceMonitor's selector %v does not select the Service %v", sm.Spec.Selector, svc.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("the ServiceMonitor does not scrape /metrics on the Service's port %s: %+v", svc.Spec.Ports[0].Name, sm.Spec.Endpoints)
	}
	if iv := duration(t, string(sm.Spec.Endpoints[0].Interval)); iv > ttl/3 {
		t.Errorf("the ServiceMonitor scrapes every %s: above TTL/3 (%s), a lease in its last third may go unseen", iv, ttl/3)
	}
	metricsPort := containerPort(t, c, svc.Spec.Ports[0].TargetPort)

	// The NetworkPolicy: the clients take IDs, Prometheus scrapes, nobody else.
	np := m.networkPolicy
	if !selects(t, &np.Spec.PodSelector, pods) {
		t.Errorf("the NetworkPolicy does not select the serve pods")
	}
	for _, rule := range np.Spec.Ingress {
		if len(rule.From) == 0 {
			t.Errorf("an ingress rule without from: it admits everyone: %+v", rule)
		}
	}
	for _, a := range []struct {
		what string
		p    pod
		want bool
	}{
		{"Prometheus in monitoring", prometheusPod, true},
		{"another pod in monitoring", otherInMon, false},
		{"a client in the namespace", clientPod, true},
		{"another pod in the namespace", otherPod, false},
		{"a client label in another namespace", clientElse, false},
	} {
		if got := admits(t, np, c, a.p, metricsPort); got != a.want {
			t.Errorf("the NetworkPolicy admits %s to port %d: %v, want %v", a.what, metricsPort, got, a.want)
		}
	}
	if admits(t, np, c, prometheusPod, metricsPort+1) {
		t.Errorf("the NetworkPolicy admits Prometheus to a port other than %d", metricsPort)
	}

	if pdb := m.pdb; pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || !selects(t, pdb.Spec.Selector, pods) {
		t.Errorf("the PodDisruptionBudget does not keep all serve pods but one: %+v", pdb.Spec)
	}
}

// TestPrometheusRule: the PrometheusRule's groups are those of
// deploy/prometheus/nodeid.rules.yml, which the chart's
// files/nodeid.rules.yml links to rather than copies.
func TestPrometheusRule(t *testing.T) {
	link := filepath.Join(chartDir, "files", "nodeid.rules.yml")
	if target, err := os.Readlink(link); err != nil || target != "../../../prometheus/nodeid.rules.yml" {
		t.Errorf("%s is not a symbolic link to ../../../prometheus/nodeid.rules.yml: %q %v", link, target, err)
	}
	b, err := os.ReadFile(filepath.Join("..", "prometheus", "nodeid.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := yaml.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	m := mustRender(t, monitoring())
	if !reflect.DeepEqual(m.prometheusRules, want) {
		g, _ := json.MarshalIndent(m.prometheusRules, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("the PrometheusRule's spec differs from nodeid.rules.yml:\n%s\nwant\n%s", g, w)
	}
	n := 0
	for _, g := range m.prometheusRule.Spec.Groups {
		n += len(g.Rules)
	}
	if n < 10 {
		t.Errorf("the PrometheusRule has %d rules", n)
	}
	m = mustRender(t, set(monitoring(), "prometheusRule.labels", map[string]any{"release": "kube-prometheus-stack"}))
	if m.prometheusRule.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("prometheusRule.labels are not on the PrometheusRule: %v", m.prometheusRule.Labels)
	}
}

// TestValues: what the values change, and the mistakes the chart refuses.
func TestValues(t *testing.T) {
	t.Run("required", func(t *testing.T) {
		for key, want := range map[string]string{
			"image.repository":    "image.repository",
			"image.tag":           "image.tag",
			"database.secretName": "database.secretName",
		} {
			if _, err := render(t, set(values(), key, "")); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("without %s: %v, want an error naming it", key, err)
			}
		}
	})
	t.Run("init", func(t *testing.T) {
		vals := set(values(), "init.secretName", "nodeid-owner")
		set(vals, "table.replication", "sync")
		set(vals, "table.range", "0-255")
		m := mustRender(t, vals)
		ic := m.job.Spec.Template.Spec.Containers[0]
		if s, _ := secretEnv(t, ic, "DATABASE_URL"); s != "nodeid-owner" {
			t.Errorf("the Job's DSN comes from %s, want init.secretName's", s)
		}
		if f := flags(ic.Args); f["replication"] != "sync" || f["range"] != "0-255" {
			t.Errorf("the Job's flags %v", f)
		}
		if s, _ := secretEnv(t, m.deployment.Spec.Template.Spec.Containers[0], "DATABASE_URL"); s != "nodeid-serve" {
			t.Errorf("serve's DSN comes from %s, want database.secretName's", s)
		}
		if m := mustRender(t, set(values(), "init.enabled", false)); m.job != nil {
			t.Error("init.enabled=false still renders the Job")
		}
	})
	t.Run("serve", func(t *testing.T) {
		vals := set(values(), "serve.range", "0-15")
		set(vals, "serve.port", 9000)
		set(vals, "serve.replicas", 1)
		m := mustRender(t, vals)
		c := m.deployment.Spec.Template.Spec.Containers[0]
		if f := flags(c.Args); f["range"] != "0-15" || f["listen"] != "0.0.0.0:9000" {
			t.Errorf("serve's flags %v", f)
		}
		if !admits(t, m.networkPolicy, c, prometheusPod, 9000) || !admits(t, m.networkPolicy, c, clientPod, 9000) {
			t.Error("the NetworkPolicy does not follow serve.port")
		}
		if m.pdb != nil {
			t.Error("a PodDisruptionBudget for one replica would block every drain")
		}
	})
	t.Run("network policy lists", func(t *testing.T) {
		m := mustRender(t, set(values(), "networkPolicy.prometheus", []any{}))
		c := m.deployment.Spec.Template.Spec.Containers[0]
		if admits(t, m.networkPolicy, c, prometheusPod, 8080) || admits(t, m.networkPolicy, c, otherPod, 8080) || !admits(t, m.networkPolicy, c, clientPod, 8080) {
			t.Error("networkPolicy.prometheus=[] must admit the clients only")
		}
		m = mustRender(t, set(values(), "networkPolicy.clients", []any{}))
		c = m.deployment.Spec.Template.Spec.Containers[0]
		if admits(t, m.networkPolicy, c, clientPod, 8080) || !admits(t, m.networkPolicy, c, prometheusPod, 8080) {
			t.Error("networkPolicy.clients=[] must admit Prometheus only")
		}
		if m := mustRender(t, set(values(), "networkPolicy.enabled", false)); m.networkPolicy != nil {
			t.Error("networkPolicy.enabled=false still renders the NetworkPolicy")
		}
	})
	t.Run("monitoring", func(t *testing.T) {
		vals := set(values(), "serviceMonitor.enabled", false)
		set(vals, "prometheusRule.enabled", false)
		if m := mustRender(t, vals); m.serviceMonitor != nil || m.prometheusRule != nil {
			t.Error("serviceMonitor.enabled=false, prometheusRule.enabled=false still render them")
		}
		m := mustRender(t, set(monitoring(), "serviceMonitor.labels", map[string]any{"release": "kube-prometheus-stack"}))
		if m.serviceMonitor.Labels["release"] != "kube-prometheus-stack" {
			t.Errorf("serviceMonitor.labels are not on the ServiceMonitor: %v", m.serviceMonitor.Labels)
		}
	})
	t.Run("run PodMonitor", func(t *testing.T) {
		if _, err := render(t, set(values(), "runPodMonitor.enabled", true)); err == nil || !strings.Contains(err.Error(), "runPodMonitor.selector") {
			t.Errorf("a PodMonitor without a selector: %v, want an error naming runPodMonitor.selector", err)
		}
		vals := set(values(), "runPodMonitor.enabled", true)
		set(vals, "runPodMonitor.selector", map[string]any{"matchLabels": map[string]any{"app": "orders"}})
		set(vals, "runPodMonitor.namespaceSelector", map[string]any{"matchNames": []any{"orders"}})
		m := mustRender(t, vals)
		pm := m.podMonitor
		if pm == nil || !selects(t, &pm.Spec.Selector, map[string]string{"app": "orders"}) || selects(t, &pm.Spec.Selector, map[string]string{"app": "web"}) ||
			!reflect.DeepEqual(pm.Spec.NamespaceSelector.MatchNames, []string{"orders"}) {
			t.Fatalf("the PodMonitor does not select the pods of app=orders in orders: %+v", pm)
		}
		if e := pm.Spec.PodMetricsEndpoints; len(e) != 1 || e[0].Port == nil || *e[0].Port != "nodeid-metrics" || e[0].Path != "/metrics" {
			t.Errorf("the PodMonitor does not scrape /metrics on the port nodeid-metrics: %+v", e)
		}
	})
}

// TestMonitoringNeedsTheOperator: the ServiceMonitor, PrometheusRule and
// PodMonitor are off by default, and render only when enabled on a
// cluster that has their kinds (prometheus-operator's CRDs): enabled on a
// cluster without them, the chart still installs, and its notes say what
// was left out and why.
func TestMonitoringNeedsTheOperator(t *testing.T) {
	kinds := func(m *manifests) []string {
		got := append([]string(nil), m.kinds...)
		sort.Strings(got)
		return got
	}
	base := []string{"Deployment", "Job", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount"}
	withRun := set(monitoring(), "runPodMonitor.enabled", true)
	set(withRun, "runPodMonitor.selector", map[string]any{"matchLabels": map[string]any{"app": "orders"}})
	for _, c := range []struct {
		what string
		vals map[string]any
		caps *chartutil.Capabilities
		want []string
	}{
		{"defaults, with the CRDs", values(), withOperator(), base},
		{"defaults, without the CRDs", values(), nil, base},
		{"enabled, without the CRDs", withRun, nil, base},
		{"enabled, with the CRDs", withRun, withOperator(), []string{"Deployment", "Job", "NetworkPolicy", "PodDisruptionBudget", "PodMonitor", "PrometheusRule", "Service", "ServiceAccount", "ServiceMonitor"}},
	} {
		m, err := renderOn(t, c.vals, c.caps)
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		if got := kinds(m); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: kinds %v, want %v", c.what, got, c.want)
		}
	}
	notes := func(vals map[string]any, caps *chartutil.Capabilities) string {
		c := loadChart(t)
		rv, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: "nodeid", Namespace: namespace, IsInstall: true}, caps)
		if err != nil {
			t.Fatal(err)
		}
		files, err := engine.Render(c, rv)
		if err != nil {
			t.Fatal(err)
		}
		return files["nodeid/templates/NOTES.txt"]
	}
	if n := notes(withRun, nil); !strings.Contains(n, "Not rendered: the ServiceMonitor") || !strings.Contains(n, "Not rendered: the PrometheusRule") || !strings.Contains(n, "Not rendered: the PodMonitor") {
		t.Errorf("the notes of an install without the CRDs do not say what was left out:\n%s", n)
	}
	if n := notes(withRun, withOperator()); strings.Contains(n, "Not rendered") {
		t.Errorf("the notes of an install with the CRDs say something was left out:\n%s", n)
	}
	if n := notes(values(), nil); !strings.Contains(n, "nodeid-client=true") {
		t.Errorf("the notes do not name the label the NetworkPolicy admits:\n%s", n)
	}
}

// TestLint: helm lint finds nothing to warn about.
func TestLint(t *testing.T) {
	log.SetOutput(io.Discard)
	defer log.SetOutput(os.Stderr)
	l := lint.All(chartDir, values(), namespace, false)
	var msgs bytes.Buffer
	for _, m := range l.Messages {
		if m.Severity > support.InfoSev {
			fmt.Fprintln(&msgs, m)
		}
	}
	if msgs.Len() > 0 {
		t.Errorf("helm lint:\n%s", msgs.String())
	}
}
