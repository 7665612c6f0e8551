//! The tools the model may call: what each is, who may use it where, and
//! running a batch of calls safely. The registry every tool family
//! (`shared/tools/*`) builds on, and the only one the turn loop knows: it
//! uses the core (`assistant-core`, `slack`, `redact`) and nothing above.
//!
//! Models invent tool names and inputs, so nothing the model asks for is
//! trusted: a call to an unknown tool, to a tool not allowed in the channel,
//! or with input that does not match the tool's JSON Schema becomes an error
//! result the model can read and correct, never a failure of the turn.
//! Allow-lists are enforced twice: only allowed tools are advertised, and a
//! call to any other is refused. Each call runs with its own timeout; the
//! calls of one step run concurrently. Every result, error messages
//! included, is redacted before anything else sees it.

pub mod auth;
pub mod background;
pub mod builtin;
pub mod changes;
pub mod references;
pub mod schema;

use crate::schema::Schema;
use assistant_core::approval::Approver;
use assistant_core::model::ToolSpec;
use assistant_core::oauth::AccessToken;
use assistant_core::turn::{RunningTask, ToolOutput, ToolResult, ToolStatus, ToolUse};
use futures_util::future::join_all;
use slack::{ChannelId, Membership, UserId};
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;
/// What a poll or cancellation of a task comes to, later.
pub type TaskFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a tool call failed, in words for the model: the text is the error
/// result it reads (redacted like every result), so it says what to change
/// ("`path` must be under runbooks/") or what happened ("the API answered
/// 503"). Built from a message: `Err("…")?`, `Err(format!(…))?`, or
/// `.map_err(ToolError::from)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(String);

impl ToolError {
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self(message.to_owned())
    }
}

impl From<ToolError> for String {
    fn from(error: ToolError) -> Self {
        error.0
    }
}

/// What a call knows beyond its input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    /// `{turn_id}:{tool_use_id}` for an approved call: the same on every
    /// attempt of it, so a system that honours an idempotency key applies
    /// it once (HTTP tools send it as `Idempotency-Key`).
    pub idempotency_key: Option<String>,
    /// The asking person's own access token, for a tool that acts as them
    /// (`auth: {"oauth": …}`); never logged, never in a result.
    pub access_token: Option<AccessToken>,
    /// The turn the call is part of: a tool over the turn's own things
    /// (its pasted files) reads nothing else.
    pub turn: Option<assistant_core::TurnId>,
    /// The thread asking: a tool over the channel's own things (its
    /// history) reads no other channel's.
    pub thread: Option<assistant_core::ThreadRef>,
    /// How a server may ask the person who asked something while the call
    /// runs (a link to open, a form: MCP elicitation); `None` where nobody
    /// asked (a schedule) or the registry puts nothing to people.
    pub asks: Option<Asks>,
}

/// The person who asked, as a server's requests reach them
/// ([`assistant_core::mcp::Elicitor`]); equal only to itself.
#[derive(Clone)]
pub struct Asks(pub Arc<dyn assistant_core::mcp::Elicitor>);

impl std::fmt::Debug for Asks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Asks")
    }
}

impl PartialEq for Asks {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Asks {}

/// What putting a server's requests to people takes: the reply queue (the
/// responder shows them), where forms wait for answers, the clock.
#[derive(Clone)]
pub struct AskingPorts {
    pub replies: Arc<dyn assistant_core::ports::ReplyQueue>,
    pub forms: Option<assistant_core::elicitation::Forms>,
    pub clock: Arc<dyn assistant_core::Clock>,
}

/// The asking person's access per provider for one step: a token, or why
/// there is none (the provider is down; the call fails with that note).
pub type Credentials = std::collections::BTreeMap<String, Result<AccessToken, ToolError>>;

/// A tool's implementation: input in, output or an error message out.
pub trait RunTool: Send + Sync {
    fn run(&self, input: serde_json::Value, context: CallContext) -> ToolFuture<'_>;

    /// How `task`, which a call of this tool started
    /// ([`ToolOutput::Task`]), goes. By default the tool starts none.
    fn poll_task<'a>(&'a self, task: &'a RunningTask) -> TaskFuture<'a, TaskPoll> {
        let _ = task;
        Box::pin(async { TaskPoll::Done(Err("This tool runs no tasks.".into())) })
    }

    /// Asks `task`'s server to stop it; best effort.
    fn cancel_task<'a>(&'a self, task: &'a RunningTask) -> TaskFuture<'a, ()> {
        let _ = task;
        Box::pin(async {})
    }
}

/// How a task a call started goes, as the registry tells it: its result,
/// once done, redacted like every result.
#[derive(Debug)]
pub enum Polled {
    Working { message: Option<String>, poll: Duration },
    Done(ToolResult),
}

/// How a task a call started goes, as its tool tells it.
#[derive(Debug)]
pub enum TaskPoll {
    /// Still running: what the server says of it, and when to ask again.
    Working { message: Option<String>, poll: Duration },
    /// Done: the call's result, or why there is none.
    Done(Result<ToolOutput, ToolError>),
}

/// A closure over the input is a tool that needs no context.
impl<F, Fut> RunTool for F
where
    F: Fn(serde_json::Value) -> Fut + Send + Sync,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn run(&self, input: serde_json::Value, _context: CallContext) -> ToolFuture<'_> {
        Box::pin(self(input))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads only: runs as soon as the model asks.
    ReadOnly,
    /// Changes something: waits for a human's Approve.
    ChangesThings,
}

pub struct Tool {
    spec: ToolSpec,
    effect: Effect,
    timeout: Duration,
    schema: Schema,
    runner: Arc<dyn RunTool>,
    /// Who may approve this tool's calls, when not the configured default.
    approvers: Option<Vec<Approver>>,
    /// It deletes or overwrites: its confirmation dialog is red.
    destructive: bool,
    /// What "Approve for this thread" grants for it (its name, or its MCP
    /// server's `{server}__*`); `None`: never offered.
    grant_scope: Option<String>,
    /// The sign-in provider it acts through as the asking person.
    acts_as: Option<String>,
}

/// What approving a tool's call takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalRule<'a> {
    /// The tool's own approvers; `None`: the configured default.
    pub approvers: Option<&'a [Approver]>,
    pub destructive: bool,
    /// What a thread grant for it covers; `None`: never granted (nor for
    /// destructive tools, whatever the configuration says).
    pub grant_scope: Option<&'a str>,
}

#[derive(Debug, thiserror::Error)]
pub enum ToolDefinitionError {
    #[error("tool {name}: input schema cannot be used: {reason}")]
    InvalidSchema {
        name: String,
        #[source]
        reason: schema::SchemaError,
    },
    #[error("two tools are named {0}")]
    DuplicateName(String),
}

/// The longest any tool call may take; configured timeouts above it are
/// refused (HTTP tools, MCP servers) or cut to it.
pub const MAX_TOOL_TIME: Duration = Duration::from_secs(120);

impl Tool {
    pub fn new(
        spec: ToolSpec,
        effect: Effect,
        timeout: Duration,
        runner: impl RunTool + 'static,
    ) -> Result<Self, ToolDefinitionError> {
        let schema = Schema::compile(&spec.input_schema)
            .map_err(|reason| ToolDefinitionError::InvalidSchema { name: spec.name.clone(), reason })?;
        Ok(Self::with_schema(spec, schema, effect, timeout, runner))
    }

    /// A tool whose schema a server sent (MCP): its input is checked as far
    /// as the checker goes, and the tool is never refused for its schema.
    pub fn with_servers_schema(
        spec: ToolSpec,
        effect: Effect,
        timeout: Duration,
        runner: impl RunTool + 'static,
    ) -> Self {
        let schema = Schema::compile_lenient(&spec.input_schema);
        Self::with_schema(spec, schema, effect, timeout, runner)
    }

    /// Every tool's timeout is at most [`MAX_TOOL_TIME`], which the step's
    /// time budget counts on.
    fn with_schema(
        spec: ToolSpec,
        schema: Schema,
        effect: Effect,
        timeout: Duration,
        runner: impl RunTool + 'static,
    ) -> Self {
        let timeout = timeout.min(MAX_TOOL_TIME);
        let grant_scope = Some(spec.name.clone());
        Self {
            spec,
            effect,
            timeout,
            schema,
            runner: Arc::new(runner),
            approvers: None,
            destructive: false,
            grant_scope,
            acts_as: None,
        }
    }

    /// Who may approve this tool's calls, instead of the default.
    pub fn with_approvers(mut self, approvers: Option<Vec<Approver>>) -> Self {
        self.approvers = approvers;
        self
    }

    /// Marks a tool that deletes or overwrites.
    pub fn destructive(mut self, destructive: bool) -> Self {
        self.destructive = destructive;
        self
    }

    /// What "Approve for this thread" grants for it; `None`: never offered.
    pub fn grantable_as(mut self, scope: Option<String>) -> Self {
        self.grant_scope = scope;
        self
    }

    /// Calls act as the asking person, with their token from `provider`.
    pub fn acting_as(mut self, provider: Option<String>) -> Self {
        self.acts_as = provider;
        self
    }

    /// The provider whose sign-in its calls use, if they act as the person.
    pub fn provider(&self) -> Option<&str> {
        self.acts_as.as_deref()
    }

    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    pub fn effect(&self) -> Effect {
        self.effect
    }

    pub fn is_destructive(&self) -> bool {
        self.destructive
    }

    /// What approving its calls takes (never a grant for a destructive tool).
    fn approval_rule(&self) -> ApprovalRule<'_> {
        ApprovalRule {
            approvers: self.approvers.as_deref(),
            destructive: self.destructive,
            grant_scope: self.grant_scope.as_deref().filter(|_| !self.destructive),
        }
    }
}

/// Which tools may be used in which channels: ordered rules, the first
/// whose channel pattern matches decides; no matching rule, no tools.
/// Patterns are globs (`*` any run of characters, `?` one character).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPolicy {
    rules: Vec<ChannelRule>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelRule {
    pub channels: String,
    /// The people the rule is for: Slack user ids and user group ids
    /// (`S…`); both empty, everyone. A rule whose people do not include
    /// the asker is passed over, and the next rule for the channel decides.
    #[serde(default)]
    pub users: Vec<UserId>,
    #[serde(default)]
    pub usergroups: Vec<String>,
    /// The workspaces the rule is for (an org-wide install's), as ids or
    /// globs over them (`T0SRE*`); empty, every workspace. Matched against
    /// the asking thread's workspace; a rule naming workspaces never
    /// matches where no thread is known.
    #[serde(default, deserialize_with = "team_globs")]
    pub teams: Vec<String>,
    pub tools: Vec<String>,
    /// Globs over tool names that this rule never allows, whatever
    /// `tools` says (`["*"]` with `["*delete*"]` denied).
    #[serde(default)]
    pub deny: Vec<String>,
    /// For people of another organization in a channel shared with it
    /// (Slack Connect): such a rule is for them only, and a rule without
    /// it never is. No rule for them: no tools but the thread's own.
    #[serde(default)]
    pub external: bool,
}

/// `teams`: workspace ids (`T…`) or globs over them; anything else (a
/// channel or user id, an organization, lower case, spaces) is refused, so
/// a typo never quietly matches nothing.
fn team_globs<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    let teams = <Vec<String> as serde::Deserialize>::deserialize(deserializer)?;
    for team in &teams {
        let shaped = (2..=24).contains(&team.len())
            && team.starts_with('T')
            && team.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'*' || b == b'?');
        if !shaped {
            return Err(serde::de::Error::custom(format!(
                "teams: {team:?} must be a workspace id (T…) or a glob of them (T0SRE*)"
            )));
        }
    }
    Ok(teams)
}

/// A tool that exists nowhere in this worker, and why: for the inspection
/// of what the model sees (`local --tools`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unoffered {
    /// A tool's name, or `{server}__*` for a whole MCP server.
    pub name: String,
    pub reason: String,
}

/// Who asks, and where: what a policy decides by. A DM is a channel too
/// (`D…`): rules whose `channels` match it (`"D*"`, or `"*"`) decide there,
/// so a person's rules follow them into the DM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asker {
    pub channel: ChannelId,
    /// `None`: no person (rules naming people never match).
    pub user: Option<UserId>,
    /// The user groups the person belongs to, of those the policy names.
    pub groups: Vec<String>,
    /// The turn asking, if any.
    pub turn: Option<assistant_core::TurnId>,
    /// Its thread.
    pub thread: Option<assistant_core::ThreadRef>,
    /// The person's standing with the installing team: rules marked
    /// `external` are for people of other organizations (in channels shared
    /// with them), every other rule for the team's own.
    pub membership: Membership,
}

impl From<&ChannelId> for Asker {
    fn from(channel: &ChannelId) -> Self {
        Self {
            channel: channel.clone(),
            user: None,
            groups: Vec::new(),
            turn: None,
            thread: None,
            membership: Membership::Home,
        }
    }
}

impl From<&Asker> for Asker {
    fn from(asker: &Asker) -> Self {
        asker.clone()
    }
}

impl ChannelRule {
    /// A rule for everyone in `channels`.
    pub fn everyone(channels: &str, tools: Vec<String>) -> Self {
        Self {
            channels: channels.into(),
            users: Vec::new(),
            usergroups: Vec::new(),
            teams: Vec::new(),
            tools,
            deny: Vec::new(),
            external: false,
        }
    }

    fn applies_to(&self, asker: &Asker) -> bool {
        let workspace = asker.thread.as_ref().map(|thread| thread.team.as_str());
        self.external == asker.membership.is_external()
            && glob_matches(&self.channels, asker.channel.as_str())
            && (self.teams.is_empty()
                || workspace.is_some_and(|team| self.teams.iter().any(|glob| glob_matches(glob, team))))
            && ((self.users.is_empty() && self.usergroups.is_empty())
                || asker.user.as_ref().is_some_and(|user| self.users.contains(user))
                || self.usergroups.iter().any(|group| asker.groups.contains(group)))
    }
}

/// Whether a tool is offered in a channel, and which rule said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Rule `rule` (0-based, in configuration order) allows it.
    Allowed { rule: usize },
    /// No rule matches the channel and the person: no tools there.
    NoRule,
    /// The channel's rule does not list it.
    NotListed { rule: usize },
    /// The channel's rule denies it with `glob`.
    Denied { rule: usize, glob: String },
    /// It reads only what people pasted in the asking thread
    /// ([`THREAD_OWN_TOOLS`]): allowed unless a rule denies it.
    ThreadOwn,
}

/// Tools that reach nothing beyond the asking thread (what people pasted
/// in it, the turn's own results shared back into it): offered wherever no
/// rule denies them by name or glob.
pub const THREAD_OWN_TOOLS: &[&str] = &[READ_ATTACHMENT, READ_RESULT, ATTACH_RESULT, CHART_RESULT];

/// The tools the turn loop itself knows by name (their families are
/// `tools-files`, the loop's `answer_files` and `tools-memory`).
pub const READ_ATTACHMENT: &str = "read_attachment";
pub const ATTACH_RESULT: &str = "attach_result";
pub const CHART_RESULT: &str = "chart_result";
/// The metrics tool whose results `chart_result` charts (`tools-aws`).
pub const METRICS_TOOL: &str = "cloudwatch_metrics";
pub use assistant_core::reading::READ_RESULT;
pub const RECALL: &str = "recall";
pub const FORGET_THREAD: &str = "forget_thread";

impl ToolPolicy {
    pub fn new(rules: Vec<ChannelRule>) -> Self {
        Self { rules }
    }

    /// Every tool everywhere: for tests and the benchmark. Without a
    /// configured policy a deployment allows only the built-in read-only
    /// tools (see `assembly`).
    pub fn allow_all() -> Self {
        Self::new(vec![ChannelRule::everyone("*", vec!["*".into()])])
    }

    pub fn allows(&self, asker: impl Into<Asker>, tool: &str) -> bool {
        self.permits(&asker.into(), tool)
    }

    /// [`ToolPolicy::allows`] for an asker already built: the registry
    /// checks every tool of a step with one.
    fn permits(&self, asker: &Asker, tool: &str) -> bool {
        matches!(self.decide(asker, tool), Verdict::Allowed { .. } | Verdict::ThreadOwn)
    }

    /// Why `tool` is or is not offered to `asker`: the first rule whose
    /// channel pattern matches and whose people include the asker decides;
    /// its `deny` wins over its `tools`.
    pub fn verdict(&self, asker: impl Into<Asker>, tool: &str) -> Verdict {
        self.decide(&asker.into(), tool)
    }

    fn decide(&self, asker: &Asker, tool: &str) -> Verdict {
        match self.decide_by_rules(asker, tool) {
            Verdict::NoRule | Verdict::NotListed { .. } if THREAD_OWN_TOOLS.contains(&tool) => Verdict::ThreadOwn,
            verdict => verdict,
        }
    }

    fn decide_by_rules(&self, asker: &Asker, tool: &str) -> Verdict {
        let Some((rule, found)) = self.rules.iter().enumerate().find(|(_, rule)| rule.applies_to(asker)) else {
            return Verdict::NoRule;
        };
        if let Some(glob) = found.deny.iter().find(|glob| glob_matches(glob, tool)) {
            return Verdict::Denied { rule, glob: glob.clone() };
        }
        if found.tools.iter().any(|pattern| glob_matches(pattern, tool)) {
            Verdict::Allowed { rule }
        } else {
            Verdict::NotListed { rule }
        }
    }

    /// The user groups any rule names: the ones whose members the worker
    /// looks up for an asker.
    pub fn named_groups(&self) -> Vec<&str> {
        let mut groups: Vec<&str> =
            self.rules.iter().flat_map(|rule| rule.usergroups.iter().map(String::as_str)).collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }

    /// The rule at `index`, for reports.
    pub fn rule(&self, index: usize) -> Option<&ChannelRule> {
        self.rules.get(index)
    }
}

pub use assistant_core::glob::glob_matches;

pub struct ToolRegistry {
    tools: Vec<Tool>,
    policy: ToolPolicy,
    /// How servers' requests reach the person who asked.
    asking: Option<AskingPorts>,
    /// Marked when a tool family's list changed under this registry.
    changed: changes::ToolsChanged,
}

impl ToolRegistry {
    /// Every tool defined, offered anywhere or not.
    pub fn all(&self) -> &[Tool] {
        &self.tools
    }

    pub fn policy(&self) -> &ToolPolicy {
        &self.policy
    }
}

/// How many schema violations an error result lists.
const MAX_REPORTED_VIOLATIONS: usize = 3;

impl ToolRegistry {
    pub fn new(tools: Vec<Tool>, policy: ToolPolicy) -> Result<Self, ToolDefinitionError> {
        let mut names = HashSet::new();
        for tool in &tools {
            if !names.insert(tool.spec.name.clone()) {
                return Err(ToolDefinitionError::DuplicateName(tool.spec.name.clone()));
            }
        }
        Ok(Self { tools, policy, asking: None, changed: changes::ToolsChanged::default() })
    }

    /// Servers' requests of the person who asked (MCP elicitation: links,
    /// forms) reach them through `ports`: the responder shows them to that
    /// person alone.
    pub fn with_asking(mut self, ports: AskingPorts) -> Self {
        self.asking = Some(ports);
        self
    }

    /// The same registry, marked by `changed` when a family's tools change
    /// (an MCP server's list).
    pub fn watching(mut self, changed: changes::ToolsChanged) -> Self {
        self.changed = changed;
        self
    }

    /// Whether its tools changed since it was built (see [`changes`]).
    pub fn changed(&self) -> &changes::ToolsChanged {
        &self.changed
    }

    fn allowed<'a>(&'a self, asker: &'a Asker) -> impl Iterator<Item = &'a Tool> + 'a {
        self.tools.iter().filter(move |tool| self.policy.permits(asker, &tool.spec.name))
    }

    /// What the model is told it may call, for this person in this channel.
    pub fn advertised(&self, asker: impl Into<Asker>) -> Vec<ToolSpec> {
        let asker = asker.into();
        self.allowed(&asker).map(|tool| tool.spec.clone()).collect()
    }

    /// The effect of an allowed tool, `None` for unknown or disallowed ones
    /// (their calls are refused, never held for approval).
    pub fn effect(&self, asker: impl Into<Asker>, name: &str) -> Option<Effect> {
        let asker = asker.into();
        self.allowed(&asker).find(|tool| tool.spec.name == name).map(|tool| tool.effect)
    }

    /// What approving a call of an allowed tool takes; `None` for unknown
    /// or disallowed tools.
    pub fn approval_rule(&self, asker: impl Into<Asker>, name: &str) -> Option<ApprovalRule<'_>> {
        let asker = asker.into();
        self.tools
            .iter()
            .find(|tool| tool.spec.name == name && self.policy.permits(&asker, name))
            .map(Tool::approval_rule)
    }

    /// What approving a call of a tool that a grant's `scope` covers takes,
    /// for whoever asks (who may revoke a grant: who may approve its tools).
    pub fn rule_for_scope(&self, scope: &str) -> Option<ApprovalRule<'_>> {
        self.tools.iter().find(|tool| tool.grant_scope.as_deref() == Some(scope)).map(Tool::approval_rule)
    }

    /// The sign-in provider a tool acts through as the asking person.
    pub fn provider_of(&self, name: &str) -> Option<&str> {
        self.tools.iter().find(|tool| tool.spec.name == name).and_then(Tool::provider)
    }

    /// Runs one call; whatever goes wrong is an error result. Secrets in the
    /// result are redacted.
    pub async fn run(&self, call: &ToolUse, asker: impl Into<Asker>) -> ToolResult {
        self.run_with(call, &asker.into(), &Credentials::new(), None).await
    }

    /// Runs a call a human approved, with the idempotency key it keeps on
    /// every attempt.
    pub async fn run_approved(
        &self,
        call: &ToolUse,
        asker: impl Into<Asker>,
        credentials: &Credentials,
        idempotency_key: String,
    ) -> ToolResult {
        self.run_with(call, &asker.into(), credentials, Some(idempotency_key)).await
    }

    async fn run_with(
        &self,
        call: &ToolUse,
        asker: &Asker,
        credentials: &Credentials,
        idempotency_key: Option<String>,
    ) -> ToolResult {
        let asks = match (&self.asking, &asker.turn, &asker.thread, &asker.user) {
            (Some(ports), Some(turn), Some(thread), Some(user)) => {
                Some(Asks(Arc::new(assistant_core::mcp::AskingPerson {
                    replies: ports.replies.clone(),
                    forms: ports.forms.clone(),
                    clock: ports.clock.clone(),
                    turn: turn.clone(),
                    thread: thread.clone(),
                    user: user.clone(),
                })))
            }
            _ => None,
        };
        let mut context = CallContext {
            idempotency_key,
            access_token: None,
            turn: asker.turn.clone(),
            thread: asker.thread.clone(),
            asks,
        };
        if let Some(provider) = self.provider_of(&call.name) {
            match credentials.get(provider) {
                Some(Ok(token)) => context.access_token = Some(token.clone()),
                Some(Err(reason)) => return refused(call, reason.message().to_owned()),
                None => {
                    return refused(
                        call,
                        format!("This tool acts as the person who asked, who is not signed in to {provider}."),
                    );
                }
            }
        }
        redacted(self.run_unredacted(call, asker, context).await)
    }

    /// How the task `call` started goes; its result, once done, redacted
    /// as every result is. Each poll is bounded by the tool's timeout.
    pub async fn poll_task(&self, call: &ToolUse, task: &RunningTask) -> Polled {
        let done = |done: Result<ToolOutput, ToolError>| {
            let (status, output) = match done {
                Ok(output) => (ToolStatus::Success, output),
                Err(message) => (ToolStatus::Error, ToolOutput::Text(message.into())),
            };
            Polled::Done(redacted(ToolResult { tool_use_id: call.id.clone(), status, output }))
        };
        let Some(tool) = self.tools.iter().find(|tool| tool.spec.name == call.name) else {
            return done(Err(format!("The tool {:?} is no longer offered.", call.name).into()));
        };
        let polled = tokio::time::timeout(tool.timeout, tool.runner.poll_task(task)).await.unwrap_or_else(|_| {
            TaskPoll::Working { message: task.message.clone(), poll: Duration::from_millis(task.poll_ms) }
        });
        match polled {
            TaskPoll::Done(result) => done(result),
            TaskPoll::Working { message, poll } => Polled::Working {
                message: message.map(|message| redact::Redactor::global().redact(&message).into_owned()),
                poll,
            },
        }
    }

    /// Asks the server of the task `call` started to stop it, within the
    /// tool's timeout; best effort (the server's own TTL ends it anyway).
    pub async fn cancel_task(&self, call: &ToolUse, task: &RunningTask) {
        if let Some(tool) = self.tools.iter().find(|tool| tool.spec.name == call.name) {
            let _ = tokio::time::timeout(tool.timeout, tool.runner.cancel_task(task)).await;
        }
    }

    async fn run_unredacted(&self, call: &ToolUse, asker: &Asker, context: CallContext) -> ToolResult {
        let error = |message: String| ToolResult {
            tool_use_id: call.id.clone(),
            status: ToolStatus::Error,
            output: ToolOutput::Text(message),
        };
        let Some(tool) = self.tools.iter().find(|tool| tool.spec.name == call.name) else {
            let known: Vec<_> = self.allowed(asker).map(|tool| tool.spec.name.as_str()).collect();
            return error(format!("There is no tool named {:?}. Available tools: {}.", call.name, known.join(", ")));
        };
        if !self.policy.permits(asker, &call.name) {
            return error(format!("The tool {:?} is not allowed here for the person who asked.", call.name));
        }
        let violations: Vec<String> =
            tool.schema.violations(&call.input).into_iter().take(MAX_REPORTED_VIOLATIONS).collect();
        if !violations.is_empty() {
            return error(format!("The input does not match the tool's schema: {}", violations.join("; ")));
        }
        match tokio::time::timeout(tool.timeout, tool.runner.run(call.input.clone(), context)).await {
            Ok(Ok(output)) => ToolResult { tool_use_id: call.id.clone(), status: ToolStatus::Success, output },
            Ok(Err(message)) => error(message.into()),
            Err(_) => error(format!("The tool did not finish within {} s.", tool.timeout.as_secs_f64())),
        }
    }

    /// Runs calls concurrently; results in the order of the calls. A tool
    /// that acts as the person gets their token from `credentials`.
    pub async fn run_all(
        &self,
        calls: &[&ToolUse],
        asker: impl Into<Asker>,
        credentials: &Credentials,
    ) -> Vec<ToolResult> {
        let asker = asker.into();
        join_all(calls.iter().map(|call| self.run_with(call, &asker, credentials, None))).await
    }
}

/// `result` with the secrets in it redacted.
fn redacted(mut result: ToolResult) -> ToolResult {
    let redactor = redact::Redactor::global();
    match &mut result.output {
        ToolOutput::Text(text) => {
            if let std::borrow::Cow::Owned(redacted) = redactor.redact(text) {
                *text = redacted;
            }
        }
        ToolOutput::Json(json) => redactor.redact_json(json),
        ToolOutput::Stored { preview, .. } => *preview = redactor.redact(preview).into_owned(),
        ToolOutput::Task(task) => {
            task.message = task.message.take().map(|message| redactor.redact(&message).into_owned());
        }
    }
    result
}

fn refused(call: &ToolUse, message: String) -> ToolResult {
    ToolResult { tool_use_id: call.id.clone(), status: ToolStatus::Error, output: ToolOutput::Text(message) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("{name} for tests"),
            input_schema: json!({
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
                "required": ["query"],
                "additionalProperties": false
            }),
        }
    }

    fn echo(name: &str, timeout: Duration) -> Tool {
        Tool::new(spec(name), Effect::ReadOnly, timeout, |input: serde_json::Value| async move {
            Ok(ToolOutput::Json(input))
        })
        .unwrap()
    }

    fn call(id: &str, name: &str, input: serde_json::Value) -> ToolUse {
        ToolUse { id: id.into(), name: name.into(), input }
    }

    fn channel(id: &str) -> ChannelId {
        ChannelId::new(id)
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(glob_matches("*", ""));
        assert!(glob_matches("search_*", "search_docs"));
        assert!(glob_matches("C0*", "C0LAN2Q65"));
        assert!(glob_matches("*_docs", "search_docs"));
        assert!(glob_matches("a*b*c", "axxbyyc"));
        assert!(glob_matches("C?LAN*", "C0LAN2Q65"));
        assert!(!glob_matches("search_*", "restart_service"));
        assert!(!glob_matches("search", "search_docs"));
        assert!(!glob_matches("a*b", "a"));
    }

    #[test]
    fn the_first_matching_channel_rule_decides() {
        let policy = ToolPolicy::new(vec![
            crate::ChannelRule::everyone("C0INCIDENT*", vec!["search_*".into(), "restart_service".into()]),
            ChannelRule::everyone("*", vec!["search_docs".into()]),
        ]);
        assert!(policy.allows(&channel("C0INCIDENT1"), "restart_service"));
        assert!(!policy.allows(&channel("C0GENERAL"), "restart_service"));
        assert!(policy.allows(&channel("C0GENERAL"), "search_docs"));
        assert!(!ToolPolicy::default().allows(&channel("C0GENERAL"), "search_docs"), "no rule, no tools");
    }

    #[test]
    fn a_deny_glob_wins_over_the_rules_tools_and_every_verdict_says_which_rule() {
        let rules: Vec<ChannelRule> = serde_json::from_value(json!([
            {"channels": "C0INCIDENT*", "tools": ["*"], "deny": ["*delete*", "github__merge_*"]},
            {"channels": "C0GEN*", "tools": ["search_*"]}
        ]))
        .unwrap();
        let policy = ToolPolicy::new(rules);
        assert_eq!(policy.verdict(&channel("C0INCIDENT1"), "restart_service"), Verdict::Allowed { rule: 0 });
        assert_eq!(
            policy.verdict(&channel("C0INCIDENT1"), "github__delete_branch"),
            Verdict::Denied { rule: 0, glob: "*delete*".into() }
        );
        assert!(!policy.allows(&channel("C0INCIDENT1"), "github__merge_pr"));
        assert_eq!(policy.verdict(&channel("C0GENERAL"), "restart_service"), Verdict::NotListed { rule: 1 });
        assert_eq!(policy.verdict(&channel("D0DM"), "search_docs"), Verdict::NoRule);
        let typo =
            serde_json::from_value::<Vec<ChannelRule>>(json!([{"channels": "*", "tools": ["*"], "denied": ["x"]}]));
        assert!(typo.is_err(), "an unknown field in a rule is refused, not ignored");
    }

    #[test]
    fn rules_for_people_decide_for_them_and_are_passed_over_for_everyone_else_in_channels_and_dms() {
        let rules: Vec<ChannelRule> = serde_json::from_value(json!([
            {"channels": "*", "users": ["U0ADMIN"], "tools": ["*"]},
            {"channels": "C0INC*", "usergroups": ["S0ONCALL"], "tools": ["restart_service", "search_*"]},
            {"channels": "*", "tools": ["search_*"]}
        ]))
        .unwrap();
        let policy = ToolPolicy::new(rules);
        let asker = |channel: &str, user: &str, groups: &[&str]| Asker {
            channel: ChannelId::new(channel),
            user: Some(UserId::new(user)),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            turn: None,
            thread: None,
            membership: slack::Membership::Home,
        };
        assert_eq!(policy.named_groups(), ["S0ONCALL"]);
        // The admin everywhere, DMs included.
        assert!(policy.allows(asker("C0GENERAL", "U0ADMIN", &[]), "delete_deployment"));
        assert!(policy.allows(asker("D0ADMINDM", "U0ADMIN", &[]), "delete_deployment"));
        // On-call in the incident channels only.
        assert_eq!(
            policy.verdict(asker("C0INC1", "U0ONCALL", &["S0ONCALL"]), "restart_service"),
            Verdict::Allowed { rule: 1 }
        );
        assert!(!policy.allows(asker("C0GENERAL", "U0ONCALL", &["S0ONCALL"]), "restart_service"));
        // Anyone else: only what the rule for everyone gives, in channels and in their DM.
        for channel in ["C0INC1", "C0GENERAL", "D0SOMEONE"] {
            let someone = asker(channel, "U0SOMEONE", &[]);
            assert_eq!(policy.verdict(&someone, "restart_service"), Verdict::NotListed { rule: 2 }, "{channel}");
            assert!(policy.allows(&someone, "search_docs"), "{channel}");
        }
        // No person known: rules for people never match.
        assert!(!policy.allows(&ChannelId::new("C0GENERAL"), "delete_deployment"));
        let typo =
            serde_json::from_value::<Vec<ChannelRule>>(json!([{"channels": "*", "user": ["U1"], "tools": ["*"]}]));
        assert!(typo.is_err(), "`user` for `users` is refused, not ignored");
    }

    #[test]
    fn people_of_another_organization_get_only_what_external_rules_give_and_the_team_none_of_those() {
        let rules: Vec<ChannelRule> = serde_json::from_value(json!([
            {"channels": "C0SHARED*", "external": true, "tools": ["search_docs"]},
            {"channels": "*", "tools": ["*"]}
        ]))
        .unwrap();
        let policy = ToolPolicy::new(rules);
        let asker = |channel: &str, membership| Asker { membership, ..Asker::from(&ChannelId::new(channel)) };
        let outsider = asker("C0SHARED1", Membership::External);
        assert_eq!(policy.verdict(&outsider, "search_docs"), Verdict::Allowed { rule: 0 });
        assert_eq!(policy.verdict(&outsider, "restart_service"), Verdict::NotListed { rule: 0 });
        assert_eq!(
            policy.verdict(asker("C0OTHER", Membership::External), "search_docs"),
            Verdict::NoRule,
            "no rule for them there"
        );
        assert_eq!(
            policy.verdict(asker("C0OTHER", Membership::External), READ_ATTACHMENT),
            Verdict::ThreadOwn,
            "what reaches nothing beyond the thread stays"
        );
        assert_eq!(
            policy.verdict(asker("C0SHARED1", Membership::Home), "restart_service"),
            Verdict::Allowed { rule: 1 }
        );
        let typo =
            serde_json::from_value::<Vec<ChannelRule>>(json!([{"channels": "*", "externals": true, "tools": []}]));
        assert!(typo.is_err(), "`externals` for `external` is refused, not ignored");
    }

    #[test]
    fn a_rule_naming_workspaces_decides_in_those_of_an_org_install_and_is_passed_over_elsewhere() {
        let rules: Vec<ChannelRule> = serde_json::from_value(json!([
            {"channels": "*", "teams": ["T0SRE*", "T0SISTER1"], "tools": ["*"]},
            {"channels": "*", "tools": ["search_docs"]}
        ]))
        .unwrap();
        let policy = ToolPolicy::new(rules);
        let in_workspace = |team: &str| {
            let thread = assistant_core::ThreadRef {
                team: slack::TeamId::new(team),
                channel: ChannelId::new("C0INCIDENT"),
                thread_ts: slack::Ts::new("1763800000.000100"),
            };
            Asker { thread: Some(thread), ..Asker::from(&ChannelId::new("C0INCIDENT")) }
        };
        for team in ["T0SISTER1", "T0SREPLAT"] {
            assert_eq!(policy.verdict(in_workspace(team), "restart_service"), Verdict::Allowed { rule: 0 }, "{team}");
        }
        assert_eq!(policy.verdict(in_workspace("T061EG9R6"), "restart_service"), Verdict::NotListed { rule: 1 });
        assert_eq!(policy.verdict(in_workspace("T061EG9R6"), "search_docs"), Verdict::Allowed { rule: 1 });
        assert_eq!(
            policy.verdict(&ChannelId::new("C0INCIDENT"), "restart_service"),
            Verdict::NotListed { rule: 1 },
            "no thread known: a rule naming workspaces never matches"
        );
        for bad in [json!(["C0CHANNEL"]), json!(["t0lower"]), json!(["E0GRIDORG1"]), json!(["T0 SRE"]), json!("T0SRE")]
        {
            let refused =
                serde_json::from_value::<Vec<ChannelRule>>(json!([{"channels": "*", "teams": bad, "tools": []}]));
            assert!(refused.is_err(), "{bad} is refused");
        }
        let message =
            serde_json::from_value::<Vec<ChannelRule>>(json!([{"channels": "*", "teams": ["U0X"], "tools": []}]))
                .unwrap_err()
                .to_string();
        assert!(message.contains("teams: \"U0X\" must be a workspace id"), "{message}");
        let typo = serde_json::from_value::<Vec<ChannelRule>>(json!([{"channels": "*", "team": ["T1"], "tools": []}]));
        assert!(typo.is_err(), "`team` for `teams` is refused, not ignored");
    }

    #[test]
    fn an_invalid_schema_or_a_duplicate_name_is_refused_at_start_up() {
        let bad = ToolSpec { input_schema: json!({"type": "no-such-type"}), ..spec("bad") };
        let runner = |_: serde_json::Value| async { Ok(ToolOutput::Text(String::new())) };
        assert!(matches!(
            Tool::new(bad, Effect::ReadOnly, Duration::from_secs(1), runner),
            Err(ToolDefinitionError::InvalidSchema { .. })
        ));
        let twice = vec![echo("a", Duration::from_secs(1)), echo("a", Duration::from_secs(1))];
        assert!(matches!(
            ToolRegistry::new(twice, ToolPolicy::allow_all()),
            Err(ToolDefinitionError::DuplicateName(_))
        ));
    }

    fn registry() -> ToolRegistry {
        let policy = ToolPolicy::new(vec![crate::ChannelRule::everyone("*", vec!["search_*".into()])]);
        ToolRegistry::new(
            vec![echo("search_docs", Duration::from_secs(1)), echo("restart", Duration::from_secs(1))],
            policy,
        )
        .unwrap()
    }

    #[tokio::test]
    async fn only_allowed_tools_are_advertised_and_run() {
        let registry = registry();
        let names: Vec<_> = registry.advertised(&channel("C1")).into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["search_docs"]);
        let refused = registry.run(&call("1", "restart", json!({"query": "x"})), &channel("C1")).await;
        assert_eq!(refused.status, ToolStatus::Error);
        assert_eq!(
            refused.output,
            ToolOutput::Text("The tool \"restart\" is not allowed here for the person who asked.".into())
        );
        assert_eq!(registry.effect(&channel("C1"), "restart"), None);
    }

    #[tokio::test]
    async fn an_invented_tool_name_gets_an_error_listing_the_real_ones() {
        let result = registry().run(&call("1", "search_web", json!({})), &channel("C1")).await;
        assert_eq!(result.status, ToolStatus::Error);
        let ToolOutput::Text(message) = result.output else { panic!() };
        assert!(message.contains("no tool named \"search_web\"") && message.contains("search_docs"), "{message}");
        assert!(!message.contains("restart"), "disallowed tools are not listed: {message}");
    }

    #[tokio::test]
    async fn input_that_breaks_the_schema_is_refused_with_the_reasons() {
        let result = registry().run(&call("1", "search_docs", json!({"limit": 0, "extra": 1})), &channel("C1")).await;
        assert_eq!(result.status, ToolStatus::Error);
        let ToolOutput::Text(message) = result.output else { panic!() };
        assert!(message.contains("query"), "names the missing field: {message}");
        assert!(message.contains("/limit"), "names the bad field: {message}");
    }

    #[tokio::test(start_paused = true)]
    async fn each_call_has_its_own_timeout_and_calls_run_concurrently() {
        let slow = Tool::new(spec("search_slow"), Effect::ReadOnly, Duration::from_secs(5), |_| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(ToolOutput::Text("too late".into()))
        })
        .unwrap();
        let waits = Tool::new(spec("search_wait"), Effect::ReadOnly, Duration::from_secs(10), |_| async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            Ok(ToolOutput::Text("done".into()))
        })
        .unwrap();
        let registry = ToolRegistry::new(vec![slow, waits], ToolPolicy::allow_all()).unwrap();
        let (a, b) = (call("a", "search_slow", json!({"query": "x"})), call("b", "search_wait", json!({"query": "y"})));

        let started = tokio::time::Instant::now();
        let results = registry.run_all(&[&a, &b], &channel("C1"), &Credentials::new()).await;
        assert_eq!(started.elapsed(), Duration::from_secs(5), "concurrent: the longest timeout, not the sum");
        assert_eq!(results[0].tool_use_id, "a");
        assert_eq!(results[0].output, ToolOutput::Text("The tool did not finish within 5 s.".into()));
        assert_eq!((results[1].status, &results[1].output), (ToolStatus::Success, &ToolOutput::Text("done".into())));
    }

    #[tokio::test]
    async fn secrets_in_results_and_error_messages_are_redacted() {
        let key = format!("AKIA{}", "Z7Q2W5E8R1T4Y6U3");
        let (in_text, in_error) = (key.clone(), key.clone());
        let leaky = Tool::new(spec("search_env"), Effect::ReadOnly, Duration::from_secs(1), move |_| {
            let key = in_text.clone();
            async move { Ok(ToolOutput::Json(json!({"env": {"AWS_ACCESS_KEY_ID": key}}))) }
        })
        .unwrap();
        let failing = Tool::new(spec("search_fail"), Effect::ReadOnly, Duration::from_secs(1), move |_| {
            let key = in_error.clone();
            async move { Err(format!("403 for key {key}").into()) }
        })
        .unwrap();
        let registry = ToolRegistry::new(vec![leaky, failing], ToolPolicy::allow_all()).unwrap();
        let input = json!({"query": "x"});
        let ok = registry.run(&call("1", "search_env", input.clone()), &channel("C1")).await;
        assert_eq!(ok.output, ToolOutput::Json(json!({"env": {"AWS_ACCESS_KEY_ID": "[redacted: aws access key id]"}})));
        let failed = registry.run(&call("2", "search_fail", input), &channel("C1")).await;
        assert_eq!(failed.output, ToolOutput::Text("403 for key [redacted: aws access key id]".into()));
    }

    #[tokio::test]
    async fn a_failing_tool_is_an_error_result() {
        let failing = Tool::new(spec("search_broken"), Effect::ReadOnly, Duration::from_secs(1), |_| async {
            Err("upstream answered 502".into())
        })
        .unwrap();
        let registry = ToolRegistry::new(vec![failing], ToolPolicy::allow_all()).unwrap();
        let result = registry.run(&call("1", "search_broken", json!({"query": "x"})), &channel("C1")).await;
        assert_eq!(
            (result.status, result.output),
            (ToolStatus::Error, ToolOutput::Text("upstream answered 502".into()))
        );
    }
}
