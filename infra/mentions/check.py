"""No live mass mention the deployment did not allow, in any Slack request the functions sent in the tests.

    python infra/mentions/check.py --calls DIR
    python infra/mentions/check.py --self-test

The fake Slack Web API (tests/support/fake_slack.rs) records every request
it serves in `DIR/slack-<pid>.jsonl` (tests/support/local_server.rs
`record`), whichever path sent it: answers, streams and their task cards,
`post_message`, alert roots and updates, approval prompts, ephemerals,
canvases, the Home tab. A mass mention is Slack's `<!here>`, `<!channel>`
(and its old name `<!group>`), `<!everyone>` or a user group's
`<!subteam^S…>`, in any case, and in `rich_text` blocks a `broadcast`
element (`here`, `channel`, `everyone`) or a `usergroup` element. It is
live when Slack would read it as one: written with its `<`, not `&lt;`.

What the deployment allows is what the test gave the functions: a test that
sets `SLACK_ALLOWED_SPECIAL_MENTIONS` does it through
`FakeSlack::deployment_allows`, which also puts `allowed_special_mentions`
in each record from then on. A record without it was sent by a deployment
that allows none (the template's default, and every other test's).

Every form parameter of every Web API call (`/api/{method}`) is read: as
text, and, when it is JSON (blocks, chunks, views, prompts), every string in
it and its rich text elements. Not read: `metadata` (the app's own data on a
message, which Slack never shows), and requests outside `/api/` (file
downloads and upload bodies: files, not messages).

Each violation names the recorded line, the method, the parameter with the
JSON path, and the mention. Exit status 1 on any violation.

`--self-test` builds records in memory: one live mention in each place that
must be caught (a `chat.postMessage` text, its blocks, a stream's appended
markdown, a task card's title, a rich text broadcast, a user group), each
must be reported; and records that must pass (the same mentions neutralised,
an allowed kind, dates and people, metadata, a file upload) must not be.
"""

import argparse
import glob
import json
import os
import re
import sys
import urllib.parse

KINDS = ("here", "channel", "everyone", "subteam")
# `<!here>`, `<!here|@here>`, `<!channel>`, `<!group>`, `<!everyone>`, `<!subteam^S1|@ops>`.
LIVE = re.compile(r"<!(here|channel|group|everyone|subteam)(?=[>|^ ]|$)", re.IGNORECASE)
NEVER_SHOWN = {"metadata"}


def allowed_kinds(record):
    """The kinds the record's deployment allowed (`here,subteam`): a set."""
    listed = record.get("allowed_special_mentions") or ""
    kinds = {kind.strip() for kind in listed.split(",") if kind.strip()}
    unknown = kinds - set(KINDS)
    if unknown:
        raise ValueError(f"allowed_special_mentions names {sorted(unknown)}, not kinds of mention")
    return kinds


def kind_of(word):
    word = word.lower()
    return "channel" if word == "group" else word


def mentions_in(value, path):
    """(JSON path, mention, kind) for each live mass mention in a decoded JSON value or a string."""
    if isinstance(value, str):
        for match in LIVE.finditer(value):
            yield path, match.group(0), kind_of(match.group(1))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from mentions_in(item, f"{path}[{index}]")
    elif isinstance(value, dict):
        kind = value.get("type")
        if kind == "broadcast":
            yield path, f"broadcast {value.get('range')}", kind_of(str(value.get("range", "channel")))
        elif kind == "usergroup":
            yield path, f"usergroup {value.get('usergroup_id')}", "subteam"
        for key, item in value.items():
            yield from mentions_in(item, f"{path}.{key}" if path else key)


def parameter_mentions(name, value):
    """The live mentions in one form parameter: JSON walked when it is JSON, else the text."""
    stripped = value.lstrip()
    if stripped[:1] in ("[", "{"):
        try:
            yield from mentions_in(json.loads(value), name)
            return
        except ValueError:
            pass
    yield from mentions_in(value, name)


def check_record(record):
    """(method, where, mention) for each mention the record's deployment did not allow."""
    path = record.get("path", "")
    if record.get("service") != "slack" or not path.startswith("/api/"):
        return
    method = path[len("/api/"):]
    allowed = allowed_kinds(record)
    body = record.get("body")
    if body is None:
        return
    for name, value in urllib.parse.parse_qsl(body, keep_blank_values=True):
        if name in NEVER_SHOWN:
            continue
        for where, mention, kind in parameter_mentions(name, value):
            if kind not in allowed:
                yield method, where, mention


def check_lines(lines, source):
    """Violations as `source:line method where: mention`, and how many Slack API calls were read."""
    violations, calls = [], 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("service") == "slack" and record.get("path", "").startswith("/api/"):
            calls += 1
        for method, where, mention in check_record(record):
            violations.append(f"{source}:{number} {method} {where}: live {mention}")
    return violations, calls


def check(directory):
    violations, calls = [], 0
    for path in sorted(glob.glob(os.path.join(directory, "slack-*.jsonl"))):
        with open(path, encoding="utf-8") as lines:
            found, read = check_lines(lines, os.path.basename(path))
        violations += found
        calls += read
    return violations, calls


def record(method, allowed=None, path=None, **params):
    """A record as the fake writes it, of a form-encoded `method` call."""
    form = {name: value if isinstance(value, str) else json.dumps(value) for name, value in params.items()}
    line = {"service": "slack", "method": "POST", "path": path or f"/api/{method}",
            "body": urllib.parse.urlencode(form)}
    if allowed is not None:
        line["allowed_special_mentions"] = allowed
    return json.dumps(line)


def self_test():
    task = {"type": "task_update", "id": "t1", "status": "complete", "title": "<!subteam^S1|@ops> restart"}
    must_fail = {
        "chat.postMessage text": record("chat.postMessage", channel="C1", text="deploy done <!channel>"),
        "chat.postMessage blocks": record("chat.postMessage", channel="C1", text="x",
                                          blocks=[{"type": "markdown", "text": "ask <!here|here>"}]),
        "stream markdown": record("chat.appendStream", channel="C1", ts="1.2",
                                  chunks=[{"type": "markdown_text", "text": "<!everyone> look"}]),
        "task card": record("chat.appendStream", channel="C1", ts="1.2", chunks=[task]),
        "rich text broadcast": record("chat.update", channel="C1", ts="1.2", text="x", blocks=[
            {"type": "rich_text", "elements": [{"type": "rich_text_section",
                                                "elements": [{"type": "broadcast", "range": "channel"}]}]}]),
        "old name, other case": record("chat.postEphemeral", channel="C1", user="U1", text="<!GROUP>"),
        "allowed here, not channel": record("chat.postMessage", allowed="here", channel="C1", text="<!channel>"),
    }
    must_pass = {
        "neutralised": record("chat.postMessage", channel="C1", text="&lt;!channel> &lt;!here>",
                              blocks=[{"type": "markdown", "text": "&lt;!subteam^S1>"}]),
        "neutralised chunk": record("chat.appendStream", channel="C1", ts="1.2",
                                    chunks=[dict(task, title="&lt;!subteam^S1|@ops> restart")]),
        "allowed": record("chat.postMessage", allowed="here,subteam", channel="C1", text="<!here> <!subteam^S1>"),
        "dates, people, look-alikes": record("chat.postMessage", channel="C1",
                                             text="<!date^1763803600^{time}|x> <@U1> <!heresy> <#C1>"),
        "metadata": record("chat.postMessage", channel="C1", text="x",
                           metadata={"event_type": "t", "event_payload": {"q": "<!here>"}}),
        "a file": record("upload", path="/upload/F1", text="<!channel>"),
    }
    failures = []
    for name, line in must_fail.items():
        found, _ = check_lines([line], name)
        if not found:
            failures.append(f"not caught: {name}")
    for name, line in must_pass.items():
        found, _ = check_lines([line], name)
        failures += [f"wrongly reported: {violation}" for violation in found]
    if failures:
        print("\n".join(failures))
        return 1
    print(f"self-test: {len(must_fail)} live mentions caught, {len(must_pass)} harmless records pass")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--calls", metavar="DIR", help="the directory of recorded *.jsonl calls ($AWS_CALL_LOG)")
    group.add_argument("--self-test", action="store_true", help="check the checker against records it builds")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    violations, calls = check(args.calls)
    print(f"{calls} Slack Web API calls read for live mass mentions.")
    for violation in violations:
        print(f"  {violation}")
    if violations:
        print(f"{len(violations)} live mass mention(s) the deployment did not allow.")
        return 1
    print("None the deployment did not allow.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
