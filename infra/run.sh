#!/usr/bin/env bash
# The README's first command: the local runner (`cargo run -p local --`),
# building into the same target directory as the test command, so the two
# share one build. The first build takes a few minutes (the AWS SDK crates);
# later ones take seconds.
#
#   infra/run.sh "why is checkout-api failing?"
#   infra/run.sh --config my-assistant.json "is checkout-api healthy?"
#   infra/run.sh --serve [--port 3000]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/tools.sh"
cd "$root"
exec cargo run --quiet -p local -- "$@"
