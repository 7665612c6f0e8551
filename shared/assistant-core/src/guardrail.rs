//! A Bedrock guardrail on what the model reads and what the bot says.
//!
//! Bedrock's Converse guardrail does not evaluate tool results, tool specs
//! or tool inputs, and those (logs, tickets, files, knowledge-base
//! passages) are the likely path for a prompt injection. So the worker
//! sends each kind the configuration names through `ApplyGuardrail`
//! itself, before it joins the transcript (source `INPUT`) or reaches
//! Slack (the answer, source `OUTPUT`):
//!
//! | `apply_to` | checked | when it intervenes |
//! |---|---|---|
//! | `question` | the person's question, redacted | the turn ends with a message: nothing reaches the model |
//! | `tool_results` | each tool's result, as the model would read it | the model gets an error result instead, naming the guardrail |
//! | `files` | files in the thread: a text file's start and what `read_attachment` reads of it, each PNG or JPEG image (its own call, image content) | the file is withheld, the model and the thread told so |
//! | `answer` | the whole answer, before any of it is posted (no streaming) | the guardrail's own message is posted instead |
//!
//! Every intervention is recorded on the turn ([`Intervention`]), told in
//! the thread below the answer, and counted (`GuardrailInterventions`);
//! every call's text and image units are priced into the turn's cost
//! ([`GuardUnits::cost`]). A guardrail that cannot be reached, or did not
//! read all of a text or image, fails closed: the text is not used.
//!
//! `ApplyGuardrail` reads text and images (PNG and JPEG,
//! [`GUARDED_IMAGES`]) and nothing else. A file the guardrail cannot read
//! (a GIF or WebP image, a PDF, Word or Excel document: the bot extracts no
//! text from those) is not given to the model when files are guarded: it
//! is withheld unchecked, and the thread is told so
//! ([`Intervention::unchecked`]).

use crate::files::ImageFormat;
use crate::ports::PortError;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What a guardrail is applied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Guarded {
    Question,
    ToolResults,
    Files,
    Answer,
}

impl Guarded {
    pub fn as_str(self) -> &'static str {
        match self {
            Guarded::Question => "question",
            Guarded::ToolResults => "tool_results",
            Guarded::Files => "files",
            Guarded::Answer => "answer",
        }
    }
}

/// `guardrail` in the assistant configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardrailConfig {
    /// The guardrail's id (`abc123xyz`) or ARN.
    pub id: String,
    /// A published version (`1`), or `DRAFT`.
    pub version: String,
    pub apply_to: Vec<Guarded>,
}

impl GuardrailConfig {
    /// What is wrong with it, if anything (Bedrock's own patterns for the
    /// id and the version).
    pub fn problem(&self) -> Option<String> {
        let plain_id = !self.id.is_empty()
            && self.id.len() <= 64
            && self.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        let arn_id =
            self.id.strip_prefix("arn:aws").and_then(|rest| rest.split_once(":bedrock:")).is_some_and(|(_, rest)| {
                let parts: Vec<&str> = rest.split(':').collect();
                parts.len() == 3
                    && !parts[0].is_empty()
                    && parts[1].len() == 12
                    && parts[1].bytes().all(|b| b.is_ascii_digit())
                    && parts[2].strip_prefix("guardrail/").is_some_and(|id| {
                        !id.is_empty() && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                    })
            });
        if !plain_id && !arn_id {
            return Some("id is neither a guardrail's id (lowercase letters and digits) nor its ARN".into());
        }
        let numbered = !self.version.is_empty()
            && self.version.len() <= 8
            && !self.version.starts_with('0')
            && self.version.bytes().all(|b| b.is_ascii_digit());
        if !numbered && self.version != "DRAFT" {
            return Some("version is neither a version number (1 to 99999999) nor DRAFT".into());
        }
        if self.apply_to.is_empty() {
            return Some("apply_to names nothing to guard".into());
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = self.apply_to.iter().find(|kind| !seen.insert(**kind)) {
            return Some(format!("apply_to names {} twice", twice.as_str()));
        }
        None
    }

    pub fn applies_to(&self, kind: Guarded) -> bool {
        self.apply_to.contains(&kind)
    }
}

/// Whose text it is, as `ApplyGuardrail` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// What the model reads.
    Input,
    /// What the bot says.
    Output,
}

/// The text units one or more calls were billed for, per policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GuardUnits {
    pub content: u64,
    pub topic: u64,
    pub word: u64,
    pub sensitive: u64,
    pub grounding: u64,
    /// Images the content filter read (`contentPolicyImageUnits`).
    pub images: u64,
    /// Calls made.
    pub calls: u64,
}

/// US dollars per text unit (1,000 characters), Bedrock's list prices
/// (us-east-1, November 2026). Word filters, regular expressions and the
/// free sensitive-information units cost nothing.
pub const CONTENT_UNIT: f64 = 0.15 / 1_000.0;
pub const TOPIC_UNIT: f64 = 0.15 / 1_000.0;
pub const SENSITIVE_UNIT: f64 = 0.10 / 1_000.0;
pub const GROUNDING_UNIT: f64 = 0.10 / 1_000.0;
/// US dollars per image the content filter reads (image content filters,
/// same list).
pub const IMAGE_UNIT: f64 = 0.00075;

/// The image formats `ApplyGuardrail` reads (its `GuardrailImageFormat`:
/// `png`, `jpeg`).
pub const GUARDED_IMAGES: [ImageFormat; 2] = [ImageFormat::Png, ImageFormat::Jpeg];

impl GuardUnits {
    pub fn cost(&self) -> f64 {
        self.content as f64 * CONTENT_UNIT
            + self.topic as f64 * TOPIC_UNIT
            + self.sensitive as f64 * SENSITIVE_UNIT
            + self.grounding as f64 * GROUNDING_UNIT
            + self.images as f64 * IMAGE_UNIT
    }

    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

impl std::ops::AddAssign for GuardUnits {
    fn add_assign(&mut self, other: Self) {
        self.content += other.content;
        self.topic += other.topic;
        self.word += other.word;
        self.sensitive += other.sensitive;
        self.grounding += other.grounding;
        self.images += other.images;
        self.calls += other.calls;
    }
}

/// What the guardrail made of one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// It intervened (`GUARDRAIL_INTERVENED`): the text is not used.
    pub intervened: bool,
    /// What the guardrail says instead (its configured blocked message, or
    /// the text with sensitive information masked), when it intervened.
    pub output: Option<String>,
    /// The policies that acted, by kind and name (`content:PROMPT_ATTACK`,
    /// `topic:Investment advice`, `word`, `sensitive:EMAIL`): never the
    /// text they matched.
    pub policies: Vec<String>,
    pub units: GuardUnits,
}

/// Bedrock's `ApplyGuardrail`, for one configured guardrail and version.
#[async_trait]
pub trait Guardrail: Send + Sync {
    async fn apply(&self, source: Source, text: &str) -> Result<Verdict, PortError>;

    /// One image, whose format is one of [`GUARDED_IMAGES`] (the adapter
    /// refuses others without a call).
    async fn apply_image(&self, source: Source, format: ImageFormat, bytes: &[u8]) -> Result<Verdict, PortError>;
}

/// Opens a guardrail by its id and version (the adapter holds the client).
pub trait OpenGuardrail: Send + Sync {
    fn open(&self, id: &str, version: &str) -> std::sync::Arc<dyn Guardrail>;
}

impl<F> OpenGuardrail for F
where
    F: Fn(&str, &str) -> std::sync::Arc<dyn Guardrail> + Send + Sync,
{
    fn open(&self, id: &str, version: &str) -> std::sync::Arc<dyn Guardrail> {
        self(id, version)
    }
}

/// A guardrail that acted on a turn, kept on the turn and told in the
/// thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intervention {
    pub kind: Guarded,
    /// The model calls completed when it acted.
    pub step: u32,
    /// What it acted on, for people: "the question", "the result of
    /// `logs_query`", "the text of app.log", "the answer".
    pub what: String,
    pub policies: Vec<String>,
    /// Not the guardrail's verdict: a file it cannot read (a document, a
    /// GIF), withheld from the model unchecked. Not counted as an
    /// intervention.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unchecked: bool,
}

impl Intervention {
    /// One line for the thread: what was blocked, at which step, by what.
    pub fn line(&self) -> String {
        if self.unchecked {
            return format!(
                "Not shown to the model: {}, which the guardrail cannot check (it reads text and PNG or JPEG images).",
                self.what
            );
        }
        let by = if self.policies.is_empty() { String::new() } else { format!(" ({})", self.policies.join(", ")) };
        format!("The guardrail blocked {} at step {}{by}.", self.what, self.step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(id: &str, version: &str, apply_to: &[Guarded]) -> GuardrailConfig {
        GuardrailConfig { id: id.into(), version: version.into(), apply_to: apply_to.to_vec() }
    }

    #[test]
    fn ids_versions_and_kinds_are_checked_as_bedrock_checks_them() {
        assert_eq!(config("gr0abc123", "1", &[Guarded::ToolResults]).problem(), None);
        assert_eq!(
            config("arn:aws:bedrock:us-east-1:123456789012:guardrail/gr0abc123", "DRAFT", &[Guarded::Answer]).problem(),
            None
        );
        for (id, version, apply_to) in [
            ("GR0ABC", "1", &[Guarded::Question][..]),
            ("gr0abc/../x", "1", &[Guarded::Question]),
            ("", "1", &[Guarded::Question]),
            ("arn:aws:bedrock:us-east-1:1234:guardrail/gr0abc", "1", &[Guarded::Question]),
            ("arn:aws:s3:::bucket", "1", &[Guarded::Question]),
            ("gr0abc", "01", &[Guarded::Question]),
            ("gr0abc", "draft", &[Guarded::Question]),
            ("gr0abc", "123456789", &[Guarded::Question]),
            ("gr0abc", "1", &[]),
            ("gr0abc", "1", &[Guarded::Files, Guarded::Files]),
        ] {
            assert!(config(id, version, apply_to).problem().is_some(), "{id} {version} {apply_to:?}");
        }
        let unknown = serde_json::from_str::<GuardrailConfig>(r#"{"id": "g1", "version": "1", "apply_to": ["tools"]}"#);
        assert!(unknown.is_err(), "an unknown kind is refused");
        let extra = r#"{"id": "g1", "version": "1", "apply_to": ["answer"], "mode": "x"}"#;
        assert!(serde_json::from_str::<GuardrailConfig>(extra).is_err(), "unknown fields are refused");
    }

    #[test]
    fn units_are_priced_per_policy_and_words_are_free() {
        let units = GuardUnits { content: 2, topic: 2, word: 100, sensitive: 10, grounding: 0, images: 0, calls: 2 };
        assert!((units.cost() - (4.0 * 0.15 + 10.0 * 0.10) / 1_000.0).abs() < 1e-12);
        let images = GuardUnits { images: 3, calls: 3, ..GuardUnits::default() };
        assert!((images.cost() - 3.0 * 0.00075).abs() < 1e-12, "images are priced per image");
    }

    #[test]
    fn an_intervention_says_what_at_which_step_and_by_what() {
        let intervention = Intervention {
            kind: Guarded::ToolResults,
            step: 2,
            what: "the result of `logs_query`".into(),
            policies: vec!["content:PROMPT_ATTACK".into()],
            unchecked: false,
        };
        assert_eq!(
            intervention.line(),
            "The guardrail blocked the result of `logs_query` at step 2 (content:PROMPT_ATTACK)."
        );
    }
}
