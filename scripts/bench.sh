#!/usr/bin/env bash
# Regenerates docs/BENCHMARKS.md and its plots (docs/bench-*.png) from one
# run of every benchmark, against throwaway PostgreSQL servers started
# through internal/pgtest (local server binaries or Docker; or the server of
# NODEID_TEST_DSN).
#
#   scripts/bench.sh                 # the report's settings: 3 repetitions, about 20 minutes
#   BENCH_REPEAT=1 scripts/bench.sh  # quicker, without spreads
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

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0; }
waited=0
while awk -v l="$(load)" -v m="$max_load" 'BEGIN { exit !(l >= m) }' && [ "$waited" -lt "$wait_max" ]; do
	[ "$waited" -eq 0 ] && echo "bench.sh: load $(load) >= $max_load; waiting up to ${wait_max}s for a quieter machine" >&2
	sleep 15
	waited=$((waited + 15))
done
echo "bench.sh: starting at load $(load) ($(uptime))" >&2
start=$(date +%s)

go build -o "$tmp/nodeid" ./cmd/nodeid

echo "bench.sh: nodeid bench (herd, overhead, scale, round trips, renewal load)" >&2
"$tmp/nodeid" bench --repeat "$repeat" --json "$tmp/bench.json" >"$tmp/bench.txt"

echo "bench.sh: where the herd's claims wait (log_lock_waits)" >&2
lock_cmd="go run ./internal/bench/lockwaits -claimers 512 -ids 1024 -variants library,sql -repeat $repeat"
$lock_cmd >"$tmp/lockwaits.txt"

snowflake_cmd="go test -run '^\$' -bench . -count $count ./snowflake"
echo "bench.sh: $snowflake_cmd" >&2
go test -run '^$' -bench . -count "$count" ./snowflake >"$tmp/snowflake.txt"
"${benchstat[@]}" -col /impl "$tmp/snowflake.txt" >"$tmp/snowflake.stat"

statements_cmd="go test -run '^\$' -bench Statement -count $count ./internal/bench"
echo "bench.sh: $statements_cmd" >&2
go test -run '^$' -bench Statement -count "$count" ./internal/bench >"$tmp/statements.txt"
"${benchstat[@]}" -col /op "$tmp/statements.txt" >"$tmp/statements.stat"

elapsed=$(($(date +%s) - start))
go run ./internal/bench/report \
	-results "$tmp/bench.json" \
	-lockwaits "$tmp/lockwaits.txt" -lockwaits-cmd "$lock_cmd" \
	-snowflake "$tmp/snowflake.txt" -snowflake-stat "$tmp/snowflake.stat" -snowflake-cmd "$snowflake_cmd" \
	-statements "$tmp/statements.txt" -statements-stat "$tmp/statements.stat" -statements-cmd "$statements_cmd" \
	-benchstat-cmd "${benchstat[*]}" \
	-script "scripts/bench.sh" -elapsed "${elapsed}s" \
	-out "$out" -plots docs
cat "$tmp/bench.txt"
echo "bench.sh: wrote $out and docs/bench-*.png in ${elapsed}s; load now $(load)" >&2
