//! The docs, held to the code: a number or a list in the docs is generated
//! or checked by a test (the team's style guide, habit 24). Each check reads
//! a list or a figure from the book's chapters (`docs/src/*.md`) or
//! `README.md` and the same thing from the code, and fails naming both
//! places when they differ:
//!
//! - the runtime contract (`docs/src/runtime-contract.md`): every
//!   environment variable each function reads (found in its source and the
//!   workspace crates it uses), every work and reply message kind with its
//!   fields (asked of serde), every health check (found in the function's
//!   source);
//! - the records table (`docs/src/architecture.md`): every key prefix in the
//!   code, the ingress's rows against the template's permissions, and each
//!   stated TTL against the constant it names;
//! - figures: the AWS calls on the ingress's acknowledgement path (counted
//!   on the real intake), the binary sizes (stated once, in the table
//!   `infra/bench.sh` prints, in `docs/src/benchmark.md`), limits that are
//!   constants in the code, the reading budgets (`assistant_core::reading`);
//! - the layout chapter (`docs/src/layout.md`): a row for every crate,
//!   naming the workspace crates it uses, as its `Cargo.toml` does;
//! - the README stays a landing page (under 250 lines), and every chapter
//!   is in the book's `docs/src/SUMMARY.md`;
//! - every relative link, and every `.md` file a comment cites, resolves
//!   inside the repository. (The built book's links are checked by
//!   `infra/docs/check.py` in the test command, after `mdbook build`.)
//!
//! Needs no emulator: it reads files and runs the ingress logic in memory.

#[path = "docs/ack_path.rs"]
mod ack_path;
#[path = "docs/markdown.rs"]
mod markdown;
#[path = "docs/messages.rs"]
mod messages;
#[path = "docs/rust_source.rs"]
mod rust_source;

use markdown::{Doc, code_spans, without_asides};
use rust_source::{SourceFile, Workspace, env_helpers, env_reads};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const FUNCTIONS: [&str; 3] = ["ingress", "worker", "responder"];
const CONTRACT: &str = "docs/src/runtime-contract.md";
const ARCHITECTURE: &str = "docs/src/architecture.md";
const BENCHMARK: &str = "docs/src/benchmark.md";
const HISTORY: &str = "docs/src/benchmark-history.md";
const FILES: &str = "docs/src/files-and-answers.md";
const SECURITY: &str = "docs/src/security.md";
const CONFIGURATION: &str = "docs/src/configuration.md";
const RELIABILITY_WRITES: &str = "docs/src/reliability-writes.md";
const TOOLS: &str = "docs/src/tools.md";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the repository root").to_owned()
}

/// Fails with every problem found, one a line, rather than the first.
fn assert_none(problems: Vec<String>, what: &str) {
    assert!(problems.is_empty(), "{what}:\n  - {}", problems.join("\n  - "));
}

// ---------------------------------------------------------------------------
// The runtime contract: environment variables.

/// Variables the AWS SDK reads itself in every function (its endpoint
/// overrides and region): the contract may list them where our code never
/// names them.
const READ_BY_THE_SDK: [&str; 4] =
    ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_<SERVICE>", "AWS_REGION", "AWS_DEFAULT_REGION"];

/// The variables `function` reads: named in its own crate, or in a
/// function of a workspace crate it depends on that is called somewhere
/// in those crates (module-level names, such as a service's endpoint
/// variable, count wherever their crate is used). Name → where.
fn variables_read(workspace: &Workspace, function: &str) -> BTreeMap<String, String> {
    let closure = workspace.closure(function);
    let sources: Vec<(String, Vec<SourceFile>)> =
        closure.iter().map(|name| (name.clone(), workspace.sources(name))).collect();
    let called = |name: &str| sources.iter().flat_map(|(_, files)| files).any(|file| file.calls(name));
    let helpers = env_helpers(workspace);
    let mut read = BTreeMap::new();
    for (crate_name, files) in &sources {
        for file in files {
            for found in env_reads(file, &helpers) {
                let counts = crate_name == function || found.function.as_deref().is_none_or(called);
                if counts {
                    let place = match &found.function {
                        Some(name) => format!("{} (fn {name})", found.place),
                        None => found.place.clone(),
                    };
                    read.entry(found.name).or_insert(place);
                }
            }
        }
    }
    read
}

/// The contract's table: function → variable → the line listing it.
fn variables_documented(doc: &Doc) -> (BTreeMap<&'static str, BTreeMap<String, usize>>, Vec<String>) {
    let table = doc.table("Environment variables", "variable");
    let (name_column, function_column) = (table.column("variable"), table.column("function"));
    let mut documented: BTreeMap<&'static str, BTreeMap<String, usize>> = BTreeMap::new();
    let mut problems = Vec::new();
    for row in &table.rows {
        let names = code_spans(&row.cells[name_column]);
        if names.is_empty() {
            problems.push(format!("{}: no variable named in `code`", doc.at(row.line)));
        }
        for function in row.cells[function_column].split(',').map(str::trim) {
            let functions: Vec<&'static str> = match function {
                "all" => FUNCTIONS.to_vec(),
                name => FUNCTIONS.iter().copied().filter(|f| *f == name).collect(),
            };
            if functions.is_empty() {
                problems.push(format!(
                    "{}: {function:?} is not a function (ingress, worker, responder or all)",
                    doc.at(row.line)
                ));
            }
            for function in functions {
                for name in &names {
                    if documented.entry(function).or_default().insert(name.clone(), row.line).is_some() {
                        problems.push(format!("{}: {name} is listed twice for {function}", doc.at(row.line)));
                    }
                }
            }
        }
        // A family (`AWS_ENDPOINT_URL_<SERVICE>`) names its members the
        // code uses anywhere in its row.
        for family in names.iter().filter_map(|name| name.split_once('<').map(|(prefix, _)| prefix)) {
            let members = row.cells.iter().flat_map(|cell| code_spans(cell)).filter(|span| span.starts_with(family));
            for member in members {
                for function in FUNCTIONS {
                    documented.entry(function).or_default().entry(member.clone()).or_insert(row.line);
                }
            }
        }
    }
    (documented, problems)
}

#[test]
fn every_environment_variable_a_function_reads_is_in_the_runtime_contract() {
    // GIVEN the contract's table and each function's source
    let root = root();
    let workspace = Workspace::read(&root);
    let doc = Doc::read(&root, CONTRACT);
    let (documented, mut problems) = variables_documented(&doc);

    for function in FUNCTIONS {
        // WHEN the variables it reads are found in the code
        let read = variables_read(&workspace, function);
        let listed = documented.get(function).cloned().unwrap_or_default();
        // THEN the contract lists exactly those for it
        for (name, place) in &read {
            if !listed.contains_key(name) {
                problems.push(format!(
                    "{function} reads {name} ({place}); {CONTRACT}'s table does not list it for {function}"
                ));
            }
        }
        for (name, line) in &listed {
            let family_member = name.starts_with("AWS_ENDPOINT_URL_") && !name.contains('<');
            if !read.contains_key(name) && !READ_BY_THE_SDK.contains(&name.as_str()) && !family_member {
                problems.push(format!("{} lists {name} for {function}, which reads no such variable", doc.at(*line)));
            }
        }
    }
    assert_none(problems, "the runtime contract's environment variables differ from the code");
}

// ---------------------------------------------------------------------------
// The runtime contract: queue messages.

/// A kind as a table row documents it: (line, required, optional).
type DocumentedKind = (usize, BTreeSet<String>, BTreeSet<String>);

/// The kinds in the table under `title`: kind → fields.
fn kinds_documented(doc: &Doc, title: &str) -> BTreeMap<String, DocumentedKind> {
    let table = doc.table(title, "kind");
    let (kind_column, fields_column) = (table.column("kind"), table.column("fields"));
    let mut kinds = BTreeMap::new();
    for row in &table.rows {
        let kind = code_spans(&row.cells[kind_column]).into_iter().next().unwrap_or_default();
        let (mut required, mut optional) = (BTreeSet::new(), BTreeSet::new());
        // `thread {team, channel, thread_ts}`, `context_channel?`: the
        // field is the leading name, optional when a `?` follows it.
        for span in code_spans(&without_asides(&row.cells[fields_column])) {
            let field: String = span.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
            if field.is_empty() {
                continue;
            }
            if span[field.len()..].starts_with('?') {
                optional.insert(field);
            } else {
                required.insert(field);
            }
        }
        assert!(
            kinds.insert(kind.clone(), (row.line, required, optional)).is_none(),
            "{}: `{kind}` twice",
            doc.at(row.line)
        );
    }
    kinds
}

fn compare_kinds(doc: &Doc, title: &str, shapes: Vec<messages::Shape>, enum_name: &str) -> Vec<String> {
    let code = "shared/assistant-core/src/messages.rs";
    let mut documented = kinds_documented(doc, title);
    let mut problems = Vec::new();
    for shape in shapes {
        let Some((line, required, optional)) = documented.remove(&shape.kind) else {
            problems.push(format!(
                "{enum_name} has kind `{}` ({code}); {CONTRACT} under {title:?} does not (fields: {:?}, optional: {:?})",
                shape.kind,
                shape.required,
                shape.optional()
            ));
            continue;
        };
        let at = doc.at(line);
        let kind = &shape.kind;
        for field in shape.required.difference(&required) {
            let how = if optional.contains(field) { "marked optional (`?`)" } else { "missing" };
            problems.push(format!("{at}: `{kind}` requires `{field}` ({enum_name}, {code}); the doc has it {how}"));
        }
        for field in shape.optional().difference(&optional) {
            let how = if required.contains(field) { "without `?`" } else { "missing" };
            problems.push(format!(
                "{at}: `{kind}` may carry `{field}` (optional in {enum_name}, {code}); the doc has it {how}"
            ));
        }
        for field in required.union(&optional).filter(|field| !shape.fields.contains(*field)) {
            problems.push(format!("{at}: `{kind}` has no field `{field}` in {enum_name} ({code})"));
        }
    }
    for (kind, (line, _, _)) in documented {
        problems.push(format!("{}: `{kind}` is no kind of {enum_name} ({code})", doc.at(line)));
    }
    problems
}

#[test]
fn every_queue_message_kind_and_its_fields_are_in_the_runtime_contract() {
    // GIVEN the contract's two message tables
    let doc = Doc::read(&root(), CONTRACT);
    // WHEN serde is asked for every kind of each queue's messages and their fields
    let work = messages::shapes::<assistant_core::WorkMessage>("WorkMessage");
    let reply = messages::shapes::<assistant_core::messages::ReplyMessage>("ReplyMessage");
    assert!(work.len() >= 8 && reply.len() >= 7, "the probe found too few kinds: {work:?} {reply:?}");
    // THEN each table lists exactly those kinds, with the same fields
    let mut problems = compare_kinds(&doc, "Work queue", work, "WorkMessage");
    problems.extend(compare_kinds(&doc, "Reply queue", reply, "ReplyMessage"));
    assert_none(problems, "the runtime contract's queue messages differ from the code");
}

// ---------------------------------------------------------------------------
// The runtime contract: health checks.

#[test]
fn every_health_check_a_function_reports_is_in_the_runtime_contract() {
    // GIVEN the contract's table of checks
    let root = root();
    let workspace = Workspace::read(&root);
    let doc = Doc::read(&root, CONTRACT);
    let table = doc.table("Health report", "function");
    let checks_column = table.column("checks");
    let mut problems = Vec::new();
    for function in FUNCTIONS {
        // WHEN the checks are found in the function's source: `health::check("name", …)`
        let mut in_code = BTreeMap::new();
        for file in workspace.sources(function) {
            for literal in file.literals() {
                let before = &file.text[..literal.at];
                if before.trim_end().ends_with("health::check(") {
                    in_code.insert(literal.value.clone(), literal.place());
                }
            }
        }
        // THEN the function's row names exactly those
        let Some(row) = table.rows.iter().find(|row| row.cells[0] == function) else {
            problems.push(format!("{CONTRACT}: the health checks table has no row for {function}"));
            continue;
        };
        let documented: BTreeSet<String> = code_spans(&without_asides(&row.cells[checks_column])).into_iter().collect();
        for (name, place) in &in_code {
            if !documented.contains(name) {
                problems.push(format!(
                    "{function} reports the check `{name}` ({place}); {} does not list it",
                    doc.at(row.line)
                ));
            }
        }
        for name in documented.iter().filter(|name| !in_code.contains_key(*name)) {
            problems.push(format!(
                "{} lists the check `{name}` for {function}, which reports no such check",
                doc.at(row.line)
            ));
        }
    }
    assert_none(problems, "the runtime contract's health checks differ from the code");
}

// ---------------------------------------------------------------------------
// The records table.

/// The one module that spells the turns table's keys (`assistant_core::keys`).
const KEYS_MODULE: &str = "shared/assistant-core/src/keys.rs";

/// Every key prefix the code spells: a literal starting `NAME#`, or a
/// partition constant (`const NAME_PARTITION: &str = "NAME"`). Prefix →
/// every place that spells it.
fn key_prefixes_in_code(workspace: &Workspace) -> BTreeMap<String, Vec<String>> {
    let mut prefixes = BTreeMap::new();
    let crates: BTreeSet<String> = FUNCTIONS.iter().flat_map(|f| workspace.closure(f)).collect();
    for name in crates {
        for file in workspace.sources(&name) {
            for literal in file.literals() {
                let before = file.text[..literal.at].trim_end();
                let partition_constant =
                    before.ends_with("&str =") && before.lines().last().is_some_and(|line| line.contains("PARTITION"));
                let prefix = match literal.value.split_once('#') {
                    Some((head, _)) if is_key_word(head) => format!("{head}#"),
                    _ if partition_constant && is_key_word(&literal.value) => literal.value.clone(),
                    _ => continue,
                };
                prefixes.entry(prefix).or_insert_with(Vec::new).push(literal.place());
            }
        }
    }
    prefixes
}

/// `TURN`, `INCIDENT_RATE`: an upper-case word of a key.
fn is_key_word(word: &str) -> bool {
    word.len() >= 2 && word.chars().all(|c| c.is_ascii_uppercase() || c == '_')
}

/// The prefixes a key cell names: every `NAME#`, and a partition that is a
/// word alone (`APPROVAL_TIMERS`).
fn key_prefixes_in(cell: &str) -> BTreeSet<String> {
    let mut prefixes = BTreeSet::new();
    for (i, span) in code_spans(cell).iter().enumerate() {
        if i == 0 && is_key_word(span) {
            prefixes.insert(span.clone());
        }
        let mut rest = span.as_str();
        while let Some(at) = rest.find('#') {
            let head: String = rest[..at]
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if is_key_word(&head) {
                prefixes.insert(format!("{head}#"));
            }
            rest = &rest[at + 1..];
        }
    }
    prefixes
}

#[test]
fn every_key_prefix_in_the_code_is_in_the_records_table() {
    // GIVEN the records table and the code's keys
    let root = root();
    let doc = Doc::read(&root, ARCHITECTURE);
    let table = doc.table("One writer per record", "record");
    let key_column = table.column("key");
    let in_code = key_prefixes_in_code(&Workspace::read(&root));
    assert!(in_code.contains_key("TURN#") && in_code.contains_key("EVENT#"), "the scan found too little: {in_code:?}");
    // WHEN the table's keys are read
    let mut documented: BTreeMap<String, usize> = BTreeMap::new();
    for row in &table.rows {
        for prefix in key_prefixes_in(&row.cells[key_column]) {
            documented.entry(prefix).or_insert(row.line);
        }
    }
    // THEN they are the code's
    let mut problems = Vec::new();
    for (prefix, places) in &in_code {
        if !documented.contains_key(prefix) {
            problems.push(format!(
                "the code keys records by `{prefix}` ({}); {ARCHITECTURE}'s records table has no such key",
                places[0]
            ));
        }
    }
    for (prefix, line) in &documented {
        if !in_code.contains_key(prefix) {
            problems.push(format!("{} names the key `{prefix}`, which no code spells", doc.at(*line)));
        }
    }
    assert_none(problems, "the records table's keys differ from the code");
}

#[test]
fn every_key_is_spelled_in_the_keys_module_and_nowhere_else() {
    // GIVEN every key prefix the functions' code spells, and where
    let in_code = key_prefixes_in_code(&Workspace::read(&root()));
    assert!(in_code.len() >= 20, "the scan found too little: {in_code:?}");
    // THEN each place is the keys module
    let problems: Vec<String> = in_code
        .iter()
        .flat_map(|(prefix, places)| places.iter().map(move |place| (prefix, place)))
        .filter(|(_, place)| !place.starts_with(&format!("{KEYS_MODULE}:")))
        .map(|(prefix, place)| format!("{place} spells the key `{prefix}`: ask {KEYS_MODULE} for it"))
        .collect();
    assert_none(problems, "keys spelled outside the keys module");
}

/// The partitions the template lets the ingress write (`PutItem` or
/// `UpdateItem` under `dynamodb:LeadingKeys`), as prefixes (`EVENT#`).
fn ingress_writable_partitions(template: &str) -> BTreeSet<String> {
    // The resource's lines: up to the next resource (`  Name:`).
    let is_resource = |line: &&str| line.starts_with("  ") && !line.starts_with("   ") && line.ends_with(':');
    let block: Vec<&str> = template
        .lines()
        .skip_while(|line| *line != "  IngressFunction:")
        .skip(1)
        .take_while(|line| !is_resource(line))
        .collect();
    let mut partitions = BTreeSet::new();
    for statement in block.join("\n").split("- Effect: ").skip(1) {
        let writes = statement.contains("dynamodb:PutItem") || statement.contains("dynamodb:UpdateItem");
        let Some((_, keys)) = statement.split_once("dynamodb:LeadingKeys:") else { continue };
        if !(statement.starts_with("Allow") && writes) {
            continue;
        }
        for line in keys.lines().map(str::trim) {
            if let Some(value) = line.strip_prefix("- \"").and_then(|value| value.strip_suffix('"')) {
                partitions.insert(value.trim_end_matches('*').to_owned());
            }
        }
    }
    partitions
}

#[test]
fn the_records_the_table_says_the_ingress_writes_are_those_the_template_lets_it_write() {
    // GIVEN the records table and the ingress's permissions in template.yaml
    let root = root();
    let doc = Doc::read(&root, ARCHITECTURE);
    let table = doc.table("One writer per record", "record");
    let (key_column, writer_column) = (table.column("key"), table.column("written by"));
    let template = std::fs::read_to_string(root.join("template.yaml")).unwrap();
    let allowed = ingress_writable_partitions(&template);
    assert!(allowed.contains("EVENT#"), "the template's ingress permissions were not found: {allowed:?}");
    // WHEN the rows the ingress writes are read
    let mut problems = Vec::new();
    let mut written = BTreeSet::new();
    for row in &table.rows {
        // `CONTEXT#{team}#{user}` / `CONTEXT`: the partition is the first span.
        let partition = code_spans(&row.cells[key_column]).into_iter().next().unwrap_or_default();
        let partition = key_prefixes_in(&format!("`{partition}`"));
        if without_asides(&row.cells[writer_column]).contains("ingress") {
            for prefix in partition {
                // THEN the template lets it write each
                if !allowed.contains(&prefix) {
                    problems.push(format!(
                        "{} says the ingress writes `{prefix}`; template.yaml does not let it",
                        doc.at(row.line)
                    ));
                }
                written.insert(prefix);
            }
        }
    }
    // AND every partition the template lets it write is one the table says it writes
    for prefix in allowed.difference(&written) {
        problems.push(format!("template.yaml lets the ingress write `{prefix}`; {ARCHITECTURE}'s table has no such record written by the ingress"));
    }
    assert_none(problems, "the records the ingress writes differ between the docs and the template");
}

/// The first duration `text` states (`30 days`, `an hour`, `15 minutes`), in seconds.
fn duration(text: &str) -> Option<i64> {
    let units =
        [("second", 1), ("minute", 60), ("hour", 3600), ("day", 86_400), ("week", 604_800), ("year", 31_536_000)];
    let words: Vec<&str> =
        text.split(|c: char| c.is_whitespace() || c == '(' || c == ',').filter(|w| !w.is_empty()).collect();
    words.windows(2).find_map(|pair| {
        let count = match pair[0] {
            "a" | "an" | "one" => 1,
            word => word.replace(',', "").parse().ok()?,
        };
        let unit = pair[1].trim_end_matches([')', '.', ';', ':']);
        let unit = unit.strip_suffix('s').unwrap_or(unit);
        units.iter().find(|(name, _)| *name == unit).map(|(_, seconds)| count * seconds)
    })
}

#[test]
fn each_ttl_the_records_table_states_is_the_constant_it_names() {
    // GIVEN the records table's TTL column
    let root = root();
    let workspace = Workspace::read(&root);
    let sources = function_sources(&workspace);
    let doc = Doc::read(&root, ARCHITECTURE);
    let table = doc.table("One writer per record", "record");
    let ttl_column = table.column("TTL");
    let mut problems = Vec::new();
    let mut checked = 0;
    for row in &table.rows {
        let cell = &row.cells[ttl_column];
        let Some(name) = code_spans(cell).into_iter().find(|span| is_key_word(span) && span.ends_with("SECS")) else {
            continue;
        };
        // WHEN the constant it names is read from the code
        match (value_of(&sources, &name), duration(cell)) {
            // THEN the duration it states is that constant's
            (Ok(seconds), Some(stated)) if seconds == stated as f64 => checked += 1,
            (Ok(seconds), stated) => problems.push(format!(
                "{} states {stated:?} s for `{name}`, which is {seconds} s in the code",
                doc.at(row.line)
            )),
            (Err(err), _) => problems.push(format!("{}: {err}", doc.at(row.line))),
        }
    }
    assert_none(problems, "the records table's TTLs differ from the code");
    assert!(checked >= 5, "only {checked} TTLs in {ARCHITECTURE} name their constant");
}

// ---------------------------------------------------------------------------
// Figures in the docs.

#[tokio::test]
async fn the_aws_calls_on_the_acknowledgement_path_are_those_counted() {
    // GIVEN every captured Slack request, through the real intake on counting ports
    let root = root();
    let counted = ack_path::calls_per_request(&root).await;
    let (worst, most) = counted[0].clone();
    let mention = counted.iter().find(|(name, _)| name == "app_mention.json").expect("an app mention fixture").1;
    let benchmark = Doc::read(&root, BENCHMARK);
    let architecture = Doc::read(&root, ARCHITECTURE);
    // WHEN the docs state them
    let stated = [
        (&architecture, "At most {} AWS calls on the acknowledgement path", vec![most]),
        (
            &benchmark,
            "AWS calls on the acknowledgement path: {} for a mention (claim, enqueue), at most {}",
            vec![mention, most],
        ),
    ];
    let mut problems = Vec::new();
    for (doc, template, expected) in stated {
        let found = doc.numbers(template);
        if found.is_empty() {
            problems.push(format!("{}: no sentence matches {template:?}", doc.path));
        }
        // THEN they state what was counted
        let expected: Vec<f64> = expected.iter().map(|n| *n as f64).collect();
        for (line, values) in found.into_iter().filter(|(_, values)| *values != expected) {
            problems.push(format!("{} states {values:?} ({template:?}); counted: {expected:?}", doc.at(line)));
        }
    }
    assert_none(
        problems,
        &format!(
            "the acknowledgement path's AWS calls differ from the count (the most: {worst}; every request: {counted:?})"
        ),
    );
}

/// The one table of binary sizes (in `BENCHMARK`), as `infra/bench.sh` prints it.
const SIZES_SECTION: &str = "Binary sizes";

/// `9,614,928 B`: a size in bytes, as the benchmark prints it.
fn byte_sizes(line: &str) -> Vec<u64> {
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .windows(2)
        .filter(|pair| pair[1].trim_end_matches([',', ';', ')', '.']) == "B")
        .filter_map(|pair| {
            let number = pair[0].trim_start_matches('(');
            (number.contains(',') && number.chars().all(|c| c.is_ascii_digit() || c == ','))
                .then(|| number.replace(',', "").parse().ok())
                .flatten()
        })
        .collect()
}

/// A binary's size in MB or MiB stated in prose (`9.1 MiB`): a figure with
/// decimals (limits and budgets are round: `2 MB`, `< 10 MB`), not a change
/// (`cost 0.6 MB`, `+0.37 MB`).
fn prose_sizes(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    (1..words.len())
        .filter(|&i| matches!(words[i].trim_end_matches([',', ';', ')', '.', ':']), "MB" | "MiB"))
        .filter(|&i| {
            let figure = words[i - 1].trim_start_matches('(');
            figure.contains('.') && figure.parse::<f64>().is_ok()
        })
        .filter(|&i| {
            // A budget or a change, not a size.
            let before = if i >= 2 { words[i - 2].to_lowercase() } else { String::new() };
            let changes = [
                "<", "≤", "under", "over", "allowed", "budget", "cost", "costs", "saves", "save", "adds", "added",
                "won",
            ];
            !changes.contains(&before.as_str()) && !words[i - 1].starts_with(['+', '-', '−'])
        })
        .map(|i| format!("{} {}", words[i - 1], words[i]))
        .collect()
}

#[test]
fn binary_sizes_are_stated_once_in_the_table_the_benchmark_prints() {
    // GIVEN the benchmark chapter's sizes table
    let root = root();
    let benchmark = Doc::read(&root, BENCHMARK);
    let table = benchmark.table(SIZES_SECTION, "binary");
    let (first, last) = benchmark.section(SIZES_SECTION);
    let mut problems = Vec::new();
    // THEN it is the table the benchmark prints: its header, a row per function, sizes in bytes
    let bench = std::fs::read_to_string(root.join("bench/src/main.rs")).unwrap();
    let header = benchmark
        .lines()
        .find(|(number, line)| (first..=last).contains(number) && line.starts_with("| binary |"))
        .map(|(_, line)| line.to_owned());
    if !header.as_ref().is_some_and(|header| bench.contains(header.as_str())) {
        problems.push(format!(
            "bench/src/main.rs does not print the header of {BENCHMARK}'s {SIZES_SECTION:?} table: {header:?}"
        ));
    }
    for function in FUNCTIONS {
        match table.rows.iter().find(|row| row.cells[0] == function) {
            None => problems.push(format!("{}: the sizes table has no row for {function}", benchmark.at(first))),
            Some(row) if row.cells[1..].iter().all(|cell| byte_sizes(cell).is_empty()) => {
                problems.push(format!("{}: no size in bytes (`9,614,928 B`) for {function}", benchmark.at(row.line)))
            }
            Some(_) => {}
        }
    }
    // AND no other place in the README or the docs states a binary's size
    // (the benchmark's history holds dated past rounds, not current figures)
    let pages = markdown_files(&root).into_iter().filter(|path| path != HISTORY);
    let docs: Vec<Doc> = pages.map(|path| Doc::read(&root, &path)).collect();
    assert!(docs.iter().any(|doc| doc.path == BENCHMARK), "{BENCHMARK} is not among the docs read");
    for doc in &docs {
        for (number, line) in doc.lines() {
            if doc.path == BENCHMARK && (first..=last).contains(&number) {
                continue;
            }
            let bytes = byte_sizes(line);
            // Tables elsewhere (start-up, RSS) hold other figures in MiB.
            let prose = if line.trim_start().starts_with('|') { Vec::new() } else { prose_sizes(line) };
            let names_a_binary =
                ["ingress", "worker", "responder", "binar", "bootstrap", "floor"].iter().any(|w| line.contains(w));
            if !bytes.is_empty() || (names_a_binary && !prose.is_empty()) {
                problems.push(format!(
                    "{} states a size ({bytes:?} B, {prose:?}) outside {BENCHMARK}'s {SIZES_SECTION:?} table: point at it instead",
                    doc.at(number)
                ));
            }
        }
    }
    assert_none(problems, "binary sizes are stated more than once");
}

// ---------------------------------------------------------------------------
// Limits the docs state that are constants in the code.

/// A constant's value as a number: integers (`12_000`, `30 * 24 * 3600`),
/// durations in seconds (`Duration::from_millis(400)` is 0.4).
fn value_of(sources: &[SourceFile], name: &str) -> Result<f64, String> {
    let definition = format!("const {name}: ");
    let found: Vec<(&SourceFile, usize)> = sources
        .iter()
        .flat_map(|file| file.text.match_indices(&definition).map(move |(at, _)| (file, at)))
        .filter(|(file, at)| *at == 0 || !file.text.as_bytes()[at - 1].is_ascii_alphanumeric())
        .collect();
    let [(file, at)] = found[..] else {
        return Err(format!("`{name}` is defined {} times in the workspace's code, not once", found.len()));
    };
    let expression = file.text[at..]
        .split_once('=')
        .and_then(|(_, rest)| rest.split_once(';'))
        .map(|(expression, _)| expression.trim())
        .ok_or(format!("{}: `{name}` is not `const {name}: T = …;`", file.path))?;
    let (scale, expression) = if let Some(inner) = expression.strip_prefix("Duration::from_millis(") {
        (0.001, inner.trim_end_matches(')'))
    } else if let Some(inner) = expression.strip_prefix("Duration::from_secs(") {
        (1.0, inner.trim_end_matches(')'))
    } else {
        (1.0, expression)
    };
    expression.split('*').map(str::trim).try_fold(scale, |product, factor| {
        let value = match factor.replace('_', "").parse::<f64>() {
            Ok(value) => value,
            Err(_) => value_of(sources, factor.rsplit("::").next().unwrap_or(factor))?,
        };
        Ok(product * value)
    })
}

/// Every non-test source file of the crates the functions are built from.
fn function_sources(workspace: &Workspace) -> Vec<SourceFile> {
    FUNCTIONS
        .iter()
        .flat_map(|f| workspace.closure(f))
        .collect::<BTreeSet<_>>()
        .iter()
        .flat_map(|name| workspace.sources(name))
        .collect()
}

/// (doc, where the doc states it with `{}` for each number, and for each
/// number the constant and what one stated unit is in the constant's:
/// a duration constant is in seconds, so a stated `ms` is 0.001).
type Limit = (&'static str, &'static str, &'static [(&'static str, f64)]);

const LIMITS: &[Limit] = &[
    (CONTRACT, "Each check is bounded by {} s", &[("CHECK_TIMEOUT", 1.0)]),
    (
        ARCHITECTURE,
        "one append per {} ms at most, each under {} characters",
        &[("APPEND_INTERVAL", 0.001), ("APPEND_CHARS", 1.0)],
    ),
    (ARCHITECTURE, "constant-time, ±{} s", &[("MAX_SKEW_SECS", 1.0)]),
    (ARCHITECTURE, "answer streams started this minute (at most {}:", &[("STREAM_STARTS_PER_MINUTE", 1.0)]),
    (
        ARCHITECTURE,
        "`STREAM_STARTS#{team}#{minute}` / `COUNT` | worker | worker | {} minutes",
        &[("STREAM_STARTS_SECS", 60.0)],
    ),
    (
        ARCHITECTURE,
        "the model call's {} s, the longest tool's {} s",
        &[("MODEL_CALL_TIME", 1.0), ("MAX_TOOL_TIME", 1.0)],
    ),
    (ARCHITECTURE, "at most {} a minute", &[("PER_MINUTE", 1.0)]),
    (CONTRACT, "when it is under {} minutes old", &[("FRESH_FOR_SECS", 60.0)]),
    (FILES, "at most {} MB of images and documents together", &[("MAX_BLOCK_BYTES", 1e6)]),
    (FILES, "png, jpeg, gif, webp up to {} MB", &[("IMAGE_BYTES", 1e6)]),
    (
        FILES,
        "PDF, doc, docx, xls, xlsx up to {} MB, at most {} a turn",
        &[("DOCUMENT_BYTES", 1e6), ("MAX_DOCUMENTS", 1.0)],
    ),
    (FILES, "The first {} MiB are kept", &[("TEXT_BYTES", 1024.0 * 1024.0)]),
    (FILES, "rich text nested deeper than {} levels", &[("MAX_DEPTH", 1.0)]),
    (
        FILES,
        "a message over {} KB as text is kept to its first {} KB",
        &[("RENDERED_BYTES", 1024.0), ("RENDERED_BYTES", 1024.0)],
    ),
    (FILES, "The last {} messages of a thread are", &[("HISTORY_LIMIT", 1.0)]),
    (FILES, "each earlier message is cut at {} KB", &[("MESSAGE_BYTES", 1024.0)]),
    (FILES, "the newest of them are kept up to {} KB together", &[("HISTORY_BYTES", 1024.0)]),
    (FILES, "and the question at {} KB", &[("QUESTION_BYTES", 1024.0)]),
    (SECURITY, "runs at most {} tool calls a step", &[("MAX_TOOL_CALLS_PER_STEP", 1.0)]),
    (CONFIGURATION, "when the copy is under {} minutes old", &[("FRESH_FOR_SECS", 60.0)]),
    (FILES, "up to {} rows and {} numeric columns", &[("CHART_POINTS", 1.0), ("CHART_SERIES", 1.0)]),
    (FILES, "Slack draws at most {} charts a message", &[("CHARTS_PER_MESSAGE", 1.0)]),
    (
        FILES,
        "titles are cut at {} characters, labels, series names and categories at {}",
        &[("CHART_TITLE_CHARS", 1.0), ("CHART_LABEL_CHARS", 1.0)],
    ),
    (
        FILES,
        "A chart holds {} points, so a longer series is merged into {} runs",
        &[("METRIC_CHART_POINTS", 1.0), ("METRIC_CHART_POINTS", 1.0)],
    ),
    (FILES, "At most {} metric charts an answer", &[("MAX_METRIC_CHARTS", 1.0)]),
    (FILES, "a table over the table block's {} rows", &[("TABLE_ROWS", 1.0)]),
    (FILES, "page through ({} rows a page)", &[("DATA_TABLE_PAGE", 1.0)]),
    (
        FILES,
        "A data table holds its header and at most {} rows, {} columns and {} characters of cells",
        &[("DATA_TABLE_ROWS", 1.0), ("TABLE_COLUMNS", 1.0), ("TABLE_CHARS", 1.0)],
    ),
    (
        FILES,
        "data tables of up to {} rows under the header each, one a message, at most {} of them",
        &[("DATA_TABLE_ROWS", 1.0), ("DATA_TABLES", 1.0)],
    ),
    (FILES, "an answer of more than {} messages is its lead and a file", &[("MAX_ANSWER_MESSAGES", 1.0)]),
    (RELIABILITY_WRITES, "without reading the bucket for {} minutes after its read", &[("FRESH_FOR_SECS", 60.0)]),
    (TOOLS, "it pings and links nothing, at most {} characters", &[("MAX_LINK_MESSAGE", 1.0)]),
    (TOOLS, "shows its links (at most {})", &[("MAX_LINKS_SHOWN", 1.0)]),
    (TOOLS, "at most {} fields, choices of at most", &[("MAX_FIELDS", 1.0)]),
    (TOOLS, "choices of at most {} options", &[("MAX_OPTIONS", 1.0)]),
    (TOOLS, "(the last {} s are the server's)", &[("SERVERS_TURN", 1.0)]),
    (TOOLS, "are shown, at most {} characters", &[("MAX_LINK_URL", 1.0)]),
    (TOOLS, "at the pace the server suggests (between {} and {}", &[("LEAST_POLL", 1.0), ("MOST_POLL", 1.0)]),
    (TOOLS, "`task_wait_secs` (default and at most {})", &[("MAX_TASK_WAIT", 1.0)]),
    (CONFIGURATION, "more than 0 and at most {}; at least one set", &[("MAX_BUDGET_USD", 1.0)]),
    (CONFIGURATION, "passes `alert_at` (default {})", &[("DEFAULT_ALERT_AT", 1.0)]),
    (ARCHITECTURE, "kept for {} days after the period ends", &[("SPEND_KEPT_AFTER_SECS", 86_400.0)]),
    (TOOLS, "with control characters or over {} characters is refused", &[("MAX_URI_CHARS", 1.0)]),
    (TOOLS, "an answer over {} MiB is refused", &[("MAX_MCP_ANSWER_BYTES", 1024.0 * 1024.0)]),
    (TOOLS, "Slack shows at most {} suggested prompts in all", &[("MAX_SUGGESTED_PROMPTS", 1.0)]),
    (
        TOOLS,
        "the title cut at {} characters and the message at {}",
        &[("MAX_SUGGESTED_TITLE_CHARS", 1.0), ("MAX_SUGGESTED_MESSAGE_CHARS", 1.0)],
    ),
    (
        CONFIGURATION,
        "1 to {} prompts (`title` up to {} characters on the button, `message` up to {}",
        &[("MAX_SUGGESTED_PROMPTS", 1.0), ("MAX_SUGGESTED_TITLE_CHARS", 1.0), ("MAX_SUGGESTED_MESSAGE_CHARS", 1.0)],
    ),
];

#[test]
fn limits_the_docs_state_are_the_constants_in_the_code() {
    let root = root();
    let workspace = Workspace::read(&root);
    let sources = function_sources(&workspace);
    let mut problems = Vec::new();
    for (path, template, constants) in LIMITS {
        // GIVEN a limit the docs state
        let doc = Doc::read(&root, path);
        let found = doc.numbers(template);
        let names: Vec<&str> = constants.iter().map(|(name, _)| *name).collect();
        if found.is_empty() {
            problems.push(format!("{path}: no sentence matches {template:?} (the check of {names:?})"));
        }
        // WHEN its constants are read from the code
        let expected: Result<Vec<f64>, String> = names.iter().map(|name| value_of(&sources, name)).collect();
        let expected = match expected {
            Ok(values) => values,
            Err(err) => {
                problems.push(err);
                continue;
            }
        };
        // THEN the doc states them
        for (line, values) in found {
            let same = values
                .iter()
                .zip(constants.iter())
                .zip(&expected)
                .all(|((stated, (_, unit)), code)| (stated * unit - code).abs() < 1e-6 * code.abs().max(1.0));
            if !same {
                problems.push(format!(
                    "{} states {values:?} ({template:?}); in the code {names:?} are {expected:?}",
                    doc.at(line)
                ));
            }
        }
    }
    assert_none(problems, "limits in the docs differ from the code's constants");
}

#[test]
fn environment_defaults_in_the_runtime_contract_are_the_codes() {
    // GIVEN the contract's defaults
    let root = root();
    let doc = Doc::read(&root, CONTRACT);
    let table = doc.table("Environment variables", "variable");
    let default_column = table.column("default");
    // WHEN the code's defaults are read
    let defaults = [
        ("SLACK_API_BASE_URL", adapters_slack::web::DEFAULT_BASE_URL.to_owned()),
        ("ASSISTANT_CONFIG_KEY", worker_config::DEFAULT_CONFIG_KEY.to_owned()),
        ("MAX_STEPS", worker_turn::Limits::default().max_steps.to_string()),
    ];
    let mut problems = Vec::new();
    for (name, default) in defaults {
        let row = table.rows.iter().find(|row| code_spans(&row.cells[0]).contains(&name.to_owned()));
        let Some(row) = row else {
            problems.push(format!("{CONTRACT}: no row for {name}"));
            continue;
        };
        // THEN each is the default the contract states
        let stated = code_spans(&row.cells[default_column]).into_iter().next();
        if stated.as_deref() != Some(default.as_str()) {
            problems.push(format!(
                "{} states the default of {name} as {stated:?}; the code's is {default:?}",
                doc.at(row.line)
            ));
        }
    }
    assert_none(problems, "the runtime contract's defaults differ from the code");
}

// ---------------------------------------------------------------------------
// The README and the book.

/// The README is a landing page: what it is, the two commands, deploy in a
/// handful of steps, where to read next. The rest is the book.
const README_MOST_LINES: usize = 250;

#[test]
fn the_readme_is_a_landing_page_and_the_rest_is_in_the_book() {
    // GIVEN the README
    let readme = Doc::read(&root(), "README.md");
    // WHEN its lines are counted
    let lines = readme.lines().count();
    // THEN there are fewer than the landing page's budget
    assert!(
        lines < README_MOST_LINES,
        "README.md has {lines} lines, a landing page under {README_MOST_LINES}: move the detail to a chapter in docs/src/"
    );
}

#[test]
fn every_chapter_is_in_the_books_summary() {
    // GIVEN the book's summary and its chapters' sources
    let root = root();
    let summary = Doc::read(&root, "docs/src/SUMMARY.md");
    let listed: BTreeSet<String> = summary
        .links()
        .into_iter()
        .map(|(_, target)| format!("docs/src/{}", target.split('#').next().unwrap_or_default()))
        .collect();
    let chapters: BTreeSet<String> = markdown_files(&root)
        .into_iter()
        .filter(|path| path.starts_with("docs/src/") && path != &summary.path)
        .collect();
    assert!(chapters.contains(CONTRACT), "the scan found no chapters: {chapters:?}");
    // WHEN each is looked for in the other
    let mut problems = Vec::new();
    for chapter in chapters.difference(&listed) {
        problems.push(format!("{chapter} is not in docs/src/SUMMARY.md, so the book leaves it out"));
    }
    for entry in listed.difference(&chapters) {
        problems.push(format!("docs/src/SUMMARY.md lists {entry}, which does not exist"));
    }
    // THEN they are the same
    assert_none(problems, "the book's summary and its chapters differ");
}

// ---------------------------------------------------------------------------
// The layout: every crate, and what it uses.

const LAYOUT: &str = "docs/src/layout.md";

/// The workspace's member folders (its `members`, globs expanded) and
/// each one's package name and the workspace crates its `[dependencies]`
/// name.
fn workspace_crates(root: &Path) -> BTreeMap<String, (String, BTreeSet<String>)> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let members = manifest.split("members = [").nth(1).and_then(|rest| rest.split(']').next()).expect("members");
    let mut folders = Vec::new();
    for member in members.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| !m.is_empty()) {
        match member.strip_suffix("/*") {
            Some(parent) => {
                for entry in std::fs::read_dir(root.join(parent)).expect("a member folder").flatten() {
                    if entry.path().join("Cargo.toml").exists() {
                        folders.push(format!("{parent}/{}", entry.file_name().to_string_lossy()));
                    }
                }
            }
            None => folders.push(member.to_owned()),
        }
    }
    let read = |folder: &str| std::fs::read_to_string(root.join(folder).join("Cargo.toml")).expect("a Cargo.toml");
    let name_of = |text: &str| {
        let line = text.lines().find(|line| line.starts_with("name = ")).expect("a package name");
        line.trim_start_matches("name = ").trim_matches('"').to_owned()
    };
    let names: BTreeSet<String> = folders.iter().map(|folder| name_of(&read(folder))).collect();
    folders
        .iter()
        .map(|folder| {
            let text = read(folder);
            let dependencies = text.split("[dependencies]").nth(1).unwrap_or_default();
            let dependencies = dependencies.split("\n[").next().unwrap_or_default();
            let uses = dependencies
                .lines()
                .filter_map(|line| line.split(['.', ' ', '=']).next())
                .filter(|name| names.contains(*name))
                .map(str::to_owned)
                .collect();
            (folder.clone(), (name_of(&text), uses))
        })
        .collect()
}

#[test]
fn the_layout_names_every_crate_and_what_it_uses() {
    // GIVEN the workspace's crates and the layout chapter's table
    let root = root();
    let crates = workspace_crates(&root);
    assert!(crates.contains_key("shared/worker/turn"), "the scan found the worker's crates: {crates:?}");
    let layout = Doc::read(&root, LAYOUT);
    let mut rows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, line) in layout.lines().filter(|(_, line)| line.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let Some(folder) = code_spans(cells[0]).into_iter().next() else { continue };
        let uses = cells.get(2).map(|cell| code_spans(cell).into_iter().collect()).unwrap_or_default();
        rows.insert(folder.trim_end_matches('/').to_owned(), uses);
    }
    // WHEN each crate's row is looked for and its uses compared
    let mut problems = Vec::new();
    for (folder, (name, uses)) in &crates {
        match rows.get(folder) {
            None => problems.push(format!("{LAYOUT} has no row for `{folder}` (`{name}`)")),
            Some(stated) if stated != uses => problems.push(format!(
                "`{folder}` uses {uses:?} by its Cargo.toml; {LAYOUT} says {stated:?} (a new use is a layering \
                 decision: say it in the table, or take it out)"
            )),
            Some(_) => {}
        }
    }
    // THEN every crate is there, using what the table says
    assert_none(problems, "the layout chapter and the workspace differ");
}

// ---------------------------------------------------------------------------
// Links and citations.

/// README.md and every Markdown file under docs/ (the book's sources, not
/// what `mdbook build` wrote to docs/book/), relative to the root.
fn markdown_files(root: &Path) -> Vec<String> {
    let mut docs = Vec::new();
    let mut todo = vec![root.join("docs")];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path != root.join("docs/book") {
                    todo.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "md") {
                docs.push(path.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    docs.sort();
    std::iter::once("README.md".to_owned()).chain(docs).collect()
}

#[test]
fn every_relative_link_in_the_readme_and_the_docs_resolves() {
    let root = root();
    let mut problems = Vec::new();
    for path in markdown_files(&root) {
        // GIVEN each link of each page
        let doc = Doc::read(&root, &path);
        for (line, target) in doc.links() {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            // WHEN it is followed
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if file.is_empty() { root.join(&path) } else { markdown::resolve(&root, &path, file) };
            // THEN the file exists, and the heading it names
            if !resolved.exists() {
                problems.push(format!(
                    "{}: ({target}) points at {}, which does not exist",
                    doc.at(line),
                    resolved.display()
                ));
                continue;
            }
            if !anchor.is_empty() && resolved.extension().is_some_and(|ext| ext == "md") {
                let relative = resolved.strip_prefix(&root).unwrap_or(&resolved).to_string_lossy().replace("/./", "/");
                let target_doc = Doc { path: relative, text: std::fs::read_to_string(&resolved).unwrap() };
                if !target_doc.anchors().iter().any(|a| a == anchor) {
                    problems.push(format!(
                        "{}: ({target}): {} has no heading #{anchor}",
                        doc.at(line),
                        target_doc.path
                    ));
                }
            }
        }
    }
    assert_none(problems, "links in the README and the docs point nowhere");
}

/// The files a check of citations reads: text files of the repository,
/// what is built or installed left out.
fn repository_files(root: &Path) -> Vec<PathBuf> {
    let skipped = [".git", "target", "node_modules", ".aws-sam", ".venv"];
    let texts = ["rs", "md", "toml", "sh", "yaml", "yml", "py", "mjs", "json"];
    let mut files = Vec::new();
    let mut todo = vec![root.to_owned()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !skipped.contains(&name.as_str()) {
                    todo.push(path);
                }
            } else if path.extension().is_some_and(|ext| texts.contains(&ext.to_string_lossy().as_ref())) {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Whether `word` cites a document of ours rather than naming an object
/// elsewhere (`config/system-prompt.md` is a key in the bucket): an
/// upper-case name (`README.md`), a path out of the file's folder, or, in
/// Markdown, a path into `docs/`.
fn cites_a_document(word: &str, in_markdown: bool) -> bool {
    let Some(stem) = word.strip_suffix(".md") else { return false };
    let name = stem.rsplit('/').next().unwrap_or(stem);
    let upper = !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    // In code, `docs/…` is the bucket's docs prefix, not this repository's.
    upper || word.starts_with("../") || (in_markdown && word.starts_with("docs/"))
}

#[test]
fn every_document_a_file_cites_is_in_the_repository() {
    let root = root();
    let canonical_root = root.canonicalize().unwrap();
    let mut problems = Vec::new();
    for path in repository_files(&root) {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let relative = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        // GIVEN each document a file cites
        for (line, text) in text.lines().enumerate() {
            let cited = text
                .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '_' | '-')))
                .filter(|word| cites_a_document(word, relative.ends_with(".md")));
            for name in cited {
                // WHEN it is looked for beside the file, then from the root
                let found = [path.parent().unwrap().join(name), root.join(name)]
                    .into_iter()
                    .filter_map(|candidate| candidate.canonicalize().ok())
                    .any(|candidate| candidate.starts_with(&canonical_root));
                // THEN it is in the repository
                if !found {
                    problems.push(format!("{relative}:{} cites {name}, which is not in the repository", line + 1));
                }
            }
        }
    }
    assert_none(problems, "files cite documents the repository does not have");
}

/// `1,000` for 1000: as the book writes figures.
fn with_commas(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn the_reading_budgets_the_book_states_are_the_codes() {
    use assistant_core::reading::{FLOOR_TOKENS, ReadingBudget};
    let claude = ReadingBudget::for_model("us.anthropic.claude-sonnet-4-20250514-v1:0");
    let unknown = ReadingBudget::for_model("someone.new-model-v1");
    let root = root();
    let read =
        |path: &str| std::fs::read_to_string(root.join(path)).unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
    let (tools, configuration) = (read("docs/src/tools.md"), read("docs/src/configuration.md"));
    let stated = [
        (&tools, format!("({} tokens for Claude's 200k,", with_commas(claude.result_tokens))),
        (&tools, format!("{} for an unknown model)", with_commas(unknown.result_tokens))),
        (&tools, format!("({} tokens for Claude)", with_commas(claude.turn_tokens))),
        (&tools, format!("(never under {FLOOR_TOKENS} tokens)")),
        (
            &configuration,
            format!(r#"{{"result_tokens": {}, "turn_tokens": {}}}"#, claude.result_tokens, claude.turn_tokens),
        ),
    ];
    let problems: Vec<String> = stated
        .iter()
        .filter(|(doc, figure)| !doc.contains(figure.as_str()))
        .map(|(_, figure)| format!("the book does not say {figure:?}"))
        .collect();
    assert_none(problems, "reading budgets in the book differ from assistant_core::reading's");
}

#[test]
fn the_guardrail_figures_the_book_states_are_the_codes() {
    use assistant_core::guardrail::{CONTENT_UNIT, IMAGE_UNIT, SENSITIVE_UNIT, TOPIC_UNIT};
    use worker_turn::guarding::CHUNK_CHARS;
    let root = root();
    let read =
        |path: &str| std::fs::read_to_string(root.join(path)).unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
    let (configuration, security) = (read(CONFIGURATION), read(SECURITY));
    let per_thousand = |unit: f64| format!("${:.2}", unit * 1_000.0);
    assert_eq!(CONTENT_UNIT, TOPIC_UNIT, "the book gives content filters and denied topics one price");
    let stated = [
        (&configuration, format!("content filters and denied topics {}", per_thousand(CONTENT_UNIT))),
        (&configuration, format!("sensitive information {} per 1,000 units", per_thousand(SENSITIVE_UNIT))),
        (&configuration, format!("images ${IMAGE_UNIT} each")),
        (&security, format!("in overlapping pieces of {} characters", with_commas(CHUNK_CHARS as u64))),
    ];
    let problems: Vec<String> = stated
        .iter()
        .filter(|(doc, figure)| !doc.contains(figure.as_str()))
        .map(|(_, figure)| format!("the book does not say {figure:?}"))
        .collect();
    assert_none(problems, "guardrail figures in the book differ from the code's");
}

#[test]
fn a_metric_chart_takes_what_the_responder_charts_of_a_table() {
    // The worker writes a metric's points as a table the responder charts:
    // one more point, or one more chart, and the table would go uncharted.
    assert_eq!(worker_turn::metric_charts::METRIC_CHART_POINTS, responder_logic::charts::CHART_POINTS);
    assert_eq!(worker_turn::metric_charts::MAX_METRIC_CHARTS, responder_logic::charts::CHARTS_PER_MESSAGE);
}

/// The rows of the benchmark's one table (`bench/src/summary.rs`'s
/// `ROWS`): each figure and its budget.
fn benchmark_rows(root: &std::path::Path) -> Vec<(String, String)> {
    let source = std::fs::read_to_string(root.join("bench/src/summary.rs")).expect("bench/src/summary.rs");
    let (_, rows) = source.split_once("pub const ROWS").expect("ROWS in bench/src/summary.rs");
    let (rows, _) = rows.split_once("];").expect("ROWS ends");
    rows.lines()
        .filter_map(|line| line.trim().strip_prefix("(\"")?.strip_suffix("\"),")?.split_once("\", \""))
        .map(|(figure, budget)| (figure.to_owned(), budget.to_owned()))
        .collect()
}

#[test]
fn the_readme_and_the_book_hold_the_benchmarks_one_table_as_it_prints_it_with_the_command_and_commit() {
    let root = root();
    let rows = benchmark_rows(&root);
    assert!(rows.len() >= 6, "ROWS read from bench/src/summary.rs: {rows:?}");
    let mut problems = Vec::new();
    for (path, section) in [("README.md", "Benchmark"), (BENCHMARK, "Benchmark")] {
        // GIVEN the table the doc holds under its benchmark heading
        let doc = Doc::read(&root, path);
        let table = doc.table(section, "figure");
        let stated: Vec<(String, String)> = table
            .rows
            .iter()
            .map(|row| (row.cells[0].clone(), row.cells.get(2).cloned().unwrap_or_default()))
            .collect();
        // THEN it has the benchmark's rows and budgets, in its order, each measured
        if stated != rows {
            problems
                .push(format!("{path}: the table's rows and budgets are {stated:?}; the benchmark prints {rows:?}"));
        }
        for row in table.rows.iter().filter(|row| row.cells.iter().any(|cell| cell.contains("not measured"))) {
            problems.push(format!("{}: a row not measured in the run pasted", doc.at(row.line)));
        }
        // AND it names the command that printed it and the commit it measured
        let (first, last) = doc.section(section);
        let named = doc
            .lines()
            .filter(|(n, _)| (first..=last).contains(n))
            .any(|(_, line)| line.starts_with("`bash infra/bench.sh` at ") && line.trim_end().ends_with(':'));
        if !named {
            problems.push(format!("{path}: no line \"`bash infra/bench.sh` at <commit>, …:\" above the table"));
        }
    }
    assert_none(problems, "the benchmark's table in the docs is not the one it prints");
}
