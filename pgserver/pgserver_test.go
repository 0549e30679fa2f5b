package pgserver

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestWithDatabase(t *testing.T) {
	for _, c := range []struct{ in, db, want string }{
		{"postgres://u:p@h:5/a?sslmode=disable", "b", "postgres://u:p@h:5/b?sslmode=disable"},
		{"postgresql://h/", "x", "postgresql://h/x"},
		{"host=h user=u", "b", "host=h user=u dbname=b"},
	} {
		if got := WithDatabase(c.in, c.db); got != c.want {
			t.Errorf("WithDatabase(%q, %q) = %q, want %q", c.in, c.db, got, c.want)
		}
	}
}

// TestFreePortOutsideTheEphemeralRange: the ports FreePort gives are free
// and below the range the kernel hands out to outgoing connections, so
// that no client connection can take one before the server binds it.
func TestFreePortOutsideTheEphemeralRange(t *testing.T) {
	ephemeralLow := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if n, err := strconv.Atoi(strings.Fields(string(b))[0]); err == nil && n > 11000 {
			ephemeralLow = n
		}
	}
	for range 100 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < 10000 || p >= ephemeralLow {
			t.Fatalf("FreePort() = %d; want a port in 10000-%d, below the ephemeral range", p, ephemeralLow-1)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("FreePort() = %d, which cannot be bound: %v", p, err)
		}
		l.Close()
	}
}
