"""Every Bedrock and Slack request the functions sent in the tests, against the vendors' own models.

    python infra/vendor-models/check.py --calls DIR
    python infra/vendor-models/check.py --self-test

Our fakes of Bedrock and Slack (tests/support/fake_bedrock.rs, fake_slack.rs)
accept what we taught them to accept; the real services accept what their
published models say. The fakes record every request they serve in
`DIR/bedrock-<pid>.jsonl` and `DIR/slack-<pid>.jsonl` (tests/support/
local_server.rs `record`); this script validates each one against:

- Bedrock: botocore's service models (`bedrock-runtime` for Converse and
  ConverseStream, `bedrock-agent-runtime` for Retrieve). The operation is
  found from the path by the model's own request URIs; the URI's labels and
  the JSON body are validated by a generic walk over the botocore shapes:
  required members, unknown members, unions with exactly one member set,
  list and map lengths, string lengths, enums and patterns (matched against
  the whole value, as AWS does: a tool name `a.b` fails `[a-zA-Z0-9_-]+`),
  number ranges, booleans, base64 blobs, documents (any JSON).
- Slack: the official Python SDK, slack_sdk (pinned in
  infra/requirements-test.txt). The method name must be one its WebClient
  calls (every `api_call("…")` in slack_sdk/web/client.py) and the arguments
  its method declares as required must be present; `blocks`,
  `user_auth_blocks` and `attachments[].blocks` are parsed with
  `Block.parse` and every parsed object validated with its `validate_json()`
  (unknown block types, unknown fields and missing required fields are
  violations), at most 50 blocks a message; stream `chunks` with
  `slack_sdk.models.messages.chunk`; `view` with `slack_sdk.models.views.View`.
  Where slack_sdk keeps a value as raw JSON (table cells and column settings,
  a task card's details, output and sources, a plan's tasks), the value is
  parsed with the slack_sdk model its docstring names, with the limits those
  docstrings state and validate_json does not (a table's 100 rows of at most
  20 cells; a task_update's status).
  Blocks slack_sdk (3.48) has no model for, the data visualization block
  (charts) and the data table block, are validated field by field against
  Slack's Block Kit reference
  (https://docs.slack.dev/reference/block-kit/blocks/data-visualization-block,
  https://docs.slack.dev/reference/block-kit/blocks/data-table-block):
  required and unknown fields, chart types, lengths, counts and numbers, at
  most two charts and 10,000 characters of data table cells a message.
  A POST to a slash command's `response_url` (`/commands/…`) is a JSON message:
  its fields must be ones slack_sdk's `WebhookClient.send` takes, with text or
  blocks, `response_type` ephemeral or in_channel, blocks as a message's.

Each violation names the recorded line, the operation or method, the JSON path
and the rule; identical violations are reported once, with how many more lines had them. Exit status
1 on any violation. Calls of the AWS emulator (moto.jsonl) are not ours to check.

`--self-test` runs the checker over fixtures/fail (recorded lines with
something broken in each: every violation is listed in
fixtures/expected-violations.txt, no more, no fewer) and fixtures/pass (lines
recorded in the end-to-end tests, and messages responder-logic's markdown.rs
builds, which markdown.rs's tests hold to what it renders: a table of raw_text
cells, one of rich_text cells with links, emphasis and code, a table with its
chart, a data table; all must pass). slack_sdk parses a rich_text cell's
elements (an unknown element type, a link without its url are violations) but
does not check their `style` keys.
"""

import argparse
import ast
import base64
import binascii
import collections
import difflib
import glob
import inspect
import json
import logging
import math
import os
import re
import sys
import urllib.parse

import botocore
import botocore.session
import slack_sdk
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.basic_objects import JsonObject
from slack_sdk.models.blocks import Block
from slack_sdk.models.blocks.basic_components import RawNumberObject, RawTextObject, TableBlockColumnSettings
from slack_sdk.models.blocks.block_elements import UrlSourceElement
from slack_sdk.models.blocks.blocks import DividerBlock, PlanBlock, RichTextBlock, TableBlock, TaskCardBlock
from slack_sdk.models.messages.chunk import BlocksChunk, Chunk, TaskUpdateChunk
from slack_sdk.models.views import View
from slack_sdk.webhook import WebhookClient
from slack_sdk.version import __version__ as SLACK_SDK_VERSION
from slack_sdk.web.client import WebClient

HERE = os.path.dirname(os.path.abspath(__file__))

def json_path(parent, key):
    """`messages[3].content[0].toolUse.name`; map keys that are not identifiers in brackets."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key)}]"


# --- Bedrock: botocore's service models ---------------------------------------

BEDROCK_OPERATIONS = [
    ("bedrock-runtime", "Converse"),
    ("bedrock-runtime", "ConverseStream"),
    ("bedrock-runtime", "ApplyGuardrail"),
    ("bedrock-agent-runtime", "Retrieve"),
]


class ShapeValidator:
    """Validates JSON against a botocore shape, as the service's own request validation does."""

    def __init__(self):
        self.patterns = {}

    def pattern(self, text):
        if text not in self.patterns:
            self.patterns[text] = re.compile(text)
        return self.patterns[text]

    def validate(self, shape, value, path, errors):
        if value is None:
            return  # AWS's JSON protocols read a null member as an absent one
        meta = shape.metadata
        kind = shape.type_name
        if meta.get("document"):
            return  # any JSON
        if kind == "structure":
            self.structure(shape, value, path, errors)
        elif kind == "list":
            if not isinstance(value, list):
                errors.append((path, f"type list ({shape.name})"))
                return
            self.length(meta, len(value), path, errors, "length")
            for index, item in enumerate(value):
                self.validate(shape.member, item, json_path(path, index), errors)
        elif kind == "map":
            if not isinstance(value, dict):
                errors.append((path, f"type map ({shape.name})"))
                return
            self.length(meta, len(value), path, errors, "entries")
            for key, item in value.items():
                self.validate(shape.key, key, json_path(path, key) + " (key)", errors)
                self.validate(shape.value, item, json_path(path, key), errors)
        elif kind == "string":
            if not isinstance(value, str):
                errors.append((path, f"type string ({shape.name})"))
                return
            if shape.enum and value not in shape.enum:
                errors.append((path, f"enum {shape.name} ({', '.join(shape.enum)})"))
            self.length(meta, len(value), path, errors, "length")
            if "pattern" in meta and not self.pattern(meta["pattern"]).fullmatch(value):
                errors.append((path, f"pattern {meta['pattern']}"))
        elif kind in ("integer", "long"):
            if isinstance(value, bool) or not isinstance(value, int):
                errors.append((path, f"type {kind} ({shape.name})"))
                return
            limit = 2**31 if kind == "integer" else 2**63
            if not -limit <= value < limit:
                errors.append((path, f"{kind} range"))
            self.range(meta, value, path, errors)
        elif kind in ("float", "double"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                errors.append((path, f"type {kind} ({shape.name})"))
                return
            self.range(meta, value, path, errors)
        elif kind == "boolean":
            if not isinstance(value, bool):
                errors.append((path, "type boolean"))
        elif kind == "blob":
            try:
                size = len(base64.b64decode(value, validate=True)) if isinstance(value, str) else None
            except (binascii.Error, ValueError):
                size = None
            if size is None:
                errors.append((path, "type blob (base64 string)"))
                return
            self.length(meta, size, path, errors, "length (bytes)")
        elif kind == "timestamp":
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                errors.append((path, "type timestamp"))
        else:
            errors.append((path, f"no validator for shape type {kind}"))

    def structure(self, shape, value, path, errors, skip=()):
        if not isinstance(value, dict):
            errors.append((path, f"type structure ({shape.name})"))
            return
        members = shape.members
        for key in value:
            if key not in members and key not in skip:
                errors.append((json_path(path, key), f"unknown member of {shape.name}"))
        if shape.metadata.get("union") or getattr(shape, "is_tagged_union", False):
            present = [k for k in members if value.get(k) is not None]
            if len(present) != 1:
                got = ", ".join(present) if present else "none"
                errors.append((path, f"exactly one member of union {shape.name} (got {got})"))
        for name in shape.required_members:
            if name not in skip and value.get(name) is None:
                errors.append((json_path(path, name), f"required (member of {shape.name})"))
        for name, member in members.items():
            if name in value and name not in skip:
                self.validate(member, value[name], json_path(path, name), errors)

    @staticmethod
    def length(meta, size, path, errors, what):
        if "min" in meta and size < meta["min"]:
            errors.append((path, f"min {what} {meta['min']}"))
        if "max" in meta and size > meta["max"]:
            errors.append((path, f"max {what} {meta['max']}"))

    @staticmethod
    def range(meta, value, path, errors):
        if "min" in meta and value < meta["min"]:
            errors.append((path, f"min {meta['min']}"))
        if "max" in meta and value > meta["max"]:
            errors.append((path, f"max {meta['max']}"))


class Bedrock:
    def __init__(self):
        session = botocore.session.get_session()
        self.shapes = ShapeValidator()
        self.routes = []
        for service, name in BEDROCK_OPERATIONS:
            operation = session.get_service_model(service).operation_model(name)
            uri = operation.http["requestUri"].split("?")[0]
            labels = re.findall(r"{(\w+)\+?}", uri)
            regex = re.escape(uri)
            for label in labels:
                regex = re.sub(r"\\{" + label + r"(\\\+)?\\}", f"(?P<{label}>[^/]+)", regex)
            route = (operation.http["method"], re.compile(regex), f"{service} {name}", operation.input_shape)
            self.routes.append(route)

    def check(self, record):
        """(kind, operation, [(path, rule)])"""
        for method, regex, operation, shape in self.routes:
            match = regex.fullmatch(record["path"])
            if match and record["method"] == method:
                break
        else:
            rule = "no Converse, ConverseStream, ApplyGuardrail or Retrieve request URI"
            return "bedrock (unknown)", "bedrock", [(record["path"], rule)]
        errors = []
        located = {}
        for name, member in shape.members.items():
            location = member.serialization.get("location")
            if location:
                located[name] = location
                if location == "uri":
                    label = urllib.parse.unquote(match.group(member.serialization.get("name", name)))
                    self.shapes.validate(member, label, f"(uri) {name}", errors)
        try:
            body = json.loads(record.get("body") or "{}")
        except ValueError as err:
            return operation, operation, [("(body)", f"JSON: {err}")]
        self.shapes.structure(shape, body, "", errors, skip=set(located))
        return operation, operation, errors


# --- Slack: the official SDK's Web API client and Block Kit models ------------

MESSAGE_BLOCKS_MAX = 50  # "You can include up to 50 blocks in each message" (Slack's Block Kit reference)


def web_api_methods():
    """Every method name slack_sdk's WebClient calls: `api_call("chat.postMessage", …)`."""
    client_py = os.path.join(os.path.dirname(slack_sdk.__file__), "web", "client.py")
    with open(client_py, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    methods = {}
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        for call in ast.walk(function):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "api_call"
                and call.args
                and isinstance(call.args[0], ast.Constant)
                and isinstance(call.args[0].value, str)
            ):
                methods.setdefault(call.args[0].value, function.name)
    return methods


def required_arguments(python_name):
    """The keyword-only arguments without a default of WebClient's method."""
    function = getattr(WebClient, python_name, None)
    if function is None:
        return []
    return [
        p.name
        for p in inspect.signature(function).parameters.values()
        if p.kind == p.KEYWORD_ONLY and p.default is p.empty
    ]


class SlackModelLog(logging.Handler):
    """slack_sdk reports what it skips (unknown blocks, elements, chunks) and ignores (unknown fields) in logs."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        message = record.getMessage()
        ignored = re.match(r"!!! (\w+)'s constructor args \((.*)\) were ignored", message)
        if ignored:
            self.messages.append(f"unknown field(s) {ignored.group(2)} of {ignored.group(1)}")
        elif message.startswith("Unknown") or message.startswith("Unsupported"):
            self.messages.append(re.sub(r" \(\{.*\}\)$", "", message))


def rule_of_type_error(err):
    """`SectionBlock.__init__() missing 1 required keyword-only argument: 'text'` → a rule."""
    text = str(err)
    owner = re.match(r"(\w+)\.__init__\(\)", text)
    owner = f" of {owner.group(1)}" if owner else ""
    missing = re.search(r"missing \d+ required (?:keyword-only |positional )?arguments?: (.*)", text)
    if missing:
        return f"required {missing.group(1)}{owner}"
    unexpected = re.search(r"unexpected keyword argument '(\w+)'", text)
    if unexpected:
        return f"unknown field {unexpected.group(1)}{owner}"
    return f"slack_sdk: {text}"


class Slack:
    def __init__(self):
        self.methods = web_api_methods()
        self.log = SlackModelLog()
        logger = logging.getLogger("slack_sdk")
        logger.addHandler(self.log)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False

    def check(self, record):
        path = record["path"]
        if path.startswith("/commands/"):
            return self.response_url(record)
        if not path.startswith("/api/"):
            return "slack file download or upload, not a Web API call: skipped", None, []
        method = path[len("/api/") :]
        errors = []
        if method not in self.methods:
            close = difflib.get_close_matches(method, self.methods, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            return "slack", method, [("(method)", f"not a Web API method in slack_sdk's WebClient{hint}")]
        args = self.arguments(record, errors)
        if args is None:
            return "slack", method, errors
        for name in required_arguments(self.methods[method]):
            if name not in args:
                errors.append((name, f"required argument of {method} (slack_sdk WebClient.{self.methods[method]})"))
        for name in ("blocks", "user_auth_blocks"):
            if name in args:
                blocks = self.json_argument(args, name, list, errors)
                if blocks is not None:
                    self.blocks(blocks, name, errors, message=True)
        if "attachments" in args:
            attachments = self.json_argument(args, "attachments", list, errors)
            for index, attachment in enumerate(attachments or []):
                if isinstance(attachment, dict) and isinstance(attachment.get("blocks"), list):
                    self.blocks(attachment["blocks"], f"attachments[{index}].blocks", errors, message=True)
        if "chunks" in args:
            chunks = self.json_argument(args, "chunks", list, errors)
            for index, chunk in enumerate(chunks or []):
                self.chunk(chunk, f"chunks[{index}]", errors)
        if "view" in args:
            view = self.json_argument(args, "view", dict, errors)
            if view is not None:
                self.view(view, errors)
        return "slack", method, errors

    def response_url(self, record):
        """A POST to a slash command's response_url: a JSON message whose fields are
        the ones slack_sdk's WebhookClient.send takes, its blocks validated as a
        message's."""
        errors = []
        content_type = record.get("headers", {}).get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            errors.append(("(body)", "a response_url takes JSON"))
        args = self.arguments(record, errors)
        if args is None:
            return "slack", "response_url", errors
        fields = set(inspect.signature(WebhookClient.send).parameters) - {"self", "headers"}
        for name in args:
            if name not in fields:
                errors.append((name, "not a field of slack_sdk WebhookClient.send"))
        if not args.get("text") and not args.get("blocks"):
            errors.append(("text", "a message needs text or blocks"))
        if args.get("response_type", "ephemeral") not in ("ephemeral", "in_channel"):
            errors.append(("response_type", "ephemeral or in_channel"))
        if isinstance(args.get("blocks"), list):
            self.blocks(args["blocks"], "blocks", errors, message=True)
        return "slack", "response_url", errors

    @staticmethod
    def arguments(record, errors):
        """A Web API call's arguments: the query string, and a form or JSON body."""
        args = dict(urllib.parse.parse_qsl(record.get("query") or "", keep_blank_values=True))
        content_type = record.get("headers", {}).get("content-type", "").split(";")[0].strip().lower()
        body = record.get("body")
        if body is None:
            return args
        if content_type == "application/json":
            try:
                parsed = json.loads(body)
            except ValueError as err:
                errors.append(("(body)", f"JSON: {err}"))
                return None
            if not isinstance(parsed, dict):
                errors.append(("(body)", "a JSON object"))
                return None
            args.update(parsed)
        elif body:
            args.update(urllib.parse.parse_qsl(body, keep_blank_values=True))
        return args

    @staticmethod
    def json_argument(args, name, kind, errors):
        value = args[name]
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as err:
                errors.append((name, f"JSON: {err}"))
                return None
        if not isinstance(value, kind):
            errors.append((name, f"a JSON {'array' if kind is list else 'object'}"))
            return None
        return value

    def blocks(self, blocks, path, errors, message):
        if message and len(blocks) > MESSAGE_BLOCKS_MAX:
            errors.append((path, f"at most {MESSAGE_BLOCKS_MAX} blocks in a message"))
        charts, cells = 0, 0
        for index, block in enumerate(blocks):
            where = json_path(path, index)
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "data_visualization":
                charts += 1
                data_visualization(block, where, errors)
            elif kind == "data_table":
                cells += self.data_table(block, where, errors)
            else:
                self.model(lambda b=block: Block.parse(b), block, where, errors, "block")
        if message and charts > CHARTS_PER_MESSAGE:
            errors.append((path, f"at most {CHARTS_PER_MESSAGE} data_visualization blocks in a message"))
        if message and cells > DATA_TABLE_CHARS:
            errors.append((path, f"at most {DATA_TABLE_CHARS} characters of data table cells in a message"))

    def data_table(self, block, path, errors):
        """A data_table block, as Slack's reference describes it; returns its cells' characters."""
        known(block, path, errors, "data_table", DATA_TABLE_FIELDS, ("rows", "caption"))
        text(block.get("caption"), json_path(path, "caption"), errors)
        if "block_id" in block:
            text(block["block_id"], json_path(path, "block_id"), errors, most=BLOCK_ID_CHARS)
        if "page_size" in block:
            integer(block["page_size"], json_path(path, "page_size"), errors, 1, DATA_TABLE_ROWS)
        rows = block.get("rows")
        if "rows" in block and not isinstance(rows, list):
            errors.append((json_path(path, "rows"), "an array of rows"))
        if not isinstance(rows, list):
            return 0
        where = json_path(path, "rows")
        if not 2 <= len(rows) <= DATA_TABLE_ROWS + 1:
            errors.append((where, f"2 to {DATA_TABLE_ROWS + 1} rows (the header and 1 to {DATA_TABLE_ROWS})"))
        widths = {len(row) for row in rows if isinstance(row, list)}
        if len(widths) > 1:
            errors.append((where, "every row the same number of cells"))
        if any(not 1 <= width <= DATA_TABLE_COLUMNS for width in widths):
            errors.append((where, f"1 to {DATA_TABLE_COLUMNS} cells a row"))
        if "row_header_column_index" in block and widths:
            integer(block["row_header_column_index"], json_path(path, "row_header_column_index"), errors, 0, min(widths) - 1)
        chars = 0
        for number, row in enumerate(rows):
            here = json_path(where, number)
            if not isinstance(row, list):
                errors.append((here, "a data table row is an array of cells"))
                continue
            for column, cell in enumerate(row):
                chars += self.data_table_cell(cell, json_path(here, column), errors, header=number == 0)
        if chars > DATA_TABLE_CHARS:
            errors.append((where, f"at most {DATA_TABLE_CHARS} characters of cells in a data table"))
        return chars

    def data_table_cell(self, cell, path, errors, header):
        if not isinstance(cell, dict):
            errors.append((path, "a JSON object (data table cell)"))
            return 0
        kind = cell.get("type")
        if kind == "raw_text":
            known(cell, path, errors, "raw_text cell", ("type", "text"), ("text",))
            text(cell.get("text"), json_path(path, "text"), errors)
        elif kind == "raw_number":
            known(cell, path, errors, "raw_number cell", ("type", "value", "text"), ("value",))
            finite(cell.get("value"), json_path(path, "value"), errors)
            if "text" in cell:
                text(cell["text"], json_path(path, "text"), errors)
        elif kind == "rich_text" and header:
            errors.append((path, "no rich_text in the header row"))
        elif kind == "rich_text":
            self.model(lambda: table_cell(cell), cell, path, errors, "data table cell (raw_text, raw_number, rich_text)")
        else:
            errors.append((path, "a data table cell is raw_text, raw_number or rich_text"))
        return shown_chars(cell)

    def chunk(self, chunk, path, errors):
        parsed = self.model(lambda: Chunk.parse(chunk), chunk, path, errors, "chunk")
        if isinstance(parsed, TaskUpdateChunk):
            statuses = ("pending", "in_progress", "complete", "error")  # TaskUpdateChunk's, as TaskCardBlock validates
            if parsed.status not in statuses:
                errors.append((json_path(path, "status"), f"status one of {', '.join(statuses)}"))

    def view(self, view, errors):
        # View takes unknown fields silently (**kwargs): they are compared with its attributes here.
        for name in view:
            if name not in View.attributes:
                errors.append((json_path("view", name), "unknown field of View"))
        blocks = view.get("blocks")
        if blocks is not None and not isinstance(blocks, list):
            errors.append(("view.blocks", "a JSON array"))
            blocks = None
        if blocks is not None:
            # Each block validated at its own path; the view is given as many (View counts them).
            blocks = [
                self.model(lambda b=block: Block.parse(b), block, f"view.blocks[{index}]", errors, "block")
                or DividerBlock()
                for index, block in enumerate(blocks)
            ]
        self.model(lambda: View(**{**view, "blocks": blocks}), view, "view", errors, "view")

    def model(self, parse, raw, path, errors, what):
        """Parses `raw` with a slack_sdk model and validates every object in it; returns the model.

        What slack_sdk logs while parsing (an unknown element skipped, a field ignored) is a violation too.
        """
        if not isinstance(raw, dict):
            errors.append((path, f"a JSON object ({what})"))
            return None
        self.log.messages.clear()
        failed = True
        try:
            parsed = parse()
            failed = False
        except TypeError as err:
            errors.append((path, rule_of_type_error(err)))
        except KeyError as err:
            errors.append((path, f"required field {err.args[0]}"))
        except SlackObjectFormationError as err:
            errors.append((path, str(err)))
        logged = list(self.log.messages)
        self.log.messages.clear()
        if failed:
            errors.extend((path, message) for message in logged)
            return None
        if parsed is None:
            if "type" not in raw:
                known = f"required field type ({what})"
            elif what in ("block", "chunk"):
                known = f"unknown {what} type {raw['type']!r}"
            else:
                known = f"not a {what}: type {raw['type']!r}"
            errors.append((path, known))
            return None
        errors.extend((path, message) for message in logged)
        self.walk(parsed, path, errors)
        return parsed

    def walk(self, obj, path, errors):
        """`validate_json()` on `obj` and every model in it, each reported at its own path."""
        try:
            obj.validate_json()
        except SlackObjectFormationError as err:
            errors.append((path, str(err)))
        except (TypeError, AttributeError) as err:
            errors.append((path, f"slack_sdk could not validate: {err}"))
        if isinstance(obj, TableBlock) and isinstance(obj.rows, list) and len(obj.rows) > 100:
            errors.append((json_path(path, "rows"), "at most 100 rows in a table"))  # TableBlock's docstring
        for name in sorted(obj.attributes):
            if isinstance(obj, View) and name == "blocks":
                continue  # validated one by one, each at its path, by Slack.view
            value = getattr(obj, name, None)
            here = json_path(path, name)
            for index, item in enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)]:
                where = here if index is None else json_path(here, index)
                if isinstance(item, JsonObject):
                    self.walk(item, where, errors)
                elif isinstance(item, (dict, list)):
                    self.raw(obj, name, item, where, errors)

    def raw(self, owner, name, value, path, errors):
        """Values slack_sdk keeps as JSON, parsed with the model its docstrings name for them."""
        if isinstance(owner, TableBlock) and name == "rows":
            if not isinstance(value, list):
                errors.append((path, "a table row is an array of cells"))
                return
            if len(value) > 20:  # TableBlock: "Each row object is an array with a max of 20 table cells."
                errors.append((path, "at most 20 cells in a table row"))
            for index, cell in enumerate(value):
                what = "table cell (raw_text, raw_number, rich_text)"
                self.model(lambda c=cell: table_cell(c), cell, json_path(path, index), errors, what)
        elif isinstance(owner, TableBlock) and name == "column_settings":
            self.model(lambda: TableBlockColumnSettings.parse(value), value, path, errors, "column settings")
        elif isinstance(owner, TaskCardBlock) and name in ("details", "output"):
            self.model(lambda: rich_text(value), value, path, errors, "rich_text block")
        elif isinstance(owner, (TaskCardBlock, TaskUpdateChunk)) and name == "sources":
            self.model(lambda: url_source(value), value, path, errors, "url source element")
        elif isinstance(owner, PlanBlock) and name == "tasks":
            self.model(lambda: task_card(value), value, path, errors, "task_card block")
        elif isinstance(owner, BlocksChunk) and name == "blocks":
            self.model(lambda: Block.parse(value), value, path, errors, "block")


# The data visualization and data table blocks, from Slack's Block Kit reference: slack_sdk 3.48 has no
# model for them. https://docs.slack.dev/reference/block-kit/blocks/data-visualization-block
CHARTS_PER_MESSAGE = 2  # "at most two a message" (Slack's changelog of 2026-06-16, the block's launch)
CHART_TITLE_CHARS = 50  # title: "Maximum 50 characters."
CHART_LABEL_CHARS = 20  # a segment's or data point's label, a series' name, an axis category
CHART_AXIS_LABEL_CHARS = 50  # axis_config's x_label, y_label
CHART_SERIES = 6  # series (bar, area, line) and segments (pie): "Min 1, max 6."
CHART_POINTS = 20  # a series' data: 1 to 20 points
# https://docs.slack.dev/reference/block-kit/blocks/data-table-block
DATA_TABLE_FIELDS = ("type", "rows", "caption", "block_id", "page_size", "row_header_column_index")
DATA_TABLE_ROWS = 100  # "a maximum of 101 rows (100 regular rows plus the header)"; page_size "Min 1, Max 100"
DATA_TABLE_COLUMNS = 20  # "a minimum of 1 column and a maximum of 20 columns"
DATA_TABLE_CHARS = 10_000  # across all cells of a table, and of a message
BLOCK_ID_CHARS = 255


def known(obj, path, errors, what, fields, required):
    for key in obj:
        if key not in fields:
            errors.append((json_path(path, key), f"unknown field of {what}"))
    for key in required:
        if key not in obj:
            errors.append((json_path(path, key), f"required (field of {what})"))


def text(value, path, errors, most=None):
    """A string of at least one character, at most `most`."""
    if value is None:
        return
    if not isinstance(value, str):
        errors.append((path, "a string"))
    elif not value:
        errors.append((path, "min length 1"))
    elif most is not None and len(value) > most:
        errors.append((path, f"max length {most}"))


def finite(value, path, errors):
    if value is None:
        return False
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        errors.append((path, "a number"))
        return False
    return True


def integer(value, path, errors, least, most):
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append((path, "an integer"))
    elif not least <= value <= most:
        errors.append((path, f"{least} to {most}"))


def items(value, path, errors, least, most, what):
    """`value` as a list of `least` to `most` items, or [] (reported)."""
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append((path, f"an array of {what}"))
        return []
    if not least <= len(value) <= most:
        errors.append((path, f"{least} to {most} {what}"))
    return value


def shown_chars(value):
    """The characters a data table cell shows: every text and address in it."""
    if isinstance(value, list):
        return sum(shown_chars(item) for item in value)
    if isinstance(value, dict):
        return sum(
            len(item) if key in ("text", "url") and isinstance(item, str) else shown_chars(item)
            for key, item in value.items()
        )
    return 0


def data_visualization(block, path, errors):
    known(block, path, errors, "data_visualization", ("type", "title", "chart", "block_id"), ("title", "chart"))
    text(block.get("title"), json_path(path, "title"), errors, most=CHART_TITLE_CHARS)
    if "block_id" in block:
        text(block["block_id"], json_path(path, "block_id"), errors, most=BLOCK_ID_CHARS)
    chart = block.get("chart")
    here = json_path(path, "chart")
    if chart is None:
        return
    if not isinstance(chart, dict):
        errors.append((here, "a JSON object (chart)"))
        return
    kind = chart.get("type")
    if kind == "pie":
        known(chart, here, errors, "pie chart", ("type", "segments"), ("segments",))
        segments = items(chart.get("segments"), json_path(here, "segments"), errors, 1, CHART_SERIES, "segments")
        for index, segment in enumerate(segments):
            where = json_path(json_path(here, "segments"), index)
            if not isinstance(segment, dict):
                errors.append((where, "a JSON object (segment)"))
                continue
            known(segment, where, errors, "segment", ("label", "value"), ("label", "value"))
            text(segment.get("label"), json_path(where, "label"), errors, most=CHART_LABEL_CHARS)
            if finite(segment.get("value"), json_path(where, "value"), errors) and segment["value"] <= 0:
                errors.append((json_path(where, "value"), "greater than 0"))
    elif kind in ("bar", "area", "line"):
        known(chart, here, errors, f"{kind} chart", ("type", "series", "axis_config"), ("series", "axis_config"))
        categories = axis_config(chart.get("axis_config"), json_path(here, "axis_config"), errors)
        series = items(chart.get("series"), json_path(here, "series"), errors, 1, CHART_SERIES, "series")
        names = []
        for index, one in enumerate(series):
            where = json_path(json_path(here, "series"), index)
            if not isinstance(one, dict):
                errors.append((where, "a JSON object (data series)"))
                continue
            known(one, where, errors, "data series", ("name", "data"), ("name", "data"))
            text(one.get("name"), json_path(where, "name"), errors, most=CHART_LABEL_CHARS)
            if one.get("name") in names:
                errors.append((json_path(where, "name"), "series names are unique"))
            names.append(one.get("name"))
            points = items(one.get("data"), json_path(where, "data"), errors, 1, CHART_POINTS, "data points")
            for number, point in enumerate(points):
                at = json_path(json_path(where, "data"), number)
                if not isinstance(point, dict):
                    errors.append((at, "a JSON object (data point)"))
                    continue
                known(point, at, errors, "data point", ("label", "value"), ("label", "value"))
                text(point.get("label"), json_path(at, "label"), errors, most=CHART_LABEL_CHARS)
                finite(point.get("value"), json_path(at, "value"), errors)
                if categories is not None and point.get("label") not in categories:
                    errors.append((json_path(at, "label"), "one of axis_config.categories"))
    else:
        errors.append((json_path(here, "type"), "chart type one of pie, bar, area, line"))


def axis_config(config, path, errors):
    """The categories a chart's data points are labelled with, or None."""
    if config is None:
        return None
    if not isinstance(config, dict):
        errors.append((path, "a JSON object (axis_config)"))
        return None
    known(config, path, errors, "axis_config", ("categories", "x_label", "y_label"), ("categories",))
    for name in ("x_label", "y_label"):
        if name in config:
            text(config[name], json_path(path, name), errors, most=CHART_AXIS_LABEL_CHARS)
    categories = config.get("categories")
    if categories is None:
        return None
    if not isinstance(categories, list):
        errors.append((json_path(path, "categories"), "an array of strings"))
        return None
    for index, category in enumerate(categories):
        text(category, json_path(json_path(path, "categories"), index), errors, most=CHART_LABEL_CHARS)
    return categories


def table_cell(cell):
    # TableBlock: "Table cells can have a type of rich_text, raw_text, or raw_number."
    kind = cell.get("type")
    fields = {k: v for k, v in cell.items() if k != "type"}
    if kind == "raw_text":
        return RawTextObject(**fields)
    if kind == "raw_number":
        return RawNumberObject(**fields)
    if kind == "rich_text":
        return RichTextBlock(**fields)
    return None


def rich_text(value):
    if value.get("type") != "rich_text":
        return None
    return RichTextBlock(**{k: v for k, v in value.items() if k != "type"})


def url_source(value):
    return UrlSourceElement(**{k: v for k, v in value.items() if k != "type"}) if value.get("type") == "url" else None


def task_card(value):
    return Block.parse(value) if value.get("type") == "task_card" else None


# --- The recorded calls -----------------------------------------------------


def recorded_calls(directory):
    """(file:line, record) for every Bedrock and Slack request recorded in `directory`."""
    for name in sorted(glob.glob(os.path.join(directory, "*.jsonl"))):
        if os.path.basename(name) == "moto.jsonl":
            continue  # the AWS emulator's calls: infra/iam/check.py's
        with open(name, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if line.strip():
                    yield f"{name}:{number}", json.loads(line)


def check(directory):
    """(counts per kind of request, {(call, path, rule): [where…]})"""
    bedrock, slack = Bedrock(), Slack()
    counts = collections.Counter()
    violations = collections.OrderedDict()
    for where, record in recorded_calls(directory):
        service = record.get("service")
        if service == "bedrock":
            kind, call, errors = bedrock.check(record)
        elif service == "slack":
            kind, call, errors = slack.check(record)
            if call and kind == "slack":
                kind = f"slack {call}"
        else:
            kind, call, errors = f"{service}: skipped", None, []
        counts[kind] += 1
        for path, rule in errors:
            violations.setdefault((call, path, rule), []).append(where)
    return counts, violations


def report(counts, violations, out=sys.stdout):
    models = f"botocore {botocore.__version__}'s service models, slack_sdk {SLACK_SDK_VERSION}"
    print(f"Requests validated against the vendors' own models ({models}):", file=out)
    for kind, count in sorted(counts.items()):
        print(f"  {count:5d}  {kind}", file=out)
    if not violations:
        print("No violations.", file=out)
        return
    print(f"\n{len(violations)} distinct violation(s):", file=out)
    for (call, path, rule), wheres in violations.items():
        more = f" (and {len(wheres) - 1} more)" if len(wheres) > 1 else ""
        print(f"  {wheres[0]}{more}\n    {call}: {path or '(body)'}: {rule}", file=out)


def self_test():
    fixtures = os.path.join(HERE, "fixtures")
    failures = []
    counts, violations = check(os.path.join(fixtures, "pass"))
    if violations:
        report(counts, violations)
        failures.append("fixtures/pass: expected no violations")
    if sum(counts.values()) == 0:
        failures.append("fixtures/pass: no request was validated")
    counts, violations = check(os.path.join(fixtures, "fail"))
    found = {f"{call} | {path} | {rule}" for call, path, rule in violations}
    with open(os.path.join(fixtures, "expected-violations.txt"), encoding="utf-8") as lines:
        expected = {line.rstrip("\n") for line in lines if line.strip() and not line.startswith("#")}
    for missing in sorted(expected - found):
        failures.append(f"fixtures/fail: expected violation not found: {missing}")
    for extra in sorted(found - expected):
        failures.append(f"fixtures/fail: unexpected violation: {extra}")
    if failures:
        print("\n".join(failures))
        return 1
    print(f"self-test: {len(expected)} expected violations found, no others; the passing fixtures pass")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--calls", metavar="DIR", help="the directory of recorded *.jsonl calls ($AWS_CALL_LOG)")
    group.add_argument("--self-test", action="store_true", help="check the checker against its fixtures")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    counts, violations = check(args.calls)
    report(counts, violations)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
