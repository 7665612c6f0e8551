# Sourced by every script in infra/ (test, run, bench, build, emulator): installs, idempotently and
# outside the clone, the tools they need, and exports where they are.
#
#   SLACK_ASSISTANT_CACHE  where the virtualenv and cargo target live
#                          (default ~/.cache/slack-assistant)
#   CARGO_TARGET_DIR       default $SLACK_ASSISTANT_CACHE/target, so fresh
#                          clones build incrementally
#   AWS_LAMBDA_RIE         AWS's Lambda Runtime Interface Emulator (from aws-sam-cli)
#   FAKETIME_LIB           libfaketime, to pin a function's clock
#   MCP_EVERYTHING_URL     the MCP project's reference server, started for the run
#   MDBOOK                 mdBook, to build the book in docs/

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="${SLACK_ASSISTANT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/slack-assistant}"
venv="$cache/venv"
mkdir -p "$cache"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

step() { printf '\n==> %s\n' "$*"; }

# A virtualenv at $1 with what requirements file $2 pins; made again only
# when that file changes.
ensure_venv() {
  local dir="$1" requirements="$2" stamp
  stamp="$dir/.installed-$(sha256sum "$requirements" | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    python3 -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    touch "$stamp"
  fi
}

# The test virtualenv: moto, aws-sam-cli, cfn-lint and the Slack SDK.
ensure_python_tools() {
  ensure_venv "$venv" "$root/infra/requirements-test.txt"
  AWS_LAMBDA_RIE=$(find "$venv/lib" -path '*samcli/local/rapid/aws-lambda-rie-x86_64' -print -quit)
  [ -x "$AWS_LAMBDA_RIE" ] || { echo "Lambda Runtime Interface Emulator not found in $venv" >&2; return 1; }
  export AWS_LAMBDA_RIE
}

# checkov (infrastructure-as-code scanner) in a virtualenv of its own,
# pinned by infra/requirements-checkov.txt: its dependencies conflict with
# moto's and aws-sam-cli's. Exports CHECKOV.
ensure_checkov() {
  ensure_venv "$cache/checkov-venv" "$root/infra/requirements-checkov.txt"
  CHECKOV="$cache/checkov-venv/bin/checkov"
  export CHECKOV
}

# How the functions are linked for Lambda, by infra/build.sh and
# infra/bench.sh alike (the benchmark measures what ships): exports, for
# Rust target $1, a static position-independent executable (glibc linked in:
# the loader maps no libraries and nothing ties the binary to the glibc of
# Lambda's OS) with packed relative relocations (RELR), which glibc's
# static start-up applies in a fraction of the time the loader takes for
# the usual table. Position-independent, so the kernel still places it at
# a random address. zig links glibc only dynamically, so cargo-lambda
# builds with the host's C toolchain (`--compiler cargo`); for arm64 on
# another machine, with its cross toolchain (ensure_cross_toolchain).
# Only with `--target`: crt-static would also reach the build's
# proc-macros without it, and they cannot link statically.
shipped_link() {
  local triple="$1" var
  var=$(printf '%s' "$triple" | tr 'a-z-' 'A-Z_')
  export CARGO_LAMBDA_COMPILER=cargo
  export "CARGO_TARGET_${var}_RUSTFLAGS=-C target-feature=+crt-static -C link-arg=-Wl,-z,pack-relative-relocs"
  if [ "$triple" = aarch64-unknown-linux-gnu ]; then
    # rustc would link it at a fixed address: infra/static-pie-cc.
    STATIC_PIE_CC=gcc
    [ "$(uname -m)" = aarch64 ] || STATIC_PIE_CC=aarch64-linux-gnu-gcc
    export STATIC_PIE_CC CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER="$root/infra/static-pie-cc"
  fi
}

# The Rust target triple of this machine: what the tests and the benchmark
# build the shipped link for, since they run the binaries here.
host_triple() { rustc -vV | sed -n 's/^host: //p'; }

# Fails unless every file named is a static position-independent
# executable: a shared object's type (the kernel places it at a random
# address), no program interpreter, packed relocations. What shipped_link
# must have produced.
check_shipped_link() {
  local binary headers
  for binary in "$@"; do
    headers=$(LC_ALL=C readelf -h -l -d "$binary")
    if ! grep -q 'Type: *DYN' <<<"$headers" || grep -q 'INTERP' <<<"$headers" || ! grep -q '(RELR)' <<<"$headers"; then
      echo "$binary is not a static position-independent executable with packed relocations:" >&2
      LC_ALL=C file "$binary" >&2 || true
      return 1
    fi
  done
}

# The C toolchain shipped_link builds $1 with: gcc and a static glibc
# (libc.a) for it, from Debian's packages when missing.
ensure_cross_toolchain() {
  local triple="$1" packages="" sudo=""
  case "$triple" in
    x86_64-unknown-linux-gnu) [ -f "$(gcc -print-file-name=libc.a)" ] || packages="libc6-dev" ;;
    aarch64-unknown-linux-gnu)
      if [ "$(uname -m)" = aarch64 ]; then
        [ -f "$(gcc -print-file-name=libc.a)" ] || packages="libc6-dev"
      else
        command -v aarch64-linux-gnu-gcc >/dev/null || packages="gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
      fi ;;
  esac
  [ -n "$packages" ] || return 0
  command -v apt-get >/dev/null || { echo "install a C toolchain and static glibc for $triple ($packages on Debian)" >&2; return 1; }
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >/dev/null
}

ensure_faketime() {
  find_faketime() { find /usr/lib -name 'libfaketime.so.1' -path '*faketime*' -print -quit 2>/dev/null; }
  if [ -z "$(find_faketime)" ]; then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime >/dev/null
  fi
  FAKETIME_LIB=$(find_faketime)
  export FAKETIME_LIB
}

# mdBook, which builds the book in docs/ (everything past the README's
# landing page), pinned here and built from crates.io with `cargo install`
# into $cache/tools/mdbook, outside the clone; again only when the pin
# changes. Without default features: no `serve`, `watch` or search index,
# which `mdbook build` does not need. Exports MDBOOK.
MDBOOK_VERSION=0.5.4
ensure_mdbook() {
  local dir="$cache/tools/mdbook"
  MDBOOK="$dir/bin/mdbook"
  if [ "$("$MDBOOK" --version 2>/dev/null)" != "mdbook v$MDBOOK_VERSION" ]; then
    # In cargo install's own temporary target directory, not the workspace's.
    env -u CARGO_TARGET_DIR cargo install mdbook --locked --quiet --force --version "$MDBOOK_VERSION" \
      --no-default-features --root "$dir"
  fi
  export MDBOOK
}

# Waits (up to 10 s) until the Python check $3 succeeds, while process $1
# lives; if it dies, prints its log $2 and fails.
wait_until_ready() {
  local pid="$1" log="$2" check="$3"
  for _ in $(seq 1 100); do
    python3 -c "$check" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; return 1; }
    sleep 0.1
  done
}

# Installs infra/$1's npm packages (pinned by its package-lock.json) with
# `npm ci` under $cache/$1, outside the clone; again only when the lock file
# changes. Sets npm_prefix to where they are.
ensure_npm_packages() {
  local name="$1" lock="$root/infra/$1/package-lock.json"
  npm_prefix="$cache/$1"
  local stamp
  stamp="$npm_prefix/.installed-$(sha256sum "$lock" | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    command -v npm >/dev/null || { echo "npm (Node.js 20+) is needed for the tests using $name" >&2; return 1; }
    rm -rf "$npm_prefix" && mkdir -p "$npm_prefix"
    cp "$root/infra/$name/package.json" "$lock" "$npm_prefix/"
    (cd "$npm_prefix" && npm ci --silent --no-audit --no-fund --loglevel=error)
    touch "$stamp"
  fi
}

# The MCP project's reference server (@modelcontextprotocol/server-everything).
ensure_mcp_reference_server() {
  ensure_npm_packages mcp-reference-server
  mcp_reference_server="$npm_prefix/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
  [ -f "$mcp_reference_server" ] || { echo "the MCP reference server is not in $npm_prefix" >&2; return 1; }
}

# The npm package oidc-provider (a certified OpenID provider) for the
# per-user sign-in tests, pinned by infra/oidc-provider/package-lock.json;
# exports OIDC_PROVIDER_MODULES (tests/support/oidc_provider.mjs runs it).
ensure_oidc_provider() {
  ensure_npm_packages oidc-provider
  [ -f "$npm_prefix/node_modules/oidc-provider/lib/index.js" ] || { echo "oidc-provider is not in $npm_prefix" >&2; return 1; }
  export OIDC_PROVIDER_MODULES="$npm_prefix/node_modules"
}

# A real browser for the sign-in test a person goes through: Debian's
# chromium (headless) and puppeteer-core, pinned by
# infra/browser/package-lock.json, to drive it over the DevTools protocol.
# Exports CHROMIUM and BROWSER_MODULES (tests/support/connect_in_browser.mjs).
ensure_browser() {
  if ! command -v chromium >/dev/null; then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  fi
  CHROMIUM=$(command -v chromium)
  export CHROMIUM
  ensure_npm_packages browser
  [ -d "$npm_prefix/node_modules/puppeteer-core" ] || { echo "puppeteer-core is not in $npm_prefix" >&2; return 1; }
  export BROWSER_MODULES="$npm_prefix/node_modules"
}

# The IAM policy simulator (@cloud-copilot/iam-simulate, pinned by
# infra/iam/package-lock.json) that infra/iam/check.py runs; exports
# IAM_SIMULATE_MODULES.
ensure_iam_simulator() {
  ensure_npm_packages iam
  [ -d "$npm_prefix/node_modules/@cloud-copilot/iam-simulate" ] || { echo "iam-simulate is not in $npm_prefix" >&2; return 1; }
  export IAM_SIMULATE_MODULES="$npm_prefix/node_modules"
}

# Starts the reference server over Streamable HTTP on 127.0.0.1:$1, logging
# to $2, waits until it listens, and exports MCP_EVERYTHING_URL. Sets
# mcp_pid; stop it with stop_mcp_reference_server.
start_mcp_reference_server() {
  local port="$1" log="$2"
  PORT="$port" node "$mcp_reference_server" streamableHttp >"$log" 2>&1 &
  mcp_pid=$!
  wait_until_ready "$mcp_pid" "$log" "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)"
  echo "MCP reference server listening on 127.0.0.1:$port"
  export MCP_EVERYTHING_URL="http://127.0.0.1:$port/mcp"
}

stop_mcp_reference_server() {
  if [ -n "${mcp_pid:-}" ]; then
    kill "$mcp_pid" 2>/dev/null || true
    wait "$mcp_pid" 2>/dev/null || true
  fi
}

# Starts the local AWS emulator (moto) on 127.0.0.1:$1, logging to $2, waits
# until it answers, and points the AWS SDK at it through its own variables.
# Sets moto_pid; stop it with stop_emulator.
start_emulator() {
  local port="$1" log="$2"
  # moto's server, recording every request into $AWS_CALL_LOG when set
  # (infra/iam/check.py evaluates the functions' calls against template.yaml).
  "$venv/bin/python" "$root/infra/iam/recording_moto_server.py" 127.0.0.1 "$port" >"$log" 2>&1 &
  moto_pid=$!
  wait_until_ready "$moto_pid" "$log" "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/moto-api/')"
  echo "moto listening on 127.0.0.1:$port"
  unset AWS_PROFILE AWS_SESSION_TOKEN AWS_DEFAULT_PROFILE
  export AWS_ENDPOINT_URL="http://127.0.0.1:$port"
  export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
  export AWS_EC2_METADATA_DISABLED=true
}

stop_emulator() {
  if [ -n "${moto_pid:-}" ]; then
    kill "$moto_pid" 2>/dev/null || true
    wait "$moto_pid" 2>/dev/null || true
  fi
}

# A free loopback port.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# After a failed run: what the emulator answered with a server error, and
# its tracebacks (a 500 reaches the SDK as an HTML page it cannot read).
show_emulator_errors() {
  local log="${emulator_logs:-}/moto.log"
  [ -s "$log" ] || return 0
  echo "--- the emulator's server errors and tracebacks ($log) ---"
  grep -n -E '" 5[0-9][0-9] ' "$log" | tail -n 20 || true
  grep -n -A 40 '^Traceback' "$log" | tail -n 120 || true
}

# The emulator for the rest of this script's run, on a free port: stopped,
# and its log directory ($emulator_logs) removed, when the script exits.
emulator_for_this_run() {
  emulator_logs=$(mktemp -d)
  trap 'stop_emulator; rm -rf "$emulator_logs"' EXIT
  start_emulator "$(free_port)" "$emulator_logs/moto.log"
}

# The local runner, built with the same selection as the test command's
# build of the binaries (`--workspace --bins`), so the two share every
# artifact instead of compiling the AWS SDK twice for two feature sets.
local_runner() {
  cargo build --quiet --workspace --bins
  "$CARGO_TARGET_DIR/debug/local" "$@"
}
