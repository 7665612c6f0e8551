//! The deployment's guardrail where a turn reads and speaks
//! (`assistant_core::guardrail` says what each kind means and why the
//! worker calls `ApplyGuardrail` itself).
//!
//! | kind | checked in | blocked | guardrail unreachable |
//! |---|---|---|---|
//! | question | [`Worker::guard_question`], before the first model call | the turn answers with the guardrail's message | retried (the message is redelivered) |
//! | tool results, files | [`Worker::guard_results`], before a result joins the transcript | the model reads an error result naming the guardrail | the result is withheld (the call may have changed things: never made again for this) |
//! | files | [`Worker::guard_files`], when the turn starts, before the opening is written: a text file's start, each PNG or JPEG image | the file is withheld, the model told so in its place | retried (nothing has happened yet) |
//!
//! A file the guardrail cannot read (a document, a GIF or WebP image: the
//! bot extracts no text from them) is withheld from the model too when
//! files are guarded, and the thread told so: an unchecked file would be
//! the one way around the guardrail.
//! | answer | [`Worker::guard_answer`], before anything is posted (the answer is not streamed) | the guardrail's message is the answer | retried |
//!
//! Each call's text units are added to the turn ([`Turn::guard_units`]),
//! saved with the step that made them; a step lost before its save is
//! checked again, and billed again by Bedrock, but counted once.

use crate::thread_files;
use crate::{Worker, WorkerError};
use assistant_core::files::FileKind;
use assistant_core::guardrail::{
    GUARDED_IMAGES, GuardUnits, Guarded, Guardrail, GuardrailConfig, Intervention, Source, Verdict,
};
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
/// What the model reads in place of a thread's file the guardrail blocked.
pub const FILE_WITHHELD: &str = "withheld: the deployment's guardrail blocked this file. Do not try to get its \
                                 content another way; tell the person it was blocked.";
/// What the model reads in place of a file the guardrail cannot read.
pub const FILE_UNCHECKED: &str = "withheld: the deployment's guardrail checks files and reads only text and PNG or \
                                  JPEG images, so this one is not shown. Tell the person; they can paste its text \
                                  or share it as a PNG.";
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
        // Stored before: checked when it was made. A task's result is
        // checked when it arrives.
        ToolOutput::Stored { .. } | ToolOutput::Task(_) => None,
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
        self.judged(turn, kind, what, units, verdict)
    }

    /// A verdict's units counted on the turn; an intervention recorded,
    /// logged and counted.
    fn judged(
        &self,
        turn: &mut Turn,
        kind: Guarded,
        what: String,
        units: GuardUnits,
        verdict: Result<Verdict, PortError>,
    ) -> Result<Checked, PortError> {
        turn.guard_units += units;
        let verdict = verdict?;
        if !verdict.intervened {
            return Ok(Checked::Passed);
        }
        info!(guarded = kind.as_str(), what = %what, policies = ?verdict.policies, "the guardrail intervened");
        self.metrics.guardrail_intervened(kind);
        turn.guardrail.push(Intervention {
            kind,
            step: turn.steps,
            what,
            policies: verdict.policies,
            unchecked: false,
        });
        Ok(Checked::Blocked(verdict.output))
    }

    /// The thread's files when the turn starts, before the opening is
    /// written from them: a text file's start (what the opening shows of
    /// it; the rest is checked as `read_attachment` reads it), each PNG or
    /// JPEG image as an image (one call each, so a block names its file).
    /// A blocked file, or one the guardrail cannot read, is replaced by a
    /// note the model reads, and is no longer offered to `read_attachment`.
    /// An unreachable guardrail is an error: the start is retried.
    pub(crate) async fn guard_files(&self, turn: &mut Turn, read: &mut thread_files::Read) -> Result<(), WorkerError> {
        let Some(guarding) = self.guarding(Guarded::Files) else { return Ok(()) };
        let guardrail = guarding.guardrail.clone();
        for shown in &mut read.files {
            let text_file = read.text_files.contains(&shown.file_id);
            let mut withheld = None;
            for content in &shown.content {
                let checked = match content {
                    Content::Text(text) if text_file => {
                        let what = format!("the text of {}", shown.name);
                        self.guard(turn, Guarded::Files, what, text).await
                    }
                    Content::File(block) => match block.kind {
                        FileKind::Image(format) if GUARDED_IMAGES.contains(&format) => {
                            // Gone from the bucket: the model is told so, and reads nothing of it.
                            let Some(bytes) = self.artifacts.get(&block.key).await.map_err(WorkerError::Artifacts)?
                            else {
                                continue;
                            };
                            let verdict = guardrail.apply_image(Source::Input, format, &bytes).await;
                            let units = verdict.as_ref().map(|verdict| verdict.units).unwrap_or_default();
                            let what = format!("the image {}", shown.name);
                            self.judged(turn, Guarded::Files, what, units, verdict)
                        }
                        kind => {
                            let what = match kind {
                                FileKind::Image(format) => format!("the image {} ({})", shown.name, format.as_str()),
                                FileKind::Document(format) => {
                                    format!("the document {} ({})", shown.name, format.as_str())
                                }
                            };
                            info!(file = %shown.file_id, "a file the guardrail cannot read: withheld unchecked");
                            turn.guardrail.push(Intervention {
                                kind: Guarded::Files,
                                step: turn.steps,
                                what,
                                policies: Vec::new(),
                                unchecked: true,
                            });
                            withheld = Some(FILE_UNCHECKED);
                            break;
                        }
                    },
                    _ => continue,
                };
                if let Checked::Blocked(_) = checked.map_err(WorkerError::Guardrail)? {
                    withheld = Some(FILE_WITHHELD);
                    break;
                }
            }
            if let Some(why) = withheld {
                shown.content = vec![Content::Text(format!("(File {}: {}; {why})", shown.number, shown.name))];
                read.text_files.retain(|id| *id != shown.file_id);
            }
        }
        Ok(())
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
