//! The deployment's guardrail where a turn reads and speaks
//! (`assistant_core::guardrail` says what each kind means and why the
//! worker calls `ApplyGuardrail` itself).
//!
//! | kind | checked in | blocked | guardrail unreachable |
//! |---|---|---|---|
//! | question | [`Worker::guard_question`], before the first model call | the turn answers with the guardrail's message | retried (the message is redelivered) |
//! | tool results, files | [`Worker::guard_results`], before a result joins the transcript | the model reads an error result naming the guardrail | the result is withheld (the call may have changed things: never made again for this) |
//! | answer | [`Worker::guard_answer`], before anything is posted (the answer is not streamed) | the guardrail's message is the answer | retried |
//!
//! Each call's text units are added to the turn ([`Turn::guard_units`]),
//! saved with the step that made them; a step lost before its save is
//! checked again, and billed again by Bedrock, but counted once.

use crate::{Worker, WorkerError};
use assistant_core::guardrail::{GuardUnits, Guarded, Guardrail, GuardrailConfig, Intervention, Source, Verdict};
use assistant_core::ports::PortError;
use assistant_core::turn::{Content, ToolOutput, ToolResult, ToolStatus, Turn};
use std::sync::Arc;
use tracing::{info, warn};

/// The most characters sent in one `ApplyGuardrail` call: a longer text
/// goes in pieces that overlap by [`OVERLAP_CHARS`], so a phrase cut at a
/// piece's end is read whole in the next.
pub const CHUNK_CHARS: usize = 25_000;
pub const OVERLAP_CHARS: usize = 1_000;

/// What the model reads in place of a result the guardrail blocked.
pub const WITHHELD: &str = "Withheld: the deployment's guardrail blocked this result. Do not try to get its content \
                            another way; tell the person it was blocked and answer from what else you have.";
/// What the model reads in place of a result the guardrail could not check.
pub const UNCHECKED: &str = "Withheld: the deployment's guardrail could not be reached to check this result, so it \
                             is not shown. Tell the person; they can ask again later.";
/// The answer when the guardrail blocked and said nothing of its own.
pub const BLOCKED_ANSWER: &str = "I can't help with that: the deployment's guardrail blocked it.";

/// The configured guardrail and what it applies to.
#[derive(Clone)]
pub struct Guarding {
    pub guardrail: Arc<dyn Guardrail>,
    pub config: GuardrailConfig,
}

/// What became of a checked text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Checked {
    Passed,
    /// Blocked; what the guardrail says instead, if anything.
    Blocked(Option<String>),
}

/// `text` in pieces of at most `CHUNK_CHARS` characters, each starting
/// `OVERLAP_CHARS` before the previous one ended.
fn pieces(text: &str) -> Vec<&str> {
    let bounds: Vec<usize> = text.char_indices().map(|(at, _)| at).chain([text.len()]).collect();
    let chars = bounds.len() - 1;
    if chars <= CHUNK_CHARS {
        return vec![text];
    }
    let mut pieces = Vec::new();
    let mut start = 0;
    loop {
        let end = (start + CHUNK_CHARS).min(chars);
        pieces.push(&text[bounds[start]..bounds[end]]);
        if end == chars {
            return pieces;
        }
        start = end - OVERLAP_CHARS;
    }
}

/// `text` through `guardrail`, piece by piece, until one intervenes.
async fn check(guardrail: &dyn Guardrail, source: Source, text: &str) -> (GuardUnits, Result<Verdict, PortError>) {
    let mut units = GuardUnits::default();
    for piece in pieces(text) {
        match guardrail.apply(source, piece).await {
            Ok(verdict) => {
                units += verdict.units;
                if verdict.intervened {
                    return (units, Ok(verdict));
                }
            }
            Err(err) => return (units, Err(err)),
        }
    }
    (units, Ok(Verdict { intervened: false, output: None, policies: Vec::new(), units }))
}

/// The text the model reads of a result, as the guardrail should read it.
fn result_text(result: &ToolResult) -> Option<String> {
    match &result.output {
        ToolOutput::Text(text) => Some(text.clone()),
        ToolOutput::Json(json) => Some(json.to_string()),
        // Stored before: checked when it was made.
        ToolOutput::Stored { .. } => None,
    }
}

impl Worker {
    fn guarding(&self, kind: Guarded) -> Option<&Guarding> {
        self.guarding.as_ref().filter(|guarding| guarding.config.applies_to(kind))
    }

    /// Whether the answer is checked before it is posted (then it is not
    /// streamed: nothing the guardrail could still block reaches Slack).
    pub(crate) fn answer_guarded(&self) -> bool {
        self.guarding(Guarded::Answer).is_some()
    }

    /// One text of `kind` through the guardrail, if the configuration says
    /// so: its units counted on the turn, an intervention recorded, logged
    /// and counted.
    async fn guard(&self, turn: &mut Turn, kind: Guarded, what: String, text: &str) -> Result<Checked, PortError> {
        let Some(guarding) = self.guarding(kind) else { return Ok(Checked::Passed) };
        if text.trim().is_empty() {
            return Ok(Checked::Passed);
        }
        let source = if kind == Guarded::Answer { Source::Output } else { Source::Input };
        let (units, verdict) = check(guarding.guardrail.as_ref(), source, text).await;
        turn.guard_units += units;
        let verdict = verdict?;
        if !verdict.intervened {
            return Ok(Checked::Passed);
        }
        info!(guarded = kind.as_str(), what = %what, policies = ?verdict.policies, "the guardrail intervened");
        self.metrics.guardrail_intervened(kind);
        turn.guardrail.push(Intervention { kind, step: turn.steps, what, policies: verdict.policies });
        Ok(Checked::Blocked(verdict.output))
    }

    /// The opening message (the question and the thread so far) before the
    /// first model call. `Some(answer)`: blocked, and the turn answers so.
    pub(crate) async fn guard_question(&self, turn: &mut Turn) -> Result<Option<String>, WorkerError> {
        if turn.steps > 0 || self.guarding(Guarded::Question).is_none() {
            return Ok(None);
        }
        let opening: String = turn
            .transcript
            .first()
            .map(|message| {
                message
                    .content
                    .iter()
                    .filter_map(|content| match content {
                        Content::Text(text) => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        match self.guard(turn, Guarded::Question, "the question".into(), &opening).await {
            Ok(Checked::Passed) => Ok(None),
            Ok(Checked::Blocked(said)) => Ok(Some(said.unwrap_or_else(|| BLOCKED_ANSWER.to_owned()))),
            Err(err) => Err(WorkerError::Guardrail(err)),
        }
    }

    /// A step's results before they join the transcript: a blocked one, or
    /// one the guardrail could not check, becomes an error the model reads.
    /// Never an error for the step: the calls were made, and one that
    /// changed things must not be made again for a retry.
    pub(crate) async fn guard_results(&self, turn: &mut Turn, results: &mut [ToolResult]) {
        if self.guarding(Guarded::ToolResults).is_none() && self.guarding(Guarded::Files).is_none() {
            return;
        }
        let names: Vec<(String, String)> = turn
            .transcript
            .iter()
            .flat_map(|message| message.tool_uses())
            .map(|call| (call.id.clone(), call.name.clone()))
            .chain(turn.pending_approval.iter().flat_map(|pending| {
                pending.waiting.iter().chain(&pending.running).map(|call| (call.id.clone(), call.name.clone()))
            }))
            .collect();
        for result in results.iter_mut() {
            let Some(text) = result_text(result) else { continue };
            let name = names.iter().rev().find(|(id, _)| *id == result.tool_use_id).map_or("a tool", |(_, n)| n);
            let (kind, what) = if name == tools_registry::READ_ATTACHMENT {
                (Guarded::Files, "the text of a file in the thread (`read_attachment`)".to_owned())
            } else {
                (Guarded::ToolResults, format!("the result of `{name}`"))
            };
            let withheld = match self.guard(turn, kind, what, &text).await {
                Ok(Checked::Passed) => continue,
                Ok(Checked::Blocked(_)) => WITHHELD,
                Err(err) => {
                    warn!(error = %err, tool = name, "the guardrail could not check a result: withheld");
                    UNCHECKED
                }
            };
            result.status = ToolStatus::Error;
            result.output = ToolOutput::Text(withheld.to_owned());
        }
    }

    /// The answer before it is saved and posted. Blocked: the guardrail's
    /// message instead.
    pub(crate) async fn guard_answer(&self, turn: &mut Turn, answer: String) -> Result<String, WorkerError> {
        match self.guard(turn, Guarded::Answer, "the answer".into(), &answer).await {
            Ok(Checked::Passed) => Ok(answer),
            Ok(Checked::Blocked(said)) => Ok(said.unwrap_or_else(|| BLOCKED_ANSWER.to_owned())),
            Err(err) => Err(WorkerError::Guardrail(err)),
        }
    }
}

/// The answer with a line for each time the guardrail acted on the turn,
/// so the thread knows what was blocked and at which step.
pub(crate) fn with_interventions(turn: &Turn, answer: String) -> String {
    if turn.guardrail.is_empty() {
        return answer;
    }
    let lines: Vec<String> = turn.guardrail.iter().map(|intervention| format!("_{}_", intervention.line())).collect();
    format!("{answer}\n\n{}", lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_goes_in_overlapping_pieces_cut_at_characters() {
        assert_eq!(pieces("short"), ["short"]);
        let text = "é".repeat(CHUNK_CHARS * 2 + 10);
        let cut = pieces(&text);
        assert_eq!(cut.len(), 3);
        assert!(cut.iter().all(|piece| piece.chars().count() <= CHUNK_CHARS));
        let covered: usize = cut.iter().map(|piece| piece.chars().count()).sum::<usize>() - 2 * OVERLAP_CHARS;
        assert_eq!(covered, text.chars().count(), "every character is read, the overlaps twice");
        // An attack cut by a piece's end is whole in the next piece.
        let mut long = "x".repeat(CHUNK_CHARS - 10);
        long.push_str(testkit::memory::ATTACK);
        long.push_str(&"y".repeat(5_000));
        assert!(pieces(&long).iter().any(|piece| piece.contains(testkit::memory::ATTACK)));
    }
}
