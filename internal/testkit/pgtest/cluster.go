//go:build linux

package pgtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/nodeid/nodeid/pgserver"
)

// Cluster is etcd plus N Patroni-managed PostgreSQL nodes in asynchronous
// mode (Patroni's default: a failover may lose the last commits of the old
// primary), all on free ports of 127.0.0.1 in a temporary directory, from
// the local patroni, etcd and PostgreSQL programs (Debian's patroni and
// etcd-server packages). It runs as the postgres user and needs the root
// user to start, since each node lives in pid namespaces of its own, so
// that every process of the cluster dies with the test process. Patroni
// fails a crashed primary over at once (primary_start_timeout 0) rather
// than restarting it, and rejoins the old primary with pg_rewind.
//
// The nodes are named node0, node1, and so on. Their logs, and
// PostgreSQL's, are in node*/patroni.log under the temporary directory;
// an error of StartCluster ends with their tails.
type Cluster struct {
	root    string
	etcd    *child
	nodes   []*patroniNode
	ctl     string // patronictl
	cred    *syscall.Credential
	http    *http.Client
	closing sync.Once

	mu  sync.Mutex
	seq int
}

// errUnavailable marks a start that failed because what it needs is not
// here (programs, or the root user), not because a program misbehaved.
var errUnavailable = errors.New("pgtest: not available here")

// MaxClusterNodes is the most nodes StartCluster starts.
const MaxClusterNodes = 9

// programs are the paths of the programs a Cluster runs.
type programs struct {
	patroni, patronictl, etcd string
	unshare, setpriv          string // util-linux
	pgBin                     string // directory of PostgreSQL's programs
}

// clusterPrograms finds the programs a Cluster runs, on PATH or in the
// usual directories.
func clusterPrograms() (programs, error) {
	var p programs
	var missing []string
	for name, path := range map[string]*string{
		"patroni": &p.patroni, "patronictl": &p.patronictl, "etcd": &p.etcd,
		"unshare": &p.unshare, "setpriv": &p.setpriv,
	} {
		if *path = findProgram(name); *path == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return p, fmt.Errorf("%w: no %s on PATH or in /usr/bin (apt-get install patroni etcd-server)",
			errUnavailable, strings.Join(missing, ", "))
	}
	var err error
	if p.pgBin, err = pgserver.FindBinaries(); err != nil {
		return p, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	return p, nil
}

// findProgram returns the path of program name, or "".
func findProgram(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/bin", "/usr/sbin", "/bin"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	return ""
}

// StartCluster starts etcd and nodes Patroni nodes (1 to MaxClusterNodes),
// and waits until WaitHealthy reports a leader that accepts writes and
// every other node streaming from it.
func StartCluster(ctx context.Context, nodes int) (*Cluster, error) {
	if nodes < 1 || nodes > MaxClusterNodes {
		return nil, fmt.Errorf("pgtest: a cluster has 1 to %d nodes, not %d", MaxClusterNodes, nodes)
	}
	progs, err := clusterPrograms()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: a Patroni cluster needs the root user, to run its nodes in pid namespaces of their own", errUnavailable)
	}
	cred, err := pgserver.RunAs()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "nodeid-patroni-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		root: root,
		ctl:  progs.patronictl,
		cred: cred,
		http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second},
	}
	if err := c.start(ctx, nodes, progs); err != nil {
		err = fmt.Errorf("pgtest: start a Patroni cluster: %w%s", err, c.logTails())
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, nodes int, progs programs) error {
	if err := c.chown(c.root); err != nil {
		return err
	}
	var etcdAddr string
	var err error
	if c.etcd, etcdAddr, err = startEtcd(ctx, progs.etcd, c.root, c.cred, c.http); err != nil {
		return err
	}
	for i := range nodes {
		n := &patroniNode{name: fmt.Sprintf("node%d", i), dir: filepath.Join(c.root, fmt.Sprintf("node%d", i))}
		if n.pgPort, err = FreePort(); err != nil {
			return err
		}
		if n.apiPort, err = FreePort(); err != nil {
			return err
		}
		if err := os.Mkdir(n.dir, 0o755); err != nil {
			return err
		}
		if err := c.chown(n.dir); err != nil {
			return err
		}
		if err := n.writeConfig(etcdAddr, progs.pgBin); err != nil {
			return err
		}
		if err := n.start(progs, c.cred); err != nil {
			return err
		}
		c.nodes = append(c.nodes, n)
	}
	return c.WaitHealthy(ctx)
}

func (c *Cluster) chown(dir string) error {
	return os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid))
}

// logTails returns the end of every log of the cluster.
func (c *Cluster) logTails() string {
	var b strings.Builder
	if c.etcd != nil {
		fmt.Fprintf(&b, "\n--- etcd log:\n%s", tail(c.etcd.Log))
	}
	for _, n := range c.nodes {
		fmt.Fprintf(&b, "\n--- %s log:\n%s", n.name, tail(n.proc.Log))
	}
	return b.String()
}

// NewCluster starts a Cluster of nodes nodes for the test and closes it
// when the test ends. It calls Unavailable when patroni, etcd or the
// PostgreSQL binaries are missing, and fails the test if they do not
// start.
func NewCluster(t testing.TB, nodes int) *Cluster {
	t.Helper()
	SkipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := StartCluster(ctx, nodes)
	if errors.Is(err, errUnavailable) {
		Unavailable(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// DSN returns a multi-host DSN (URL form, as libpq and pgx read it) for
// database db that lists every node with target_session_attrs=read-write,
// so that a client connects to the leader, whichever node it is.
func (c *Cluster) DSN(db string) string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.addr()
	}
	return pgserver.MultiHostDSN(db, addrs...)
}

// NodeDSN returns a superuser DSN for database db on the named node alone.
func (c *Cluster) NodeDSN(name, db string) (string, error) {
	n, err := c.node(name)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", n.addr(), db), nil
}

func (c *Cluster) node(name string) (*patroniNode, error) {
	for _, n := range c.nodes {
		if n.name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("pgtest: the cluster has no node %q", name)
}

// member is a node as Patroni's REST API describes it.
type member struct {
	Name  string `json:"name"`
	Role  string `json:"role"`  // leader, replica, ...
	State string `json:"state"` // running, starting, ...
}

// members returns the cluster's members as the first node that answers
// sees them.
func (c *Cluster) members(ctx context.Context) ([]member, error) {
	var errs []error
	for _, n := range c.nodes {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.api()+"/cluster", nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.http.Do(req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var body struct{ Members []member }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.name, err))
			continue
		}
		return body.Members, nil
	}
	return nil, fmt.Errorf("pgtest: no Patroni REST API answered: %w", errors.Join(errs...))
}

// Leader returns the name of the node that holds the leader key.
func (c *Cluster) Leader(ctx context.Context) (string, error) {
	ms, err := c.members(ctx)
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if m.Role == "leader" {
			return m.Name, nil
		}
	}
	return "", fmt.Errorf("pgtest: the cluster has no leader: %+v", ms)
}

// WaitHealthy waits until a leader accepts writes and every other node
// streams from it, or ctx ends, or a node's Patroni has exited.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	for {
		err := c.healthy(ctx)
		if err == nil {
			return nil
		}
		for _, n := range c.nodes {
			if !n.proc.Running() {
				return fmt.Errorf("pgtest: the cluster is not healthy: %s's Patroni exited (%v)", n.name, n.proc.Cmd.ProcessState)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgtest: the cluster is not healthy: %v: %w", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) healthy(ctx context.Context) error {
	leader, err := c.Leader(ctx)
	if err != nil {
		return err
	}
	dsn, err := c.NodeDSN(leader, "postgres")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// Assigning a transaction ID is a write: a server in recovery refuses it.
	if _, err := conn.Exec(ctx, `SELECT txid_current()`); err != nil {
		return fmt.Errorf("leader %s does not accept writes: %w", leader, err)
	}
	var others []string
	for _, n := range c.nodes {
		if n.name != leader {
			others = append(others, n.name)
		}
	}
	var streaming int
	err = conn.QueryRow(ctx, `SELECT count(DISTINCT application_name) FROM pg_stat_replication
		WHERE state = 'streaming' AND application_name = ANY($1)`, others).Scan(&streaming)
	if err != nil {
		return err
	}
	if streaming != len(others) {
		return fmt.Errorf("%d of %d nodes stream from leader %s", streaming, len(others), leader)
	}
	return nil
}

// KillLeader kills the leader's PostgreSQL postmaster with SIGKILL, as a
// crash would; Patroni then fails over to another node and rejoins the
// killed one as a replica.
func (c *Cluster) KillLeader(ctx context.Context) error {
	leader, err := c.Leader(ctx)
	if err != nil {
		return err
	}
	n, err := c.node(leader)
	if err != nil {
		return err
	}
	pid, err := n.postmaster()
	if err != nil {
		return fmt.Errorf("pgtest: kill the leader: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("pgtest: kill the leader %s's postmaster %d: %w", leader, pid, err)
	}
	return nil
}

// Switchover has patronictl switch the leader over to another node, which
// Patroni picks, and returns once a node other than the old leader holds
// the leader key; it may not accept writes yet.
func (c *Cluster) Switchover(ctx context.Context) error {
	return c.patronictl(ctx, "switchover", "--force")
}

// Failover has patronictl fail over to a replica that Patroni reports
// running, and returns once a node other than the old leader holds the
// leader key; it may not accept writes yet.
func (c *Cluster) Failover(ctx context.Context) error {
	ms, err := c.members(ctx)
	if err != nil {
		return err
	}
	candidate := ""
	for _, m := range ms {
		if m.Role != "leader" && (m.State == "running" || m.State == "streaming") {
			candidate = m.Name
			break
		}
	}
	if candidate == "" {
		return fmt.Errorf("pgtest: no running replica to fail over to: %+v", ms)
	}
	return c.patronictl(ctx, "failover", "--force", "--candidate", candidate)
}

// patronictl runs a switchover or failover command of patronictl against
// the cluster. patronictl exits 0 when one fails: only its message of
// success, `... over to "node"`, tells.
func (c *Cluster) patronictl(ctx context.Context, args ...string) error {
	args = append([]string{"-c", c.nodes[0].config()}, args...)
	cmd := exec.CommandContext(ctx, c.ctl, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL}
	cmd.Dir = c.root
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + c.root, "LC_ALL=C.UTF-8", "LANG=C.UTF-8"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: patronictl %s: %w\n%s", strings.Join(args[2:], " "), err, out)
	}
	if !strings.Contains(string(out), ` over to "`) {
		return fmt.Errorf("pgtest: patronictl %s did not succeed:\n%s", strings.Join(args[2:], " "), out)
	}
	return nil
}

// CreateDatabase creates a new, empty database on the leader and returns
// its name once every node has it through replication: a client of DSN
// (pgx, libpq) gives up at the first node that lacks the database instead
// of trying the next one. So every node must be running.
func (c *Cluster) CreateDatabase(ctx context.Context) (string, error) {
	c.mu.Lock()
	c.seq++
	name := fmt.Sprintf("nodeid_%d_%d", os.Getpid(), c.seq)
	c.mu.Unlock()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: connect to the leader: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgtest: create database: %w", err)
	}
	for _, n := range c.nodes {
		if err := c.waitDatabase(ctx, n, name); err != nil {
			return "", err
		}
	}
	return name, nil
}

// waitDatabase waits until database db accepts connections on node n.
func (c *Cluster) waitDatabase(ctx context.Context, n *patroniNode, db string) error {
	dsn, err := c.NodeDSN(n.name, db)
	if err != nil {
		return err
	}
	for {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgtest: database %s did not reach %s: %w", db, n.name, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Timeline returns the leader's timeline (1 at first, one more after each
// failover or switchover), through DSN.
func (c *Cluster) Timeline(ctx context.Context) (int, error) {
	return Timeline(ctx, c.DSN("postgres"))
}

// Close kills every node and etcd, and removes their files. Everything in
// a node's namespaces dies with it.
func (c *Cluster) Close() error {
	var err error
	c.closing.Do(func() {
		for _, n := range c.nodes {
			n.kill()
		}
		if c.etcd != nil {
			c.etcd.Kill()
		}
		c.http.CloseIdleConnections()
		err = os.RemoveAll(c.root)
	})
	return err
}
