# Sourced by infra/test.sh and infra/bench.sh: installs, idempotently and
# outside the clone, the tools they need, and exports where they are.
#
#   SLACK_ASSISTANT_CACHE  where the virtualenv and cargo target live
#                          (default ~/.cache/slack-assistant)
#   CARGO_TARGET_DIR       default $SLACK_ASSISTANT_CACHE/target, so fresh
#                          clones build incrementally
#   AWS_LAMBDA_RIE         AWS's Lambda Runtime Interface Emulator (from aws-sam-cli)
#   FAKETIME_LIB           libfaketime, to pin a function's clock

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="${SLACK_ASSISTANT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/slack-assistant}"
venv="$cache/venv"
mkdir -p "$cache"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

step() { printf '\n==> %s\n' "$*"; }

# A virtualenv with moto, aws-sam-cli and cfn-lint, pinned by the
# requirements file; reinstalled only when that file changes.
ensure_python_tools() {
  local requirements="$root/infra/requirements-test.txt"
  local stamp
  stamp="$venv/.installed-$(sha256sum "$requirements" | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    touch "$stamp"
  fi
  AWS_LAMBDA_RIE=$(find "$venv/lib" -path '*samcli/local/rapid/aws-lambda-rie-x86_64' -print -quit)
  [ -x "$AWS_LAMBDA_RIE" ] || { echo "Lambda Runtime Interface Emulator not found in $venv" >&2; return 1; }
  export AWS_LAMBDA_RIE
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
