package session

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
)

// TestCounterTellsPingsApart: a write of database/sql's liveness ping (the
// simple query "-- ping" pgx's driver sends before reusing a connection
// idle for over a second) is a write, but not one of an operation's.
func TestCounterTellsPingsApart(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	go func() { _, _ = io.Copy(io.Discard, b) }()
	c := &Counter{}
	cc := countingConn{Conn: a, t: &c.RoundTrips}
	query := func(sql string) []byte {
		m := []byte{'Q', 0, 0, 0, 0}
		m = append(m, sql...)
		m = append(m, 0)
		binary.BigEndian.PutUint32(m[1:], uint32(len(m)-1))
		return m
	}
	for _, m := range [][]byte{query("-- ping"), query("-- nodeid claim\nWITH ..."), query("-- pingpong"), {'S', 0, 0, 0, 4}} {
		if _, err := cc.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, w := c.Snapshot(); w != 4 || c.Operations() != 3 {
		t.Fatalf("%d writes, %d of operations; want 4 and 3", w, c.Operations())
	}
}
