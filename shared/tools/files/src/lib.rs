//! The model reads what the turn keeps for it, by line range or grep:
//!
//! - `read_attachment`: a text file pasted in the thread (a log, a stack
//!   trace). The turn keeps each, redacted, under
//!   `turns/{turn}/files/{file_id}` when it starts (`worker-turn`'s
//!   `thread_files`).
//! - `read_result`: the rest of a tool result the model was shown part of
//!   (`assistant_core::reading`), kept under `turns/{turn}/results/{id}`,
//!   read as the same numbered lines the preview showed.
//!
//! Each reads only the asking turn's own. Uses the registry and the core,
//! nothing else.

use assistant_core::files;
use assistant_core::model::ToolSpec;
use assistant_core::ports::ArtifactStore;
use assistant_core::reading;
use assistant_core::turn::ToolOutput;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tools_registry::{CallContext, Effect, Tool, ToolError, ToolFuture};
pub use tools_registry::{READ_ATTACHMENT, READ_RESULT};

/// The most one `read_attachment` call returns.
const MAX_READ_LINES: usize = 400;
const MAX_READ_BYTES: usize = 24 * 1024;

/// `read_attachment`: lines of a text file pasted in this turn's thread,
/// by range or by grep. Reads only the asking turn's own files.
pub fn read_attachment(artifacts: Arc<dyn ArtifactStore>) -> Tool {
    let spec = ToolSpec {
        name: READ_ATTACHMENT.into(),
        description: "Read a text file (log, stack trace, snippet) someone pasted in this thread: a range of lines, \
                      or the lines matching a pattern. Secrets in it are redacted."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "file": {"type": "string", "description": "The file's id, as the thread's note gives it (F…)."},
                "start_line": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
                "lines": {"type": "integer", "minimum": 1, "maximum": MAX_READ_LINES},
                "grep": {"type": "string", "maxLength": 200, "description": "Only lines containing this text (case-insensitive)."}
            },
            "required": ["file"],
            "additionalProperties": false
        }),
    };
    Tool::new(spec, Effect::ReadOnly, Duration::from_secs(10), ReadAttachment { artifacts })
        .expect("the built-in schema is valid")
}

struct ReadAttachment {
    artifacts: Arc<dyn ArtifactStore>,
}

impl tools_registry::RunTool for ReadAttachment {
    fn run(&self, input: Value, context: CallContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let turn = context.turn.ok_or_else(|| "read_attachment works only inside a turn.".to_owned())?;
            let id = input["file"].as_str().unwrap_or_default();
            if !files::is_file_id(id) {
                return Err(format!("{id:?} is not a file id (F…).").into());
            }
            let text = match self.artifacts.get(&files::file_key(&turn, id)).await {
                Ok(Some(text)) => String::from_utf8_lossy(&text).into_owned(),
                Ok(None) => return Err(format!("No text file {id} was pasted in this thread.").into()),
                Err(err) => return Err(format!("The file could not be read just now: {err}").into()),
            };
            read_lines(&text, &input)
        })
    }
}

/// The lines `input` asks for (`start_line`, `lines`, `grep`) of `text`.
fn read_lines(text: &str, input: &Value) -> Result<ToolOutput, ToolError> {
    let start = input["start_line"].as_u64().unwrap_or(1).max(1) as usize;
    let wanted = input["lines"].as_u64().map_or(MAX_READ_LINES, |n| (n as usize).min(MAX_READ_LINES));
    let grep = input["grep"].as_str().map(str::to_lowercase);
    Ok(ToolOutput::Text(excerpt(text, start, wanted, grep.as_deref())))
}

/// `read_result`: the rest of a result of this turn that the model was
/// shown part of, by line range or grep.
pub fn read_result(artifacts: Arc<dyn ArtifactStore>) -> Tool {
    let spec = ToolSpec {
        name: READ_RESULT.into(),
        description: "Read more of one of your earlier tool results that was shown only in part (its note says \
                      so): a range of lines, or the lines matching a pattern. Lines are numbered as the note \
                      counts them; a record-per-line result keeps each record on one line."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "result": {"type": "string", "maxLength": 64, "description": "The id of the tool call whose result to read, as its note gives it."},
                "start_line": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
                "lines": {"type": "integer", "minimum": 1, "maximum": MAX_READ_LINES},
                "grep": {"type": "string", "maxLength": 200, "description": "Only lines containing this text (case-insensitive)."}
            },
            "required": ["result"],
            "additionalProperties": false
        }),
    };
    Tool::new(spec, Effect::ReadOnly, Duration::from_secs(10), ReadResult { artifacts })
        .expect("the built-in schema is valid")
}

struct ReadResult {
    artifacts: Arc<dyn ArtifactStore>,
}

impl tools_registry::RunTool for ReadResult {
    fn run(&self, input: Value, context: CallContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let turn = context.turn.ok_or_else(|| "read_result works only inside a turn.".to_owned())?;
            let id = input["result"].as_str().unwrap_or_default();
            if !reading::is_tool_use_id(id) {
                return Err(format!("{id:?} is not a tool call id.").into());
            }
            let body = match self.artifacts.get(&reading::result_key(&turn, id)).await {
                Ok(Some(body)) => body,
                Ok(None) => {
                    return Err(format!(
                        "No result of call {id} is kept in this turn: only results shown in part are."
                    )
                    .into());
                }
                Err(err) => return Err(format!("The result could not be read just now: {err}").into()),
            };
            read_lines(&reading::lines_of(&body).text(), &input)
        })
    }
}

/// Numbered lines from `start`, at most `wanted` (and [`MAX_READ_BYTES`]),
/// only those containing `grep` if given; says where it stopped.
fn excerpt(text: &str, start: usize, wanted: usize, grep: Option<&str>) -> String {
    let total = text.lines().count();
    let mut out = String::new();
    let (mut shown, mut next) = (0, None);
    for (index, line) in text.lines().enumerate().skip(start - 1) {
        if grep.is_some_and(|pattern| !line.to_lowercase().contains(pattern)) {
            continue;
        }
        let numbered = format!("{}: {line}\n", index + 1);
        if shown == wanted || out.len() + numbered.len() > MAX_READ_BYTES {
            next = Some(index + 1);
            break;
        }
        out.push_str(&numbered);
        shown += 1;
    }
    let what = if grep.is_some() { "matching lines" } else { "lines" };
    match next {
        Some(line) => format!("{out}({shown} {what} shown of {total} lines; more from line {line}.)"),
        None if shown == 0 => format!("(No {what} from line {start}; the file has {total} lines.)"),
        None => format!("{out}(End of file: {total} lines.)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use assistant_core::turn::{ToolStatus, ToolUse, TurnId};
    use testkit::memory::MemoryArtifacts;
    use tools_registry::{Asker, ChannelRule, Credentials, ToolPolicy, ToolRegistry};

    fn asker(turn: &str) -> Asker {
        Asker {
            channel: slack::ChannelId::new("C1"),
            user: Some(slack::UserId::new("U1")),
            groups: Vec::new(),
            turn: Some(TurnId::new(turn)),
            thread: None,
            membership: slack::Membership::Home,
        }
    }

    #[tokio::test]
    async fn read_attachment_reads_the_asking_turns_files_only() {
        let artifacts = Arc::new(MemoryArtifacts::default());
        artifacts.put("turns/T1-Ev1/files/F0MINE0001", b"mine\n".to_vec(), "text/plain").await.unwrap();
        artifacts.put("turns/T1-Ev2/files/F0THEIRS01", b"theirs\n".to_vec(), "text/plain").await.unwrap();
        // A policy that never lists it: it reads only what people pasted.
        let policy = ToolPolicy::new(vec![ChannelRule::everyone("*", vec!["current_time".into()])]);
        let registry = ToolRegistry::new(vec![read_attachment(artifacts)], policy).unwrap();
        let call = |file: &str| ToolUse { id: "t".into(), name: READ_ATTACHMENT.into(), input: json!({"file": file}) };
        let run = |file: &'static str| {
            let (registry, call) = (&registry, call(file));
            async move { registry.run_all(&[&call], asker("T1-Ev1"), &Credentials::new()).await.remove(0) }
        };

        let mine = run("F0MINE0001").await;
        assert_eq!(
            (mine.status, mine.output),
            (ToolStatus::Success, ToolOutput::Text("1: mine\n(End of file: 1 lines.)".into()))
        );
        let theirs = run("F0THEIRS01").await;
        assert_eq!(theirs.status, ToolStatus::Error, "another turn's file is not this turn's");
        for hostile in ["../T1-Ev2/files/F0THEIRS01", "F0THEIRS01/../../T1-Ev2/files/F0THEIRS01", ""] {
            let result = registry.run_all(&[&call(hostile)], asker("T1-Ev1"), &Credentials::new()).await.remove(0);
            assert_eq!(result.status, ToolStatus::Error, "{hostile:?}");
        }
        let outside = registry.run_all(&[&call("F0MINE0001")], &slack::ChannelId::new("C1"), &Credentials::new()).await;
        assert_eq!(outside[0].status, ToolStatus::Error, "no turn, no files");

        // A rule that denies it by name still does.
        let deny = ChannelRule { deny: vec!["read_*".into()], ..ChannelRule::everyone("*", vec!["*".into()]) };
        let denied = ToolPolicy::new(vec![deny]);
        assert!(matches!(denied.verdict(asker("T1-Ev1"), READ_ATTACHMENT), tools_registry::Verdict::Denied { .. }));
    }

    #[tokio::test]
    async fn read_result_reads_the_asking_turns_stored_results_as_the_preview_numbered_them() {
        let artifacts = Arc::new(MemoryArtifacts::default());
        let rows: Vec<Value> = (1..=100).map(|n| json!({"@message": format!("row {n}")})).collect();
        let body = serde_json::to_vec(&json!({"rows": rows, "status": "Complete"})).unwrap();
        let mine = reading::result_key(&TurnId::new("T1-Ev1"), "tooluse_a1");
        artifacts.put(&mine, body, "application/json").await.unwrap();
        let theirs = reading::result_key(&TurnId::new("T1-Ev2"), "tooluse_b1");
        artifacts.put(&theirs, b"theirs".to_vec(), "text/plain").await.unwrap();
        let registry = ToolRegistry::new(vec![read_result(artifacts)], ToolPolicy::allow_all()).unwrap();
        let run = |input: Value| {
            let registry = &registry;
            async move {
                let call = ToolUse { id: "t".into(), name: READ_RESULT.into(), input };
                registry.run_all(&[&call], asker("T1-Ev1"), &Credentials::new()).await.remove(0)
            }
        };

        let read = run(json!({"result": "tooluse_a1", "start_line": 100, "lines": 5})).await;
        assert_eq!(read.status, ToolStatus::Success);
        assert_eq!(
            read.output,
            ToolOutput::Text(
                "100: {\"@message\":\"row 99\"}\n101: {\"@message\":\"row 100\"}\n(End of file: 101 lines.)".into()
            )
        );
        let found = run(json!({"result": "tooluse_a1", "grep": "ROW 42"})).await;
        assert_eq!(found.output, ToolOutput::Text("43: {\"@message\":\"row 42\"}\n(End of file: 101 lines.)".into()));

        for hostile in ["tooluse_b1", "../T1-Ev2/results/tooluse_b1", "tooluse_a1/../../T1-Ev2/results/tooluse_b1", ""]
        {
            let result = run(json!({"result": hostile})).await;
            assert_eq!(result.status, ToolStatus::Error, "{hostile:?}: {:?}", result.output);
        }
        let call = ToolUse { id: "t".into(), name: READ_RESULT.into(), input: json!({"result": "tooluse_a1"}) };
        let outside = registry.run_all(&[&call], &slack::ChannelId::new("C1"), &Credentials::new()).await;
        assert_eq!(outside[0].status, ToolStatus::Error, "no turn, no results");
    }

    #[test]
    fn an_excerpt_numbers_its_lines_and_says_where_to_go_on() {
        let text: String =
            (1..=1000).map(|n| format!("line {n}{}\n", if n % 100 == 0 { " ERROR" } else { "" })).collect();
        let first = excerpt(&text, 1, 3, None);
        assert_eq!(first, "1: line 1\n2: line 2\n3: line 3\n(3 lines shown of 1000 lines; more from line 4.)");
        let errors = excerpt(&text, 1, 400, Some("error"));
        assert!(errors.starts_with("100: line 100 ERROR\n200: line 200 ERROR\n"), "{errors}");
        assert!(errors.ends_with("(End of file: 1000 lines.)"), "{errors}");
        assert_eq!(excerpt(&text, 2000, 10, None), "(No lines from line 2000; the file has 1000 lines.)");
        let long = "x".repeat(10_000) + "\n";
        let capped = excerpt(&long.repeat(10), 1, 400, None);
        assert!(capped.len() < MAX_READ_BYTES + 200 && capped.contains("more from line 3"), "{}", capped.len());
    }
}
