#!/usr/bin/env bash
# Runs every check and test, on a fresh machine as on a used one.
#
# Installs what the tests need, idempotently and outside the clone (a Python
# virtualenv with the AWS emulator, SAM CLI, cfn-lint and the Slack SDK;
# checkov in a virtualenv of its own; faketime; from npm, the MCP project's
# reference server, the OpenID provider oidc-provider, puppeteer-core and
# the IAM policy simulator; mdBook from crates.io), starts the local AWS
# emulator (recording every request) and the MCP server on free loopback
# ports, then runs: cargo fmt --check, clippy -D warnings, cfn-lint, sam
# validate --lint and checkov on the template, the book in docs/ built and
# every link in it and in the README checked, every test (unit, emulator,
# real binaries under the Lambda Runtime Interface Emulator, also linked
# as they ship: a static glibc for this machine, installed if missing), the IAM
# check of every AWS call the functions made against their roles in
# template.yaml, the check of every Bedrock and Slack request against the
# vendors' own models, the check that no Slack request carries a live mass
# mention the deployment did not allow, and the evaluation set against its
# recorded model replies.
# Whatever it started is stopped on exit, failed or not.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/tools.sh"
cd "$root"

# --- Tools -------------------------------------------------------------------
step "test tools (virtualenv in $venv, faketime, the MCP reference server, the OpenID provider, chromium, mdBook)"
ensure_python_tools
ensure_faketime
ensure_mcp_reference_server
ensure_oidc_provider
ensure_browser
ensure_iam_simulator
ensure_mdbook

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

step "the book: mdbook build docs, then every link in it and in README.md (infra/docs/check.py)"
"$venv/bin/python" infra/docs/check.py --self-test
"$MDBOOK" build docs --dest-dir "$cache/book"
"$venv/bin/python" infra/docs/check.py --book "$cache/book"

# --- Local AWS emulator -----------------------------------------------------
step "local AWS emulator (moto)"
# The real AWS SDK, pointed at the emulator by its own variables. The
# emulator and the fakes of Bedrock and Slack record every request they
# serve in $AWS_CALL_LOG, for the IAM and vendor-model checks after the tests.
AWS_CALL_LOG=$(mktemp -d)
export AWS_CALL_LOG
emulator_for_this_run

step "the MCP project's reference server (Streamable HTTP)"
trap 'status=$?; [ "$status" -eq 0 ] || show_emulator_errors; stop_emulator; stop_mcp_reference_server; rm -rf "$emulator_logs" "$AWS_CALL_LOG"' EXIT
start_mcp_reference_server "$(free_port)" "$emulator_logs/mcp-reference-server.log"

# --- Tests ------------------------------------------------------------------
step "build the function binaries (run by the tests under the Runtime Interface Emulator)"
cargo build --workspace --bins --quiet
export FUNCTION_BIN_DIR="$CARGO_TARGET_DIR/debug"
# And linked as they ship (infra/tools.sh's shipped_link, in the debug
# profile): the tests named `the_shipped_binary_…` run these.
host=$(host_triple)
ensure_cross_toolchain "$host"
(shipped_link "$host" && cargo build --quiet --target "$host" --bin ingress --bin worker --bin responder)
export SHIPPED_BIN_DIR="$CARGO_TARGET_DIR/$host/debug"

step "cargo test"
cargo test --workspace

step "IAM: every AWS call the functions made, against the roles template.yaml gives them"
"$venv/bin/python" infra/iam/check.py --self-test
"$venv/bin/python" infra/iam/check.py --calls "$AWS_CALL_LOG"
# Again with the Slack and webhook secrets given as ARNs (the template's
# other branch for each grant).
"$venv/bin/python" infra/iam/check.py --calls "$AWS_CALL_LOG" --parameters infra/iam/test-parameters-secret-arns.json

step "requests against the vendors' own models (Bedrock's service model, Slack's Block Kit)"
"$venv/bin/python" infra/vendor-models/check.py --self-test
"$venv/bin/python" infra/vendor-models/check.py --calls "$AWS_CALL_LOG"

step "no live mass mention the deployment did not allow, in any Slack request (infra/mentions/check.py)"
"$venv/bin/python" infra/mentions/check.py --self-test
"$venv/bin/python" infra/mentions/check.py --calls "$AWS_CALL_LOG"

step "the evaluation set against its recorded model replies (infra/eval.sh)"
infra/eval.sh
