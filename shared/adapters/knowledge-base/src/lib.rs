//! Bedrock knowledge bases behind the core's [`KnowledgeBases`] port:
//! `POST /knowledgebases/{id}/retrieve` on Bedrock Agent Runtime
//! (REST-JSON, signing name `bedrock`, endpoint variable
//! `AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME`), through `adapters-sigv4`.
//!
//! `Retrieve` is a read: it is repeated after any failure that may pass.
//! Each passage keeps where it came from (S3 URI, web URL, Confluence,
//! SharePoint, Salesforce or custom document id) and its score.

use adapters_sigv4::{AwsApi, Repeat, Service};
use assistant_core::ports::PortError;
use assistant_core::signals::{KnowledgeBases, Passage};
use async_trait::async_trait;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};

pub const AGENT_RUNTIME: Service = Service {
    signing_name: "bedrock",
    endpoint_prefix: "bedrock-agent-runtime",
    endpoint_variable: "AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME",
    json_target: None,
};

/// Retrieve takes 1 to 100 results.
const MAX_RESULTS: usize = 100;

pub struct BedrockKnowledgeBases {
    api: AwsApi,
}

impl BedrockKnowledgeBases {
    pub fn new(api: AwsApi) -> Self {
        Self { api }
    }
}

#[async_trait]
impl KnowledgeBases for BedrockKnowledgeBases {
    async fn retrieve(
        &self,
        knowledge_base_id: &str,
        query: &str,
        max_results: usize,
    ) -> Result<Vec<Passage>, PortError> {
        let path = format!("/knowledgebases/{}/retrieve", utf8_percent_encode(knowledge_base_id, NON_ALPHANUMERIC));
        let input = json!({
            "retrievalQuery": {"text": query},
            "retrievalConfiguration": {"vectorSearchConfiguration": {"numberOfResults": max_results.clamp(1, MAX_RESULTS)}},
        });
        let answer = self
            .api
            .post("Retrieve", &path, &input, Repeat::Safe)
            .await
            .map_err(|err| PortError::new("Bedrock Agent Runtime Retrieve", err.to_string()).with_source(err))?;
        Ok(answer["retrievalResults"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|result| Passage {
                text: result["content"]["text"].as_str().unwrap_or_default().to_owned(),
                source: source_of(&result["location"]),
                score: result["score"].as_f64(),
            })
            .take(max_results)
            .collect())
    }
}

/// The passage's source, whatever kind of data source it came from.
fn source_of(location: &Value) -> Option<String> {
    [
        &location["s3Location"]["uri"],
        &location["webLocation"]["url"],
        &location["confluenceLocation"]["url"],
        &location["sharePointLocation"]["url"],
        &location["salesforceLocation"]["url"],
        &location["kendraDocumentLocation"]["uri"],
        &location["customDocumentLocation"]["id"],
    ]
    .into_iter()
    .find_map(|value| value.as_str().filter(|text| !text.is_empty()).map(str::to_owned))
}
