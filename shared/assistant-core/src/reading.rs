//! What the model reads of a tool's result.
//!
//! A result goes into the transcript whole when it fits a token budget
//! sized for the model's context ([`ReadingBudget`]): one result at most
//! `result_tokens`, all the results of a turn together at most
//! `turn_tokens` (each step sends the transcript again, so this keeps the
//! cache and the cost sane). A result over what is left is kept whole in
//! the artifact store, and the model gets its first lines, cut at a
//! record or line boundary (never inside a JSON value), the exact size,
//! and how to read the rest with `read_result` by line range or search.
//!
//! A result is read as lines ([`lines_of`]): a JSON result whose records
//! sit in an array (a log query's `rows`, a list) is one record per line,
//! each a whole JSON value, after a first line with the rest of the
//! object; any other result is its own lines. The preview and
//! `read_result` number the same lines, so "read on from line 12" means
//! the same thing to both.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The tool that reads the rest of a stored result (`tools-files`).
pub const READ_RESULT: &str = "read_result";

/// A cautious bytes-per-token figure for logs, JSON and prose: Claude's
/// and Nova's tokenizers give 3.5 to 4.5 bytes a token on English and
/// less on JSON, so a budget counted with it is rarely overrun.
const BYTES_PER_TOKEN_X2: u64 = 7;

/// Roughly how many tokens `bytes` of text are.
pub fn tokens_in(bytes: usize) -> u64 {
    (bytes as u64 * 2).div_ceil(BYTES_PER_TOKEN_X2)
}

/// How many bytes of text fit in `tokens`.
pub fn bytes_for(tokens: u64) -> usize {
    usize::try_from(tokens.saturating_mul(BYTES_PER_TOKEN_X2) / 2).unwrap_or(usize::MAX)
}

/// The most of a result the model is shown even when the turn's budget
/// is spent: enough to see its shape.
pub const FLOOR_TOKENS: u64 = 300;

/// How much of tool results the model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadingBudget {
    /// One result up to this goes in whole.
    pub result_tokens: u64,
    /// All results of one turn together (read_result's reads included).
    pub turn_tokens: u64,
}

impl ReadingBudget {
    /// A twelfth of the context for one result, a quarter for a turn's:
    /// for a 200k model, 16,666 tokens (about 58 KB of logs) and 50,000.
    pub const fn for_context(context_tokens: u64) -> Self {
        Self { result_tokens: context_tokens / 12, turn_tokens: context_tokens / 4 }
    }

    /// The budget for `model_id`'s context window ([`context_tokens`]).
    pub fn for_model(model_id: &str) -> Self {
        Self::for_context(context_tokens(model_id))
    }

    /// Why a configured budget cannot work, if it cannot: a result must
    /// be able to go in whole, and fit in a turn.
    pub fn problem(&self) -> Option<String> {
        const MIN: u64 = 1_000;
        const MAX: u64 = 200_000;
        if !(MIN..=MAX).contains(&self.result_tokens) {
            return Some(format!("result_tokens must be {MIN} to {MAX}, not {}", self.result_tokens));
        }
        if self.turn_tokens < self.result_tokens || self.turn_tokens > 4 * MAX {
            return Some(format!(
                "turn_tokens must be at least result_tokens ({}) and at most {}, not {}",
                self.result_tokens,
                4 * MAX,
                self.turn_tokens
            ));
        }
        None
    }
}

impl Default for ReadingBudget {
    /// A 200k-token model's (Claude's).
    fn default() -> Self {
        Self::for_context(200_000)
    }
}

/// The context window of the model families Bedrock serves, by the family
/// in the id (`us.anthropic.claude-sonnet-4-…`, `amazon.nova-pro-v1:0`);
/// 128k for others, the smallest of the current tool-using families.
pub fn context_tokens(model_id: &str) -> u64 {
    const KNOWN: &[(&str, u64)] = &[
        ("claude", 200_000),
        ("nova-premier", 1_000_000),
        ("nova-pro", 300_000),
        ("nova-lite", 300_000),
        ("nova-micro", 128_000),
        ("llama", 128_000),
        ("mistral-large", 128_000),
    ];
    let id = model_id.to_ascii_lowercase();
    KNOWN.iter().find(|(family, _)| id.contains(family)).map_or(128_000, |(_, tokens)| *tokens)
}

/// Where a turn keeps a result the model was shown part of: under the
/// turn, so `read_result` can only ever read the asking turn's own.
pub fn result_key(turn: &crate::TurnId, tool_use_id: &str) -> String {
    format!("turns/{turn}/results/{tool_use_id}")
}

/// A tool call's id as Bedrock makes them (`tooluse_…`) and tests write
/// them: letters, digits, `_` and `-`, so a key never leaves its turn.
pub fn is_tool_use_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A result read as lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lines {
    pub lines: Vec<String>,
    /// Set when the lines are JSON records: the array they came from
    /// (`""` for a top-level array).
    pub records_of: Option<String>,
}

impl Lines {
    /// The lines joined, as `read_result` reads them.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }
}

/// The line view of a result's bytes (see the module's docs).
pub fn lines_of(body: &[u8]) -> Lines {
    let text = String::from_utf8_lossy(body);
    let plain = || Lines { lines: text.lines().map(str::to_owned).collect(), records_of: None };
    let Ok(value) = serde_json::from_str::<Value>(&text) else { return plain() };
    let compact = |value: &Value| serde_json::to_string(value).expect("JSON values serialize");
    match value {
        Value::Array(records) => {
            Lines { lines: records.iter().map(compact).collect(), records_of: Some(String::new()) }
        }
        Value::Object(mut object) => {
            let largest = object
                .iter()
                .filter_map(|(field, value)| value.as_array().map(|records| (field.clone(), records.len())))
                .max_by_key(|(_, len)| *len)
                .filter(|(_, len)| *len > 1);
            let Some((field, count)) = largest else {
                let pretty = serde_json::to_string_pretty(&Value::Object(object)).expect("JSON values serialize");
                return Lines { lines: pretty.lines().map(str::to_owned).collect(), records_of: None };
            };
            let Some(Value::Array(records)) = object.remove(&field) else { unreachable!("found above") };
            object.insert(field.clone(), Value::String(format!("{count} records, one per line from line 2")));
            let mut lines = vec![compact(&Value::Object(object))];
            lines.extend(records.iter().map(compact));
            Lines { lines, records_of: Some(field) }
        }
        _ => plain(),
    }
}

/// What the model was shown of a stored result, for its note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    /// Whole lines shown, from line 1.
    pub lines: usize,
    pub total_lines: usize,
    /// The last line shown was itself cut (one line longer than the
    /// preview).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub line_cut: bool,
    /// The lines are JSON records of this array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_of: Option<String>,
    pub why: Why,
}

/// Why only part of a result went in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Why {
    /// Over the budget for one result.
    ResultBudget { tokens: u64 },
    /// The turn's results had used most of its budget.
    TurnBudget { tokens: u64 },
    /// A step's results together were too large to keep in the turn.
    TooLargeToKeep,
}

/// The first lines of `lines` that fit in `max_bytes` (a first line
/// longer than that is cut at a character boundary), and what was shown.
pub fn preview(lines: &Lines, max_bytes: usize, why: Why) -> (String, Shown) {
    let mut text = String::new();
    let mut shown =
        Shown { lines: 0, total_lines: lines.lines.len(), line_cut: false, records_of: lines.records_of.clone(), why };
    for line in &lines.lines {
        let sep = usize::from(!text.is_empty());
        if text.len() + sep + line.len() > max_bytes {
            if shown.lines == 0 {
                let mut end = max_bytes.min(line.len());
                while !line.is_char_boundary(end) {
                    end -= 1;
                }
                text.push_str(&line[..end]);
                shown.line_cut = true;
            }
            break;
        }
        if sep == 1 {
            text.push('\n');
        }
        text.push_str(line);
        shown.lines += 1;
    }
    (text, shown)
}

/// The note after a stored result's preview: what it is, what was shown
/// and why, and how to read the rest.
pub fn note(tool_use_id: &str, bytes: u64, shown: &Shown, read_tool: &str) -> String {
    let unit = match &shown.records_of {
        Some(field) if field.is_empty() => "records",
        Some(_) => "lines (line 1: the result's other fields; then one record a line)",
        None => "lines",
    };
    let what = if shown.line_cut {
        "the start of line 1 only (it is longer than the room left)".to_owned()
    } else {
        format!("lines 1-{} of {}", shown.lines, shown.total_lines)
    };
    let why = match shown.why {
        Why::ResultBudget { tokens } => format!("it is over the {tokens}-token budget for one result"),
        Why::TurnBudget { tokens } => format!("this turn's results have used most of their budget ({tokens} tokens)"),
        Why::TooLargeToKeep => "this step's results together were too large to keep inline".to_owned(),
    };
    let next = if shown.line_cut { 1 } else { shown.lines + 1 };
    format!(
        "[Only part of this result is shown: {what} ({bytes} bytes, {} {unit} in all), because {why}. \
         Read the rest with {read_tool} {{\"result\": \"{tool_use_id}\", \"start_line\": {next}}} or search it \
         with {{\"result\": \"{tool_use_id}\", \"grep\": \"…\"}}; answer from what you have read, and say what \
         you have not.]",
        shown.total_lines
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_log_querys_rows_are_one_record_a_line_after_the_other_fields() {
        let result = json!({"rows": [{"@message": "a"}, {"@message": "b"}], "rows_shown": 2, "status": "Complete"});
        let lines = lines_of(result.to_string().as_bytes());
        assert_eq!(lines.records_of.as_deref(), Some("rows"));
        assert_eq!(
            lines.lines,
            [
                r#"{"rows":"2 records, one per line from line 2","rows_shown":2,"status":"Complete"}"#,
                r#"{"@message":"a"}"#,
                r#"{"@message":"b"}"#
            ]
        );
        for line in &lines.lines {
            serde_json::from_str::<Value>(line).expect("every line is whole JSON");
        }
    }

    #[test]
    fn arrays_objects_without_records_and_text_each_have_a_line_view() {
        assert_eq!(lines_of(br#"[1,{"a":[2,3]}]"#).lines, ["1", r#"{"a":[2,3]}"#]);
        let object = lines_of(br#"{"a":1,"b":[2]}"#);
        assert_eq!((object.lines.len(), object.records_of), (6, None), "pretty-printed: {:?}", object.lines);
        assert_eq!(lines_of(b"one\ntwo\n").lines, ["one", "two"]);
        assert_eq!(lines_of(b"\xff\xfe not utf-8").lines.len(), 1, "read lossily, never refused");
    }

    #[test]
    fn a_preview_ends_at_a_line_and_says_exactly_what_it_holds() {
        let lines = Lines { lines: (1..=100).map(|n| format!("{{\"n\":{n}}}")).collect(), records_of: Some("".into()) };
        let (text, shown) = preview(&lines, 50, Why::ResultBudget { tokens: 10 });
        assert_eq!(text, (1..=6).map(|n| format!("{{\"n\":{n}}}")).collect::<Vec<_>>().join("\n"));
        assert_eq!((shown.lines, shown.total_lines, shown.line_cut), (6, 100, false));
        let told = note("tooluse_1", 900, &shown, "read_result");
        assert!(told.contains("lines 1-6 of 100 (900 bytes, 100 records in all)"), "{told}");
        assert!(told.contains(r#"{"result": "tooluse_1", "start_line": 7}"#), "{told}");

        let long = Lines { lines: vec!["é".repeat(100)], records_of: None };
        let (text, shown) = preview(&long, 51, Why::TooLargeToKeep);
        assert_eq!((text.len(), shown.lines, shown.line_cut), (50, 0, true), "cut at a character boundary");
        assert!(note("t", 200, &shown, "read_result").contains("\"start_line\": 1}"));
    }

    #[test]
    fn budgets_follow_the_models_context_and_refuse_what_cannot_work() {
        assert_eq!(ReadingBudget::for_model("us.anthropic.claude-sonnet-4-20250514-v1:0").result_tokens, 16_666);
        assert_eq!(ReadingBudget::for_model("amazon.nova-pro-v1:0").turn_tokens, 75_000);
        assert_eq!(ReadingBudget::for_model("someone.new-model-v1").result_tokens, 10_666);
        // A 32 KB log query goes in whole for every family.
        assert!(tokens_in(32 * 1024) <= ReadingBudget::for_model("meta.llama3-3-70b").result_tokens);
        assert_eq!(ReadingBudget::default().problem(), None);
        assert!(ReadingBudget { result_tokens: 10, turn_tokens: 10 }.problem().is_some());
        assert!(ReadingBudget { result_tokens: 5_000, turn_tokens: 4_000 }.problem().is_some());
        assert_eq!(bytes_for(tokens_in(35_000)), 35_000);
    }
}
