//! The [`Worker`] and the one way to build it: [`Worker::builder`] with the
//! [`Ports`] every worker needs, then what this deployment configures. The
//! assembly (`worker_config::assemble`), the tests and the benchmark all
//! build it so.

use crate::approvals::{Approvals, ApprovalsConfig};
use crate::enhancer::Enhancer;
use crate::outcome::Limits;
use assistant_core::Clock;
use assistant_core::departures::Departures;
use assistant_core::feedback::FeedbackLog;
use assistant_core::grants::ThreadGrants;
use assistant_core::memory::ChannelMemory;
use assistant_core::model::Model;
use assistant_core::ports::{
    AgentSlack, ApprovalTimers, ArtifactStore, DeliveryLog, ReplyQueue, SlackFiles, SlackReader, SuggestedPrompt,
    TurnStore, UserContexts, WorkQueue,
};
use assistant_core::pricing::ModelPrices;
use assistant_core::response_modes::ResponseRule;
use assistant_core::store::StreamLog;
use assistant_core::telemetry::TurnMetrics;
use std::sync::Arc;
use tools_registry::background::Background;
use tools_registry::{ToolPolicy, ToolRegistry, Unoffered};
use worker_identity::sign_in::{SignIn, SignInPorts};
use worker_incidents::IncidentDesk;

/// The prompts shown when the configuration names none.
pub fn default_prompts() -> Vec<SuggestedPrompt> {
    let prompt = |title: &str, message: &str| SuggestedPrompt { title: title.into(), message: message.into() };
    vec![
        prompt("What can you do?", "What can you help me with, and which tools can you use here?"),
        prompt("Why is a service failing?", "Why is checkout-api failing in prod? Check its logs and recent deploys."),
        prompt("Find it in our docs", "Where do our runbooks say how to roll back a deploy?"),
    ]
}

/// The outside systems every worker talks to.
pub struct Ports {
    pub store: Arc<dyn TurnStore>,
    /// Read only: the responder writes it.
    pub deliveries: Arc<dyn DeliveryLog>,
    pub model: Arc<dyn Model>,
    pub work: Arc<dyn WorkQueue>,
    pub replies: Arc<dyn ReplyQueue>,
    pub artifacts: Arc<dyn ArtifactStore>,
    pub slack: Arc<dyn SlackReader>,
    /// Files people paste in threads.
    pub files: Arc<dyn SlackFiles>,
    /// Approval deadlines (set and swept by the worker only).
    pub timers: Arc<dyn ApprovalTimers>,
    pub clock: Arc<dyn Clock>,
    /// Where settled turns are reported.
    pub metrics: Arc<dyn TurnMetrics>,
    /// Slack's agent surface: suggested prompts, thread titles, streamed
    /// answers.
    pub agent: Arc<dyn AgentSlack>,
    /// The worker's record of the answer it streamed, per turn.
    pub streams: StreamLog,
    /// People's ratings of answers.
    pub feedback: FeedbackLog,
    /// "Approve for this thread": tools a thread may run without a prompt.
    pub grants: ThreadGrants,
    /// What people have in view beside the DM (written by the ingress).
    pub contexts: Arc<dyn UserContexts>,
    /// Teams the app left and people who left: their work stops, and what
    /// is kept for them is forgotten.
    pub departures: Departures,
    /// Posts claimed through slash commands' `response_url`s.
    pub response_urls: assistant_core::response_url::ResponseUrls,
    /// What turns spent, per person, channel and deployment (`budgets`).
    pub spending: assistant_core::budgets::Spending,
    /// Forms MCP servers put to people, waiting for their answers.
    pub forms: assistant_core::elicitation::Forms,
}

/// What a worker was assembled from, for the one line the function logs
/// when it assembles one (`worker assembled`): the system prompt's key (or
/// `bundled`), the docs' prefix, the declared HTTP tools and MCP servers,
/// the tools offered, and whether a `tool_policy` is configured (without
/// one, only the built-in read-only tools are allowed, in every channel).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assembly {
    pub prompt: String,
    pub docs: String,
    pub http_tools: usize,
    pub mcp_servers: usize,
    pub tools: usize,
    pub tool_policy: bool,
}

/// The worker's loop and everything it talks to: built once per process
/// ([`Worker::builder`]), then [`Worker::handle`] for each work message.
pub struct Worker {
    pub(crate) ports: Ports,
    pub(crate) tools: ToolRegistry,
    pub(crate) approvals: Approvals,
    pub(crate) system_prompt: String,
    pub(crate) limits: Limits,
    /// The model's prices, for a turn's cost.
    pub(crate) prices: Option<ModelPrices>,
    /// Shown when a person opens the DM.
    pub(crate) suggested_prompts: Vec<SuggestedPrompt>,
    /// Channel globs that are the team's place for these questions: the
    /// model is told not to send people elsewhere there.
    pub(crate) home_channels: Vec<String>,
    /// When the bot speaks, per channel (`response_mode`).
    pub(crate) response_modes: Vec<ResponseRule>,
    /// The cheap model's reading of the question, when configured.
    pub(crate) enhancer: Option<Enhancer>,
    /// Tools that exist nowhere in this worker, and why (inspection only).
    pub(crate) unoffered: Vec<Unoffered>,
    /// What it was assembled from (its start's log line).
    pub(crate) assembly: Assembly,
    /// Per-user sign-in for tools that act as the person who asked; `None`
    /// where no tool does.
    pub(crate) sign_in: Option<SignIn>,
    /// What the start began and nothing waits for.
    pub(crate) background: Background,
    /// The channels' memory of settled turns; `None`: nothing is kept.
    pub(crate) memory: Option<ChannelMemory>,
    /// Alerts in, incidents and their threads out; `None` where the worker
    /// was given no incident ports (the evals).
    pub(crate) incidents: Option<IncidentDesk>,
    /// The deployment's guardrail, where configured.
    pub(crate) guarding: Option<crate::guarding::Guarding>,
    /// Whether answers' tables may be charts and data tables (`charts`;
    /// recorded on each turn for the responder).
    pub(crate) charts: bool,
    /// The deployment's budgets, where configured.
    pub(crate) budgets: Option<crate::budgets::Budgeting>,
}

impl std::ops::Deref for Worker {
    type Target = Ports;

    /// The ports by name (`self.store`, `self.clock`): what every handler
    /// talks to.
    fn deref(&self) -> &Ports {
        &self.ports
    }
}

impl Worker {
    /// A worker on `ports` with no tools, the default approvals, limits and
    /// prompts, and nothing optional, until the builder says otherwise.
    pub fn builder(ports: Ports) -> WorkerBuilder {
        WorkerBuilder(Worker {
            ports,
            tools: ToolRegistry::new(Vec::new(), ToolPolicy::allow_all()).expect("no tools conflict"),
            approvals: Approvals::new(ApprovalsConfig::default()),
            system_prompt: String::new(),
            limits: Limits::default(),
            prices: None,
            suggested_prompts: default_prompts(),
            home_channels: Vec::new(),
            response_modes: Vec::new(),
            enhancer: None,
            unoffered: Vec::new(),
            assembly: Assembly::default(),
            sign_in: None,
            background: Background::default(),
            memory: None,
            incidents: None,
            guarding: None,
            charts: true,
            budgets: None,
        })
    }

    /// This worker, to change before it is built again (the function's
    /// reassembly, the tests).
    pub fn rebuild(self) -> WorkerBuilder {
        WorkerBuilder(self)
    }

    /// Other tools for a worker already shared by its function (the
    /// function's tests bring their own).
    pub fn replace_tools(&mut self, tools: ToolRegistry) {
        self.tools = tools;
    }

    /// The tools this worker offers (inspection, the local runner).
    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// What the start began that nothing waits for.
    pub fn background(&self) -> &Background {
        &self.background
    }

    /// What this worker was assembled from.
    pub fn assembly(&self) -> &Assembly {
        &self.assembly
    }
}

/// A [`Worker`] being built: each setter replaces one default.
pub struct WorkerBuilder(Worker);

impl WorkerBuilder {
    pub fn tools(mut self, tools: ToolRegistry) -> Self {
        self.0.tools = tools;
        self
    }

    pub fn approvals(mut self, config: ApprovalsConfig) -> Self {
        self.0.approvals = Approvals::new(config);
        self
    }

    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.0.system_prompt = prompt.into();
        self
    }

    pub fn limits(mut self, limits: Limits) -> Self {
        self.0.limits = limits;
        self
    }

    pub fn prices(mut self, prices: Option<ModelPrices>) -> Self {
        self.0.prices = prices;
        self
    }

    pub fn suggested_prompts(mut self, prompts: Vec<SuggestedPrompt>) -> Self {
        self.0.suggested_prompts = prompts;
        self
    }

    pub fn home_channels(mut self, globs: Vec<String>) -> Self {
        self.0.home_channels = globs;
        self
    }

    pub fn response_modes(mut self, rules: Vec<ResponseRule>) -> Self {
        self.0.response_modes = rules;
        self
    }

    pub fn enhancer(mut self, enhancer: Option<Enhancer>) -> Self {
        self.0.enhancer = enhancer;
        self
    }

    pub fn unoffered(mut self, unoffered: Vec<Unoffered>) -> Self {
        self.0.unoffered = unoffered;
        self
    }

    pub fn assembly(mut self, assembly: Assembly) -> Self {
        self.0.assembly = assembly;
        self
    }

    pub fn sign_in(mut self, sign_in: Option<SignIn>) -> Self {
        self.0.sign_in = sign_in;
        self
    }

    /// Replaces one of the sign-in's ports (the tests' fault injection).
    pub fn sign_in_ports(mut self, change: impl FnOnce(&mut SignInPorts)) -> Self {
        if let Some(sign_in) = &mut self.0.sign_in {
            change(&mut sign_in.ports);
        }
        self
    }

    pub fn background(mut self, background: Background) -> Self {
        self.0.background = background;
        self
    }

    pub fn memory(mut self, memory: Option<ChannelMemory>) -> Self {
        self.0.memory = memory;
        self
    }

    pub fn incidents(mut self, desk: Option<IncidentDesk>) -> Self {
        self.0.incidents = desk;
        self
    }

    pub fn guarding(mut self, guarding: Option<crate::guarding::Guarding>) -> Self {
        self.0.guarding = guarding;
        self
    }

    /// Whether answers' tables may be charts and data tables (default on).
    pub fn budgets(mut self, budgets: Option<crate::budgets::Budgeting>) -> Self {
        self.0.budgets = budgets;
        self
    }

    pub fn charts(mut self, charts: bool) -> Self {
        self.0.charts = charts;
        self
    }

    /// Replaces one port (the tests' fault injection, a clock that moves).
    pub fn ports(mut self, change: impl FnOnce(&mut Ports)) -> Self {
        change(&mut self.0.ports);
        self
    }

    pub fn build(self) -> Worker {
        self.0
    }
}
