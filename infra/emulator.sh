#!/usr/bin/env bash
# A local AWS emulator with the stack's table, queues and bucket, for trying
# the functions by hand (`cargo lambda watch` + `cargo lambda invoke`, see
# docs/src/operations.md, "Trying an event by hand"). Starts moto on 127.0.0.1 (port 5000 unless given), creates what
# template.yaml declares under the names infra/env.local.json uses, writes the
# functions' environment to ~/.cache/slack-assistant/emulator.env (for
# `cargo lambda watch --env-file`), and runs until Ctrl-C.
#
#   infra/emulator.sh [PORT]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/tools.sh"
cd "$root"
port="${1:-5000}"

step "tools (virtualenv in $venv)"
ensure_python_tools

step "local AWS emulator on 127.0.0.1:$port"
trap stop_emulator EXIT
start_emulator "$port" "$cache/emulator.log"

step "the stack's table, queues and bucket (the local runner's --provision)"
local_runner --provision >"$cache/emulator.env"
cat "$cache/emulator.env"
printf '\nThe environment above is in %s.\nCtrl-C stops the emulator.\n' "$cache/emulator.env"
wait "$moto_pid"
