//! Keeping a turn's item small: large tool results live in the artifact
//! store and the transcript keeps a pointer and a preview.
//!
//! Two rules:
//! 1. a tool result over [`INLINE_RESULT_BYTES`] is stored as an artifact
//!    as soon as it arrives;
//! 2. when the store refuses a state as too large (many medium-sized
//!    results), older inline results are moved out too, oldest first,
//!    until it is under [`STATE_BUDGET_BYTES`], and the save is retried.
//!
//! The model then sees the preview and a note saying how much there was.

use assistant_core::ports::{ArtifactStore, PortError};
use assistant_core::store::MAX_TURN_STATE_BYTES;
use assistant_core::turn::{Content, ToolOutput, ToolResult, Turn, TurnId};

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

fn state_bytes(turn: &Turn) -> usize {
    serde_json::to_string(turn).map(|s| s.len()).unwrap_or(usize::MAX)
}

/// Rule 2: moves older inline results out until the state fits the budget.
pub async fn compact(artifacts: &dyn ArtifactStore, turn: &mut Turn) -> Result<(), PortError> {
    if state_bytes(turn) <= STATE_BUDGET_BYTES {
        return Ok(());
    }
    let id = turn.id.clone();
    for message_index in 0..turn.transcript.len() {
        for content_index in 0..turn.transcript[message_index].content.len() {
            if let Content::ToolResult(result) = &mut turn.transcript[message_index].content[content_index] {
                store(artifacts, &id, result, COMPACTABLE_BYTES).await?;
            }
            // Re-measured after each move; a few serializations of a few
            // hundred KB, only on turns that outgrew the budget.
            if state_bytes(turn) <= STATE_BUDGET_BYTES {
                return Ok(());
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
    async fn many_medium_results_are_compacted_oldest_first_until_the_state_fits() {
        let artifacts = MemoryArtifacts::default();
        let mut turn = new_turn("Ev1");
        for step in 0..40 {
            let results = (0..2).map(|i| Content::ToolResult(result(&format!("s{step}r{i}"), "x".repeat(15_000))));
            turn.transcript.push(Message { role: Role::User, content: results.collect() });
        }
        assert!(state_bytes(&turn) > MAX_TURN_STATE_BYTES);

        compact(&artifacts, &mut turn).await.unwrap();
        assert!(state_bytes(&turn) <= STATE_BUDGET_BYTES);
        let keys = artifacts.keys();
        assert!(keys.contains(&"turns/T061EG9R6-Ev1/s0r0".to_owned()), "the oldest went first: {keys:?}");
        let newest = &turn.transcript.last().unwrap().content[1];
        assert!(matches!(newest, Content::ToolResult(r) if matches!(r.output, ToolOutput::Text(_))), "newest kept");
    }
}
