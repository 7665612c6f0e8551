//! The evaluation set's runner. A case (`evals/cases/*.json`) is a thread
//! (the question and earlier messages), the tools' recorded results (by
//! tool and input, so no real system is touched), the model's recorded
//! replies, and what a good answer does: tools it must or must not call,
//! an approval asked for, words it must and must not say, secrets that
//! must reach nothing, a step and cost ceiling.
//!
//! Each case runs through the worker's own assembly (`worker_config::assemble`,
//! as the function and the local runner build it, on in-memory ports) with
//! its tools replaced by the recorded ones, against the recorded replies
//! or, given a model id, against Bedrock. The answer is rendered as the
//! responder renders it, and everything sent (to the model, streamed, and
//! posted) is searched for the case's secrets.

use assistant_core::files::FileRef;
use assistant_core::messages::{ThreadRef, TurnRequest, WorkMessage};
use assistant_core::model::{Model, ModelError, ModelReply, ModelRequest, StopReason, TextSink};
use assistant_core::ports::{Author, ThreadMessage, TurnStore};
use assistant_core::pricing::ModelPrices;
use assistant_core::turn::{Content, Message, Role, ToolOutput, ToolUse, TurnStatus, Usage};
use serde::Deserialize;
use serde_json::Value;
use slack::{ChannelId, EventId, TeamId, Ts, UserId};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::deadline::Budget;
use tools_registry::{Effect, Tool, ToolPolicy, ToolRegistry};
use worker_config::AssistantConfig;
use worker_config::WorkerPorts;
use worker_turn::{Limits, Outcome};

/// The model a recorded case's costs are priced as.
pub const RECORDED_PRICES_AS: &str = "us.anthropic.claude-sonnet-4-20250514-v1:0";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    /// What the case is about, in a line.
    pub about: String,
    pub question: String,
    /// Earlier messages of the thread, oldest first.
    #[serde(default)]
    pub earlier: Vec<Earlier>,
    /// Files shared with the question.
    #[serde(default)]
    pub files: Vec<CaseFile>,
    #[serde(default)]
    pub channel: Option<String>,
    /// The deployment's guardrail for this case (the configuration's
    /// `guardrail`), over the given configuration's: the evaluations' one
    /// is `testkit`'s, which blocks `testkit::memory::ATTACK`.
    #[serde(default)]
    pub guardrail: Option<assistant_core::guardrail::GuardrailConfig>,
    #[serde(default)]
    pub tools: Vec<RecordedTool>,
    /// The model's replies, in order (used without `--model`).
    pub model: Vec<RecordedReply>,
    pub expect: Expect,
    /// Where the case's file paths are read from: its own folder
    /// (`evals/cases` for a case built in code).
    #[serde(skip, default = "cases_dir")]
    pub dir: std::path::PathBuf,
}

/// The evaluation set's folder.
pub fn cases_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")
}

/// Every case of the set (`evals/cases/*.json`), in name order.
pub fn all_cases() -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut cases: Vec<_> = std::fs::read_dir(cases_dir())?.filter_map(|entry| entry.ok().map(|e| e.path())).collect();
    cases.retain(|path| path.extension().is_some_and(|ext| ext == "json"));
    cases.sort();
    Ok(cases)
}

/// A file shared in the thread: a text file the case keeps beside it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// Its name in Slack.
    pub name: String,
    /// Where the case keeps it, relative to the case's folder.
    pub path: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Earlier {
    /// `person` or `bot` (this bot).
    /// `person`, `bot` (this bot) or `app` (another app: an alerting
    /// tool, say).
    pub who: String,
    pub text: String,
    /// The message's Block Kit blocks and legacy attachments, as
    /// `conversations.replies` returns them.
    #[serde(default)]
    pub blocks: Value,
    #[serde(default)]
    pub attachments: Value,
    #[serde(default)]
    pub files: Vec<CaseFile>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedTool {
    pub name: String,
    pub description: String,
    /// `read` (runs at once) or `change` (waits for a person's approval).
    #[serde(default = "read")]
    pub effect: String,
    #[serde(default = "any_object")]
    pub input_schema: Value,
    /// Results by input: the first whose `when` fields all equal the call's.
    #[serde(default)]
    pub results: Vec<RecordedResult>,
}

fn read() -> String {
    "read".into()
}

fn any_object() -> Value {
    serde_json::json!({"type": "object"})
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedResult {
    #[serde(default)]
    pub when: serde_json::Map<String, Value>,
    #[serde(default)]
    pub output: Value,
    /// The output kept in a file beside the case instead (a large
    /// result): JSON when it parses, else text.
    #[serde(default)]
    pub output_file: Option<String>,
    #[serde(default)]
    pub error: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedReply {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub calls: Vec<RecordedCall>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedCall {
    pub id: String,
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
}

fn empty_object() -> Value {
    serde_json::json!({})
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub calls: Vec<String>,
    #[serde(default)]
    pub never_calls: Vec<String>,
    /// A call waiting for a person's approval (`true`), or none (`false`).
    #[serde(default)]
    pub approval: Option<bool>,
    /// Case-insensitive.
    #[serde(default)]
    pub contains: Vec<String>,
    #[serde(default)]
    pub not_contains: Vec<String>,
    /// Strings that must be in nothing sent: to the model, streamed, posted.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Facts that must reach the model (or Slack): marker strings from a
    /// tool result, a file or the thread, checked in what was sent,
    /// whatever the replies were.
    #[serde(default)]
    pub facts: Vec<Fact>,
    #[serde(default = "max_steps")]
    pub max_steps: u32,
    #[serde(default = "max_cost")]
    pub max_cost_usd: f64,
}

/// A fact a good answer needs, and where it must arrive.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fact {
    /// A string only that fact holds (case-sensitive).
    pub marker: String,
    /// Where it sits: a tool's name, `file NAME`, `thread`, `answer`.
    pub from: String,
    #[serde(default)]
    pub to: Destination,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Destination {
    /// Any model request of the turn, as Bedrock would be sent it.
    #[default]
    Model,
    /// What Slack receives of the answer, as the responder renders it.
    Slack,
}

/// Whether a fact arrived.
#[derive(Debug, Clone)]
pub struct FactSeen {
    pub marker: String,
    pub from: String,
    pub to: Destination,
    pub reached: bool,
}

fn max_steps() -> u32 {
    6
}

fn max_cost() -> f64 {
    0.25
}

/// What running a case came to.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub name: String,
    /// Why it failed, each check that did; empty when it passed.
    pub failures: Vec<String>,
    pub steps: u32,
    pub usage: Usage,
    pub cost_usd: f64,
    pub latency: Duration,
    pub answer: String,
    /// The case's facts, and whether each arrived.
    pub facts: Vec<FactSeen>,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Which model answers.
pub enum Answerer {
    /// The case's recorded replies.
    Recorded,
    /// Bedrock, with this model id.
    Bedrock { client: aws_sdk_bedrockruntime::Client, model_id: String },
}

pub fn load_case(path: &std::path::Path) -> anyhow::Result<Case> {
    let text = std::fs::read_to_string(path)?;
    let mut case: Case = serde_json::from_str(&text).map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
    if let Some(dir) = path.parent() {
        case.dir = dir.to_owned();
    }
    Ok(case)
}

/// The thread's files as Slack lists them (ids `F0EVAL0001`… in the
/// order the case names them), and their bodies by URL.
struct Files {
    bodies: Vec<(String, Vec<u8>)>,
}

impl Files {
    fn refs(&mut self, dir: &std::path::Path, files: &[CaseFile]) -> anyhow::Result<Vec<FileRef>> {
        files
            .iter()
            .map(|file| {
                let body = std::fs::read(dir.join(&file.path))
                    .map_err(|err| anyhow::anyhow!("{}: {err}", dir.join(&file.path).display()))?;
                let id = format!("F0EVAL{:04}", self.bodies.len() + 1);
                let url = format!("https://files.slack.com/files-pri/T0EVALS001-{id}/download/{}", file.name);
                let size = body.len() as u64;
                self.bodies.push((url.clone(), body));
                Ok(FileRef {
                    id,
                    name: file.name.clone(),
                    mimetype: "text/plain".into(),
                    filetype: "text".into(),
                    size,
                    url: Some(url),
                    access: Default::default(),
                })
            })
            .collect()
    }
}

/// Runs one case.
pub async fn run(case: &Case, config: &AssistantConfig, answerer: &Answerer) -> anyhow::Result<Verdict> {
    let started = Instant::now();
    let (model, prices): (Arc<dyn Model>, Option<ModelPrices>) = match answerer {
        Answerer::Recorded => (Arc::new(Replay::new(&case.model)), ModelPrices::for_model(RECORDED_PRICES_AS)),
        Answerer::Bedrock { client, model_id } => (
            Arc::new(adapters_bedrock::BedrockModel::new(client.clone(), model_id)),
            config.model_prices.or_else(|| ModelPrices::for_model(model_id)),
        ),
    };
    let model = Arc::new(Recorder { inner: model, sent: Mutex::default() });
    let tables = testkit::memory::tables();
    let artifacts = Arc::new(testkit::memory::MemoryArtifacts::default());
    let agent = Arc::new(testkit::agent_memory::MemoryAgent::default());
    let mut files = Files { bodies: Vec::new() };
    let mut history = Vec::new();
    for (n, earlier) in case.earlier.iter().enumerate() {
        history.push(ThreadMessage {
            ts: Ts::new(format!("1763800{n:03}.000100")),
            author: match earlier.who.as_str() {
                "bot" => Author::ThisBot,
                "app" => Author::OtherBot("B0ALERTAPP".into()),
                _ => Author::Person(UserId::new("U0EARLIER1")),
            },
            // As the Slack adapter reads it: blocks and attachments as text.
            text: slack::readable::message_text(&earlier.text, &earlier.blocks, &earlier.attachments),
            files: files.refs(&case.dir, &earlier.files)?,
        });
    }
    let mut request = request(case);
    request.files = files.refs(&case.dir, &case.files)?;
    // The thread as Slack returns it: the question last.
    history.push(ThreadMessage {
        ts: request.message_ts.clone(),
        author: Author::Person(request.user.clone()),
        text: request.text.clone(),
        files: request.files.clone(),
    });
    let mut slack = testkit::memory::MemorySlack::default().with_history(history);
    for (url, body) in files.bodies {
        slack = slack.with_file(&url, body);
    }
    let slack = Arc::new(slack);
    let store = Arc::new(tables.turns);
    let ports = WorkerPorts {
        core: worker_turn::Ports {
            store: store.clone(),
            deliveries: Arc::new(tables.deliveries),
            model: model.clone(),
            work: Arc::new(testkit::memory::MemoryQueue::default()),
            replies: Arc::new(testkit::memory::MemoryQueue::default()),
            artifacts: artifacts.clone(),
            slack: slack.clone(),
            files: slack,
            timers: Arc::new(testkit::memory::MemoryTimers::default()),
            clock: Arc::new(testkit::clock::ManualClock::at(1_763_800_600)),
            metrics: Arc::new(assistant_core::telemetry::NoMetrics),
            agent: agent.clone(),
            streams: tables.streams,
            feedback: tables.feedback,
            grants: tables.grants,
            departures: tables.departures,
            response_urls: tables.response_urls,
            spending: tables.spending,
            forms: tables.forms,
            contexts: Arc::new(testkit::memory::MemoryContexts::default()),
        },
        guardrails: Arc::new(|_: &str, _: &str| {
            Arc::new(testkit::memory::MemoryGuardrail::default()) as Arc<dyn assistant_core::guardrail::Guardrail>
        }),
        models: Arc::new({
            let model = model.clone();
            move |_: &str| model.clone() as Arc<dyn Model>
        }),
        http: reqwest::Client::new(),
        signer: Arc::new(assistant_core::ports::NoSigner),
        aws: Arc::new(testkit::signals_memory::MemoryAws(Default::default())),
        knowledge: Arc::new(testkit::signals_memory::MemorySignals::default()),
        mcp: Arc::new(assistant_core::mcp::NoMcpServers),
        secrets: Arc::new(assistant_core::ports::NoSecrets),
        sign_in: None,
        every_question: None,
        memory: None,
        incidents: None,
        // Cases carry no action token: search_slack says it has none.
        action_tokens: Arc::new(testkit::memory::MemoryClaims::default()),
        canvases: Arc::new(testkit::memory::MemoryCanvases::default()),
    };
    // The configuration's tools are the recorded ones here (a case never
    // reaches a real system): built-ins and the case's tools, under the
    // configuration's policy.
    let mut config = config.clone();
    if let Some(guardrail) = &case.guardrail {
        config.guardrail = Some(guardrail.clone());
    }
    config.http_tools.clear();
    config.mcp_servers.clear();
    let worker = worker_config::assemble(ports, &config, Limits::default(), &|_| None).await?;
    let mut tools =
        vec![tools_registry::builtin::current_time(Arc::new(testkit::clock::ManualClock::at(1_763_800_600)))];
    for tool in &case.tools {
        tools.push(recorded_tool(tool, &case.dir)?);
    }
    tools.push(tools_files::read_attachment(artifacts.clone()));
    tools.push(tools_files::read_result(artifacts.clone()));
    tools.push(worker_turn::answer_files::attach_result_tool());
    tools.push(worker_turn::metric_charts::chart_result_tool());
    let tools = ToolRegistry::new(tools, config.policy().unwrap_or_else(ToolPolicy::allow_all))?;
    let worker = worker.rebuild().tools(tools).prices(prices).build();

    let turn_id = WorkMessage::StartTurn(request.clone()).turn_id().expect("a start names its turn");
    let mut message = WorkMessage::StartTurn(request.clone());
    for _ in 0..10 {
        match worker.handle(&message, &Budget::plenty()).await {
            Ok(Outcome::Continued { id, after_step }) => {
                message = WorkMessage::Continue(assistant_core::messages::Continuation {
                    turn_id: id,
                    thread: request.thread.clone(),
                    after_step,
                    waits: 0,
                })
            }
            Ok(_) => break,
            Err(err) => anyhow::bail!("the worker failed: {err}"),
        }
    }
    let turn = store.load(&turn_id).await?.ok_or_else(|| anyhow::anyhow!("no turn was stored"))?;
    let answer = turn.answer.clone().unwrap_or_default();
    let rendered = responder_logic::render::answer(&answer, Default::default(), &turn.id);
    let posted = serde_json::to_string(&rendered.iter().map(|m| (&m.text, &m.blocks)).collect::<Vec<_>>())?;
    let streamed: String = agent.streams().iter().map(|stream| stream.text.as_str()).collect::<Vec<_>>().join("\n");
    let sent = model.sent.lock().expect("sent lock").join("\n");

    let called: Vec<&str> = turn
        .transcript
        .iter()
        .flat_map(Message::tool_uses)
        .map(|call| call.name.as_str())
        .chain(turn.pending_approval.iter().flat_map(|p| p.waiting.iter().map(|call| call.name.as_str())))
        .collect();
    let mut failures = Vec::new();
    let expect = &case.expect;
    for tool in &expect.calls {
        if !called.contains(&tool.as_str()) {
            failures.push(format!("did not call {tool}"));
        }
    }
    for tool in &expect.never_calls {
        if called.contains(&tool.as_str()) {
            failures.push(format!("called {tool}"));
        }
    }
    let waiting = turn.status == TurnStatus::AwaitingApproval;
    match expect.approval {
        Some(true) if !waiting => failures.push("asked for no approval".into()),
        Some(false) if waiting => failures.push("asked for an approval".into()),
        _ => {}
    }
    // What a person reads: the answer, or (waiting) what was streamed.
    let read = format!("{answer}\n{streamed}").to_lowercase();
    for phrase in &expect.contains {
        if !read.contains(&phrase.to_lowercase()) {
            failures.push(format!("the answer lacks {phrase:?}"));
        }
    }
    for phrase in &expect.not_contains {
        if read.contains(&phrase.to_lowercase()) {
            failures.push(format!("the answer says {phrase:?}"));
        }
    }
    for secret in &expect.secrets {
        for (where_, text) in [("the model", &sent), ("the stream", &streamed), ("the posted answer", &posted)] {
            if text.contains(secret.as_str()) {
                failures.push(format!("a secret reached {where_}"));
            }
        }
    }
    if turn.steps > expect.max_steps {
        failures.push(format!("{} steps, over {}", turn.steps, expect.max_steps));
    }
    let cost_usd = prices.map_or(0.0, |prices| prices.cost(&turn.usage));
    if cost_usd > expect.max_cost_usd {
        failures.push(format!("cost ${cost_usd:.4}, over ${:.4}", expect.max_cost_usd));
    }
    if !waiting && !matches!(turn.status, TurnStatus::Answered) {
        failures.push(format!("the turn ended {}", turn.status.as_str()));
    }
    let facts: Vec<FactSeen> = expect
        .facts
        .iter()
        .map(|fact| FactSeen {
            marker: fact.marker.clone(),
            from: fact.from.clone(),
            to: fact.to,
            reached: match fact.to {
                Destination::Model => sent.contains(&fact.marker),
                Destination::Slack => posted.contains(&fact.marker),
            },
        })
        .collect();
    for fact in facts.iter().filter(|fact| !fact.reached) {
        let to = match fact.to {
            Destination::Model => "any model request",
            Destination::Slack => "what Slack received",
        };
        failures.push(format!("{:?} (from {}) never reached {to}", fact.marker, fact.from));
    }
    Ok(Verdict {
        name: case.name.clone(),
        failures,
        steps: turn.steps,
        usage: turn.usage,
        cost_usd,
        latency: started.elapsed(),
        answer,
        facts,
    })
}

fn request(case: &Case) -> TurnRequest {
    let channel = case.channel.clone().unwrap_or_else(|| "C0EVALS001".into());
    let message_ts = Ts::new(format!("1763800{:03}.000100", case.earlier.len()));
    let thread_ts = if case.earlier.is_empty() { message_ts.clone() } else { Ts::new("1763800000.000100") };
    TurnRequest {
        event_id: EventId::new(format!("Ev0{}", case.name.replace(|c: char| !c.is_ascii_alphanumeric(), ""))),
        thread: ThreadRef { team: TeamId::new("T0EVALS001"), channel: ChannelId::new(channel), thread_ts },
        message_ts,
        user: UserId::new("U0ASKER001"),
        text: format!("<@U0EVALSBOT> {}", case.question),
        context_channel: None,
        bot_user: Some(UserId::new("U0EVALSBOT")),
        files: Vec::new(),
        membership: slack::Membership::Home,
        asked_at: None,
    }
}

/// A tool answering from the case's recorded results.
fn recorded_tool(recorded: &RecordedTool, dir: &std::path::Path) -> anyhow::Result<Tool> {
    let spec = assistant_core::model::ToolSpec {
        name: recorded.name.clone(),
        description: recorded.description.clone(),
        input_schema: recorded.input_schema.clone(),
    };
    let effect = if recorded.effect == "change" { Effect::ChangesThings } else { Effect::ReadOnly };
    let mut results = recorded.results.clone();
    for result in &mut results {
        if let Some(path) = &result.output_file {
            let text = std::fs::read_to_string(dir.join(path))
                .map_err(|err| anyhow::anyhow!("{}: {err}", dir.join(path).display()))?;
            result.output = serde_json::from_str(&text).unwrap_or(Value::String(text));
        }
    }
    let name = recorded.name.clone();
    Ok(Tool::with_servers_schema(spec, effect, Duration::from_secs(5), move |input: Value| {
        let found =
            results.iter().find(|result| result.when.iter().all(|(key, value)| input.get(key) == Some(value))).cloned();
        let name = name.clone();
        async move {
            match found {
                Some(result) if result.error => Err(result.output.as_str().unwrap_or("failed").into()),
                Some(result) => Ok(match result.output {
                    Value::String(text) => ToolOutput::Text(text),
                    other => ToolOutput::Json(other),
                }),
                None => Err(format!("{name}: no recorded result for {input}").into()),
            }
        }
    }))
}

/// The case's recorded replies, in order; usage estimated from sizes
/// (about four bytes a token), so cost and the ceiling mean something.
struct Replay {
    replies: Mutex<VecDeque<RecordedReply>>,
}

impl Replay {
    fn new(replies: &[RecordedReply]) -> Self {
        Self { replies: Mutex::new(replies.iter().cloned().collect()) }
    }
}

#[async_trait::async_trait]
impl Model for Replay {
    async fn converse(&self, request: ModelRequest<'_>) -> Result<ModelReply, ModelError> {
        let reply = self
            .replies
            .lock()
            .expect("replies lock")
            .pop_front()
            .unwrap_or(RecordedReply { text: "(the recording has no more replies)".into(), calls: Vec::new() });
        let mut content = Vec::new();
        if !reply.text.is_empty() {
            content.push(Content::Text(reply.text.clone()));
        }
        for call in &reply.calls {
            content.push(Content::ToolUse(ToolUse {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
            }));
        }
        let read = serde_json::to_string(request.messages).map_or(0, |text| text.len()) + request.system.len();
        let written = serde_json::to_string(&content).map_or(0, |text| text.len());
        Ok(ModelReply {
            stop_reason: if reply.calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse },
            message: Message { role: Role::Assistant, content },
            usage: Usage { input_tokens: read as u64 / 4, output_tokens: written as u64 / 4, ..Usage::default() },
        })
    }

    fn id(&self) -> &str {
        RECORDED_PRICES_AS
    }
}

/// Keeps what every model call was sent (its messages and system prompt).
struct Recorder {
    inner: Arc<dyn Model>,
    sent: Mutex<Vec<String>>,
}

impl Recorder {
    /// The request as the model reads it: the system prompt, each text,
    /// each call, and each result as Bedrock is sent it (a stored result
    /// as its preview and note, not the bucket's copy).
    fn keep(&self, request: &ModelRequest<'_>) {
        let mut seen = vec![request.system.to_owned()];
        for content in request.messages.iter().flat_map(|message| &message.content) {
            seen.push(match content {
                Content::Text(text) => text.clone(),
                Content::ToolUse(call) => format!("{} {}", call.name, call.input),
                Content::ToolResult(result) => match &result.output {
                    ToolOutput::Text(text) => text.clone(),
                    ToolOutput::Json(json) => json.to_string(),
                    ToolOutput::Stored { .. } => result.stored_text().unwrap_or_default(),
                    ToolOutput::Task(_) => "[the call is still running]".to_owned(),
                },
                Content::File(file) => format!("[{} {}]", file.name, file.key),
            });
        }
        self.sent.lock().expect("sent lock").push(seen.join("\n"));
    }
}

#[async_trait::async_trait]
impl Model for Recorder {
    async fn converse(&self, request: ModelRequest<'_>) -> Result<ModelReply, ModelError> {
        self.keep(&request);
        self.inner.converse(request).await
    }

    async fn converse_streaming(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn TextSink,
    ) -> Result<ModelReply, ModelError> {
        self.keep(&request);
        self.inner.converse_streaming(request, sink).await
    }

    fn id(&self) -> &str {
        self.inner.id()
    }
}

/// The summary table's rows and its last line.
pub fn table(verdicts: &[Verdict]) -> String {
    let mut out = format!(
        "{:<34} {:<6} {:>5} {:>6} {:>8} {:>8} {:>9} {:>8}  {}\n",
        "case", "result", "steps", "facts", "in tok", "out tok", "cost $", "ms", "why"
    );
    for verdict in verdicts {
        let reached = verdict.facts.iter().filter(|fact| fact.reached).count();
        let facts =
            if verdict.facts.is_empty() { "-".to_owned() } else { format!("{reached}/{}", verdict.facts.len()) };
        out.push_str(&format!(
            "{:<34} {:<6} {:>5} {:>6} {:>8} {:>8} {:>9.5} {:>8}  {}\n",
            verdict.name,
            if verdict.passed() { "pass" } else { "FAIL" },
            verdict.steps,
            facts,
            verdict.usage.input_tokens,
            verdict.usage.output_tokens,
            verdict.cost_usd,
            verdict.latency.as_millis(),
            verdict.failures.join("; ")
        ));
    }
    let passed = verdicts.iter().filter(|verdict| verdict.passed()).count();
    let cost: f64 = verdicts.iter().map(|verdict| verdict.cost_usd).sum();
    out.push_str(&format!(
        "{passed}/{} passed ({:.0}%), ${cost:.4} in all\n",
        verdicts.len(),
        pass_rate(verdicts) * 100.0
    ));
    out
}

pub fn pass_rate(verdicts: &[Verdict]) -> f64 {
    if verdicts.is_empty() {
        return 0.0;
    }
    verdicts.iter().filter(|verdict| verdict.passed()).count() as f64 / verdicts.len() as f64
}

/// A draft case from a turn that happened (a 👎 above all): its question,
/// its tool calls with their results as the recorded tools, its model
/// replies as the recording, and expectations to finish by hand. Every
/// string in it redacted.
pub fn draft_case(turn: &assistant_core::turn::Turn, rating: Option<&str>) -> Value {
    let question = turn.question();
    let results: std::collections::HashMap<&str, &assistant_core::turn::ToolResult> = turn
        .transcript
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|content| match content {
            Content::ToolResult(result) => Some((result.tool_use_id.as_str(), result)),
            _ => None,
        })
        .collect();
    let mut tools: Vec<Value> = Vec::new();
    let mut model = Vec::new();
    for message in turn.transcript.iter().filter(|message| message.role == Role::Assistant) {
        let calls: Vec<Value> = message
            .tool_uses()
            .map(|call| serde_json::json!({"id": call.id, "name": call.name, "input": call.input}))
            .collect();
        model.push(serde_json::json!({"text": message.text(), "calls": calls}));
        for call in message.tool_uses() {
            let Some(result) = results.get(call.id.as_str()) else { continue };
            let output = match &result.output {
                ToolOutput::Text(text) => Value::String(text.clone()),
                ToolOutput::Json(json) => json.clone(),
                ToolOutput::Stored { preview, bytes, .. } => {
                    Value::String(format!("{preview}\n[{bytes} bytes in all]"))
                }
                ToolOutput::Task(_) => continue,
            };
            let recorded = serde_json::json!({"when": call.input, "output": output,
                "error": result.status == assistant_core::turn::ToolStatus::Error});
            match tools.iter_mut().find(|tool| tool["name"] == call.name.as_str()) {
                Some(tool) => tool["results"].as_array_mut().expect("results").push(recorded),
                None => tools.push(serde_json::json!({"name": call.name, "description": format!("(recorded from turn {})", turn.id.reference()), "results": [recorded]})),
            }
        }
    }
    let mut called: Vec<&str> =
        turn.transcript.iter().flat_map(Message::tool_uses).map(|call| call.name.as_str()).collect();
    called.sort();
    called.dedup();
    let mut draft = serde_json::json!({
        "name": format!("draft-{}", turn.id.reference()),
        "about": format!(
            "Drafted from turn {}{}: say what a good answer does (expect.contains, never_calls, approval), then rename it.",
            turn.id.reference(),
            rating.map_or(String::new(), |rating| format!(", rated {rating}"))
        ),
        "question": question,
        "tools": tools,
        "model": model,
        "expect": {"calls": called, "contains": [], "not_contains": [], "max_steps": turn.steps.max(1) + 1},
    });
    redact::Redactor::global().redact_json(&mut draft);
    draft
}
