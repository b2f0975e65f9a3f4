#!/usr/bin/env bash
# The main job: installs what is missing, builds, and prints the calibration
# report of a 2-rank job under Open MPI (pass --mpi mpich for MPICH; other
# arguments go to `loggp calibrate`). Output files land in ./loggp-calibration.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec target/release/loggp calibrate --np 2 "$@"
