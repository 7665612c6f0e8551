"""Every AWS call the functions made in the tests, authorized by template.yaml.

    python infra/iam/check.py --calls DIR [--template template.yaml]

The tests sign each function's AWS calls with that function's own access key
id (tests/support/lib.rs `Role`: `AKIDINGRESSFUNCTION` and so on). The local
AWS emulator (infra/iam/recording_moto_server.py) and the fakes of Bedrock
and Slack (tests/support/local_server.rs) append every request they serve to
`DIR/*.jsonl`. This script:

1. transforms template.yaml with AWS SAM's own translator (samtranslator, as
   `sam deploy` does) and resolves each function role's policies with the
   parameters the tests run as (infra/iam/test-parameters.json), the managed
   policies SAM attaches included;
2. maps each recorded request signed by a role to the IAM request AWS
   authorizes for it: action, resource ARN and the condition keys the policy
   statements test (dynamodb:LeadingKeys, kms:EncryptionContext…, s3:prefix,
   bedrock:InferenceProfileArn, aws:SecureTransport);
3. evaluates every distinct request with @cloud-copilot/iam-simulate (a
   maintained IAM policy simulator, infra/iam/simulate.mjs), identity and
   resource policies (bucket policy, key policy) together;
4. fails, naming the role, action, resource, context and what the policy
   lacks, for every call not allowed; and prints, per role, the actions the
   role is granted that no test used, each with its reason from
   infra/iam/unexercised.json (an unused action without a reason fails too).

The emulator's resources have per-test names (`turns-<pid>-…`): they are
mapped back to the template's resources by the prefixes tests/support/lib.rs
`Stack::new` gives them (NAMES below).
"""

import argparse
import base64
import json
import os
import re
import subprocess
import sys
import urllib.parse
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ACCOUNT = "123456789012"
REGION = "us-east-1"
PARTITION = "aws"

# Each function's role, by the access key id its calls are signed with.
ROLE_KEYS = {
    "AKIDINGRESSFUNCTION": "IngressFunction",
    "AKIDWORKERFUNCTION": "WorkerFunction",
    "AKIDRESPONDERFUNCTION": "ResponderFunction",
}

# The emulator's per-test names (and the event files' fixed ones, e.g.
# `slack-assistant-work.fifo`) → the template's logical resources.
NAMES = [
    (re.compile(r"^turns-"), "TurnsTable"),
    (re.compile(r"^(slack-assistant-)?work(-.*)?-dlq\.fifo$"), "WorkDeadLetterQueue"),
    (re.compile(r"^(slack-assistant-)?work(-.*)?\.fifo$"), "WorkQueue"),
    # A work queue of its own, for a test of the dead-letter redrive.
    (re.compile(r"^poison(-.*)?\.fifo$"), "WorkQueue"),
    (re.compile(r"^(slack-assistant-)?reply(-.*)?-dlq\.fifo$"), "ReplyDeadLetterQueue"),
    (re.compile(r"^(slack-assistant-)?reply(-.*)?\.fifo$"), "ReplyQueue"),
    (re.compile(r"^artifacts-"), "ArtifactBucket"),
]

# The policies SAM attaches by name (AWS managed policies, as published).
MANAGED = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": "*",
            }
        ],
    },
    "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "sqs:ReceiveMessage",
                    "sqs:DeleteMessage",
                    "sqs:GetQueueAttributes",
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:PutLogEvents",
                ],
                "Resource": "*",
            }
        ],
    },
}


def fail(message):
    print(f"iam check: {message}", file=sys.stderr)
    sys.exit(2)


# --- The template, transformed and resolved --------------------------------


def physical_name(logical, resource):
    """The name the check gives a template resource (its logical id)."""
    if resource["Type"] == "AWS::SQS::Queue" and resource.get("Properties", {}).get("FifoQueue"):
        return f"{logical}.fifo"
    if resource["Type"] == "AWS::S3::Bucket":
        return logical.lower()
    return logical


# Each resource type's ARN, from its physical name.
ARN_FORMATS = {
    "AWS::DynamoDB::Table": "arn:{partition}:dynamodb:{region}:{account}:table/{name}",
    "AWS::SQS::Queue": "arn:{partition}:sqs:{region}:{account}:{name}",
    "AWS::S3::Bucket": "arn:{partition}:s3:::{name}",
    "AWS::KMS::Key": "arn:{partition}:kms:{region}:{account}:key/{name}",
    "AWS::Events::Rule": "arn:{partition}:events:{region}:{account}:rule/{name}",
    "AWS::SNS::Topic": "arn:{partition}:sns:{region}:{account}:{name}",
}


def arn_of(logical, resource):
    kind = resource["Type"]
    template = ARN_FORMATS.get(kind, "arn:{partition}:cloudformation:{region}:{account}:" + kind + "/{name}")
    return template.format(partition=PARTITION, region=REGION, account=ACCOUNT, name=physical_name(logical, resource))


class Resolver:
    """CloudFormation's intrinsic functions over one set of parameter values."""

    def __init__(self, template, parameters):
        self.resources = template["Resources"]
        self.parameters = {}
        for name, spec in template.get("Parameters", {}).items():
            value = parameters.get(name, spec.get("Default"))
            if value is None:
                fail(f"parameter {name} has no value in test-parameters.json and no default")
            if spec.get("Type") == "CommaDelimitedList":
                value = [part for part in str(value).split(",")] if value != "" else [""]
            self.parameters[name] = value
        self.conditions_spec = template.get("Conditions", {})
        self.conditions = {}

    def ref(self, name):
        pseudo = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": PARTITION,
            "AWS::StackName": "slack-assistant",
            "AWS::URLSuffix": "amazonaws.com",
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.parameters:
            return self.parameters[name]
        if name in self.resources:
            resource = self.resources[name]
            if resource["Type"] == "AWS::SQS::Queue":
                return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{physical_name(name, resource)}"
            return physical_name(name, resource)
        fail(f"Ref to unknown {name}")

    def get_att(self, name, attribute):
        resource = self.resources.get(name) or fail(f"GetAtt of unknown {name}")
        if attribute == "Arn":
            return arn_of(name, resource)
        if attribute == "QueueName":
            return physical_name(name, resource)
        if attribute == "FunctionUrl":
            return "https://function-url.lambda-url.us-east-1.on.aws/"
        fail(f"GetAtt {name}.{attribute} is not modelled")

    def condition(self, name):
        if name not in self.conditions:
            self.conditions[name] = bool(self.resolve(self.conditions_spec[name]))
        return self.conditions[name]

    def sub(self, text, variables):
        def replace(match):
            key = match.group(1)
            if key in variables:
                return str(self.resolve(variables[key]))
            if "." in key:
                return str(self.get_att(*key.split(".", 1)))
            value = self.ref(key)
            if isinstance(value, list):
                fail(f"Sub of the list parameter {key}")
            return str(value)

        return re.sub(r"\$\{([^!}][^}]*)\}", replace, text)

    def resolve(self, node):
        if isinstance(node, list):
            items = [self.resolve(item) for item in node]
            return [item for item in items if item is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, value), = node.items()
            if key == "Ref":
                return NO_VALUE if value == "AWS::NoValue" else self.ref(value)
            if key == "Fn::GetAtt":
                parts = value if isinstance(value, list) else value.split(".", 1)
                return self.get_att(*parts)
            if key == "Fn::Sub":
                if isinstance(value, list):
                    return self.sub(value[0], value[1])
                return self.sub(value, {})
            if key == "Fn::Join":
                separator, items = value
                return separator.join(str(item) for item in flatten(self.resolve(items)))
            if key == "Fn::If":
                name, then, otherwise = value
                return self.resolve(then if self.condition(name) else otherwise)
            if key == "Fn::Equals":
                left, right = (self.resolve(item) for item in value)
                return left == right
            if key == "Fn::Not":
                return not self.resolve(value[0])
            if key == "Fn::And":
                return all(self.resolve(item) for item in value)
            if key == "Fn::Or":
                return any(self.resolve(item) for item in value)
            if key == "Condition":
                return self.condition(value)
            if key == "Fn::Split":
                separator, text = value
                return str(self.resolve(text)).split(separator)
            if key == "Fn::Select":
                index, items = value
                return self.resolve(items)[int(self.resolve(index))]
        resolved = {}
        for key, value in node.items():
            value = self.resolve(value)
            if value is not NO_VALUE:
                resolved[key] = value
        return resolved


NO_VALUE = object()


def flatten(items):
    for item in items:
        if isinstance(item, list):
            yield from flatten(item)
        else:
            yield item


def transformed_template(path):
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    from samtranslator.translator.transform import transform
    from samtranslator.yaml_helper import yaml_parse

    class NoManagedPolicies:
        def load(self):
            return {}

    with open(path, encoding="utf-8") as handle:
        template = yaml_parse(handle.read())
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            # SAM's translator wants an S3 location; `sam build` makes one.
            resource["Properties"]["CodeUri"] = "s3://build/function.zip"
    return transform(template, {}, NoManagedPolicies())


def statements(policy):
    found = policy.get("Statement", [])
    return found if isinstance(found, list) else [found]


def role_policies(template, resolver):
    """{function: [{name, policy}]}: the inline and managed policies of its role."""
    roles = {}
    for function in ROLE_KEYS.values():
        role = template["Resources"].get(f"{function}Role") or fail(f"{function}Role is not in the transformed template")
        properties = role["Properties"]
        policies = []
        for inline in properties.get("Policies", []):
            document = resolver.resolve(inline["PolicyDocument"])
            document["Statement"] = [s for s in statements(document) if s]
            policies.append({"name": inline["PolicyName"], "policy": document})
        for arn in resolver.resolve(properties.get("ManagedPolicyArns", [])):
            if arn not in MANAGED:
                fail(f"{function}Role has the managed policy {arn}, whose document this check does not carry")
            policies.append({"name": arn.rsplit("/", 1)[1], "policy": MANAGED[arn]})
        roles[function] = policies
    return roles


def resource_policies(template, resolver):
    """{resource ARN prefix: policy}: the bucket and key policies."""
    found = {}
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::S3::BucketPolicy":
            bucket = resolver.resolve(resource["Properties"]["Bucket"])
            found[f"arn:{PARTITION}:s3:::{bucket}"] = resolver.resolve(resource["Properties"]["PolicyDocument"])
    for logical, resource in template["Resources"].items():
        if resource["Type"] == "AWS::KMS::Key":
            found[arn_of(logical, resource)] = resolver.resolve(resource["Properties"]["KeyPolicy"])
    return found


# --- The recorded requests, as IAM requests ---------------------------------


# Resources a test names to misconfigure a function on purpose (a health
# check that must report a missing table): their calls are not the
# deployment's, and are counted apart.
MISCONFIGURED = re.compile(r"^no-such-")


class Misconfigured(Exception):
    pass


def logical_name(name):
    for pattern, logical in NAMES:
        if pattern.search(name):
            return logical
    return None


class Mapper:
    def __init__(self, template, parameters):
        self.template = template
        self.resolver = Resolver(template, parameters)
        self.resources = template["Resources"]
        self.secrets_prefix = self.resolver.ref("ToolSecretsPrefix")
        self.kms_keys = [logical for logical, r in self.resources.items() if r["Type"] == "AWS::KMS::Key"]

    def arn(self, logical):
        return arn_of(logical, self.resources[logical])

    def table_arn(self, name):
        if MISCONFIGURED.search(name):
            raise Misconfigured(name)
        logical = logical_name(name) or fail(f"a call names the table {name}, which no template table matches")
        return self.arn(logical)

    def queue_arn(self, url_or_name):
        name = url_or_name.rstrip("/").rsplit("/", 1)[-1]
        logical = logical_name(name) or fail(f"a call names the queue {name}, which no template queue matches")
        return self.arn(logical)

    def bucket_arn(self, name):
        logical = logical_name(name) or fail(f"a call names the bucket {name}, which no template bucket matches")
        return self.arn(logical)

    def requests(self, call):
        """The IAM requests one recorded HTTP request makes: [(action, resource, context)]."""
        service = call["service"]
        handler = getattr(self, "map_" + service.replace("-", "_"), None)
        if handler is None:
            fail(f"no IAM mapping for the service {service} ({call['method']} {call['path']})")
        return handler(call)

    # DynamoDB: the table, and the partition keys the item-level condition key names.
    def map_dynamodb(self, call):
        operation = call["operation"]
        body = call["json"]
        if operation == "TransactWriteItems":
            # IAM authorizes each item's own action.
            found = []
            for item in body["TransactItems"]:
                (kind, detail), = item.items()
                action = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                          "ConditionCheck": "ConditionCheckItem"}[kind]
                keys = detail.get("Item") or detail.get("Key")
                found.append((f"dynamodb:{action}", self.table_arn(detail["TableName"]), leading_keys([keys])))
            return found
        if operation == "TransactGetItems":
            return [("dynamodb:GetItem", self.table_arn(i["Get"]["TableName"]), leading_keys([i["Get"]["Key"]]))
                    for i in body["TransactItems"]]
        if operation == "BatchGetItem":
            return [(f"dynamodb:{operation}", self.table_arn(table), leading_keys(spec["Keys"]))
                    for table, spec in body["RequestItems"].items()]
        if operation == "BatchWriteItem":
            found = []
            for table, writes in body["RequestItems"].items():
                keys = [w.get("PutRequest", {}).get("Item") or w.get("DeleteRequest", {}).get("Key") for w in writes]
                found.append((f"dynamodb:{operation}", self.table_arn(table), leading_keys(keys)))
            return found
        table = self.table_arn(body["TableName"])
        if operation in ("GetItem", "PutItem", "UpdateItem", "DeleteItem"):
            return [(f"dynamodb:{operation}", table, leading_keys([body.get("Item") or body.get("Key")]))]
        if operation == "Query":
            return [(f"dynamodb:{operation}", table, {"dynamodb:LeadingKeys": [query_partition_key(body)]})]
        return [(f"dynamodb:{operation}", table, {})]

    def map_sqs(self, call):
        operation, body = call["operation"], call["json"]
        if operation == "GetQueueUrl":
            return [(f"sqs:{operation}", self.queue_arn(body["QueueName"]), {})]
        if operation.endswith("Batch"):
            operation = operation[: -len("Batch")]
        return [(f"sqs:{operation}", self.queue_arn(body["QueueUrl"]), {})]

    def map_s3(self, call):
        path = urllib.parse.unquote(call["path"]).lstrip("/")
        bucket, _, key = path.partition("/")
        query = urllib.parse.parse_qs(call["query"], keep_blank_values=True)
        bucket_arn = self.bucket_arn(bucket)
        method = call["method"]
        if not key:
            if method == "GET" and ("list-type" in query or not query):
                prefix = query.get("prefix", [""])[0]
                return [("s3:ListBucket", bucket_arn, {"s3:prefix": prefix})]
            if method == "HEAD":
                return [("s3:ListBucket", bucket_arn, {})]
            fail(f"no IAM mapping for S3 {method} /{bucket}?{call['query']}")
        object_arn = f"{bucket_arn}/{key}"
        action = {"GET": "s3:GetObject", "HEAD": "s3:GetObject", "PUT": "s3:PutObject",
                  "DELETE": "s3:DeleteObject"}.get(method) or fail(f"no IAM mapping for S3 {method} on an object")
        return [(action, object_arn, {})]

    def map_kms(self, call):
        operation, body = call["operation"], call["json"]
        key = body.get("KeyId")
        if key is None and operation == "Decrypt":
            # A ciphertext names its key; the tests' one key is the template's one key.
            key = "the sealing key"
        if len(self.kms_keys) != 1:
            fail("the check maps KMS calls to the template's one key; it has " + str(len(self.kms_keys)))
        context = {}
        encryption_context = body.get("EncryptionContext") or {}
        if encryption_context:
            context["kms:EncryptionContextKeys"] = sorted(encryption_context)
            for name, value in encryption_context.items():
                context[f"kms:EncryptionContext:{name}"] = value
        return [(f"kms:{operation}", self.arn(self.kms_keys[0]), context)]

    def map_secretsmanager(self, call):
        operation, body = call["operation"], call["json"]
        secret = body.get("SecretId", "")
        if secret.startswith("arn:"):
            return [(f"secretsmanager:{operation}", secret, {})]
        # The tests' per-stack prefix stands for the template's prefix.
        name = re.sub(r"^secrets-[^/]*/", self.secrets_prefix, secret)
        # Secrets Manager ARNs end in a dash and six random characters.
        return [(f"secretsmanager:{operation}",
                 f"arn:{PARTITION}:secretsmanager:{REGION}:{ACCOUNT}:secret:{name}-AbCdEf", {})]

    def map_logs(self, call):
        operation, body = call["operation"], call["json"]
        if operation == "StartQuery":
            groups = body.get("logGroupNames") or [body.get("logGroupName")]
            return [(f"logs:{operation}", f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:{group}", {})
                    for group in groups]
        return [(f"logs:{operation}", "*", {})]

    def map_monitoring(self, call):
        operation = call["operation"]
        if operation == "DescribeAlarms":
            return [("cloudwatch:DescribeAlarms", f"arn:{PARTITION}:cloudwatch:{REGION}:{ACCOUNT}:alarm:*", {})]
        return [(f"cloudwatch:{operation}", "*", {})]

    def map_sts(self, call):
        operation, form = call["operation"], call["form"]
        if operation == "AssumeRole":
            return [("sts:AssumeRole", form["RoleArn"], {})]
        return [(f"sts:{operation}", "*", {})]

    def map_bedrock(self, call):
        path = urllib.parse.unquote(call["path"])
        match = re.fullmatch(r"/model/(.+)/(converse|converse-stream|invoke|invoke-with-response-stream)", path)
        if match:
            model, operation = match.groups()
            action = {
                "converse": "bedrock:InvokeModel",
                "invoke": "bedrock:InvokeModel",
                "converse-stream": "bedrock:InvokeModelWithResponseStream",
                "invoke-with-response-stream": "bedrock:InvokeModelWithResponseStream",
            }[operation]
            return model_requests(action, model)
        match = re.fullmatch(r"/knowledgebases/([^/]+)/retrieve", path)
        if match:
            return [("bedrock:Retrieve",
                     f"arn:{PARTITION}:bedrock:{REGION}:{ACCOUNT}:knowledge-base/{match.group(1)}", {})]
        match = re.fullmatch(r"/guardrail/([^/]+)/version/([^/]+)/apply", path)
        if match:
            return [("bedrock:ApplyGuardrail",
                     f"arn:{PARTITION}:bedrock:{REGION}:{ACCOUNT}:guardrail/{match.group(1)}", {})]
        fail(f"no IAM mapping for Bedrock {call['method']} {path}")


GEO_PREFIXES = ("us.", "eu.", "apac.", "us-gov.", "ca.", "jp.", "au.", "global.")


def model_requests(action, model):
    """A model call through an inference profile is authorized on the profile
    and, with the profile's ARN as context, on the foundation model in each
    region the profile may route to; a foundation model id on the model alone."""
    if model.startswith("arn:"):
        if ":inference-profile/" not in model:
            return [(action, model, {})]
        model = model.rsplit("/", 1)[1]
    if model.startswith(GEO_PREFIXES):
        profile = f"arn:{PARTITION}:bedrock:{REGION}:{ACCOUNT}:inference-profile/{model}"
        foundation = model.split(".", 1)[1]
        routed = [
            (action, f"arn:{PARTITION}:bedrock:{region}::foundation-model/{foundation}",
             {"bedrock:InferenceProfileArn": profile})
            for region in ("us-east-1", "us-west-2")
        ]
        return [(action, profile, {})] + routed
    return [(action, f"arn:{PARTITION}:bedrock:{REGION}::foundation-model/{model}", {})]


def leading_keys(keys):
    values = []
    for key in keys:
        if not key or "pk" not in key:
            fail(f"an item without the table's partition key pk: {key}")
        values.append(next(iter(key["pk"].values())))
    return {"dynamodb:LeadingKeys": sorted(set(values))}


def query_partition_key(body):
    expression = body.get("KeyConditionExpression", "")
    names = body.get("ExpressionAttributeNames", {})
    values = body.get("ExpressionAttributeValues", {})
    for left, right in re.findall(r"(#?\w+)\s*=\s*(:\w+)", expression):
        if names.get(left, left) == "pk":
            return next(iter(values[right].values()))
    fail(f"a Query whose key condition names no partition key: {expression}")


# --- Reading the recordings -------------------------------------------------

CREDENTIAL = re.compile(r"Credential=([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")


def recorded_calls(directory):
    """Each recorded request signed by a function's role, decoded."""
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(directory, name), encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                raw = json.loads(line)
                headers = {k.lower(): v for k, v in raw.get("headers", {}).items()}
                credential = CREDENTIAL.search(headers.get("http_authorization", headers.get("authorization", "")))
                if not credential:
                    continue
                key, _region, service = credential.groups()
                if key not in ROLE_KEYS:
                    continue
                yield ROLE_KEYS[key], decode(raw, headers, service)


def decode(raw, headers, service):
    body = raw.get("body")
    if body is None and "body_base64" in raw:
        body = base64.b64decode(raw["body_base64"]).decode("utf-8", "replace")
    body = body or ""
    target = headers.get("http_x_amz_target") or headers.get("x-amz-target") or ""
    content_type = headers.get("content_type") or headers.get("content-type") or ""
    agent = headers.get("http_x_amz_user_agent") or headers.get("x-amz-user-agent") or ""
    test = re.search(r"\bapp/(\S+)", agent)
    call = {"service": service, "method": raw["method"], "path": raw["path"], "query": raw.get("query", ""),
            "json": {}, "form": {}, "operation": None, "test": test.group(1) if test else None}
    if "json" in content_type and body:
        call["json"] = json.loads(body)
    elif "x-www-form-urlencoded" in content_type:
        call["form"] = {k: v[0] for k, v in urllib.parse.parse_qs(body).items()}
    if target:
        call["operation"] = target.rsplit(".", 1)[1]
    elif "/operation/" in raw["path"]:
        call["operation"] = raw["path"].rsplit("/operation/", 1)[1]
    elif call["form"].get("Action"):
        call["operation"] = call["form"]["Action"]
    return call


# --- Evaluation -------------------------------------------------------------


def simulate(requests):
    modules = os.environ.get("IAM_SIMULATE_MODULES") or fail("IAM_SIMULATE_MODULES is not set (infra/tools.sh)")
    env = dict(os.environ, NODE_PATH=modules)
    script = os.path.join(HERE, "simulate.mjs")
    # An ES module finds its imports next to it: run it from the modules' folder.
    link = os.path.join(os.path.dirname(modules), "simulate.mjs")
    with open(script, encoding="utf-8") as source, open(link, "w", encoding="utf-8") as copy:
        copy.write(source.read())
    done = subprocess.run(["node", link], input=json.dumps({"requests": requests}), capture_output=True,
                          text=True, env=env, check=False)
    if done.returncode != 0:
        fail(f"the simulator failed: {done.stderr}")
    return {r["id"]: r for r in json.loads(done.stdout)}


def granted_actions(policies):
    """The actions the role's own (inline) policies allow, as written."""
    found = set()
    for policy in policies:
        if policy["name"] in (arn.rsplit("/", 1)[1] for arn in MANAGED):
            continue
        for statement in statements(policy["policy"]):
            if statement.get("Effect") != "Allow":
                continue
            actions = statement.get("Action", [])
            found.update([actions] if isinstance(actions, str) else actions)
    return found


def evaluate(template_path, calls_dir, parameters_path):
    """Every recorded call signed by a role, evaluated: (denials, actions used,
    calls per role, roles' policies, distinct requests, the tests that used
    each (role, action)), a denial as (role, action, resource, text)."""
    template = transformed_template(template_path)
    with open(parameters_path, encoding="utf-8") as handle:
        parameters = json.load(handle)
    mapper = Mapper(template, parameters)
    roles = role_policies(template, mapper.resolver)
    resources = resource_policies(template, mapper.resolver)

    distinct = {}
    tests_of = defaultdict(set)
    calls_per_role = defaultdict(int)
    misconfigured = 0
    for role, call in recorded_calls(calls_dir):
        try:
            mapped = mapper.requests(call)
        except Misconfigured:
            misconfigured += 1
            continue
        calls_per_role[role] += 1
        for action, resource, context in mapped:
            tests_of[(role, action)].add(call["test"] or "(a hand-signed call: no test name)")
            context = dict(context, **{"aws:SecureTransport": True})
            key = json.dumps([role, action, resource, context], sort_keys=True)
            distinct.setdefault(key, (role, action, resource, context))

    requests = []
    for index, (role, action, resource, context) in enumerate(distinct.values()):
        resource_policy = next((p for prefix, p in resources.items() if resource.startswith(prefix)), None)
        requests.append({
            "id": index, "principal": f"arn:{PARTITION}:iam::{ACCOUNT}:role/{role}Role", "action": action,
            "resource": resource, "accountId": ACCOUNT, "context": {k: v for k, v in context.items()},
            "identityPolicies": roles[role], "resourcePolicy": resource_policy,
        })
    results = simulate(requests) if requests else {}

    denials = []
    used = defaultdict(set)
    for request in requests:
        outcome = results[request["id"]]
        role = request["principal"].rsplit("/", 1)[1][: -len("Role")]
        used[role].add(request["action"])
        if outcome["result"] == "Allowed":
            continue
        context = {k: v for k, v in request["context"].items() if k != "aws:SecureTransport"}
        statements_for = [s for p in roles[role] for s in statements(p["policy"]) if mentions(s, request["action"])]
        why = outcome.get("errors") or (
            f"denied by {json.dumps(outcome['denyStatements'])}" if outcome["result"] == "ExplicitlyDenied" else
            ("no statement of the role allows it; statements naming the action: "
             + (json.dumps(statements_for) if statements_for else "none"))
        )
        text = (f"{role}Role: {outcome['result']}: {request['action']} on {request['resource']}"
                + (f" with {json.dumps(context)}" if context else "") + f"\n    {why}")
        denials.append((role, request["action"], request["resource"], text))
    if misconfigured:
        print(f"IAM: {misconfigured} calls to resources tests misconfigure on purpose (no-such-…) not evaluated")
    return denials, used, calls_per_role, roles, len(requests), tests_of


def check(template_path, calls_dir, parameters_path, unexercised_path):
    denials, used, calls_per_role, roles, distinct, tests_of = evaluate(template_path, calls_dir, parameters_path)
    problems = [text for _, _, _, text in denials]
    print(f"IAM: {distinct} distinct requests from "
          + ", ".join(f"{role} {calls_per_role[role]} calls" for role in ROLE_KEYS.values())
          + f", evaluated against {template_path} (SAM-transformed)")
    if problems:
        print(f"\n{len(problems)} requests the template does not allow:", file=sys.stderr)
        for problem in problems:
            print("  " + problem, file=sys.stderr)

    print("\nEach role's actions, with a test that used each:")
    for role in ROLE_KEYS.values():
        for action in sorted(used[role]):
            tests = sorted(tests_of[(role, action)], key=lambda name: (name.startswith("("), name))
            more = f" (+{len(tests) - 1} more)" if len(tests) > 1 else ""
            print(f"  {role}Role {action}: {tests[0]}{more}")

    with open(unexercised_path, encoding="utf-8") as handle:
        reasons = json.load(handle)
    unexplained = []
    print("\nGranted but used by no test (least privilege):")
    for role in ROLE_KEYS.values():
        unused = sorted(granted_actions(roles[role]) - used[role])
        for action in unused:
            reason = reasons.get(role, {}).get(action)
            print(f"  {role}Role {action}: {reason or 'NO REASON GIVEN'}")
            if not reason:
                unexplained.append(f"{role}Role {action}")
        if not unused:
            print(f"  {role}Role: none")
        if calls_per_role[role] == 0:
            problems.append(f"{role}: no recorded call was signed as this role (are the tests signing as it?)")
    stale = [f"{role} {action}" for role, actions in reasons.items() for action in actions
             if action in used.get(role, set()) or action not in granted_actions(roles.get(role, []))]
    if stale:
        problems.append("infra/iam/unexercised.json explains actions that are used or not granted: " + ", ".join(stale))
    if unexplained:
        problems.append("granted, used by no test and unexplained in infra/iam/unexercised.json: "
                        + ", ".join(unexplained))
    return problems


def mentions(statement, action):
    """The statement names an action of the same service (or every action)."""
    actions = statement.get("Action", [])
    actions = [actions] if isinstance(actions, str) else actions
    service = action.split(":")[0]
    return any(a == "*" or a.split(":")[0] == service for a in actions)


def self_test(template_path, parameters_path):
    """The check fails on calls the template does not allow: recorded calls
    in fixtures/self-test.jsonl, each commented with what IAM must decide."""
    calls = os.path.join(HERE, "fixtures")
    denials, used, calls_per_role, _, _, _ = evaluate(template_path, calls, parameters_path)
    denied = sorted((role, action, resource) for role, action, resource, _ in denials)
    expected = sorted([
        ("WorkerFunction", "bedrock:InvokeModelWithResponseStream",
         "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0"),
        ("IngressFunction", "dynamodb:PutItem", "arn:aws:dynamodb:us-east-1:123456789012:table/TurnsTable"),
        ("ResponderFunction", "dynamodb:PutItem", "arn:aws:dynamodb:us-east-1:123456789012:table/TurnsTable"),
        ("WorkerFunction", "s3:PutObject", "arn:aws:s3:::artifactbucket/config/assistant.json"),
        # The token key without the encryption context every seal carries.
        ("WorkerFunction", "kms:GenerateDataKey", "arn:aws:kms:us-east-1:123456789012:key/TokenKey"),
        # People's sealed tokens (USER#): the worker's alone.
        ("IngressFunction", "dynamodb:PutItem", "arn:aws:dynamodb:us-east-1:123456789012:table/TurnsTable"),
        ("ResponderFunction", "dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/TurnsTable"),
    ])
    assert denied == expected, f"self-test: denied {json.dumps(denied, indent=1)}, expected {json.dumps(expected, indent=1)}"
    assert "dynamodb:DeleteTable" not in used.get("IngressFunction", set()), "the tests' own calls are not evaluated"
    assert dict(calls_per_role) == {"WorkerFunction": 6, "IngressFunction": 3, "ResponderFunction": 2}, calls_per_role
    print(f"IAM check self-test: the {len(expected)} calls the template must refuse are refused, the rest allowed.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", help="the directory the emulator and fakes recorded into")
    parser.add_argument("--self-test", action="store_true", help="check the check on fixtures/self-test.jsonl")
    parser.add_argument("--template", default="template.yaml")
    parser.add_argument("--parameters", default=os.path.join(HERE, "test-parameters.json"))
    parser.add_argument("--unexercised", default=os.path.join(HERE, "unexercised.json"))
    args = parser.parse_args()
    if args.self_test:
        self_test(args.template, args.parameters)
        return
    if not args.calls:
        parser.error("--calls DIR (or --self-test)")
    problems = check(args.template, args.calls, args.parameters, args.unexercised)
    if problems:
        print("\nIAM check failed:", file=sys.stderr)
        for problem in problems:
            print("  " + problem.splitlines()[0], file=sys.stderr)
        sys.exit(1)
    print("\nIAM check: every recorded call is allowed by the template.")


if __name__ == "__main__":
    main()
