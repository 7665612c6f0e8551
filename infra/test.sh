#!/usr/bin/env bash
# Runs every check and test, on a fresh machine as on a used one.
#
# Installs what the tests need, idempotently and outside the clone (a Python
# virtualenv with the AWS emulator, SAM CLI and cfn-lint; faketime; the MCP
# project's reference server and the OpenID provider oidc-provider from npm), starts the local AWS emulator and
# the MCP server on free loopback ports, then runs: cargo fmt
# --check, clippy -D warnings, every test (unit, emulator, real binaries under
# the Lambda Runtime Interface Emulator), the evaluation set against its
# recorded model replies, cfn-lint and sam validate --lint.
# Whatever it started is stopped on exit, failed or not.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/tools.sh"
cd "$root"

# --- Tools -------------------------------------------------------------------
step "test tools (virtualenv in $venv, faketime, the MCP reference server, the OpenID provider, chromium)"
ensure_python_tools
ensure_faketime
ensure_mcp_reference_server
ensure_oidc_provider
ensure_browser

# --- Static checks ----------------------------------------------------------
step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "template: cfn-lint and sam validate --lint"
"$venv/bin/cfn-lint" template.yaml
SAM_CLI_TELEMETRY=0 "$venv/bin/sam" validate --lint --template-file template.yaml

step "template: checkov (every failed check fails; each skip in the template says why)"
ensure_checkov
# --skip-download: offline, no Prisma Cloud guidelines.
"$CHECKOV" --file template.yaml --framework cloudformation --quiet --compact --skip-download

# --- Local AWS emulator -----------------------------------------------------
step "local AWS emulator (moto)"
# The real AWS SDK, pointed at the emulator by its own variables.
emulator_for_this_run

step "the MCP project's reference server (Streamable HTTP)"
trap 'stop_emulator; stop_mcp_reference_server; rm -rf "$emulator_logs"' EXIT
start_mcp_reference_server "$(free_port)" "$emulator_logs/mcp-reference-server.log"

# --- Tests ------------------------------------------------------------------
step "build the function binaries (run by the tests under the Runtime Interface Emulator)"
cargo build --workspace --bins --quiet
export FUNCTION_BIN_DIR="$CARGO_TARGET_DIR/debug"

step "cargo test"
cargo test --workspace

step "the evaluation set against its recorded model replies (infra/eval.sh)"
infra/eval.sh
