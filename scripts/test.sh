#!/usr/bin/env bash
# The test command: installs what is missing (Debian packages), builds
# everything in release mode, then runs every test: the pure core's unit
# tests and the integration tests, which launch real mpirun jobs under Open
# MPI and MPICH with the real shim preloaded. Ends with one summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Integration tests serialise their MPI jobs with a lock; more test threads
# only add contention on a small machine. (No doc-tests exist.)
set +e
cargo test --workspace --release --no-fail-fast --lib --bins --tests -- --test-threads=2 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
sum() { grep -E '^test result:' "$log" | grep -Eo "[0-9]+ $1" | awk '{s += $1} END {print s + 0}'; }
echo "tests: $(sum passed) passed, $(sum failed) failed"
exit "$rc"
