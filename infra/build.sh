#!/usr/bin/env bash
# Builds the three functions for Lambda with `sam build` (BuildMethod
# rust-cargolambda), installing what that needs first, idempotently:
# cargo-lambda into the tools virtualenv, the Rust target of the chosen
# architecture and a C toolchain with a static glibc for it. The functions
# are linked as infra/tools.sh's shipped_link says (static, position-
# independent, packed relocations: the benchmark measures this link).
# The artifacts land in .aws-sam/build, ready for `sam deploy`.
#
#   infra/build.sh            arm64, as template.yaml defaults
#   infra/build.sh x86_64     then deploy with --parameter-overrides Architecture=x86_64
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=infra/tools.sh
. "$root/infra/tools.sh"
cd "$root"

arch="${1:-arm64}"
case "$arch" in
  arm64) target=aarch64-unknown-linux-gnu ;;
  x86_64) target=x86_64-unknown-linux-gnu ;;
  *) echo "usage: infra/build.sh [arm64|x86_64]" >&2; exit 2 ;;
esac

step "tools (aws-sam-cli, cargo-lambda, the $target Rust target and C toolchain)"
ensure_python_tools
build_requirements="$root/infra/requirements-build.txt"
stamp="$venv/.installed-build-$(sha256sum "$build_requirements" | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$build_requirements"
  touch "$stamp"
fi
rustup target list --installed | grep -qx "$target" || rustup target add "$target"
ensure_cross_toolchain "$target"
shipped_link "$target"

step "sam build ($arch; release profile, several minutes from cold)"
# Its own target directory: cross-compiled artifacts never mix with the tests'.
PATH="$venv/bin:$PATH" SAM_CLI_TELEMETRY=0 CARGO_TARGET_DIR="$cache/sam-target-$arch" \
  "$venv/bin/sam" build --beta-features --parameter-overrides "Architecture=$arch"
check_shipped_link .aws-sam/build/*/bootstrap
ls -l .aws-sam/build/*/bootstrap
