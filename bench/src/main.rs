//! The benchmark: prints the figures the book's benchmark chapter (docs/src/benchmark.md) states, and the
//! table of binary sizes it holds as printed here. Run it with
//! `infra/bench.sh`, which builds the shipped binaries first (`--profile
//! lambda`, linked as `infra/build.sh` links them). It asserts nothing: it measures and prints.
//!
//! 1. Warm handling, CPU only: `Intake::decide` (body checks, signature,
//!    parse, route) on a signed app mention, many times; median and p99.
//!    Also the whole request path with in-memory ports, and how many calls
//!    it makes to them (each is one AWS call in production).
//! 2. Start-up: each shipped binary, and the floor (a hello-world
//!    `lambda_runtime` binary built with the same profile, `bench/floor`,
//!    linked as cargo links by default; and again, linked as the functions
//!    are, `floor-link`),
//!    under AWS's Lambda Runtime Interface Emulator in fresh processes:
//!    INIT (process start → ready, the emulator's figure) and the first
//!    invoke (from the invoke that starts the process to its response), each
//!    also as a ratio to the floor's; then a warm invoke. Twice: through the
//!    local AWS emulator, and with AWS answering at once (`replay.rs`), so
//!    the first invokes that make a read measure the binary, not the
//!    emulator's Python.
//! 3. Size of the shipped binaries and each function process's peak RSS.
//! 4. The worker's overhead per step, excluding model and tool time: whole
//!    10-step turns against an instant model and instant tools, with the
//!    in-memory store (which serializes state as DynamoDB's adapter does),
//!    and the calls each step makes to the store and queues.
//! 5. The responder's CPU per answer: redact, render to Slack's markdown and table blocks and split a
//!    typical answer (a heading, a list, code, a table, links, mentions).
//! 6. A turn's AWS cost excluding the model, for a 1-step and a 10-step
//!    turn (what the worker meters, priced by `assistant_core::pricing`),
//!    and the share of a 10-step turn's input tokens read from the prompt
//!    cache, under the fake model's accounting (Bedrock's: a request reads
//!    from the cache the prefix up to the previous request's last cache
//!    point, and writes the rest up to its own last one). Then a turn with
//!    one large tool result (a 100-row, 32 KB log query and a 1,000-row,
//!    256 KB one): how many bytes of it the answering request holds, the
//!    turn's input tokens and its model cost.
//! 7. Time to first streamed text: from the model's first token to the
//!    first text appended to the Slack stream, with a model that writes its
//!    answer a token at a time at 30, 60 and 120 tokens a second (the real
//!    worker, its redacting stream buffer and batching; Slack's own latency
//!    for `chat.startStream` and `chat.appendStream` comes on top).
//! 8. Time to the first status line: a signed app mention at the ingress to
//!    the status line at a fake Slack, through the work queue, the worker
//!    binary (cold, a fresh process; then warm) and the responder.

use anyhow::{Context, Result};
use assistant_core::messages::{ReplyMessage, TurnRequest};
use assistant_core::model::{Model, ToolSpec};
use assistant_core::ports::{
    AgentSlack, ArtifactStore, ClaimOutcome, Created, EventClaim, EventClaims, PortError, ReplyQueue, StoreError,
    TurnStore, WorkQueue,
};
use assistant_core::turn::{ToolOutput, Turn, TurnId};
use assistant_core::{Clock, SystemClock, WorkMessage};
use async_trait::async_trait;
use http::HeaderMap;
use ingress_logic::{Intake, Request};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use testkit::clock::ManualClock;
use testkit::deadline::Budget;
use testkit::memory::{MemoryArtifacts, MemoryClaims, MemoryQueue, MemorySlack, MemoryTimers};
use testkit::model::{InstantModel, PacedModel};
use tests::lambda::{LambdaUnderRie, Launch};

mod replay;
mod stats;
mod summary;
use stats::{median, ratio_interval};
use tools_registry::{Effect, Tool, ToolPolicy, ToolRegistry};
use worker_turn::{Limits, Outcome, Ports, Worker};

const SECRET: &str = "bench-signing-secret";
const NOW: i64 = 1_763_800_000;
const WARM_ITERATIONS: usize = 20_000;
/// Fresh processes per binary and pass. A cold start on this machine varies
/// a lot from one process to the next, independently of its neighbours:
/// with 15, one binary's ratio to the floor ranged from 1.40 to 1.85 over a
/// day's runs. 101 narrow that by the square root of the counts' ratio,
/// and [`ratio_interval`] prints how far each ratio can be trusted. A pass
/// takes about 25 s.
const COLD_RUNS: usize = 101;

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let profile = if cfg!(debug_assertions) { "debug: figures not representative" } else { "optimised" };
    println!("benchmark ({profile} build)");
    let commit = std::env::var("BENCH_COMMIT").unwrap_or_else(|_| "an unnamed commit".to_owned());
    // `--start-up`: only start-up and sizes (what a change to start-up needs).
    if std::env::args().any(|arg| arg == "--start-up") {
        runtime.block_on(start_up())?;
        binary_sizes();
        summary::print(&commit);
        return Ok(());
    }
    warm_handling(&runtime)?;
    runtime.block_on(worker_overhead())?;
    responder_rendering();
    runtime.block_on(turn_cost())?;
    runtime.block_on(large_results())?;
    runtime.block_on(first_streamed_text())?;
    match std::env::var("FLOOR_BIN") {
        Ok(_) => {
            runtime.block_on(start_up())?;
            binary_sizes();
            runtime.block_on(time_to_first_status())?;
        }
        Err(_) => println!("\nFLOOR_BIN not set: start-up, size and RSS skipped (infra/bench.sh sets them)"),
    }
    summary::print(&commit);
    Ok(())
}

fn signed_request(body: &str, signed_at: i64) -> HeaderMap {
    testkit::signed::headers(SECRET, signed_at, body, "application/json")
}

/// Counts the calls that would be AWS calls in production.
#[derive(Default)]
struct Counting<T> {
    inner: T,
    calls: AtomicUsize,
}

#[async_trait]
impl<T: EventClaims> EventClaims for Counting<T> {
    async fn claim(&self, claim: &EventClaim, now_unix: i64) -> Result<ClaimOutcome, PortError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.claim(claim, now_unix).await
    }
}

#[async_trait]
impl<T: WorkQueue> WorkQueue for Counting<T> {
    async fn enqueue(&self, message: &WorkMessage) -> Result<(), PortError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.enqueue(message).await
    }
}

#[async_trait]
impl<T: TurnStore> TurnStore for Counting<T> {
    async fn create(&self, turn: &mut Turn) -> Result<Created, StoreError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.create(turn).await
    }

    async fn load(&self, id: &TurnId) -> Result<Option<Turn>, StoreError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.load(id).await
    }

    async fn save(&self, turn: &mut Turn) -> Result<(), StoreError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.save(turn).await
    }
}

#[async_trait]
impl<T: ReplyQueue> ReplyQueue for Counting<T> {
    async fn send(&self, message: &ReplyMessage) -> Result<(), PortError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.send(message).await
    }
}

#[async_trait]
impl<T: ArtifactStore> ArtifactStore for Counting<T> {
    async fn put(&self, key: &str, body: Vec<u8>, content_type: &'static str) -> Result<(), PortError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.put(key, body, content_type).await
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, PortError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.get(key).await
    }

    async fn list(&self, prefix: &str, max: usize) -> Result<Vec<(String, u64)>, PortError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.list(prefix, max).await
    }
}

const STEPS_PER_TURN: u32 = 10;
const TURNS: usize = 200;

/// The worker on in-memory ports (counted), with an instant model that
/// answers after `steps` steps and one instant tool.
struct BenchWorker {
    worker: Worker,
    store: Arc<Counting<assistant_core::store::RecordTurns>>,
    work: Arc<Counting<MemoryQueue>>,
    replies: Arc<Counting<MemoryQueue<ReplyMessage>>>,
    artifacts: Arc<Counting<MemoryArtifacts>>,
    metrics: Arc<testkit::memory::MemoryMetrics>,
}

fn bench_worker(steps: u32, clock: Arc<dyn Clock>) -> Result<BenchWorker> {
    let agent = Arc::new(testkit::agent_memory::MemoryAgent::default());
    bench_worker_with(Arc::new(InstantModel::new(steps)), agent, steps, clock)
}

fn bench_worker_with(
    model: Arc<dyn Model>,
    agent: Arc<dyn AgentSlack>,
    steps: u32,
    clock: Arc<dyn Clock>,
) -> Result<BenchWorker> {
    // A 2 KB result per call: a realistic runbook excerpt.
    let excerpt = "Runbook: when checkout-api reports pool exhaustion, check the deploy log. ".repeat(28);
    bench_worker_returning(model, agent, steps, clock, ToolOutput::Text(excerpt))
}

/// The bench worker whose one tool returns `output` on every call.
fn bench_worker_returning(
    model: Arc<dyn Model>,
    agent: Arc<dyn AgentSlack>,
    steps: u32,
    clock: Arc<dyn Clock>,
    output: ToolOutput,
) -> Result<BenchWorker> {
    let spec = ToolSpec {
        name: "search_docs".into(),
        description: "Search the runbooks.".into(),
        input_schema: serde_json::json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
    };
    let search = Tool::new(spec, Effect::ReadOnly, Duration::from_secs(5), move |_| {
        let output = output.clone();
        async move { Ok(output) }
    })?;
    let tables = testkit::memory::tables();
    let store = Arc::new(Counting { inner: tables.turns, calls: AtomicUsize::new(0) });
    let work = Arc::new(Counting::<MemoryQueue>::default());
    let replies = Arc::new(Counting::<MemoryQueue<ReplyMessage>>::default());
    let artifacts = Arc::new(Counting::<MemoryArtifacts>::default());
    let metrics = Arc::new(testkit::memory::MemoryMetrics::default());
    let ports = Ports {
        store: store.clone(),
        deliveries: Arc::new(tables.deliveries),
        model,
        work: work.clone(),
        replies: replies.clone(),
        artifacts: artifacts.clone(),
        slack: Arc::new(MemorySlack::default()),
        files: Arc::new(MemorySlack::default()),
        timers: Arc::new(MemoryTimers::default()),
        clock,
        metrics: metrics.clone(),
        agent,
        streams: tables.streams,
        feedback: tables.feedback,
        grants: tables.grants,
        departures: tables.departures,
        response_urls: tables.response_urls,
        spending: tables.spending,
        forms: tables.forms,
        contexts: Arc::new(testkit::memory::MemoryContexts::default()),
    };
    let worker = Worker::builder(ports)
        .tools(ToolRegistry::new(vec![search], ToolPolicy::allow_all())?)
        .system_prompt(worker_config::assembly::DEFAULT_SYSTEM_PROMPT)
        .limits(Limits { max_steps: steps, ..Limits::default() })
        .suggested_prompts(Vec::new())
        .build();
    Ok(BenchWorker { worker, store, work, replies, artifacts, metrics })
}

/// The `i`th mention, in a thread of its own.
fn mention(i: usize) -> WorkMessage {
    WorkMessage::StartTurn(TurnRequest {
        event_id: slack::EventId::new(format!("Ev{i:08}")),
        thread: assistant_core::ThreadRef {
            team: slack::TeamId::new("T061EG9R6"),
            channel: slack::ChannelId::new("C0LAN2Q65"),
            thread_ts: slack::Ts::new(format!("1763800000.{i:06}")),
        },
        message_ts: slack::Ts::new(format!("1763800000.{i:06}")),
        user: slack::UserId::new("U061F7AUR"),
        text: "why is checkout-api failing in prod?".into(),
        context_channel: None,
        bot_user: None,
        files: Vec::new(),
        membership: slack::Membership::Home,
        asked_at: None,
    })
}

async fn worker_overhead() -> Result<()> {
    println!("\nworker overhead per step, model and tool time excluded (budget: < 5 ms CPU, 1 state write)");
    let BenchWorker { worker, store, work, replies, artifacts, .. } =
        bench_worker(STEPS_PER_TURN, Arc::new(ManualClock::at(NOW)))?;
    let mut per_step = Vec::with_capacity(TURNS);
    for i in 0..TURNS {
        let started = Instant::now();
        let outcome = worker.handle(&mention(i), &Budget::plenty()).await?;
        per_step.push(started.elapsed() / STEPS_PER_TURN);
        anyhow::ensure!(matches!(outcome, Outcome::Settled { steps: STEPS_PER_TURN, .. }), "unexpected {outcome:?}");
    }
    summary::record(
        "worker overhead per step",
        format!("{:.2} ms", percentile_sorted(&per_step, 0.5).as_secs_f64() * 1e3),
    );
    report_ms("per step, averaged over a 10-step turn", per_step);
    let per_turn = |calls: &AtomicUsize| calls.load(Ordering::Relaxed) as f64 / TURNS as f64;
    let store_calls = per_turn(&store.calls);
    println!(
        "  state store calls per turn: {store_calls:.0} (1 create + {:.0} saves, one per step: each writes the head and the step's messages)",
        store_calls - 1.0
    );
    println!(
        "  other AWS calls per turn: {:.0} reply message, {:.0} work messages, {:.0} S3 objects",
        per_turn(&replies.calls),
        per_turn(&work.calls),
        per_turn(&artifacts.calls)
    );
    Ok(())
}

/// What a turn costs on AWS, without the model's tokens, and how much of a
/// long turn's input the prompt cache serves.
async fn turn_cost() -> Result<()> {
    println!("\na turn's AWS cost excluding the model (DynamoDB, SQS, S3, Lambda at list prices; worker at 512 MB)");
    let mut costs = Vec::new();
    for steps in [1, STEPS_PER_TURN, 30] {
        let bench = bench_worker(steps, Arc::new(SystemClock))?;
        bench.worker.handle(&mention(0), &Budget::plenty()).await?;
        let reports = bench.metrics.reports();
        let report = reports.first().context("the turn settled and reported")?;
        let cost = report.cost(512);
        let units = report.metered.dynamodb_write_units;
        println!(
            "  {steps:>2}-step turn: ${:.7} ({units} DynamoDB write units, {:.1} per step; {} SQS requests, worker busy {} ms)",
            cost.aws,
            units as f64 / f64::from(steps),
            report.metered.sqs_requests,
            report.metered.busy_ms
        );
        costs.push(format!("${:.7}", cost.aws));
        if steps == STEPS_PER_TURN {
            summary::record("a turn's AWS cost", costs.join(" / "));
            let usage = report.usage;
            let input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
            summary::record("prompt cache", format!("{:.0}%", 100.0 * usage.cache_read_tokens as f64 / input as f64));
            println!(
                "  10-step turn's input tokens read from the prompt cache: {:.0}% ({} of {}; {} written, {} uncached)",
                100.0 * usage.cache_read_tokens as f64 / input as f64,
                usage.cache_read_tokens,
                input,
                usage.cache_write_tokens,
                usage.input_tokens
            );
        }
    }
    let waiting = 0.5 * assistant_core::pricing::LAMBDA_GB_SECOND;
    println!("  plus ${waiting:.7} per second the worker waits on the model (Lambda bills the wait)");
    Ok(())
}

/// Counts the tool-result bytes in each request (as serialized: a result
/// shown in part is its preview), then asks the instant model.
struct ResultBytes {
    inner: InstantModel,
    sent: std::sync::Mutex<Vec<usize>>,
}

#[async_trait]
impl Model for ResultBytes {
    async fn converse(
        &self,
        request: assistant_core::model::ModelRequest<'_>,
    ) -> Result<assistant_core::model::ModelReply, assistant_core::model::ModelError> {
        let results = request
            .messages
            .iter()
            .flat_map(|message| &message.content)
            .filter(|content| matches!(content, assistant_core::turn::Content::ToolResult(_)))
            .map(|content| serde_json::to_string(content).map_or(0, |json| json.len()))
            .sum();
        self.sent.lock().expect("sent lock").push(results);
        self.inner.converse(request).await
    }
}

/// A log query's answer: `rows` rows of about `row_bytes`, as `logs_query`
/// returns them.
fn log_rows(rows: usize, row_bytes: usize) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = (0..rows)
        .map(|n| {
            let message = format!("WARN ledger-writer: batch {n} retried {}", "x".repeat(row_bytes.saturating_sub(90)));
            serde_json::json!({"@timestamp": "2026-11-27 03:00:00.000", "@message": message})
        })
        .collect();
    serde_json::json!({"rows": rows, "rows_shown": rows.len(), "rows_found": rows.len()})
}

/// What a turn with one large result shows the model and costs: a log
/// query of 100 rows in 32 KB (`logs_query`'s defaults) and of 1,000 rows
/// in 256 KB (its largest `max_bytes`), then the answer, priced as Claude
/// Sonnet 4.
async fn large_results() -> Result<()> {
    println!(
        "
a turn with one large tool result (a call, then the answer; priced as Claude Sonnet 4)"
    );
    let prices = assistant_core::pricing::ModelPrices::for_model("us.anthropic.claude-sonnet-4-20250514-v1:0");
    for (label, rows, row_bytes) in [("100 rows, 32 KB", 100, 325), ("1,000 rows, 256 KB", 1_000, 262)] {
        let output = ToolOutput::Json(log_rows(rows, row_bytes));
        let bytes = serde_json::to_vec(&output).map_or(0, |json| json.len());
        let model = Arc::new(ResultBytes { inner: InstantModel::new(2), sent: Default::default() });
        let agent = Arc::new(testkit::agent_memory::MemoryAgent::default());
        let mut bench = bench_worker_returning(model.clone(), agent, 2, Arc::new(SystemClock), output)?;
        bench.worker = bench.worker.rebuild().prices(prices).build();
        bench.worker.handle(&mention(0), &Budget::plenty()).await?;
        let reports = bench.metrics.reports();
        let report = reports.first().context("the turn settled and reported")?;
        let usage = report.usage;
        let shown = model.sent.lock().expect("sent lock").last().copied().unwrap_or_default();
        println!(
            "  {label} ({bytes} bytes): {shown} bytes of it in the answering request; {} input tokens in the turn, model ${:.4}",
            usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
            report.cost(512).model.unwrap_or_default()
        );
    }
    Ok(())
}

/// A typical answer: what the responder renders most.
const ANSWER: &str = "## Why checkout-api fails\n\nThe **database connection pool** is exhausted since the \
14:02 deploy, which lowered `DB_POOL_MAX` from 50 to 5 (see [the deploy](https://ci.example.com/deploys/8812) \
& [the runbook](https://wiki.example.com/runbooks/checkout-api)).\n\n### What to do\n\n1. Restore the pool \
size:\n   ```yaml\n   db:\n     pool_max: 50\n   ```\n2. Restart the pods *one at a time*.\n3. Watch \
`checkout_db_wait_seconds` < 0.1 for 15 minutes.\n\n| metric | before | after |\n|---|---|---|\n| p99 latency \
| 180 ms | 4.2 s |\n| errors | 0.1% | 38% |\n\n> Ask <@U0LAN0Z89> in <#C0LAN2Q65|ops> if the restart does not \
help. The on-call rota is at https://oncall.example.com/teams/payments and the error budget is ~~fine~~ spent.";

fn responder_rendering() {
    println!("\nresponder CPU per answer: redact + markdown/table blocks + split, {} byte answer", ANSWER.len());
    let mut samples: Vec<Duration> = Vec::with_capacity(WARM_ITERATIONS / 4);
    for _ in 0..WARM_ITERATIONS / 4 {
        let started = Instant::now();
        let messages = responder_logic::render::answer(
            std::hint::black_box(ANSWER),
            Default::default(),
            &assistant_core::TurnId::new("T061EG9R6-Ev0BENCH"),
        );
        samples.push(started.elapsed());
        assert_eq!(messages.len(), 1);
    }
    samples.sort();
    summary::record("responder CPU per answer", format!("{:.1} µs", percentile(&samples, 0.5).as_secs_f64() * 1e6));
    println!(
        "  median {:.1} µs, p99 {:.1} µs",
        percentile(&samples, 0.5).as_secs_f64() * 1e6,
        percentile(&samples, 0.99).as_secs_f64() * 1e6
    );
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The `p` percentile of unsorted `samples`.
fn percentile_sorted(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    percentile(&sorted, p)
}

fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "  {label:<46} median {:>8.1} µs   p99 {:>8.1} µs   (n = {})",
        percentile(&samples, 0.5).as_secs_f64() * 1e6,
        percentile(&samples, 0.99).as_secs_f64() * 1e6,
        samples.len()
    );
}

fn warm_handling(runtime: &tokio::runtime::Runtime) -> Result<()> {
    println!("\nwarm handling, CPU only (budget: < 200 µs excluding AWS calls)");
    let claims = Arc::new(Counting::<MemoryClaims>::default());
    let queue = Arc::new(Counting::<MemoryQueue>::default());
    let intake = Intake::new(
        slack::SigningSecret::new(SECRET)?,
        claims.clone(),
        queue.clone(),
        Arc::new(testkit::memory::MemoryContexts::default()),
        Arc::new(ManualClock::at(NOW)),
    );
    let body = testkit::fixtures::APP_MENTION;
    let headers = signed_request(body, NOW);
    let request = Request { headers: &headers, body: Some(body), is_base64_encoded: false };

    let mut samples = Vec::with_capacity(WARM_ITERATIONS);
    for i in 0..WARM_ITERATIONS + 1_000 {
        let started = Instant::now();
        let decided = std::hint::black_box(intake.decide(std::hint::black_box(request)));
        let elapsed = started.elapsed();
        anyhow::ensure!(decided.is_ok(), "the benchmark request must verify");
        if i >= 1_000 {
            samples.push(elapsed);
        }
    }
    summary::record("ingress: verify", format!("{:.1} µs", percentile_sorted(&samples, 0.5).as_secs_f64() * 1e6));
    report(&format!("verify + parse + route ({} B app mention)", body.len()), samples);

    // The whole path with in-memory ports: a new event id each time, so each
    // request is claimed and enqueued like a first delivery.
    let bodies: Vec<String> = (0..WARM_ITERATIONS).map(|i| body.replace("Ev0LAN670R", &format!("Ev{i:08}"))).collect();
    let signed: Vec<HeaderMap> = bodies.iter().map(|b| signed_request(b, NOW)).collect();
    let mut samples = Vec::with_capacity(WARM_ITERATIONS);
    runtime.block_on(async {
        for (body, headers) in bodies.iter().zip(&signed) {
            let started = Instant::now();
            let reply = intake.handle(Request { headers, body: Some(body), is_base64_encoded: false }).await;
            samples.push(started.elapsed());
            assert_eq!(reply.status, 200);
        }
    });
    report("whole request, in-memory claim + enqueue", samples);
    let calls = claims.calls.load(Ordering::Relaxed) + queue.calls.load(Ordering::Relaxed);
    println!(
        "  port calls per new event (= AWS calls on the ack path): {} (budget: ≤ 2)",
        calls as f64 / WARM_ITERATIONS as f64
    );
    Ok(())
}

/// One binary's start-up, over fresh processes.
#[derive(Default)]
struct StartUp {
    init: Vec<Duration>,
    first: Vec<Duration>,
    warm: Vec<Duration>,
    peak_rss_kib: u64,
}

/// One fresh process of `binary` under the Runtime Interface Emulator,
/// invoked twice with `event`: its figures are added to `figures`.
async fn measure_once(
    binary: &str,
    env: &[(&'static str, String)],
    event: impl Fn() -> serde_json::Value,
    figures: &mut StartUp,
) -> Result<()> {
    let (dir, name) = binary.rsplit_once('/').context("binary paths are absolute")?;
    // SAFETY: the benchmark is single-threaded here; nothing reads the
    // environment concurrently.
    unsafe { std::env::set_var("FUNCTION_BIN_DIR", dir) };
    let lambda = LambdaUnderRie::start(name, Launch { env: env.to_vec(), ..Default::default() })?;
    let started = Instant::now();
    let first = lambda.invoke(&event()).await?;
    figures.first.push(started.elapsed());
    anyhow::ensure!(
        first["statusCode"] == 200 || first["batchItemFailures"] == serde_json::json!([]),
        "{name}: first invoke failed: {first}\n{}",
        lambda.logs()
    );
    let started = Instant::now();
    lambda.invoke(&event()).await?;
    figures.warm.push(started.elapsed());
    if let Some(ms) = init_duration_ms(&lambda.logs()) {
        figures.init.push(Duration::from_secs_f64(ms / 1e3));
    }
    if let Some(rss) = lambda.function_pid().and_then(peak_rss_kib_of) {
        figures.peak_rss_kib = figures.peak_rss_kib.max(rss);
    }
    Ok(())
}

/// A binary to start: where `infra/bench.sh` says it is, its environment,
/// and the event its first invoke gets.
struct Subject<'a> {
    label: &'static str,
    variable: &'static str,
    env: Vec<(&'static str, String)>,
    event: &'a dyn Fn() -> serde_json::Value,
    what: &'static str,
}

/// The variables `infra/bench.sh` exported for the functions (the local
/// AWS emulator's table, queues and bucket), passed on.
fn function_env(names: &[&'static str]) -> Vec<(&'static str, String)> {
    names.iter().filter_map(|name| std::env::var(name).ok().map(|value| (*name, value))).collect()
}

async fn start_up() -> Result<()> {
    let aws = ["AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "TURNS_TABLE"];
    let mut ingress_env = function_env(&aws);
    ingress_env.extend([("SLACK_SIGNING_SECRET", SECRET.to_owned())]);
    ingress_env.extend(function_env(&["WORK_QUEUE_URL"]));
    let mut worker_env = function_env(&aws);
    worker_env.extend(function_env(&["WORK_QUEUE_URL", "REPLY_QUEUE_URL", "ARTIFACT_BUCKET", "MODEL_ID"]));
    let mut responder_env = function_env(&aws);
    responder_env.extend(function_env(&["REPLY_QUEUE_URL", "DEAD_LETTER_QUEUE_ARNS"]));
    for env in [&mut worker_env, &mut responder_env] {
        // Slack answers nothing here: refused at once, never a timeout.
        env.extend([
            ("SLACK_BOT_TOKEN", "xoxb-bench".to_owned()),
            ("SLACK_API_BASE_URL", "http://127.0.0.1:9/api".to_owned()),
        ]);
    }
    let url_verification = || http_event(testkit::fixtures::URL_VERIFICATION, SystemClock.now_unix());
    // A first message each function handles with one DynamoDB read: work
    // or a delivery for a turn that does not exist.
    let thread = assistant_core::ThreadRef {
        team: slack::TeamId::new("T061EG9R6"),
        channel: slack::ChannelId::new("C0LAN2Q65"),
        thread_ts: slack::Ts::new("1763800000.000100"),
    };
    let missing = assistant_core::TurnId::new("T061EG9R6-Ev0MISSING");
    let continuation = WorkMessage::Continue(assistant_core::messages::Continuation {
        turn_id: missing.clone(),
        thread: thread.clone(),
        after_step: 1,
        waits: 0,
    })
    .encode();
    let delivery = ReplyMessage::Deliver { turn_id: missing, thread }.encode();
    let work = || sqs_event_carrying(&continuation);
    let reply = || sqs_event_carrying(&delivery);
    let subjects: [Subject; 6] = [
        Subject {
            label: "floor",
            variable: "FLOOR_BIN",
            env: vec![],
            event: &url_verification,
            what: "url_verification (echoed)",
        },
        // The floor linked as the functions ship (infra/tools.sh's
        // shipped_link): what the link alone buys a hello-world.
        Subject {
            label: "floor-link",
            variable: "FLOOR_LINKED_BIN",
            env: vec![],
            event: &url_verification,
            what: "url_verification (echoed), the floor linked as the functions are",
        },
        Subject {
            label: "floor-read",
            variable: "FLOOR_READ_BIN",
            env: function_env(&aws),
            event: &work,
            what: "SQS: any (1 DynamoDB read, the SDK as its examples build it)",
        },
        Subject {
            label: "ingress",
            variable: "INGRESS_BIN",
            env: ingress_env,
            event: &url_verification,
            what: "url_verification",
        },
        Subject {
            label: "worker",
            variable: "WORKER_BIN",
            env: worker_env,
            event: &work,
            what: "SQS: continue (1 DynamoDB read)",
        },
        Subject {
            label: "responder",
            variable: "RESPONDER_BIN",
            env: responder_env,
            event: &reply,
            what: "SQS: deliver (1 DynamoDB read)",
        },
    ];

    println!(
        "\nstart-up through the Runtime Interface Emulator, {COLD_RUNS} fresh processes each, the binaries taking turns; medians, and the ratio to the floor's"
    );
    println!(
        "  (budget: first invoke ≤ 1.5× the floor's, with AWS answering at once for the functions whose first event \
         reads; through the emulator, the worker and responder are also compared with a floor that makes the same read)"
    );
    let emulator = std::env::var("AWS_ENDPOINT_URL").context("AWS_ENDPOINT_URL: the local AWS emulator")?;
    let replay = replay::Replay::start(&emulator)?;
    let through_emulator = start_up_pass("through the local AWS emulator", &subjects, None).await?;
    let at_once = start_up_pass(
        "AWS answering at once (bench/src/replay.rs: a read seen before is answered from memory)",
        &subjects,
        Some(&replay.url),
    )
    .await?;
    let ratio = |value: Duration, base: Duration| value.as_secs_f64() / base.as_secs_f64().max(1e-9);
    let ms = |value: Duration| value.as_secs_f64() * 1e3;
    if let (Some(floor), Some(ingress)) = (through_emulator.first_of("floor"), through_emulator.first_of("ingress")) {
        let interval = through_emulator.interval("ingress");
        summary::record(
            "ingress: first invoke",
            format!("{:.2} ms ({:.2}×{interval})", ms(ingress), ratio(ingress, floor)),
        );
    }
    for label in ["worker", "responder"] {
        let (Some(floor), Some(first)) = (at_once.first_of("floor"), at_once.first_of(label)) else { continue };
        let interval = at_once.interval(label);
        let emulated = match (through_emulator.first_of("floor-read"), through_emulator.first_of(label)) {
            (Some(read_floor), Some(emulated)) => {
                format!(
                    "; through the emulator {:.2} ms, {:.2}× the read floor's",
                    ms(emulated),
                    ratio(emulated, read_floor)
                )
            }
            _ => String::new(),
        };
        summary::record(
            &format!("{label}: first invoke"),
            format!("{:.2} ms ({:.2}×{interval}{emulated})", ms(first), ratio(first, floor)),
        );
    }
    summary::record("peak RSS", format!("{} MiB", through_emulator.rss.join(" / ")));
    println!(
        "  (binary budget: < 10 MB each as shipped, arm64, infra/build.sh; this x86_64 build: worker < 12 MB, the others < 10 MB; peak RSS < 40 MB)"
    );
    Ok(())
}

/// One pass of the start-up figures: every first invoke by binary, and
/// the functions' peak RSS.
#[derive(Default)]
struct Pass {
    first: Vec<(&'static str, Vec<Duration>)>,
    rss: Vec<String>,
}

impl Pass {
    fn samples_of(&self, label: &str) -> Option<&[Duration]> {
        self.first.iter().find(|(kept, _)| *kept == label).map(|(_, samples)| samples.as_slice())
    }

    /// The median first invoke of `label`.
    fn first_of(&self, label: &str) -> Option<Duration> {
        self.samples_of(label).map(median)
    }

    /// `", 95% interval a–b"`: where the ratio of `label`'s median first
    /// invoke to the floor's lies, from this pass's processes; empty
    /// without both.
    fn interval(&self, label: &str) -> String {
        match (self.samples_of(label), self.samples_of("floor")) {
            (Some(subject), Some(floor)) if !subject.is_empty() && !floor.is_empty() => {
                let (low, high) = ratio_interval(subject, floor);
                format!(", 95% interval {low:.2}–{high:.2}")
            }
            _ => String::new(),
        }
    }
}

/// A subject of a pass: the binary, its environment, its figures so far.
struct Started<'a> {
    subject: &'a Subject<'a>,
    binary: String,
    env: Vec<(&'static str, String)>,
    figures: StartUp,
}

/// Starts each of `subjects` [`COLD_RUNS`] times, in turns, with its AWS
/// calls sent to `aws` where given (the emulator's address otherwise), and
/// prints a line for each.
async fn start_up_pass(title: &str, subjects: &[Subject<'_>], aws: Option<&str>) -> Result<Pass> {
    println!("\n  {title}");
    println!(
        "  {:<10} {:>9} {:>12} {:>7} {:>14} {:>7} {:>9} {:>9} {:>9}  first event",
        "binary", "size MiB", "INIT ms", "×", "first ms", "×", "× read", "warm ms", "RSS MiB"
    );
    // The subjects' runs take turns (floor, worker, …, floor, worker, …):
    // whatever slows this machine for a while slows each of them alike,
    // and the ratios compare runs made side by side.
    let mut started: Vec<Started<'_>> = Vec::new();
    for subject in subjects {
        let Ok(binary) = std::env::var(subject.variable) else {
            println!("  {:<10} {} not set: skipped", subject.label, subject.variable);
            continue;
        };
        let mut env = subject.env.clone();
        if let Some(aws) = aws {
            env.retain(|(name, _)| *name != "AWS_ENDPOINT_URL");
            env.push(("AWS_ENDPOINT_URL", aws.to_owned()));
        }
        started.push(Started { subject, binary, env, figures: StartUp::default() });
    }
    for _ in 0..COLD_RUNS {
        for Started { subject, binary, env, figures } in &mut started {
            measure_once(binary, env, subject.event, figures).await?;
        }
    }
    let mut pass = Pass::default();
    let mut floor: Option<(Duration, Duration)> = None;
    let mut read_floor: Option<Duration> = None;
    for Started { subject: Subject { label, what, .. }, binary, figures, .. } in &started {
        let size = std::fs::metadata(binary).with_context(|| format!("{binary} missing"))?.len();
        let (init, first) = (median(&figures.init), median(&figures.first));
        let (floor_init, floor_first) = *floor.get_or_insert((init, first));
        if *label == "floor-read" {
            read_floor = Some(first);
        }
        pass.first.push((label, figures.first.clone()));
        let ratio = |value: Duration, base: Duration| value.as_secs_f64() / base.as_secs_f64().max(1e-9);
        // Only a function whose first event makes the read is compared with it.
        let to_read_floor = match (*label, read_floor) {
            ("worker" | "responder" | "floor-read", Some(base)) => format!("{:.2}", ratio(first, base)),
            _ => "–".to_owned(),
        };
        let rss = figures.peak_rss_kib as f64 / 1024.0;
        if ["ingress", "worker", "responder"].contains(label) {
            pass.rss.push(format!("{rss:.1}"));
        }
        println!(
            "  {label:<10} {:>9.1} {:>12.2} {:>7.2} {:>14.2} {:>7.2} {:>9} {:>9.2} {:>9.1}  {what}",
            size as f64 / (1024.0 * 1024.0),
            init.as_secs_f64() * 1e3,
            ratio(init, floor_init),
            first.as_secs_f64() * 1e3,
            ratio(first, floor_first),
            to_read_floor,
            median(&figures.warm).as_secs_f64() * 1e3,
            rss,
        );
    }
    Ok(pass)
}

/// docs/src/benchmark.md's "Binary sizes" table, to paste as is: the x86_64 column
/// from this run's binaries (`*_BIN`), the arm64 one from the bootstraps the
/// last `infra/build.sh arm64` left in `.aws-sam/build/` (none: "–").
fn binary_sizes() {
    fn bytes(size: Option<u64>) -> String {
        let Some(size) = size else { return "–".to_owned() };
        let digits = size.to_string();
        let mut grouped = String::new();
        for (i, digit) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(digit);
        }
        format!("{grouped} B")
    }
    /// The file's size if it is an aarch64 ELF binary (`e_machine` 183).
    fn arm64_size(path: &str) -> Option<u64> {
        use std::io::Read;
        let mut header = [0u8; 20];
        std::fs::File::open(path).ok()?.read_exact(&mut header).ok()?;
        let aarch64 = header.starts_with(b"\x7fELF") && u16::from_le_bytes([header[18], header[19]]) == 183;
        aarch64.then(|| std::fs::metadata(path).ok().map(|meta| meta.len())).flatten()
    }
    println!("\n## Binary sizes (docs/src/benchmark.md's table: paste it as is)\n");
    println!("| binary | x86_64 (`infra/bench.sh`) | arm64, as shipped (`infra/build.sh arm64`) |");
    println!("|---|---|---|");
    for (label, variable, resource) in [
        ("ingress", "INGRESS_BIN", "IngressFunction"),
        ("worker", "WORKER_BIN", "WorkerFunction"),
        ("responder", "RESPONDER_BIN", "ResponderFunction"),
    ] {
        let x86_64 = std::env::var(variable).ok().and_then(|path| std::fs::metadata(path).ok()).map(|meta| meta.len());
        let arm64 = arm64_size(&format!(".aws-sam/build/{resource}/bootstrap"));
        println!("| {label} | {} | {} |", bytes(x86_64), bytes(arm64));
    }
}

fn report_ms(label: &str, mut samples: Vec<Duration>) {
    if samples.is_empty() {
        println!("  {label:<46} no samples");
        return;
    }
    samples.sort();
    println!(
        "  {label:<46} median {:>6.2} ms   p90 {:>6.2} ms   min {:>6.2} ms",
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.9).as_secs_f64() * 1e3,
        samples[0].as_secs_f64() * 1e3
    );
}

/// An SQS event (the event file's shape) carrying one message `body`.
fn sqs_event_carrying(body: &str) -> serde_json::Value {
    let mut event = tests::events::parse(tests::events::WORKER_SQS_START_TURN);
    event["Records"][0]["body"] = body.into();
    event
}

/// A Function URL event carrying `body`, signed now.
fn http_event(body: &str, now: i64) -> serde_json::Value {
    let template = tests::events::parse(tests::events::URL_VERIFICATION);
    let mut event = template.clone();
    event["body"] = body.into();
    event["headers"]["x-slack-request-timestamp"] = now.to_string().into();
    event["headers"]["x-slack-signature"] = testkit::signed::signature(SECRET, now, body).into();
    event
}

/// Samples of the time a person waits for the first status line.
const STATUS_RUNS: usize = 7;

/// What a person feels: from the signed app mention reaching the ingress
/// to the "is thinking…" status line reaching Slack, through every hop the
/// product makes: the ingress (in this process, warm, as it nearly always
/// is), the work queue (the local AWS emulator), the worker binary under
/// the Runtime Interface Emulator (a fresh process for the cold figure,
/// the same one again for the warm), its progress message on the reply
/// queue, and the responder (in this process, warm) calling
/// `assistant.threads.setStatus` on a fake Slack. Lambda's own SQS polling
/// (its event source mapping) comes on top and is not emulated: the
/// benchmark hands each message on as soon as it is on its queue.
async fn time_to_first_status() -> Result<()> {
    use tests::fake_bedrock::{FakeBedrock, Scripted, TEXT_REPLY};
    use tests::fake_slack::{CONVERSATIONS_INFO, CONVERSATIONS_REPLIES, FakeSlack};
    let aws = tests::emulator_config().await;
    let stack = tests::Stack::new(&aws).await?;
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.replies", CONVERSATIONS_REPLIES);
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    bedrock.answer_with(|_| Scripted::fixture(TEXT_REPLY));
    let functions = tests::Functions::start(&aws, &stack, slack.url(), &bedrock).await;
    let env = tests::worker_env(&stack, bedrock.url(), slack.url());
    let worker_bin = std::env::var("WORKER_BIN").context("WORKER_BIN")?;
    let (dir, name) = worker_bin.rsplit_once('/').context("binary paths are absolute")?;
    // SAFETY: single-threaded here, as in `measure`.
    unsafe { std::env::set_var("FUNCTION_BIN_DIR", dir) };

    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for run in 0..STATUS_RUNS {
        let lambda = LambdaUnderRie::start(name, Launch { env: env.clone(), ..Default::default() })?;
        for (sample, samples) in [(0, &mut cold), (1, &mut warm)] {
            let n = run * 2 + sample;
            let body = String::from_utf8(tests::events::body(&tests::events::parse(tests::events::APP_MENTION)))?
                .replace("Ev0LAN670R", &format!("Ev0STATUS{n:02}"))
                .replace("1763800000.000100", &format!("1763801{n:03}.000100"));
            let event = tests::events::with_body(&tests::events::parse(tests::events::APP_MENTION), &body);
            let statuses_before = slack.calls("assistant.threads.setStatus").len();
            let asked = Instant::now();
            let response = functions.ingress.handle(event).await?;
            anyhow::ensure!(response["statusCode"] == 200, "the ingress answered {response}");
            let work = stack.receive_work().await?;
            anyhow::ensure!(work.len() == 1, "one message queued, not {}", work.len());
            let batch = tests::sqs_event(&work, tests::WORK_QUEUE_ARN);
            let invoke = lambda.invoke(&batch);
            let relay = async {
                // The responder takes each reply message as soon as it is
                // queued, until the status line is in Slack.
                loop {
                    let replies = stack.receive_batch(&stack.reply_queue.queue).await?;
                    if !replies.is_empty() {
                        let event = tests::sqs_event(&replies, tests::REPLY_QUEUE_ARN);
                        Box::pin(functions.responder.handle(event)).await?;
                        stack.acknowledge(&stack.reply_queue.queue, &replies).await?;
                    }
                    let statuses = slack.calls("assistant.threads.setStatus");
                    if let Some(status) = statuses.get(statuses_before) {
                        return anyhow::Ok(status.at.duration_since(asked));
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            };
            let (invoked, waited) = tokio::join!(invoke, relay);
            invoked?;
            samples.push(waited?);
            stack.acknowledge(&stack.work_queue.queue, &work).await?;
            // The rest of the turn's replies (its answer), out of the way.
            let rest = stack.receive(&stack.reply_queue.queue).await?;
            stack.acknowledge(&stack.reply_queue.queue, &rest).await?;
        }
    }
    println!(
        "
time to the first status line, signed app mention at the ingress → `assistant.threads.setStatus` at Slack ({STATUS_RUNS} each; SQS polling by Lambda not included)"
    );
    summary::record(
        "mention → first status line",
        format!("{:.1} / {:.1} ms", median(&cold).as_secs_f64() * 1e3, median(&warm).as_secs_f64() * 1e3),
    );
    for (label, mut samples) in [("cold worker (a fresh process)", cold), ("warm worker", warm)] {
        samples.sort();
        println!(
            "  {label:<32} median {:>7.2} ms   min {:>7.2} ms   max {:>7.2} ms",
            median(&samples).as_secs_f64() * 1e3,
            samples[0].as_secs_f64() * 1e3,
            samples[samples.len() - 1].as_secs_f64() * 1e3
        );
    }
    Ok(())
}

/// `INIT REPORT(durationMs: 7.162000)` in the emulator's log.
fn init_duration_ms(logs: &str) -> Option<f64> {
    let (_, rest) = logs.split_once("INIT REPORT(durationMs: ")?;
    rest.split(')').next()?.parse().ok()
}

fn peak_rss_kib_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// From the model's first token to the first streamed text in Slack.
async fn first_streamed_text() -> Result<()> {
    println!(
        "
time to first streamed text after the model's first token (goal: < 1 s; Slack's own latency on top)"
    );
    const PROSE: &str = "The checkout-api pods fail their readiness checks because the database pool is \
                         exhausted: a report query started at 14:02 holds every connection. Cancel it, then \
                         raise DB_POOL_MAX from 20 to 40 and restart the pods one at a time.";
    const NAMING: &str = "The rotated password for the reporting user is in Secrets Manager under \
                          reporting/db; nothing in the logs shows it.\nThe checkout-api pods fail their readiness \
                          checks because the database pool is exhausted.";
    for (label, answer) in [("an answer in prose", PROSE), ("whose first line names a secret", NAMING)] {
        for tokens_per_second in [30u64, 60, 120] {
            let mut samples = Vec::new();
            for i in 0..5 {
                let model = Arc::new(PacedModel::new(answer, Duration::from_micros(1_000_000 / tokens_per_second)));
                let agent = Arc::new(testkit::agent_memory::MemoryAgent::default());
                let bench = bench_worker_with(model.clone(), agent.clone(), 1, Arc::new(SystemClock))?;
                bench.worker.handle(&mention(i), &Budget::plenty()).await?;
                let first_token = model.first_token().context("the model wrote")?;
                let streams = agent.streams();
                let first_text = streams.first().and_then(|s| s.first_text_at).context("the answer streamed")?;
                samples.push(first_text.duration_since(first_token));
            }
            if tokens_per_second == 60 && label == "an answer in prose" {
                summary::record(
                    "first streamed words",
                    format!("{:.0} ms", percentile_sorted(&samples, 0.5).as_secs_f64() * 1e3),
                );
            }
            report_ms(&format!("{label}, {tokens_per_second} tokens/s"), samples);
        }
    }
    Ok(())
}
