//! `attach_result`: the model keeps a tool's result for the people in the
//! thread, as a file beside its answer: a log query's rows as CSV, a long
//! excerpt as text. The model sees a preview of a large result; people get
//! all of it.
//!
//! The worker handles the call itself (it needs the turn's earlier
//! results): it finds the named result, renders it (rows as CSV, with
//! spreadsheet formulas defused; anything else as text), redacts it,
//! uploads it to Slack without sharing it, and records the file id in the
//! turn. The responder shares the recorded files in the thread with the
//! answer, each once (its delivery record, and a look in the thread after a
//! share whose answer was lost). An upload whose step is redone (a crash
//! before the step's save) is never shared: Slack discards it.

use assistant_core::model::ToolSpec;
use assistant_core::ports::{AgentSlack, ArtifactStore, FileUpload};
use assistant_core::turn::{AnswerFile, Content, ToolOutput, ToolResult, ToolStatus, ToolUse, Turn};
use serde_json::{Value, json};
use std::time::Duration;
pub use tools_registry::ATTACH_RESULT;
use tools_registry::{Effect, Tool};
use tracing::{info, warn};

/// The most files one answer gets.
pub const MAX_ANSWER_FILES: usize = 3;
/// The most of one file (the rest is cut, and the file says so).
const MAX_FILE_BYTES: usize = 2 * 1024 * 1024;

/// The tool as the model is told about it; its calls are the worker's
/// ([`attach`]), never the registry's.
pub fn attach_result_tool() -> Tool {
    let spec = ToolSpec {
        name: ATTACH_RESULT.into(),
        description: "Attach the whole result of one of your earlier tool calls to your answer as a file, for the \
                      people in the thread (rows become a CSV). Use it when the result is worth keeping: a log \
                      query's rows, an excerpt they will want to read in full. At most 3 per answer."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "tool_use_id": {"type": "string", "description": "The id of the earlier tool call whose result to attach."},
                "filename": {"type": "string", "maxLength": 80, "description": "A short file name, e.g. checkout-errors.csv."}
            },
            "required": ["tool_use_id", "filename"],
            "additionalProperties": false
        }),
    };
    Tool::new(spec, Effect::ReadOnly, Duration::from_secs(30), |_| async {
        Err::<ToolOutput, _>("attach_result is handled by the worker".into())
    })
    .expect("the built-in schema is valid")
}

/// Runs an `attach_result` call for `turn`: its result for the model, and
/// the file to record when one was uploaded.
pub async fn attach(
    artifacts: &dyn ArtifactStore,
    agent: &dyn AgentSlack,
    turn: &Turn,
    call: &ToolUse,
) -> (ToolResult, Option<AnswerFile>) {
    let reply =
        |status, text: String| ToolResult { tool_use_id: call.id.clone(), status, output: ToolOutput::Text(text) };
    if turn.answer_files.len() >= MAX_ANSWER_FILES {
        return (reply(ToolStatus::Error, format!("This answer has {MAX_ANSWER_FILES} files already.")), None);
    }
    let wanted = call.input["tool_use_id"].as_str().unwrap_or_default();
    let Some(result) = earlier_result(turn, wanted) else {
        return (reply(ToolStatus::Error, format!("No successful tool call {wanted:?} in this turn to attach.")), None);
    };
    let body = match &result.output {
        ToolOutput::Stored { key, .. } => match artifacts.get(key).await {
            Ok(Some(body)) => body,
            Ok(None) => return (reply(ToolStatus::Error, "That result is no longer kept.".into()), None),
            Err(err) => return (reply(ToolStatus::Error, format!("That result could not be read: {err}")), None),
        },
        ToolOutput::Text(text) => text.clone().into_bytes(),
        ToolOutput::Json(value) => serde_json::to_vec_pretty(value).unwrap_or_default(),
        ToolOutput::Task(_) => return (reply(ToolStatus::Error, "That call has no result yet.".into()), None),
    };
    let (text, csv) = render(&body);
    let filename = filename(call.input["filename"].as_str().unwrap_or_default(), csv, &call.id);
    let mut text = redact::redact(&text).into_owned();
    if text.len() > MAX_FILE_BYTES {
        let mut end = MAX_FILE_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("\n(cut at 2 MB)\n");
    }
    let file = FileUpload { filename: filename.clone(), title: filename.clone(), body: text.into_bytes() };
    match agent.upload(&file).await {
        Ok(file_id) => {
            info!(file = %file_id, bytes = file.body.len(), "result uploaded for the answer");
            let attached = AnswerFile { file_id, filename: filename.clone(), title: file.title };
            let note = format!("{filename} will be attached to your answer in the thread; do not paste its content.");
            (reply(ToolStatus::Success, note), Some(attached))
        }
        Err(err) => {
            warn!(error = %err, "result not uploaded");
            let why = format!("The file could not be attached ({err}); the app may lack the files:write scope.");
            (reply(ToolStatus::Error, why), None)
        }
    }
}

/// A successful result of an earlier call of this turn (not of another
/// `attach_result`).
pub(crate) fn earlier_result<'t>(turn: &'t Turn, id: &str) -> Option<&'t ToolResult> {
    let attachable = turn
        .transcript
        .iter()
        .flat_map(|m| &m.content)
        .any(|content| matches!(content, Content::ToolUse(call) if call.id == id && call.name != ATTACH_RESULT));
    let mut results = turn.transcript.iter().flat_map(|m| &m.content).filter_map(|content| match content {
        Content::ToolResult(result) if result.tool_use_id == id && result.status == ToolStatus::Success => Some(result),
        _ => None,
    });
    attachable.then_some(()).and(results.next_back())
}

/// The file's text: rows as CSV when the result holds a list of objects
/// (itself, or under `rows`, `results`, `items`, `data`), else as it is.
fn render(body: &[u8]) -> (String, bool) {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return (String::from_utf8_lossy(body).into_owned(), false);
    };
    let rows = [&value, &value["rows"], &value["results"], &value["items"], &value["data"]]
        .into_iter()
        .filter_map(Value::as_array)
        .find(|rows| !rows.is_empty() && rows.iter().all(Value::is_object));
    match rows {
        Some(rows) => (csv(rows), true),
        None => (serde_json::to_string_pretty(&value).unwrap_or_default(), false),
    }
}

/// Rows as CSV (RFC 4180): the columns in order of first appearance (each
/// row's in key order); a text cell a spreadsheet would run as a formula
/// (`=`, `+`, `-`, tab, carriage return first, or `@` before a call) is
/// written with a leading `'`.
fn csv(rows: &[Value]) -> String {
    let mut columns: Vec<&str> = Vec::new();
    for row in rows {
        for key in row.as_object().into_iter().flat_map(|row| row.keys()) {
            if !columns.contains(&key.as_str()) {
                columns.push(key);
            }
        }
    }
    let quoted = |text: String| {
        if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text }
    };
    // A string a spreadsheet would run; `@` only before a call (`@SUM(`),
    // so Logs Insights' `@timestamp` stays as it is.
    let cell = |text: &str| {
        let formula = text.starts_with(['=', '+', '-', '\t', '\r']) || (text.starts_with('@') && text.contains('('));
        quoted(if formula { format!("'{text}") } else { text.to_owned() })
    };
    let mut out = columns.iter().map(|column| cell(column)).collect::<Vec<_>>().join(",") + "\r\n";
    for row in rows {
        let cells: Vec<String> = columns
            .iter()
            .map(|column| match &row[*column] {
                Value::Null => String::new(),
                Value::String(text) => cell(text),
                // Numbers and the like are data, never formulas.
                other => quoted(other.to_string()),
            })
            .collect();
        out.push_str(&cells.join(","));
        out.push_str("\r\n");
    }
    out
}

/// A file name people can open: letters, digits, `-`, `_`, `.`, at most 80
/// characters, with the extension the content has.
fn filename(asked: &str, csv: bool, call_id: &str) -> String {
    let stem = asked.rsplit_once('.').map_or(asked, |(stem, _)| stem);
    let clean: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' })
        .take(70)
        .collect();
    let clean = clean.trim_matches('-');
    let stem = if clean.is_empty() { format!("result-{call_id}") } else { clean.to_owned() };
    format!("{stem}.{}", if csv { "csv" } else { "txt" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use assistant_core::turn::{Message, Role};
    use testkit::agent_memory::MemoryAgent;
    use testkit::memory::MemoryArtifacts;

    fn turn_with(result: ToolOutput, status: ToolStatus) -> Turn {
        let mut turn = testkit::store_contract::new_turn("Ev1");
        let call = ToolUse { id: "q1".into(), name: "logs_query".into(), input: json!({}) };
        turn.transcript.push(Message { role: Role::Assistant, content: vec![Content::ToolUse(call)] });
        let result = ToolResult { tool_use_id: "q1".into(), status, output: result };
        turn.transcript.push(Message { role: Role::User, content: vec![Content::ToolResult(result)] });
        turn
    }

    fn attach_call(id: &str, filename: &str) -> ToolUse {
        ToolUse { id: "a1".into(), name: ATTACH_RESULT.into(), input: json!({"tool_use_id": id, "filename": filename}) }
    }

    #[tokio::test]
    async fn a_log_querys_rows_become_a_redacted_csv_with_formulas_defused() {
        let secret = format!("AKIA{}", "Q7W3E5R8T2Y4U6I9");
        let rows = json!({"rows": [
            {"@timestamp": "2025-11-22 08:00:03", "@message": format!("ERROR key {secret}, pool \"exhausted\"")},
            {"@timestamp": "2025-11-22 08:00:04", "@message": "=HYPERLINK(\"https://evil.example\")", "level": "warn", "ms": -5},
            {"@message": "@SUM(A1:A9)", "ms": 3}
        ], "rows_shown": 2});
        let (artifacts, agent) = (MemoryArtifacts::default(), MemoryAgent::default());
        let turn = turn_with(ToolOutput::Json(rows), ToolStatus::Success);

        let (result, file) = attach(&artifacts, &agent, &turn, &attach_call("q1", "../../checkout errors.xlsx")).await;

        assert_eq!(result.status, ToolStatus::Success, "{result:?}");
        let file = file.expect("recorded");
        assert_eq!(file.filename, "checkout-errors.csv", "no path, the content's extension");
        let uploads = agent.uploads();
        assert_eq!(uploads[0].0, file.file_id);
        let csv = String::from_utf8(uploads[0].1.body.clone()).unwrap();
        assert_eq!(
            csv,
            "@message,@timestamp,level,ms\r\n\
             \"ERROR key [redacted: aws access key id], pool \"\"exhausted\"\"\",2025-11-22 08:00:03,,\r\n\
             \"'=HYPERLINK(\"\"https://evil.example\"\")\",2025-11-22 08:00:04,warn,-5\r\n\
             '@SUM(A1:A9),,,3\r\n"
        );
    }

    #[tokio::test]
    async fn only_a_successful_earlier_result_of_this_turn_is_attached_and_at_most_three() {
        let (artifacts, agent) = (MemoryArtifacts::default(), MemoryAgent::default());
        let failed = turn_with(ToolOutput::Text("boom".into()), ToolStatus::Error);
        let (result, file) = attach(&artifacts, &agent, &failed, &attach_call("q1", "x.txt")).await;
        assert_eq!((result.status, file), (ToolStatus::Error, None));
        let turn = turn_with(ToolOutput::Text("log line".into()), ToolStatus::Success);
        let (result, file) = attach(&artifacts, &agent, &turn, &attach_call("q9", "x.txt")).await;
        assert_eq!((result.status, file), (ToolStatus::Error, None), "no such call");

        let mut full = turn_with(ToolOutput::Text("log line".into()), ToolStatus::Success);
        let uploaded = AnswerFile { file_id: "F1".into(), filename: "a.txt".into(), title: "a.txt".into() };
        full.answer_files = vec![uploaded; MAX_ANSWER_FILES];
        let (result, file) = attach(&artifacts, &agent, &full, &attach_call("q1", "x.txt")).await;
        assert_eq!((result.status, file), (ToolStatus::Error, None));
        assert!(agent.uploads().is_empty());

        // A stored (large) result is attached whole, from the bucket.
        artifacts.put("turns/T1/q1", b"line 1\nline 2\n".to_vec(), "text/plain").await.unwrap();
        let stored = ToolOutput::Stored { key: "turns/T1/q1".into(), bytes: 14, preview: "line 1".into(), shown: None };
        let turn = turn_with(stored, ToolStatus::Success);
        let (result, file) = attach(&artifacts, &agent, &turn, &attach_call("q1", "")).await;
        assert_eq!(result.status, ToolStatus::Success);
        assert_eq!(file.unwrap().filename, "result-a1.txt");
        assert_eq!(agent.uploads()[0].1.body, b"line 1\nline 2\n");
    }
}
