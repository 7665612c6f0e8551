#!/usr/bin/env bash
# Builds the function binaries as they ship (`--profile lambda`) and prints
# the figures DESIGN.md budgets: ingress warm handling (median, p99), cold
# start through the Lambda Runtime Interface Emulator, binary sizes, peak RSS,
# and the worker's overhead per step.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/tools.sh"
cd "$root"

step "tools"
ensure_python_tools

step "build the shipped binaries (cargo build --profile lambda -p ingress / -p worker / -p responder)"
cargo build --quiet --profile lambda -p ingress
cargo build --quiet --profile lambda -p worker
cargo build --quiet --profile lambda -p responder
# Same profile: the warm figures are for code compiled as it ships.
step "build the benchmark"
cargo build --quiet --profile lambda -p bench

step "benchmark"
INGRESS_BIN="$CARGO_TARGET_DIR/lambda/ingress" WORKER_BIN="$CARGO_TARGET_DIR/lambda/worker" \
  RESPONDER_BIN="$CARGO_TARGET_DIR/lambda/responder" \
  "$CARGO_TARGET_DIR/lambda/bench"
