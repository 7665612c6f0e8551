//! What the model reads of each tool result, within the turn's reading
//! budget (the rules and the line view are `assistant_core::reading`'s),
//! and keeping a turn's item small.
//!
//! Two rules:
//! 1. [`fit`]: a result goes into the transcript whole when it fits what
//!    is left of the budget (at most `result_tokens` for one result,
//!    `turn_tokens` for all of a turn's). A larger one is kept whole in the
//!    artifact store, and the transcript gets its first lines within what
//!    is left (never less than [`reading::FLOOR_TOKENS`]), cut at a record
//!    or line, with a note giving its size and how to read on with
//!    `read_result`. The turn counts what each put in.
//! 2. [`compact`]: when the store refuses a message as too large for one
//!    item (a step with many large results), that message's results are
//!    moved out (and stored previews shortened), first to last, until it
//!    is under [`STATE_BUDGET_BYTES`], and the save is retried. Other
//!    messages stay as they are: the store keeps a transcript in parts, so
//!    a long turn has no size limit.

use assistant_core::ports::{ArtifactStore, PortError};
use assistant_core::reading::{self, Lines, ReadingBudget, Why};
use assistant_core::store::MAX_TURN_STATE_BYTES;
use assistant_core::turn::{Content, Message, ToolOutput, ToolResult, Turn, TurnId};

/// What stays inline of a result moved out to keep an item small.
pub const PREVIEW_BYTES: usize = 2 * 1024;
/// Compaction target: a margin under the store's hard limit.
pub const STATE_BUDGET_BYTES: usize = MAX_TURN_STATE_BYTES * 4 / 5;
/// Results smaller than this are not worth moving when compacting.
const COMPACTABLE_BYTES: usize = 1024;
/// Room the note after a preview takes, counted with the preview.
const NOTE_BYTES: usize = 500;

fn payload(output: &ToolOutput) -> Option<(Vec<u8>, &'static str)> {
    match output {
        ToolOutput::Text(text) => Some((text.as_bytes().to_vec(), "text/plain; charset=utf-8")),
        ToolOutput::Json(json) => Some((serde_json::to_vec(json).expect("JSON values serialize"), "application/json")),
        ToolOutput::Stored { .. } | ToolOutput::Task(_) => None,
    }
}

/// Keeps `body` whole in the bucket and leaves its first lines, within
/// `max_bytes`, in `result`.
async fn store(
    artifacts: &dyn ArtifactStore,
    turn: &TurnId,
    result: &mut ToolResult,
    (body, content_type): (Vec<u8>, &'static str),
    max_bytes: usize,
    why: Why,
) -> Result<(), PortError> {
    let key = reading::result_key(turn, &result.tool_use_id);
    let bytes = body.len() as u64;
    let (preview, shown) = reading::preview(&reading::lines_of(&body), max_bytes, why);
    artifacts.put(&key, body, content_type).await?;
    result.output = ToolOutput::Stored { key, bytes, preview, shown: Some(shown) };
    Ok(())
}

/// Rule 1: each result whole when it fits what is left of `budget`, else
/// stored with the preview that does; counted on the turn.
pub async fn fit(
    artifacts: &dyn ArtifactStore,
    turn: &mut Turn,
    results: &mut [ToolResult],
    budget: ReadingBudget,
) -> Result<(), PortError> {
    for result in results {
        let Some(payload) = payload(&result.output) else { continue };
        let tokens = reading::tokens_in(payload.0.len());
        let left = budget.turn_tokens.saturating_sub(turn.results_read_tokens);
        let allowance = budget.result_tokens.min(left);
        if tokens <= allowance {
            turn.results_read_tokens += tokens;
            continue;
        }
        let why = if tokens > budget.result_tokens {
            Why::ResultBudget { tokens: budget.result_tokens }
        } else {
            Why::TurnBudget { tokens: budget.turn_tokens }
        };
        let room = reading::bytes_for(allowance.max(reading::FLOOR_TOKENS)).saturating_sub(NOTE_BYTES).max(NOTE_BYTES);
        store(artifacts, &turn.id, result, payload, room, why).await?;
        if let ToolOutput::Stored { preview, .. } = &result.output {
            turn.results_read_tokens += reading::tokens_in(preview.len() + NOTE_BYTES);
        }
    }
    Ok(())
}

fn message_bytes(message: &Message) -> usize {
    serde_json::to_string(message).map(|s| s.len()).unwrap_or(usize::MAX)
}

/// A stored result's preview cut to [`PREVIEW_BYTES`], its note kept true.
fn shorten(output: &mut ToolOutput) {
    let ToolOutput::Stored { preview, shown: Some(shown), .. } = output else { return };
    if preview.len() <= PREVIEW_BYTES {
        return;
    }
    let lines = Lines { lines: preview.split('\n').map(str::to_owned).collect(), records_of: shown.records_of.clone() };
    let (shorter, mut now) = reading::preview(&lines, PREVIEW_BYTES, Why::TooLargeToKeep);
    now.total_lines = shown.total_lines;
    (*preview, *shown) = (shorter, now);
}

/// Rule 2: moves inline results out of each message too large for one
/// item, and shortens its stored previews, until it fits the budget.
pub async fn compact(artifacts: &dyn ArtifactStore, turn: &mut Turn) -> Result<(), PortError> {
    let id = turn.id.clone();
    for message in &mut turn.transcript {
        if message_bytes(message) <= STATE_BUDGET_BYTES {
            continue;
        }
        for index in 0..message.content.len() {
            if let Content::ToolResult(result) = &mut message.content[index] {
                match payload(&result.output) {
                    Some(payload) if payload.0.len() > COMPACTABLE_BYTES => {
                        store(artifacts, &id, result, payload, PREVIEW_BYTES, Why::TooLargeToKeep).await?;
                    }
                    Some(_) => {}
                    None => shorten(&mut result.output),
                }
            }
            // Re-measured after each move; a few serializations of a few
            // hundred KB, only for a message that outgrew an item.
            if message_bytes(message) <= STATE_BUDGET_BYTES {
                break;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use assistant_core::turn::{Message, Role, ToolStatus};
    use serde_json::{Value, json};
    use testkit::memory::MemoryArtifacts;
    use testkit::store_contract::new_turn;

    fn result(id: &str, output: ToolOutput) -> ToolResult {
        ToolResult { tool_use_id: id.into(), status: ToolStatus::Success, output }
    }

    fn text(id: &str, text: String) -> ToolResult {
        result(id, ToolOutput::Text(text))
    }

    /// A log query's answer of `rows` rows of about `row_bytes` each.
    fn log_rows(rows: usize, row_bytes: usize) -> Value {
        let rows: Vec<Value> = (1..=rows)
            .map(|n| json!({"@timestamp": "2026-11-27 10:00:00.000", "@message": format!("row {n:03} {}", "x".repeat(row_bytes - 70))}))
            .collect();
        json!({"rows": rows, "rows_shown": rows.len(), "status": "Complete"})
    }

    #[tokio::test]
    async fn a_hundred_row_32_kb_log_query_goes_in_whole_and_is_counted() {
        let artifacts = MemoryArtifacts::default();
        let mut turn = new_turn("Ev1");
        let answer = log_rows(100, 330);
        let bytes = serde_json::to_vec(&answer).unwrap().len();
        assert!((31_000..=32_768).contains(&bytes), "{bytes}");
        let mut results = [result("t1", ToolOutput::Json(answer.clone()))];
        fit(&artifacts, &mut turn, &mut results, ReadingBudget::default()).await.unwrap();
        assert_eq!(results[0].output, ToolOutput::Json(answer), "whole");
        assert_eq!(turn.results_read_tokens, reading::tokens_in(bytes));
        assert!(artifacts.keys().is_empty());
    }

    #[tokio::test]
    async fn a_result_over_its_budget_is_stored_whole_and_previewed_at_a_record() {
        let artifacts = MemoryArtifacts::default();
        let mut turn = new_turn("Ev1");
        let answer = log_rows(1_000, 320); // ~320 KB
        let body = serde_json::to_vec(&answer).unwrap();
        let mut results = [result("tooluse_1", ToolOutput::Json(answer)), text("t2", "small".into())];
        let budget = ReadingBudget::default();
        fit(&artifacts, &mut turn, &mut results, budget).await.unwrap();

        let ToolOutput::Stored { key, bytes, preview, shown: Some(shown) } = &results[0].output else {
            panic!("not stored: {:?}", results[0].output)
        };
        assert_eq!((key.as_str(), *bytes as usize), ("turns/T061EG9R6-Ev1/results/tooluse_1", body.len()));
        assert_eq!(artifacts.get(key).await.unwrap().unwrap(), body, "kept whole");
        assert_eq!(shown.why, Why::ResultBudget { tokens: budget.result_tokens });
        assert_eq!(shown.total_lines, 1_001);
        let room = reading::bytes_for(budget.result_tokens);
        assert!(preview.len() <= room && preview.len() > room - 1_000, "uses the budget: {}", preview.len());
        for line in preview.lines() {
            serde_json::from_str::<Value>(line).expect("every previewed line is whole JSON");
        }
        assert_eq!(preview.lines().count(), shown.lines);
        let told = results[0].stored_text().unwrap();
        assert!(told.contains(&format!("lines 1-{} of 1001 ({} bytes", shown.lines, body.len())), "{told}");
        assert!(told.contains("read_result"), "{told}");
        assert_eq!(results[1].output, ToolOutput::Text("small".into()), "small results stay inline");
    }

    #[tokio::test]
    async fn once_the_turns_budget_is_spent_results_are_previewed_at_the_floor() {
        let artifacts = MemoryArtifacts::default();
        let mut turn = new_turn("Ev1");
        let budget = ReadingBudget { result_tokens: 10_000, turn_tokens: 25_000 };
        let each = || text("t", "line of a log\n".repeat(2_000)); // 28 KB, 8,000 tokens
        let mut results = [each(), each(), each(), each()];
        for (n, result) in results.iter_mut().enumerate() {
            result.tool_use_id = format!("t{n}");
        }
        fit(&artifacts, &mut turn, &mut results, budget).await.unwrap();
        let whole = results.iter().filter(|r| matches!(r.output, ToolOutput::Text(_))).count();
        assert_eq!(whole, 3, "three fit the turn's 25,000 tokens");
        let ToolOutput::Stored { preview, shown: Some(shown), .. } = &results[3].output else { panic!("stored") };
        assert_eq!(shown.why, Why::TurnBudget { tokens: 25_000 });
        assert!(!preview.is_empty() && preview.len() <= reading::bytes_for(1_000), "what was left: {}", preview.len());
        assert!(turn.results_read_tokens <= 25_000, "{}", turn.results_read_tokens);
    }

    #[tokio::test]
    async fn a_message_too_large_for_an_item_has_its_results_moved_out_and_others_stay() {
        let artifacts = MemoryArtifacts::default();
        let mut turn = new_turn("Ev1");
        // A long turn: 40 steps of two 15 KB results, 1.2 MB in all.
        for step in 0..40 {
            let results = (0..2).map(|i| Content::ToolResult(text(&format!("s{step}r{i}"), "x".repeat(15_000))));
            turn.transcript.push(Message { role: Role::User, content: results.collect() });
        }
        // Then one step of thirty: one message over an item's limit.
        let results = (0..30).map(|i| Content::ToolResult(text(&format!("big{i}"), "y".repeat(15_000))));
        turn.transcript.push(Message { role: Role::User, content: results.collect() });
        assert!(message_bytes(turn.transcript.last().unwrap()) > MAX_TURN_STATE_BYTES);

        compact(&artifacts, &mut turn).await.unwrap();
        assert!(message_bytes(turn.transcript.last().unwrap()) <= STATE_BUDGET_BYTES);
        let keys = artifacts.keys();
        assert!(keys.contains(&"turns/T061EG9R6-Ev1/results/big0".to_owned()), "the first result went first: {keys:?}");
        assert!(keys.iter().all(|key| key.contains("/big")), "earlier messages stay inline: {keys:?}");
        let last = &turn.transcript.last().unwrap().content[29];
        assert!(matches!(last, Content::ToolResult(r) if matches!(r.output, ToolOutput::Text(_))), "the rest kept");
    }

    #[tokio::test]
    async fn compacting_shortens_large_previews_and_keeps_their_notes_true() {
        let artifacts = MemoryArtifacts::default();
        let mut turn = new_turn("Ev1");
        let mut results: Vec<ToolResult> =
            (0..8).map(|i| result(&format!("q{i}"), ToolOutput::Json(log_rows(400, 320)))).collect();
        let budget = ReadingBudget { result_tokens: 16_000, turn_tokens: 800_000 };
        fit(&artifacts, &mut turn, &mut results, budget).await.unwrap();
        turn.transcript
            .push(Message { role: Role::User, content: results.into_iter().map(Content::ToolResult).collect() });
        assert!(message_bytes(turn.transcript.last().unwrap()) > STATE_BUDGET_BYTES, "eight 56 KB previews");

        compact(&artifacts, &mut turn).await.unwrap();
        assert!(message_bytes(turn.transcript.last().unwrap()) <= STATE_BUDGET_BYTES);
        let Content::ToolResult(first) = &turn.transcript.last().unwrap().content[0] else { panic!() };
        let ToolOutput::Stored { preview, shown: Some(shown), .. } = &first.output else { panic!("stored") };
        assert!(preview.len() <= PREVIEW_BYTES);
        assert_eq!((preview.lines().count(), shown.total_lines, shown.why), (shown.lines, 401, Why::TooLargeToKeep));
    }
}
