#!/usr/bin/env bash
# Builds the ingress binary as it ships (`--profile lambda`) and prints the
# figures DESIGN.md budgets: warm handling (median, p99), cold start through
# the Lambda Runtime Interface Emulator, binary size and peak RSS.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/tools.sh"
cd "$root"

step "tools"
ensure_python_tools

step "build the shipped binary (cargo build --profile lambda -p ingress)"
cargo build --quiet --profile lambda -p ingress
# Same profile: the warm figures are for code compiled as it ships.
step "build the benchmark"
cargo build --quiet --profile lambda -p bench

step "benchmark"
INGRESS_BIN="$CARGO_TARGET_DIR/lambda/ingress" "$CARGO_TARGET_DIR/lambda/bench"
