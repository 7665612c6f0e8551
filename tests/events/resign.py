#!/usr/bin/env python3
"""Signs a Lambda HTTP event in tests/events the way Slack would.

Slack signs `v0:{timestamp}:{raw body}` with HMAC-SHA256; the ingress function
refuses requests signed more than five minutes ago. The events here are signed
at a fixed time (the tests pin the function's clock to it), so to try one with
`sam local invoke` or `cargo lambda invoke`, sign it again for now:

    python3 tests/events/resign.py tests/events/ingress-app-mention.json > /tmp/event.json
    sam local invoke IngressFunction -e /tmp/event.json --env-vars infra/env.local.json

The secret is the one infra/env.local.json gives IngressFunction.
"""
import argparse
import base64
import hashlib
import hmac
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("event", type=pathlib.Path)
    parser.add_argument("--timestamp", type=int, default=None, help="Unix seconds (default: now)")
    parser.add_argument("--in-place", action="store_true", help="rewrite the file instead of printing")
    args = parser.parse_args()

    env = json.loads((ROOT / "infra" / "env.local.json").read_text())
    secret = env["IngressFunction"]["SLACK_SIGNING_SECRET"].encode()
    event = json.loads(args.event.read_text())
    body = event.get("body") or ""
    raw = base64.b64decode(body) if event.get("isBase64Encoded") else body.encode()
    timestamp = str(args.timestamp if args.timestamp is not None else int(time.time()))
    digest = hmac.new(secret, b"v0:" + timestamp.encode() + b":" + raw, hashlib.sha256).hexdigest()
    event["headers"]["x-slack-request-timestamp"] = timestamp
    event["headers"]["x-slack-signature"] = "v0=" + digest

    text = json.dumps(event, indent=2) + "\n"
    if args.in_place:
        args.event.write_text(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
