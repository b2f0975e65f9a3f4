#!/usr/bin/env bash
# The test command: installs what is missing (Debian packages), builds
# everything in release mode, then runs every test: the pure core's unit
# tests and the integration tests, which launch real mpirun jobs under Open
# MPI and MPICH with the real shim preloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# Integration tests serialise their MPI jobs with a lock; more test threads
# only add contention on a small machine.
cargo test --workspace --release --no-fail-fast -- --test-threads=2
