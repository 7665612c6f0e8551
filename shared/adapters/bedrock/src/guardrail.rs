//! Bedrock's `ApplyGuardrail` as the core's [`Guardrail`] port: one text,
//! or one PNG or JPEG image (its `image` content block, read by the
//! guardrail's image content filters), `INPUT` or `OUTPUT`, against one
//! guardrail version. The SDK's standard
//! retries (the same as the model's, [`crate::retry_config`]) ride out
//! throttling; what is left is a [`PortError`], and the worker fails
//! closed on it.
//!
//! A guardrail that read only part of the text (its coverage says fewer
//! characters were guarded than sent) is treated as unreachable: the
//! worker never uses text no guardrail read. The same for an image the
//! coverage says was not guarded.

use adapters_aws::Later;
use assistant_core::files::ImageFormat;
use assistant_core::guardrail::{GuardUnits, Guardrail, Source, Verdict};
use assistant_core::ports::PortError;
use async_trait::async_trait;
use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::operation::apply_guardrail::ApplyGuardrailOutput;
use aws_sdk_bedrockruntime::types::{
    GuardrailAction, GuardrailAssessment, GuardrailContentBlock, GuardrailContentSource, GuardrailImageBlock,
    GuardrailImageFormat, GuardrailImageSource, GuardrailTextBlock,
};

const OPERATION: &str = "Bedrock ApplyGuardrail";

/// One guardrail version, through the worker's Bedrock runtime client.
pub struct BedrockGuardrail {
    client: Later<Client>,
    id: String,
    version: String,
}

impl BedrockGuardrail {
    pub fn new(client: impl Into<Later<Client>>, id: impl Into<String>, version: impl Into<String>) -> Self {
        Self { client: client.into(), id: id.into(), version: version.into() }
    }
}

impl BedrockGuardrail {
    async fn send(&self, source: Source, block: GuardrailContentBlock) -> Result<ApplyGuardrailOutput, PortError> {
        self.client
            .get()
            .apply_guardrail()
            .guardrail_identifier(&self.id)
            .guardrail_version(&self.version)
            .source(match source {
                Source::Input => GuardrailContentSource::Input,
                Source::Output => GuardrailContentSource::Output,
            })
            .content(block)
            .send()
            .await
            .map_err(|err| PortError::new(OPERATION, adapters_aws::summarize(&err)))
    }
}

#[async_trait]
impl Guardrail for BedrockGuardrail {
    async fn apply(&self, source: Source, text: &str) -> Result<Verdict, PortError> {
        let block = GuardrailTextBlock::builder()
            .text(text)
            .build()
            .map_err(|err| PortError::new(OPERATION, err.to_string()))?;
        let output = self.send(source, GuardrailContentBlock::Text(block)).await?;
        verdict(&output, text.chars().count())
    }

    async fn apply_image(&self, source: Source, format: ImageFormat, bytes: &[u8]) -> Result<Verdict, PortError> {
        let format = match format {
            ImageFormat::Png => GuardrailImageFormat::Png,
            ImageFormat::Jpeg => GuardrailImageFormat::Jpeg,
            other => {
                return Err(PortError::new(OPERATION, format!("the guardrail reads no {} images", other.as_str())));
            }
        };
        if bytes.is_empty() {
            return Err(PortError::new(OPERATION, "an empty image"));
        }
        let block = GuardrailImageBlock::builder()
            .format(format)
            .source(GuardrailImageSource::Bytes(aws_sdk_bedrockruntime::primitives::Blob::new(bytes)))
            .build()
            .map_err(|err| PortError::new(OPERATION, err.to_string()))?;
        let output = self.send(source, GuardrailContentBlock::Image(block)).await?;
        if let Some(images) = output.guardrail_coverage().and_then(|coverage| coverage.images())
            && let (Some(guarded), Some(total)) = (images.guarded(), images.total())
            && guarded < total
        {
            return Err(PortError::new(OPERATION, format!("the guardrail read {guarded} of {total} images")));
        }
        verdict(&output, 0)
    }
}

/// The port's verdict from Bedrock's answer to a text of `sent` characters.
pub fn verdict(output: &ApplyGuardrailOutput, sent: usize) -> Result<Verdict, PortError> {
    if let Some(coverage) = output.guardrail_coverage().and_then(|coverage| coverage.text_characters())
        && let (Some(guarded), Some(total)) = (coverage.guarded(), coverage.total())
        && guarded < total
    {
        return Err(PortError::new(
            OPERATION,
            format!("the guardrail read {guarded} of {total} characters (sent {sent}): not all of it was checked"),
        ));
    }
    let units = output.usage().map_or_else(GuardUnits::default, |usage| GuardUnits {
        content: non_negative(usage.content_policy_units()),
        topic: non_negative(usage.topic_policy_units()),
        word: non_negative(usage.word_policy_units()),
        sensitive: non_negative(usage.sensitive_information_policy_units()),
        grounding: non_negative(usage.contextual_grounding_policy_units()),
        images: non_negative(usage.content_policy_image_units().unwrap_or_default()),
        calls: 0,
    });
    let intervened = matches!(output.action(), GuardrailAction::GuardrailIntervened);
    let said: Vec<&str> = output.outputs().iter().filter_map(|content| content.text()).collect();
    Ok(Verdict {
        intervened,
        output: (intervened && !said.is_empty()).then(|| said.join("\n")),
        policies: output.assessments().iter().flat_map(policies).collect(),
        units: GuardUnits { calls: 1, ..units },
    })
}

fn non_negative(units: i32) -> u64 {
    u64::try_from(units).unwrap_or_default()
}

/// The policies that acted in one assessment, by kind and name, never the
/// text they matched.
fn policies(assessment: &GuardrailAssessment) -> Vec<String> {
    let acted = |action: &str| action != "NONE";
    let mut policies = Vec::new();
    if let Some(content) = assessment.content_policy() {
        policies.extend(
            content
                .filters()
                .iter()
                .filter(|filter| acted(filter.action().as_str()))
                .map(|filter| format!("content:{}", filter.r#type().as_str())),
        );
    }
    if let Some(topics) = assessment.topic_policy() {
        policies.extend(
            topics
                .topics()
                .iter()
                .filter(|topic| acted(topic.action().as_str()))
                .map(|topic| format!("topic:{}", topic.name())),
        );
    }
    if let Some(words) = assessment.word_policy() {
        let custom = words.custom_words().iter().any(|word| acted(word.action().as_str()));
        let managed = words.managed_word_lists().iter().any(|word| acted(word.action().as_str()));
        if custom || managed {
            policies.push("word".to_owned());
        }
    }
    if let Some(sensitive) = assessment.sensitive_information_policy() {
        policies.extend(
            sensitive
                .pii_entities()
                .iter()
                .filter(|entity| acted(entity.action().as_str()))
                .map(|entity| format!("sensitive:{}", entity.r#type().as_str())),
        );
        policies.extend(
            sensitive
                .regexes()
                .iter()
                .filter(|regex| acted(regex.action().as_str()))
                .map(|regex| format!("sensitive:{}", regex.name().unwrap_or("regex"))),
        );
    }
    policies.sort();
    policies.dedup();
    policies
}
