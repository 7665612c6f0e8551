//! Keeping a turn's item small: large tool results live in the artifact
//! store and the transcript keeps a pointer and a preview.
//!
//! Two rules:
//! 1. a tool result over [`INLINE_RESULT_BYTES`] is stored as an artifact
//!    as soon as it arrives;
//! 2. when the store refuses a message as too large for one item (a step
//!    with many medium-sized results), that message's inline results are
//!    moved out, first to last, until it is under [`STATE_BUDGET_BYTES`],
//!    and the save is retried. Other messages stay as they are: the store
//!    keeps a transcript in parts, so a long turn has no size limit.
//!
//! The model then sees the preview and a note saying how much there was.

use assistant_core::ports::{ArtifactStore, PortError};
use assistant_core::store::MAX_TURN_STATE_BYTES;
use assistant_core::turn::{Content, Message, ToolOutput, ToolResult, Turn, TurnId};

/// Results up to this size stay in the transcript.
pub const INLINE_RESULT_BYTES: usize = 16 * 1024;
/// What stays inline of a stored result.
pub const PREVIEW_BYTES: usize = 2 * 1024;
/// Compaction target: a margin under the store's hard limit.
pub const STATE_BUDGET_BYTES: usize = MAX_TURN_STATE_BYTES * 4 / 5;
/// Results smaller than this are not worth moving when compacting.
const COMPACTABLE_BYTES: usize = 1024;

fn payload(output: &ToolOutput) -> Option<(Vec<u8>, &'static str)> {
    match output {
        ToolOutput::Text(text) => Some((text.as_bytes().to_vec(), "text/plain; charset=utf-8")),
        ToolOutput::Json(json) => Some((serde_json::to_vec(json).expect("JSON values serialize"), "application/json")),
        ToolOutput::Stored { .. } => None,
    }
}

/// The first `max` bytes of `text`, cut at a character boundary.
fn preview(text: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(text);
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

async fn store(
    artifacts: &dyn ArtifactStore,
    turn: &TurnId,
    result: &mut ToolResult,
    min_bytes: usize,
) -> Result<(), PortError> {
    let Some((body, content_type)) = payload(&result.output) else { return Ok(()) };
    if body.len() <= min_bytes {
        return Ok(());
    }
    let key = format!("turns/{turn}/{}", result.tool_use_id);
    let bytes = body.len() as u64;
    let preview = preview(&body, PREVIEW_BYTES);
    artifacts.put(&key, body, content_type).await?;
    result.output = ToolOutput::Stored { key, bytes, preview };
    Ok(())
}

/// Rule 1: stores each result over [`INLINE_RESULT_BYTES`].
pub async fn offload_large(
    artifacts: &dyn ArtifactStore,
    turn: &TurnId,
    results: &mut [ToolResult],
) -> Result<(), PortError> {
    for result in results {
        store(artifacts, turn, result, INLINE_RESULT_BYTES).await?;
    }
    Ok(())
}

fn message_bytes(message: &Message) -> usize {
    serde_json::to_string(message).map(|s| s.len()).unwrap_or(usize::MAX)
}

/// Rule 2: moves inline results out of each message too large for one
/// item until it fits the budget.
pub async fn compact(artifacts: &dyn ArtifactStore, turn: &mut Turn) -> Result<(), PortError> {
    let id = turn.id.clone();
    for message in &mut turn.transcript {
        if message_bytes(message) <= STATE_BUDGET_BYTES {
            continue;
        }
        for index in 0..message.content.len() {
            if let Content::ToolResult(result) = &mut message.content[index] {
                store(artifacts, &id, result, COMPACTABLE_BYTES).await?;
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
    use testkit::memory::MemoryArtifacts;
    use testkit::store_contract::new_turn;

    fn result(id: &str, text: String) -> ToolResult {
        ToolResult { tool_use_id: id.into(), status: ToolStatus::Success, output: ToolOutput::Text(text) }
    }

    #[tokio::test]
    async fn a_large_result_is_stored_and_replaced_by_a_preview() {
        let artifacts = MemoryArtifacts::default();
        let big = "é".repeat(1_000_000); // 2 MB of two-byte characters
        let mut results = [result("t1", big.clone()), result("t2", "small".into())];
        offload_large(&artifacts, &TurnId::new("T1-Ev1"), &mut results).await.unwrap();

        let ToolOutput::Stored { key, bytes, preview } = &results[0].output else { panic!("not stored") };
        assert_eq!((key.as_str(), *bytes), ("turns/T1-Ev1/t1", 2_000_000));
        assert!(preview.len() <= PREVIEW_BYTES && big.starts_with(preview.as_str()), "cut at a char boundary");
        assert_eq!(artifacts.get(key).await.unwrap().unwrap(), big.as_bytes());
        assert_eq!(results[1].output, ToolOutput::Text("small".into()), "small results stay inline");
    }

    #[tokio::test]
    async fn a_message_too_large_for_an_item_has_its_results_moved_out_and_others_stay() {
        let artifacts = MemoryArtifacts::default();
        let mut turn = new_turn("Ev1");
        // A long turn: 40 steps of two 15 KB results, 1.2 MB in all.
        for step in 0..40 {
            let results = (0..2).map(|i| Content::ToolResult(result(&format!("s{step}r{i}"), "x".repeat(15_000))));
            turn.transcript.push(Message { role: Role::User, content: results.collect() });
        }
        // Then one step of thirty: one message over an item's limit.
        let results = (0..30).map(|i| Content::ToolResult(result(&format!("big{i}"), "y".repeat(15_000))));
        turn.transcript.push(Message { role: Role::User, content: results.collect() });
        assert!(message_bytes(turn.transcript.last().unwrap()) > MAX_TURN_STATE_BYTES);

        compact(&artifacts, &mut turn).await.unwrap();
        assert!(message_bytes(turn.transcript.last().unwrap()) <= STATE_BUDGET_BYTES);
        let keys = artifacts.keys();
        assert!(keys.contains(&"turns/T061EG9R6-Ev1/big0".to_owned()), "the first result went first: {keys:?}");
        assert!(keys.iter().all(|key| key.contains("/big")), "earlier messages stay inline: {keys:?}");
        let last = &turn.transcript.last().unwrap().content[29];
        assert!(matches!(last, Content::ToolResult(r) if matches!(r.output, ToolOutput::Text(_))), "the rest kept");
    }
}
