#!/usr/bin/env bash
# Runs every check and test, on a fresh machine as on a used one.
#
# Installs what the tests need, idempotently and outside the clone (a Python
# virtualenv with the AWS emulator, SAM CLI and cfn-lint; faketime), starts
# the local AWS emulator on a free loopback port, then runs: cargo fmt
# --check, clippy -D warnings, every test (unit, emulator, real binaries under
# the Lambda Runtime Interface Emulator), cfn-lint and sam validate --lint.
# Whatever it started is stopped on exit, failed or not.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/tools.sh"
cd "$root"

# --- Tools -------------------------------------------------------------------
step "test tools (virtualenv in $venv, faketime)"
ensure_python_tools
ensure_faketime

# --- Static checks ----------------------------------------------------------
step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "template: cfn-lint and sam validate --lint"
"$venv/bin/cfn-lint" template.yaml
SAM_CLI_TELEMETRY=0 "$venv/bin/sam" validate --lint --template-file template.yaml

# --- Local AWS emulator -----------------------------------------------------
step "local AWS emulator (moto)"
logs=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$logs/moto.log" 2>&1 &
moto_pid=$!
cleanup() {
  kill "$moto_pid" 2>/dev/null || true
  wait "$moto_pid" 2>/dev/null || true
  rm -rf "$logs"
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/moto-api/')" 2>/dev/null; then
    break
  fi
  kill -0 "$moto_pid" 2>/dev/null || { cat "$logs/moto.log" >&2; exit 1; }
  sleep 0.1
done
echo "moto listening on 127.0.0.1:$port"

# The real AWS SDK, pointed at the emulator by its own variables.
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_DEFAULT_PROFILE
export AWS_ENDPOINT_URL="http://127.0.0.1:$port"
export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
export AWS_EC2_METADATA_DISABLED=true

# --- Tests ------------------------------------------------------------------
step "build the function binaries (run by the tests under the Runtime Interface Emulator)"
cargo build --workspace --bins --quiet
export FUNCTION_BIN_DIR="$CARGO_TARGET_DIR/debug"

step "cargo test"
cargo test --workspace
