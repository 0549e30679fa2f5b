//go:build linux

package pgtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// startEtcd starts a one-member etcd on free ports of 127.0.0.1, its data
// and log in dir, and waits until it is healthy. It runs with cred and
// dies with this process. It returns the etcd and its client address.
func startEtcd(ctx context.Context, bin, dir string, cred *syscall.Credential, client *http.Client) (*child, string, error) {
	clientPort, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	peerPort, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	args := []string{
		"--name=pgtest",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=pgtest=" + peerURL,
		"--initial-cluster-state=new",
		"--logger=zap",
		"--log-outputs=stderr",
		"--log-level=warn",
	}
	attr := &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	e, err := startChild(bin, args, dir, filepath.Join(dir, "etcd.log"), attr, []string{"PATH=" + os.Getenv("PATH")})
	if err != nil {
		return nil, "", err
	}
	healthy := func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
			return errors.New(resp.Status + " " + string(body))
		}
		return nil
	}
	if err := waitFor(ctx, e, "etcd did not become healthy", healthy); err != nil {
		e.Kill()
		return nil, "", fmt.Errorf("%w; etcd log:\n%s", err, tail(e.Log))
	}
	return e, fmt.Sprintf("127.0.0.1:%d", clientPort), nil
}
