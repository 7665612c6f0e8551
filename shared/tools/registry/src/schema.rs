//! Checking a tool call's input against the tool's JSON Schema.
//!
//! Tool inputs are small objects, so this implements the part of JSON Schema
//! they use: `type`, `properties`, `required`, `additionalProperties`,
//! `items`, `minItems`, `maxItems`, `enum`, `const`, `minLength`,
//! `maxLength`, `pattern`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `anyOf`, `oneOf`, `allOf`, `not`, local `$ref`s
//! (`#/$defs/…`, `#/definitions/…`), and the annotations (`title`,
//! `description`, `default`, `examples`, `format`, …), which do not
//! constrain. (A full validator would cost the worker's binary several
//! megabytes for keywords tools rarely use.)
//!
//! Two modes. [`Schema::compile`] is for schemas a team writes (HTTP tools):
//! any other keyword is refused when the tool is defined, so nothing is
//! silently left unchecked and a typo is caught. [`Schema::compile_lenient`]
//! is for schemas a server sends (MCP tools): what this checker knows is
//! checked, anything else (an unknown keyword, a remote `$ref`, a pattern
//! in another regex dialect) is left for the server to validate, and a
//! server's tool is never dropped for its schema.

use regex::Regex;
use serde_json::{Map, Value};

/// A schema checked once, when its tool is defined.
#[derive(Debug, Clone)]
pub struct Schema {
    root: Node,
}

#[derive(Debug, Clone, Default)]
struct Node {
    types: Option<Vec<String>>,
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    /// `None`: any extra property; `Some(None)`: none allowed;
    /// `Some(Some(node))`: extras must match `node`.
    additional: Option<Option<Box<Node>>>,
    items: Option<Box<Node>>,
    min_items: Option<usize>,
    max_items: Option<usize>,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    min_length: Option<usize>,
    max_length: Option<usize>,
    pattern: Option<Regex>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    all_of: Vec<Node>,
    not: Option<Box<Node>>,
}

const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
];
const TYPES: &[&str] = &["object", "array", "string", "number", "integer", "boolean", "null"];

/// How deep `$ref`s are followed, and how many nodes one schema may
/// compile to: a recursive schema (a tree of comments) is checked this
/// far, and below that left to the server.
const MAX_REF_DEPTH: usize = 8;
const MAX_NODES: usize = 2_000;

/// Why a team's tool schema cannot be used: where in it (`input`,
/// `input/filter`) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {problem}", display(.at))]
pub struct SchemaError {
    at: String,
    problem: SchemaProblem,
}

impl SchemaError {
    fn at(at: &str, problem: SchemaProblem) -> Self {
        Self { at: at.to_owned(), problem }
    }

    pub fn problem(&self) -> &SchemaProblem {
        &self.problem
    }
}

/// What is wrong at a place in a schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaProblem {
    #[error("the schema is too large to check here")]
    TooLarge,
    #[error("a schema must be an object, not {0}")]
    NotAnObject(String),
    #[error("{keyword} must be {expected}")]
    Keyword { keyword: String, expected: String },
    #[error("only local references (#/$defs/…) are supported")]
    NotLocal,
    #[error("references nest deeper than {MAX_REF_DEPTH}")]
    TooDeep,
    #[error("the keyword {0:?} is not supported in tool schemas")]
    Unsupported(String),
}

impl Schema {
    /// A schema a team wrote: every keyword must be one this checker
    /// enforces or an annotation.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        Compiler::new(schema, false).compile(schema, "", 0).map(|root| Self { root })
    }

    /// A schema a server sent: checks what it can, never fails.
    pub fn compile_lenient(schema: &Value) -> Self {
        let root = Compiler::new(schema, true).compile(schema, "", 0).unwrap_or_default();
        Self { root }
    }

    /// What is wrong with `input`, as `path: problem` lines (empty: valid).
    pub fn violations(&self, input: &Value) -> Vec<String> {
        let mut found = Vec::new();
        check(&self.root, input, "", &mut found);
        found
    }
}

struct Compiler<'a> {
    root: &'a Value,
    lenient: bool,
    nodes: std::cell::Cell<usize>,
}

impl<'a> Compiler<'a> {
    fn new(root: &'a Value, lenient: bool) -> Self {
        Self { root, lenient, nodes: std::cell::Cell::new(0) }
    }

    fn compile(&self, schema: &Value, at: &str, depth: usize) -> Result<Node, SchemaError> {
        self.nodes.set(self.nodes.get() + 1);
        if self.nodes.get() > MAX_NODES {
            return self.leave_to_server(SchemaError::at(at, SchemaProblem::TooLarge));
        }
        let object = match schema {
            Value::Bool(true) => return Ok(Node::default()),
            Value::Object(object) => object,
            other => {
                return self.leave_to_server(SchemaError::at(at, SchemaProblem::NotAnObject(other.to_string())));
            }
        };
        let mut node = Node::default();
        for (keyword, value) in object {
            if let Err(reason) = self.keyword(&mut node, keyword, value, at, depth) {
                self.leave_to_server(reason)?;
            }
        }
        Ok(node)
    }

    /// Strict: the reason is an error. Lenient: the part is unconstrained.
    fn leave_to_server(&self, reason: SchemaError) -> Result<Node, SchemaError> {
        if self.lenient { Ok(Node::default()) } else { Err(reason) }
    }

    fn keyword(
        &self,
        node: &mut Node,
        keyword: &str,
        value: &Value,
        at: &str,
        depth: usize,
    ) -> Result<(), SchemaError> {
        let bad = |what: &str| {
            SchemaError::at(at, SchemaProblem::Keyword { keyword: keyword.to_owned(), expected: what.to_owned() })
        };
        match keyword {
            k if ANNOTATIONS.contains(&k) => {}
            // Definitions are compiled where a `$ref` names them.
            "$defs" | "definitions" => {}
            "$ref" => {
                let reference = value.as_str().ok_or_else(|| bad("a reference"))?;
                let target = reference
                    .strip_prefix('#')
                    .and_then(|pointer| self.root.pointer(pointer))
                    .ok_or_else(|| SchemaError::at(at, SchemaProblem::NotLocal))?;
                if depth >= MAX_REF_DEPTH {
                    return Err(SchemaError::at(at, SchemaProblem::TooDeep));
                }
                node.all_of.push(self.compile(target, at, depth + 1)?);
            }
            "type" => {
                let names: Vec<String> = match value {
                    Value::String(name) => vec![name.clone()],
                    Value::Array(names) => names.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect(),
                    _ => return Err(bad("a type name or a list of them")),
                };
                if names.is_empty() || names.iter().any(|name| !TYPES.contains(&name.as_str())) {
                    return Err(bad(&format!("one of {}", TYPES.join(", "))));
                }
                node.types = Some(names);
            }
            "properties" => {
                let properties = value.as_object().ok_or_else(|| bad("an object"))?;
                for (name, property) in properties {
                    node.properties.push((name.clone(), self.compile(property, &format!("{at}/{name}"), depth)?));
                }
            }
            "required" => {
                let names = value.as_array().ok_or_else(|| bad("a list of names"))?;
                node.required = names
                    .iter()
                    .map(|n| n.as_str().map(str::to_owned).ok_or_else(|| bad("a list of names")))
                    .collect::<Result<_, _>>()?;
            }
            "additionalProperties" => {
                node.additional = match value {
                    Value::Bool(true) => None,
                    Value::Bool(false) => Some(None),
                    other => Some(Some(Box::new(self.compile(other, &format!("{at}/*"), depth)?))),
                };
            }
            "items" => node.items = Some(Box::new(self.compile(value, &format!("{at}/[]"), depth)?)),
            "minItems" => node.min_items = Some(count(value).ok_or_else(|| bad("a whole number"))?),
            "maxItems" => node.max_items = Some(count(value).ok_or_else(|| bad("a whole number"))?),
            "minLength" => node.min_length = Some(count(value).ok_or_else(|| bad("a whole number"))?),
            "maxLength" => node.max_length = Some(count(value).ok_or_else(|| bad("a whole number"))?),
            "enum" => node.enumeration = Some(value.as_array().ok_or_else(|| bad("a list"))?.clone()),
            "const" => node.constant = Some(value.clone()),
            "pattern" => {
                let pattern = value.as_str().ok_or_else(|| bad("a regular expression"))?;
                node.pattern =
                    Some(Regex::new(pattern).map_err(|err| bad(&format!("a valid regular expression ({err})")))?);
            }
            "minimum" => node.minimum = Some(value.as_f64().ok_or_else(|| bad("a number"))?),
            "maximum" => node.maximum = Some(value.as_f64().ok_or_else(|| bad("a number"))?),
            "exclusiveMinimum" => node.exclusive_minimum = Some(value.as_f64().ok_or_else(|| bad("a number"))?),
            "exclusiveMaximum" => node.exclusive_maximum = Some(value.as_f64().ok_or_else(|| bad("a number"))?),
            "anyOf" | "oneOf" | "allOf" => {
                let list =
                    value.as_array().filter(|l| !l.is_empty()).ok_or_else(|| bad("a non-empty list of schemas"))?;
                let nodes = list.iter().map(|s| self.compile(s, at, depth)).collect::<Result<Vec<_>, _>>()?;
                match keyword {
                    "anyOf" => node.any_of = nodes,
                    "oneOf" => node.one_of = nodes,
                    _ => node.all_of.extend(nodes),
                }
            }
            "not" => node.not = Some(Box::new(self.compile(value, at, depth)?)),
            other => return Err(SchemaError::at(at, SchemaProblem::Unsupported(other.to_owned()))),
        }
        Ok(())
    }
}

fn count(value: &Value) -> Option<usize> {
    value.as_u64().and_then(|n| usize::try_from(n).ok())
}

fn display(at: &str) -> &str {
    if at.is_empty() { "input" } else { at }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_valid(node: &Node, value: &Value) -> bool {
    let mut found = Vec::new();
    check(node, value, "", &mut found);
    found.is_empty()
}

fn check(node: &Node, value: &Value, at: &str, found: &mut Vec<String>) {
    let mut fail = |problem: String| found.push(format!("{}: {problem}", display(at)));
    if let Some(types) = &node.types {
        let actual = type_of(value);
        let fits = types.iter().any(|t| t == actual || (t == "number" && actual == "integer"));
        if !fits {
            return fail(format!("{value} is not of type {}", types.join(" or ")));
        }
    }
    if let Some(allowed) = &node.enumeration
        && !allowed.contains(value)
    {
        fail(format!("{value} is not one of {}", Value::Array(allowed.clone())));
    }
    if let Some(constant) = &node.constant
        && constant != value
    {
        fail(format!("{value} is not {constant}"));
    }
    match value {
        Value::Object(object) => check_object(node, object, at, found),
        Value::Array(items) => {
            let mut fail = |problem: String| found.push(format!("{}: {problem}", display(at)));
            if node.min_items.is_some_and(|min| items.len() < min) {
                fail(format!("has fewer than {} items", node.min_items.unwrap_or_default()));
            }
            if node.max_items.is_some_and(|max| items.len() > max) {
                fail(format!("has more than {} items", node.max_items.unwrap_or_default()));
            }
            if let Some(item) = &node.items {
                for (index, value) in items.iter().enumerate() {
                    check(item, value, &format!("{at}/{index}"), found);
                }
            }
        }
        Value::String(text) => {
            let length = text.chars().count();
            if node.min_length.is_some_and(|min| length < min) {
                fail(format!("is shorter than {} characters", node.min_length.unwrap_or_default()));
            }
            if node.max_length.is_some_and(|max| length > max) {
                fail(format!("is longer than {} characters", node.max_length.unwrap_or_default()));
            }
            if let Some(pattern) = &node.pattern
                && !pattern.is_match(text)
            {
                fail(format!("does not match {:?}", pattern.as_str()));
            }
        }
        Value::Number(number) => {
            let n = number.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = node.minimum.filter(|min| n < *min) {
                fail(format!("{number} is less than the minimum {min}"));
            }
            if let Some(max) = node.maximum.filter(|max| n > *max) {
                fail(format!("{number} is more than the maximum {max}"));
            }
            if let Some(min) = node.exclusive_minimum.filter(|min| n <= *min) {
                fail(format!("{number} is not more than {min}"));
            }
            if let Some(max) = node.exclusive_maximum.filter(|max| n >= *max) {
                fail(format!("{number} is not less than {max}"));
            }
        }
        _ => {}
    }
    for part in &node.all_of {
        check(part, value, at, found);
    }
    let mut fail = |problem: &str| found.push(format!("{}: {problem}", display(at)));
    if !node.any_of.is_empty() && !node.any_of.iter().any(|option| is_valid(option, value)) {
        fail("matches none of the allowed forms (anyOf)");
    }
    if !node.one_of.is_empty() && node.one_of.iter().filter(|option| is_valid(option, value)).count() != 1 {
        fail("does not match exactly one of the allowed forms (oneOf)");
    }
    if node.not.as_deref().is_some_and(|not| is_valid(not, value)) {
        fail("matches a form that is not allowed (not)");
    }
}

fn check_object(node: &Node, object: &Map<String, Value>, at: &str, found: &mut Vec<String>) {
    for name in &node.required {
        if !object.contains_key(name) {
            found.push(format!("{}: {name:?} is required", display(at)));
        }
    }
    for (name, value) in object {
        let path = format!("{at}/{name}");
        match node.properties.iter().find(|(property, _)| property == name) {
            Some((_, property)) => check(property, value, &path, found),
            None => match &node.additional {
                Some(None) => found.push(format!("{}: the property {name:?} is not allowed", display(at))),
                Some(Some(extra)) => check(extra, value, &path, found),
                None => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn violations(schema: Value, input: Value) -> Vec<String> {
        Schema::compile(&schema).unwrap().violations(&input)
    }

    #[test]
    fn objects_properties_and_required() {
        let schema = json!({
            "type": "object",
            "properties": {"query": {"type": "string", "minLength": 2}, "limit": {"type": "integer", "minimum": 1, "maximum": 40}},
            "required": ["query"],
            "additionalProperties": false
        });
        assert!(violations(schema.clone(), json!({"query": "pool", "limit": 3})).is_empty());
        assert_eq!(
            violations(schema.clone(), json!({"limit": 0, "extra": true})),
            [
                "input: \"query\" is required",
                "input: the property \"extra\" is not allowed",
                "/limit: 0 is less than the minimum 1"
            ]
        );
        assert_eq!(violations(schema.clone(), json!({"query": "p"})), ["/query: is shorter than 2 characters"]);
        assert_eq!(violations(schema.clone(), json!({"query": 7})), ["/query: 7 is not of type string"]);
        assert_eq!(violations(schema, json!("text")), ["input: \"text\" is not of type object"]);
    }

    #[test]
    fn enums_arrays_patterns_numbers_and_combinators() {
        assert_eq!(
            violations(json!({"enum": ["prod", "staging"]}), json!("evil.example.com")),
            ["input: \"evil.example.com\" is not one of [\"prod\",\"staging\"]"]
        );
        let list = json!({"type": "array", "items": {"type": "integer"}, "maxItems": 2});
        assert_eq!(
            violations(list, json!([1, "two", 3])),
            ["input: has more than 2 items", "/1: \"two\" is not of type integer"]
        );
        assert_eq!(
            violations(json!({"pattern": "^svc-[a-z]+$"}), json!("svc-Api")),
            ["input: does not match \"^svc-[a-z]+$\""]
        );
        assert!(violations(json!({"type": "number", "exclusiveMaximum": 1}), json!(0.5)).is_empty());
        assert!(violations(json!({"type": "number"}), json!(3)).is_empty(), "an integer is a number");
        let either = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
        assert!(violations(either.clone(), json!(3)).is_empty());
        assert_eq!(violations(either, json!(true)), ["input: matches none of the allowed forms (anyOf)"]);
        assert_eq!(
            violations(json!({"not": {"const": "root"}}), json!("root")),
            ["input: matches a form that is not allowed (not)"]
        );
    }

    #[test]
    fn schemas_this_checker_cannot_enforce_are_refused() {
        for schema in [
            json!({"type": "object", "patternProperties": {"^x": {}}}),
            json!({"$ref": "#/definitions/x"}),
            json!({"$ref": "https://schemas.example.com/x.json"}),
            json!({"type": "no-such-type"}),
            json!({"pattern": "("}),
            json!({"properties": {"a": {"if": {}}}}),
            json!("not a schema"),
        ] {
            assert!(Schema::compile(&schema).is_err(), "{schema}");
        }
        assert!(Schema::compile(&json!({"title": "t", "description": "d", "format": "uri", "examples": []})).is_ok());
    }

    #[test]
    fn local_references_are_followed() {
        let schema = json!({
            "type": "object",
            "properties": {"target": {"$ref": "#/$defs/Target"}},
            "required": ["target"],
            "$defs": {"Target": {"type": "object", "properties": {"env": {"enum": ["prod", "staging"]}}, "required": ["env"]}}
        });
        assert!(violations(schema.clone(), json!({"target": {"env": "prod"}})).is_empty());
        assert_eq!(
            violations(schema, json!({"target": {"env": "dev"}})),
            ["/target/env: \"dev\" is not one of [\"prod\",\"staging\"]"]
        );
    }

    /// What real servers send: pydantic's and zod's output with `$defs`,
    /// nullable `anyOf`, formats, and keywords this checker does not know.
    #[test]
    fn a_servers_schema_is_checked_as_far_as_this_checker_goes_and_never_refused() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "since": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}], "default": null},
                "labels": {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "string"}}},
                "mode": {"if": {"const": "a"}, "then": {"const": "a"}},
                "id": {"type": "string", "pattern": "^(?=x)x+$"},
                "filter": {"$ref": "#/$defs/Filter"},
                "remote": {"$ref": "https://schemas.example.com/remote.json"},
                "tree": {"$ref": "#/$defs/Node"}
            },
            "required": ["query"],
            "additionalProperties": false,
            "$defs": {
                "Filter": {"type": "object", "properties": {"limit": {"type": "integer", "maximum": 100}}},
                "Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
            }
        });
        assert!(Schema::compile(&schema).is_err(), "a team's schema with these keywords is refused");
        let lenient = Schema::compile_lenient(&schema);
        let ok = json!({"query": "errors", "since": null, "labels": {"team": "x"}, "mode": "b", "id": "anything",
                        "filter": {"limit": 5}, "remote": [1], "tree": {"children": [{"children": []}]}});
        assert_eq!(lenient.violations(&ok), Vec::<String>::new());
        assert_eq!(
            lenient.violations(&json!({"since": 3, "filter": {"limit": 500}, "extra": 1})),
            [
                "input: \"query\" is required",
                "input: the property \"extra\" is not allowed",
                "/filter/limit: 500 is more than the maximum 100",
                "/since: matches none of the allowed forms (anyOf)"
            ]
        );
        // A tree deeper than references are followed is left to the server.
        let mut deep = json!({"children": []});
        for _ in 0..20 {
            deep = json!({"children": [deep]});
        }
        assert!(lenient.violations(&json!({"query": "q", "tree": deep})).is_empty());
        for garbage in [json!("not a schema"), json!({"type": "no-such-type"}), json!({"$ref": "#/nowhere"})] {
            assert!(Schema::compile_lenient(&garbage).violations(&json!({"any": "thing"})).is_empty(), "{garbage}");
        }
    }
}
