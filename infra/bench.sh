#!/usr/bin/env bash
# Builds the function binaries as they ship (the release profile, under the
# name `lambda`) and the start-up floor (a hello-world lambda_runtime binary,
# same profile), then prints the figures docs/src/benchmark.md states: ingress warm
# handling (median, p99), start-up of every function beside the floor's
# through the Lambda Runtime Interface Emulator, binary sizes, peak RSS, the
# worker's overhead per step and the responder's rendering. It measures; it
# asserts nothing.
#
# `infra/bench.sh --load` runs only the load test: a steady day, a burst and
# an alert storm through the real handlers against a Bedrock and a Slack
# that throttle as the real ones do (tests/support/load.rs), printing one
# table of figures; it fails when a question was lost, doubled or left
# unanswered. It takes longer than the 15 minutes a default run may add
# (Slack's rate limits and Bedrock's quota make the burst drain over
# minutes), so only `--load` runs it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/tools.sh"
cd "$root"

# The load test's three workloads (about 17 minutes on 2 cores). The functions print
# their metrics records (JSON lines) as they run: only the table is shown.
run_load_test() {
  step "load test: a steady day, a burst, an alert storm (tests::load)"
  cargo build --quiet -p tests --bin load
  local started=$SECONDS status=0
  "$CARGO_TARGET_DIR/debug/load" --seed 7 2>"$emulator_logs/load.log" | grep -v '^{' || status=$?
  grep -v '^{' "$emulator_logs/load.log" | grep -v '^load: ' | tail -n 40 || true
  echo "load test took $((SECONDS - started)) s"
  return "$status"
}

if [ "${1:-}" = "--load" ]; then
  step "tools"
  ensure_python_tools
  step "local AWS emulator"
  emulator_for_this_run
  run_load_test
  exit $?
fi

step "tools"
ensure_python_tools

# The functions as `sam build` builds them (`cargo lambda build --bin …`:
# the workspace's default members, the three functions, so the features
# the tests and the local runner turn on never reach them), linked as
# infra/build.sh links them (shipped_link: static, position-independent,
# packed relocations). The floors are hello-world binaries built as cargo
# builds them by default; the floor again, linked as the functions are,
# gives a line that shows what the link alone buys.
host=$(host_triple)
shipped="$CARGO_TARGET_DIR/$host/lambda"
step "build the shipped binaries and the floors (cargo build --profile lambda)"
ensure_cross_toolchain "$host"
(
  shipped_link "$host"
  cargo build --quiet --profile lambda --target "$host" --bin ingress --bin worker --bin responder
  cargo build --quiet --profile lambda --target "$host" -p floor --bin floor
)
cargo build --quiet --profile lambda -p floor
# Same profile: the warm figures are for code compiled as it ships.
step "build the benchmark"
cargo build --quiet --profile lambda -p bench

step "local AWS emulator with the stack's resources (the worker reads its configuration at start-up)"
emulator_for_this_run
local_runner --provision >"$emulator_logs/stack.env"
set -a
# shellcheck disable=SC1091
source "$emulator_logs/stack.env"
set +a

step "benchmark"
BENCH_COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' with local changes')" \
  FLOOR_BIN="$CARGO_TARGET_DIR/lambda/floor" FLOOR_READ_BIN="$CARGO_TARGET_DIR/lambda/floor-read" \
  FLOOR_LINKED_BIN="$shipped/floor" INGRESS_BIN="$shipped/ingress" WORKER_BIN="$shipped/worker" RESPONDER_BIN="$shipped/responder" \
  "$CARGO_TARGET_DIR/lambda/bench"

# The soak: questions through a fault-injecting proxy (about one call in
# eight failing, applied-with-the-answer-lost included), with Slack's
# retries; it prints what became of every question and the faults by kind.
step "soak under injected faults (tests::soak, 200 questions)"
cargo build --quiet -p tests --bin soak
"$CARGO_TARGET_DIR/debug/soak" --questions 200 --seed 7 --one-in 8
