#!/usr/bin/env bash
# The README's first command: the local runner (infra/local), built exactly
# as the test command builds the binaries (same target directory, same
# selection), so the two share one build. The first build takes a few
# minutes (the AWS SDK crates); later ones take seconds.
#
#   infra/run.sh "why is checkout-api failing?"
#   infra/run.sh --config my-assistant.json "is checkout-api healthy?"
#   infra/run.sh --config my-assistant.json --check   (before an upload: "ok", or every problem; exit 1)
#   infra/run.sh --serve [--port 3000]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/tools.sh"
cd "$root"
local_runner "$@"
