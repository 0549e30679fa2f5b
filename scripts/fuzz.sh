#!/usr/bin/env bash
# fuzz.sh runs every fuzz target of the module, one after the other, each for
# FUZZTIME (default 30s), and fails if any of them fails.
#
# Usage, from anywhere in the repository:
#
#	scripts/fuzz.sh                  # every target, 30 s each
#	FUZZTIME=5m scripts/fuzz.sh      # longer runs
#	scripts/fuzz.sh FuzzParseID      # only the targets named (exact names)
#
# FUZZMINIMIZETIME (default 5s) bounds how long go spends minimizing each
# new interesting input and each crasher. Go's own default, 60s, can eat a
# whole 30 s run: FuzzValidateTable made about 3,000 executions in 30 s with
# it, about 100,000 with 5s.
#
# The targets are found by their declarations (func FuzzXxx(f *testing.F) in
# a _test.go file), so a new target is picked up without editing this script.
# Each runs as
#
#	go test -run '^$' -fuzz '^FuzzXxx$' -fuzztime 30s -fuzzminimizetime 5s ./pkg
#
# When a target fails, go writes the failing input to
# pkg/testdata/fuzz/FuzzXxx/<hash> and prints how to replay it
# (go test -run 'FuzzXxx/<hash>' ./pkg). Commit that file once the bug is
# fixed: plain `go test` runs every file under testdata/fuzz as a regression
# seed, so the crasher stays covered for good. The fuzzing cache (new
# interesting inputs that did not fail) stays in $(go env GOCACHE)/fuzz and is
# not committed.
#
# A summary line per target is printed at the end; the exit status is 1 if
# any target failed, 2 on a usage error.
set -uo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-30s}
minimizetime=${FUZZMINIMIZETIME:-5s}

# pkg<TAB>target, for every fuzz target of the module, sorted.
mapfile -t found < <(
  grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' . |
    sed -E 's#^\./##; s#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]+)\($#./\1\t\2#; s#^[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]+)\($#.\t\1#' |
    sort -u
)
if [ "${#found[@]}" -eq 0 ]; then
  echo "fuzz.sh: no fuzz targets found" >&2
  exit 2
fi

selected=()
if [ "$#" -gt 0 ]; then
  for want in "$@"; do
    hit=0
    for entry in "${found[@]}"; do
      if [ "${entry#*$'\t'}" = "$want" ]; then
        selected+=("$entry")
        hit=1
      fi
    done
    if [ "$hit" -eq 0 ]; then
      echo "fuzz.sh: no fuzz target named $want" >&2
      exit 2
    fi
  done
else
  selected=("${found[@]}")
fi

results=()
failed=0
for entry in "${selected[@]}"; do
  pkg=${entry%%$'\t'*}
  target=${entry#*$'\t'}
  echo "=== $target ($pkg, $fuzztime)"
  start=$(date +%s)
  if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimizetime" "$pkg"; then
    status=ok
  else
    status=FAIL
    failed=1
  fi
  results+=("$(printf '%-4s %-24s %-16s %ss' "$status" "$target" "$pkg" "$(($(date +%s) - start))")")
done

echo
echo "fuzz.sh: ${#selected[@]} targets, $fuzztime each"
printf '%s\n' "${results[@]}"
if [ "$failed" -ne 0 ]; then
  echo "fuzz.sh: a target failed: its crasher is under the package's testdata/fuzz/; replay it with go test -run 'Target/<file>' ./pkg, fix the code, and commit the file as a regression seed" >&2
  exit 1
fi
