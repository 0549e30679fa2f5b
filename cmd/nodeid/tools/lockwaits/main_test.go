package main

import (
	"testing"
	"time"
)

func TestParseLog(t *testing.T) {
	log := `2026-11-30 00:15:01.123 UTC [101] LOG:  process 101 still waiting for ShareLock on transaction 7788 after 5.012 ms
2026-11-30 00:15:01.123 UTC [101] DETAIL:  Process holding the lock: 102. Wait queue: 101.
2026-11-30 00:15:01.123 UTC [101] CONTEXT:  while locking updated version (12,34) of tuple in relation "nodeid_bench_0a1b2c3d_herd"
2026-11-30 00:15:01.123 UTC [101] STATEMENT:  WITH free AS (
	    SELECT node_id FROM nodeid_bench_0a1b2c3d_herd
2026-11-30 00:15:02.500 UTC [103] LOG:  process 103 still waiting for ExclusiveLock on extension of relation 16390 of database 16384 after 5.100 ms
2026-11-30 00:15:02.500 UTC [103] DETAIL:  Process holding the lock: 104. Wait queue: 103.
2026-11-30 00:15:02.600 UTC [105] LOG:  process 105 acquired ShareLock on transaction 7790 after 6.000 ms
`
	waits, err := parseLog(log, map[string]string{"16390": "nodeid_bench_0a1b2c3d_herd_history"})
	if err != nil {
		t.Fatal(err)
	}
	want := []wait{
		{at: time.Date(2026, 11, 30, 0, 15, 1, 123e6, time.UTC), lock: "ShareLock on transaction", while: "while locking updated version of tuple in relation herd table"},
		{at: time.Date(2026, 11, 30, 0, 15, 2, 500e6, time.UTC), lock: "ExclusiveLock on extension of herd_history", while: "–"},
	}
	if len(waits) != len(want) {
		t.Fatalf("waits %+v, want %+v", waits, want)
	}
	for i := range want {
		if !waits[i].at.Equal(want[i].at) || waits[i].lock != want[i].lock || waits[i].while != want[i].while {
			t.Errorf("wait %d: %+v, want %+v", i, waits[i], want[i])
		}
	}
}
