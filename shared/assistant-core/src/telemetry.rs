//! What a settled turn reports to operators: one [`TurnReport`] per turn,
//! made by the worker when the turn settles and handed to [`TurnMetrics`]
//! (CloudWatch Embedded Metric Format in Lambda, `lambda_support::metrics`).

use crate::pricing::{Cost, Metered, ModelPrices};
use crate::turn::{TurnId, TurnStatus, Usage};

/// A limit that ended a turn before the model finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitHit {
    Steps,
    Tokens,
    /// A budget (`budgets`) was spent.
    Budget,
}

impl LimitHit {
    pub fn as_str(self) -> &'static str {
        match self {
            LimitHit::Steps => "steps",
            LimitHit::Tokens => "tokens",
            LimitHit::Budget => "budget",
        }
    }
}

/// A settled turn's figures: the token counts are the exact sums of what
/// the model reported for the turn's steps.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnReport {
    pub turn_id: TurnId,
    pub status: TurnStatus,
    pub limit: Option<LimitHit>,
    pub steps: u32,
    pub tool_calls: u32,
    pub tool_errors: u32,
    pub usage: Usage,
    pub metered: Metered,
    pub time_to_first_status_ms: Option<u64>,
    /// When the first streamed text reached Slack, if the answer streamed.
    pub time_to_first_text_ms: Option<u64>,
    pub time_to_answer_ms: u64,
    /// The model's prices, when known.
    pub prices: Option<ModelPrices>,
    /// The prompt enhancer's call, when one was made.
    pub enhancer: Option<EnhancerReport>,
    /// The guardrail's text units for the turn (priced with the AWS part).
    pub guard_units: crate::guardrail::GuardUnits,
    /// How many times the guardrail intervened.
    pub guardrail_interventions: u32,
}

/// The prompt enhancer's part of a turn: its tokens (not in `usage`, which
/// is the main model's), its prices, its latency, and whether it was used.
#[derive(Debug, Clone, PartialEq)]
pub struct EnhancerReport {
    pub usage: Usage,
    pub prices: Option<ModelPrices>,
    pub latency_ms: u64,
    pub used: bool,
}

impl TurnReport {
    /// The turn's estimated cost, with the worker at `worker_memory_mb`.
    pub fn cost(&self, worker_memory_mb: u32) -> Cost {
        crate::pricing::estimate(crate::pricing::Spent {
            usage: &self.usage,
            prices: self.prices,
            enhancer: self.enhancer.as_ref().map(|run| (&run.usage, run.prices)),
            metered: &self.metered,
            guard_units: &self.guard_units,
            worker_memory_mb,
        })
    }
}

/// Where settled turns, and people's ratings of their answers, are
/// reported.
pub trait TurnMetrics: Send + Sync {
    fn turn_settled(&self, report: &TurnReport);

    /// Someone rated an answer (👍 / 👎).
    fn feedback(&self, _rating: crate::feedback::Rating) {}

    /// A team or people departed and `records` items kept for them were
    /// deleted (`forget`).
    fn forgotten(&self, _reason: crate::messages::ForgetReason, _records: usize) {}

    /// The deployment's guardrail acted on `kind` (`GuardrailInterventions`).
    fn guardrail_intervened(&self, _kind: crate::guardrail::Guarded) {}

    /// The deployment passed `alert_at` of its monthly budget (`BudgetAlerts`),
    /// with the share spent.
    fn budget_alert(&self, _ratio: f64) {}
}

/// Reports nowhere (the local runner prints its own summary).
pub struct NoMetrics;

impl TurnMetrics for NoMetrics {
    fn turn_settled(&self, _: &TurnReport) {}
}
