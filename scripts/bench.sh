#!/usr/bin/env bash
# Regenerates docs/BENCHMARKS.md and its plots (docs/bench-*.png) from one
# run of every benchmark, against throwaway PostgreSQL servers: nodeid
# bench's through the pgserver module (local server binaries), the Go
# benchmarks' through internal/testkit/pgtest (which also takes the server
# of NODEID_TEST_DSN, or a Docker engine).
#
#   scripts/bench.sh                 # the report's settings: 3 repetitions, about 25 minutes
#   BENCH_REPEAT=1 scripts/bench.sh  # quicker, without spreads
#   scripts/bench.sh --render        # only render the report again from bench-out/
#   scripts/bench.sh --floor         # only the claim at the floor (nodeid bench --floor,
#                                    # about 6 minutes): its section of the report is
#                                    # replaced, every other section kept as it is
#   scripts/bench.sh --peers         # only nodeid against its peers (etcd's lowest-free
#                                    # allocator, a Redis worker-ID lease), under a minute:
#                                    # rewrites docs/bench-peers.md; needs etcd and redis-server
#
# The raw outputs (the JSON of nodeid bench and of nodeid bench --floor,
# go test -bench, benchstat) are kept in bench-out/ (not committed).
#
# The machine should be otherwise idle: the script waits (up to
# BENCH_WAIT seconds, default 900) for the 1-minute load average to fall
# below BENCH_MAX_LOAD (default 1.0), then runs regardless and prints the
# load at the start and end of each step into the report.
#
# Needs: go, PostgreSQL server binaries (initdb, postgres) with the
# pg_stat_statements module, pgbench, and the Go module proxy for benchstat.
set -euo pipefail

cd "$(dirname "$0")/.."
repeat=${BENCH_REPEAT:-3}
count=${BENCH_COUNT:-6}
max_load=${BENCH_MAX_LOAD:-1.0}
wait_max=${BENCH_WAIT:-900}
out=docs/BENCHMARKS.md
benchstat=(go run golang.org/x/perf/cmd/benchstat@latest)

raw=${BENCH_OUT:-bench-out}
mkdir -p "$raw"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
render_only=false
floor_only=false
peers_only=false
case "${1:-}" in
--render) render_only=true ;;
--floor) floor_only=true ;;
--peers) peers_only=true ;;
"") ;;
*) echo "bench.sh: unknown argument ${1}; see the comment at the top" >&2; exit 2 ;;
esac
# The report generator and the lock-wait tool are in the nested module
# cmd/nodeid/tools/, which only `go -C cmd/nodeid/tools` (or a cd into it)
# builds.
lock_cmd="go -C cmd/nodeid/tools run ./lockwaits -claimers 512 -ids 1024 -variants library,sql -repeat $repeat"
snowflake_cmd="go test -run '^\$' -bench . -count $count ./snowflake"
statements_cmd="go test -run '^\$' -bench Statement -count $count ./cmd/nodeid/internal/bench/measure"
start=$(date +%s)

load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0; }

if ! $render_only; then
waited=0
while awk -v l="$(load)" -v m="$max_load" 'BEGIN { exit !(l >= m) }' && [ "$waited" -lt "$wait_max" ]; do
	[ "$waited" -eq 0 ] && echo "bench.sh: load $(load) >= $max_load; waiting up to ${wait_max}s for a quieter machine" >&2
	sleep 15
	waited=$((waited + 15))
done
echo "bench.sh: starting at load $(load) ($(uptime))" >&2

go build -o "$tmp/nodeid" ./cmd/nodeid

# The claim at the floor: a run of its own, on two throwaway servers of its
# own (fsync on and fsync off).
floor() {
	echo "bench.sh: nodeid bench --floor (the claim at the floor, fsync on and off)" >&2
	"$tmp/nodeid" bench --floor --json "$raw/floor.json" >"$raw/floor.txt"
}

# nodeid against its peers: a run of its own, on servers of its own.
peers() {
	echo "bench.sh: nodeid against its peers (go -C cmd/nodeid/tools run ./peers)" >&2
	go -C cmd/nodeid/tools run ./peers >"$tmp/peers.md"
	mv "$tmp/peers.md" docs/bench-peers.md
}

if $peers_only; then
	peers
	echo "bench.sh: wrote docs/bench-peers.md in $(($(date +%s) - start))s; load now $(load)" >&2
	exit 0
fi

if $floor_only; then
	floor
	go -C cmd/nodeid/tools build -o "$tmp/benchreport" ./benchreport
	"$tmp/benchreport" -floor-only -floor "$raw/floor.json" -out "$out"
	cat "$raw/floor.txt"
	echo "bench.sh: replaced the floor's section of $out in $(($(date +%s) - start))s; load now $(load)" >&2
	exit 0
fi

echo "bench.sh: nodeid bench (herd, overhead, scale, round trips, renewal load)" >&2
"$tmp/nodeid" bench --repeat "$repeat" --json "$raw/bench.json" >"$raw/bench.txt"

floor
peers

echo "bench.sh: where the herd's claims wait (log_lock_waits)" >&2
$lock_cmd >"$raw/lockwaits.txt"

echo "bench.sh: $snowflake_cmd" >&2
go test -run '^$' -bench . -count "$count" ./snowflake >"$raw/snowflake.txt"
"${benchstat[@]}" -col /impl "$raw/snowflake.txt" >"$raw/snowflake.stat"

echo "bench.sh: $statements_cmd" >&2
go test -run '^$' -bench Statement -count "$count" ./cmd/nodeid/internal/bench/measure >"$raw/statements.txt"
"${benchstat[@]}" -col /op "$raw/statements.txt" >"$raw/statements.stat"

echo "$(($(date +%s) - start))" >"$raw/elapsed"
fi

elapsed=$(cat "$raw/elapsed" 2>/dev/null || echo 0)
# Built, then run from here, so that the paths below stay relative to the
# repository's root.
go -C cmd/nodeid/tools build -o "$tmp/benchreport" ./benchreport
"$tmp/benchreport" \
	-results "$raw/bench.json" \
	-lockwaits "$raw/lockwaits.txt" -lockwaits-cmd "$lock_cmd" \
	-snowflake "$raw/snowflake.txt" -snowflake-stat "$raw/snowflake.stat" -snowflake-cmd "$snowflake_cmd" \
	-statements "$raw/statements.txt" -statements-stat "$raw/statements.stat" -statements-cmd "$statements_cmd" \
	-benchstat-cmd "${benchstat[*]}" \
	-floor "$(if [ -f "$raw/floor.json" ]; then echo "$raw/floor.json"; fi)" \
	-script "scripts/bench.sh" -elapsed "${elapsed}s" \
	-out "$out" -plots docs
cat "$raw/bench.txt"
[ -f "$raw/floor.txt" ] && cat "$raw/floor.txt"
echo "bench.sh: wrote $out and docs/bench-*.png (measured in ${elapsed}s); load now $(load)" >&2
