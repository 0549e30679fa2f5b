//go:build linux

package pgtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Patroni's timing in a Cluster. Patroni wants loop_wait + 2*retry_timeout
// <= ttl. A crashed primary is failed over at the next loop (see
// primary_start_timeout below), not after ttl; ttl only bounds how long a
// leader whose Patroni stops answering keeps the leader key, and stays
// long enough that a loaded machine does not demote a healthy leader.
const (
	patroniTTL          = 15 // seconds
	patroniLoopWait     = 1  // seconds
	patroniRetryTimeout = 7  // seconds
)

// patroniNode is one member of a Cluster: Patroni and the PostgreSQL it
// runs, in pid, mount and IPC namespaces of their own, so that everything
// in them dies with the node (PostgreSQL is not Patroni's child: Patroni
// detaches it).
type patroniNode struct {
	name    string
	dir     string // config, log, socket, data
	pgPort  int
	apiPort int
	proc    *child // unshare, whose child is Patroni, pid 1 of the namespaces
}

func (n *patroniNode) config() string { return filepath.Join(n.dir, "patroni.yml") }
func (n *patroniNode) addr() string   { return fmt.Sprintf("127.0.0.1:%d", n.pgPort) }
func (n *patroniNode) api() string    { return fmt.Sprintf("http://127.0.0.1:%d", n.apiPort) }

// writeConfig writes the node's Patroni configuration. It is JSON, which
// Patroni reads as YAML.
func (n *patroniNode) writeConfig(etcdAddr, pgBin string) error {
	trust := []string{
		"local all all trust",
		"host all all 127.0.0.1/32 trust",
		"host replication all 127.0.0.1/32 trust",
	}
	user := map[string]string{"username": "postgres"}
	cfg := map[string]any{
		"scope":     "pgtest",
		"namespace": "/pgtest/",
		"name":      n.name,
		"restapi": map[string]any{
			"listen":          fmt.Sprintf("127.0.0.1:%d", n.apiPort),
			"connect_address": fmt.Sprintf("127.0.0.1:%d", n.apiPort),
		},
		"etcd3": map[string]any{"host": etcdAddr},
		"bootstrap": map[string]any{
			"dcs": map[string]any{
				"ttl":                     patroniTTL,
				"loop_wait":               patroniLoopWait,
				"retry_timeout":           patroniRetryTimeout,
				"maximum_lag_on_failover": 1 << 20,
				// A crashed primary is failed over rather than restarted.
				"primary_start_timeout": 0,
				// Asynchronous replication, as Patroni's default.
				"synchronous_mode": false,
				"postgresql": map[string]any{
					"use_pg_rewind": true,
					"use_slots":     true,
					"parameters": map[string]any{
						"max_connections": 400,
						// Only PostgreSQL is ever killed, never the
						// machine: the page cache keeps what fsync
						// would have written.
						"fsync": "off",
						// In the node's IPC namespace, so that a
						// killed node leaves no segment behind.
						"dynamic_shared_memory_type":  "sysv",
						"wal_retrieve_retry_interval": "100ms",
					},
				},
			},
			"initdb": []any{map[string]string{"encoding": "UTF8"}, map[string]string{"locale": "C"}, "no-sync"},
		},
		"postgresql": map[string]any{
			"listen":          n.addr(),
			"connect_address": n.addr(),
			"data_dir":        filepath.Join(n.dir, "data"),
			"bin_dir":         pgBin,
			"pgpass":          filepath.Join(n.dir, "pgpass"),
			"authentication": map[string]any{
				"superuser":   user,
				"replication": user,
			},
			"parameters": map[string]any{"unix_socket_directories": n.dir},
			"pg_hba":     trust,
			// A former primary that cannot follow the new one is cloned
			// again.
			"remove_data_directory_on_rewind_failure":     true,
			"remove_data_directory_on_diverged_timelines": true,
		},
		"watchdog": map[string]any{"mode": "off"},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(n.config(), b, 0o644)
}

// start starts Patroni as pid 1 of new pid, mount and IPC namespaces, with
// its own /proc (Patroni reads PostgreSQL's pids there), as cred's user.
// unshare dies with this process, and Patroni with unshare: setpriv asks
// for that after it changes the user, since a change of user cancels the
// request that unshare --kill-child makes.
func (n *patroniNode) start(progs programs, cred *syscall.Credential) error {
	args := []string{"--pid", "--fork", "--kill-child", "--mount-proc", "--ipc", "--",
		progs.setpriv, "--reuid=" + strconv.Itoa(int(cred.Uid)), "--regid=" + strconv.Itoa(int(cred.Gid)),
		"--clear-groups", "--pdeathsig=KILL", "--", progs.patroni, n.config()}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + n.dir, "LC_ALL=C.UTF-8", "LANG=C.UTF-8"}
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	proc, err := startChild(progs.unshare, args, n.dir, filepath.Join(n.dir, "patroni.log"), attr, env)
	if err != nil {
		return err
	}
	n.proc = proc
	return nil
}

// kill kills every process of the node and waits until they are gone.
func (n *patroniNode) kill() {
	// Killing pid 1 of a pid namespace kills every process in it, and
	// unshare exits once they all have.
	if init, err := childOf(n.proc.Cmd.Process.Pid); err == nil {
		_ = syscall.Kill(init, syscall.SIGKILL)
		select {
		case <-n.proc.Exited:
			return
		case <-time.After(time.Minute):
		}
	}
	n.proc.Kill()
}

// postmaster returns the pid, as this process sees it, of the node's
// PostgreSQL postmaster.
func (n *patroniNode) postmaster() (int, error) {
	b, err := os.ReadFile(filepath.Join(n.dir, "data", "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("%s runs no PostgreSQL: %w", n.name, err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	nsPID, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return 0, fmt.Errorf("%s: postmaster.pid starts with %q, not a pid", n.name, first)
	}
	init, err := childOf(n.proc.Cmd.Process.Pid)
	if err != nil {
		return 0, fmt.Errorf("%s: Patroni: %w", n.name, err)
	}
	pid, err := hostPID(init, nsPID)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", n.name, err)
	}
	if st, err := procStatus(pid, "Name"); err != nil || st["Name"] != "postgres" {
		return 0, fmt.Errorf("%s: process %d is %q, not postgres (%v)", n.name, pid, st["Name"], err)
	}
	return pid, nil
}
