#!/usr/bin/env bash
# The evaluation set (evals/cases/): each case through the worker's own
# assembly with its tools' recorded results, against the cases' recorded
# model replies, or against Bedrock with --model (and AWS credentials and a
# region in the environment, as the AWS CLI reads them).
#
#   infra/eval.sh                                  # recorded replies, all cases
#   infra/eval.sh --model us.anthropic.claude-sonnet-4-20250514-v1:0 --min-pass-rate 0.9
#   infra/eval.sh --config my-assistant.json evals/cases/checkout-502s.json
#
# Prints per case pass or fail with the reason, steps, tokens, cost and
# latency, then a summary; exits non-zero under --min-pass-rate (1.0 unless
# given). Built in the same target directory as the other commands.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/tools.sh"
cd "$root"
cargo run --quiet -p evals -- "$@"
