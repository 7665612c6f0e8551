//! What a turn costs, estimated: the model's tokens at the model's prices,
//! and the AWS requests and compute the turn used at list prices. Every
//! price the bot knows is in this file.
//!
//! AWS prices are on-demand list prices in us-east-1 (November 2026):
//! other regions differ by a few percent. The worker meters what it does
//! for a turn ([`Metered`], saved with the turn across invocations); what
//! the ingress and the responder do for a turn is the same every time and
//! added as [`OUTSIDE_THE_WORKER`].

use crate::turn::Usage;
use serde::{Deserialize, Serialize};

/// A model's prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrices {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    #[serde(default)]
    pub cache_read_per_mtok: f64,
    #[serde(default)]
    pub cache_write_per_mtok: f64,
}

impl ModelPrices {
    const fn per_mtok(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Self {
        Self {
            input_per_mtok: input,
            output_per_mtok: output,
            cache_read_per_mtok: cache_read,
            cache_write_per_mtok: cache_write,
        }
    }

    /// Bedrock's on-demand prices for the model families it names
    /// (`us.anthropic.claude-sonnet-4-…`, `amazon.nova-lite-v1:0`); `None`
    /// for others: set `model_prices` in the assistant configuration.
    pub fn for_model(model_id: &str) -> Option<Self> {
        const KNOWN: &[(&str, ModelPrices)] = &[
            ("claude-opus", ModelPrices::per_mtok(15.0, 75.0, 1.5, 18.75)),
            ("claude-sonnet", ModelPrices::per_mtok(3.0, 15.0, 0.3, 3.75)),
            ("claude-3-7-sonnet", ModelPrices::per_mtok(3.0, 15.0, 0.3, 3.75)),
            ("claude-3-5-sonnet", ModelPrices::per_mtok(3.0, 15.0, 0.3, 3.75)),
            ("claude-haiku-4", ModelPrices::per_mtok(1.0, 5.0, 0.1, 1.25)),
            ("claude-3-5-haiku", ModelPrices::per_mtok(0.8, 4.0, 0.08, 1.0)),
            ("nova-pro", ModelPrices::per_mtok(0.8, 3.2, 0.2, 0.0)),
            ("nova-lite", ModelPrices::per_mtok(0.06, 0.24, 0.015, 0.0)),
            ("nova-micro", ModelPrices::per_mtok(0.035, 0.14, 0.00875, 0.0)),
        ];
        let id = model_id.to_ascii_lowercase();
        KNOWN.iter().find(|(family, _)| id.contains(family)).map(|(_, prices)| *prices)
    }

    /// The tokens' price: Bedrock counts cached tokens apart from the
    /// other input tokens.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_mtok
            + usage.output_tokens as f64 * self.output_per_mtok
            + usage.cache_read_tokens as f64 * self.cache_read_per_mtok
            + usage.cache_write_tokens as f64 * self.cache_write_per_mtok)
            / 1_000_000.0
    }
}

/// What the worker did for a turn, summed over its invocations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Metered {
    /// DynamoDB write request units (one per KB written).
    pub dynamodb_write_units: u64,
    /// DynamoDB read request units (consistent reads: one per 4 KB).
    pub dynamodb_read_units: u64,
    /// SQS requests: sends, and each handled message's receive, delete and
    /// visibility change.
    pub sqs_requests: u64,
    /// Large tool results written to the bucket (the docs tools' reads are
    /// not metered: a few per turn at $0.0000004 each).
    pub s3_puts: u64,
    /// Lambda invocations and the time they spent on the turn.
    pub invocations: u64,
    pub busy_ms: u64,
}

impl std::ops::AddAssign for Metered {
    fn add_assign(&mut self, other: Self) {
        self.dynamodb_write_units += other.dynamodb_write_units;
        self.dynamodb_read_units += other.dynamodb_read_units;
        self.sqs_requests += other.sqs_requests;
        self.s3_puts += other.s3_puts;
        self.invocations += other.invocations;
        self.busy_ms += other.busy_ms;
    }
}

/// US dollars per request or unit.
pub const DYNAMODB_WRITE_UNIT: f64 = 0.625 / 1e6;
pub const DYNAMODB_READ_UNIT: f64 = 0.125 / 1e6;
/// FIFO queues.
pub const SQS_REQUEST: f64 = 0.50 / 1e6;
pub const S3_PUT: f64 = 0.005 / 1e3;
pub const LAMBDA_REQUEST: f64 = 0.20 / 1e6;
/// arm64 (the template's default); x86_64 costs a quarter more.
pub const LAMBDA_GB_SECOND: f64 = 0.000_013_333_4;

/// What the ingress and the responder do for every turn: the ingress's
/// claim (1 KB), enqueue and a 10 ms invocation at 128 MB; the responder's
/// receive, delete, turn and delivery reads, delivery record writes (before
/// and after posting) and a 100 ms invocation at 256 MB.
pub const OUTSIDE_THE_WORKER: Metered = Metered {
    dynamodb_write_units: 3,
    dynamodb_read_units: 2,
    sqs_requests: 3,
    s3_puts: 0,
    invocations: 2,
    busy_ms: 0,
};
const OUTSIDE_THE_WORKER_GB_SECONDS: f64 = 0.010 * 0.125 + 0.100 * 0.25;

/// A turn's estimated cost in US dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    /// `None` when the model's prices are unknown.
    pub model: Option<f64>,
    pub aws: f64,
}

impl Cost {
    pub fn total(&self) -> f64 {
        self.model.unwrap_or_default() + self.aws
    }
}

/// The AWS part of a turn: what the worker metered, at `worker_memory_mb`,
/// plus what the other functions do for every turn.
pub fn aws_cost(worker: &Metered, worker_memory_mb: u32) -> f64 {
    let mut all = *worker;
    all += OUTSIDE_THE_WORKER;
    let gb_seconds = worker.busy_ms as f64 / 1_000.0 * f64::from(worker_memory_mb) / 1_024.0;
    all.dynamodb_write_units as f64 * DYNAMODB_WRITE_UNIT
        + all.dynamodb_read_units as f64 * DYNAMODB_READ_UNIT
        + all.sqs_requests as f64 * SQS_REQUEST
        + all.s3_puts as f64 * S3_PUT
        + all.invocations as f64 * LAMBDA_REQUEST
        + (gb_seconds + OUTSIDE_THE_WORKER_GB_SECONDS) * LAMBDA_GB_SECOND
}

/// What a turn used, as [`estimate`] prices it.
#[derive(Debug, Clone, Copy)]
pub struct Spent<'a> {
    /// The main model's tokens, and its prices (unknown: no model cost).
    pub usage: &'a Usage,
    pub prices: Option<ModelPrices>,
    /// The prompt enhancer's tokens and prices, when it was called.
    pub enhancer: Option<(&'a Usage, Option<ModelPrices>)>,
    pub metered: &'a Metered,
    pub guard_units: &'a crate::guardrail::GuardUnits,
    pub worker_memory_mb: u32,
}

/// A turn's estimated cost: the settled turn's report and the budgets'
/// counters price it alike.
pub fn estimate(spent: Spent<'_>) -> Cost {
    let enhancer = spent.enhancer.map_or(0.0, |(usage, prices)| prices.map_or(0.0, |prices| prices.cost(usage)));
    Cost {
        model: spent.prices.map(|prices| prices.cost(spent.usage) + enhancer),
        aws: aws_cost(spent.metered, spent.worker_memory_mb) + spent.guard_units.cost(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_are_priced_and_cached_tokens_count_apart() {
        let sonnet = ModelPrices::for_model("us.anthropic.claude-sonnet-4-20250514-v1:0").unwrap();
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 0,
        };
        assert!((sonnet.cost(&usage) - (3.0 + 1.5 + 0.6)).abs() < 1e-9);
        assert_eq!(ModelPrices::for_model("cohere.command-r-v1:0"), None, "unknown: configure it");
        assert!(ModelPrices::for_model("amazon.nova-lite-v1:0").is_some());
    }

    #[test]
    fn the_aws_part_counts_every_request_and_the_compute() {
        let idle = aws_cost(&Metered::default(), 512);
        assert!(idle > 0.0, "the ingress and the responder cost something for every turn");
        let step =
            Metered { dynamodb_write_units: 10, sqs_requests: 4, busy_ms: 1_000, invocations: 1, ..Default::default() };
        let more = aws_cost(&step, 512) - idle;
        let expected = 10.0 * DYNAMODB_WRITE_UNIT + 4.0 * SQS_REQUEST + LAMBDA_REQUEST + 0.5 * LAMBDA_GB_SECOND;
        assert!((more - expected).abs() < 1e-12, "{more} vs {expected}");
    }
}
