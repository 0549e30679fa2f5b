package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nodeid/nodeid/internal/testkit"
)

// A started program's output goes to its log; Stop ends one that ignores
// the signal by killing it after the grace period; Tail keeps the end.
func TestStartStopTail(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	log := filepath.Join(t.TempDir(), "child.log")
	c, err := Start(exec.Command("sh", "-c", `trap "" INT TERM; echo started; while :; do sleep 1; done`), log)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, time.Minute, "the program writes to its log", func() error {
		if !c.Running() {
			return testkit.Stop(fmt.Errorf("exited (%v)", c.Cmd.ProcessState))
		}
		if !strings.Contains(Tail(log, 100), "started") {
			return fmt.Errorf("log: %q", Tail(log, 100))
		}
		return nil
	})
	c.Stop(os.Interrupt, 50*time.Millisecond) // ignored: killed after the grace
	if c.Running() {
		t.Fatal("running after Stop")
	}
	if ws, ok := c.Cmd.ProcessState.Sys().(interface{ Signaled() bool }); ok && !ws.Signaled() {
		t.Errorf("exited by itself (%v), not killed", c.Cmd.ProcessState)
	}
	if got := Tail(log, 3); got != "ed\n" {
		t.Errorf("Tail(log, 3) = %q, want %q", got, "ed\n")
	}
	if got := Tail(filepath.Join(t.TempDir(), "none"), 10); !strings.Contains(got, "no such file") {
		t.Errorf("Tail of a missing file: %q", got)
	}
}
