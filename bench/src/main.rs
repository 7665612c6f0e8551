//! The ingress benchmark: prints the figures DESIGN.md budgets. Run it with
//! `infra/bench.sh`, which builds the shipped binary (`--profile lambda`)
//! first. It asserts nothing: it measures and prints.
//!
//! 1. Warm handling, CPU only: `Intake::decide` (body checks, signature,
//!    parse, route) on a signed app mention, many times; median and p99.
//!    Also the whole request path with in-memory ports, and how many calls
//!    it makes to them (each is one AWS call in production).
//! 2. Cold start: the shipped binary under AWS's Lambda Runtime Interface
//!    Emulator, from the invoke that starts the process to its response
//!    (the emulator's own INIT duration too), then a warm invoke.
//! 3. Size of the shipped binary and the function process's peak RSS.

use agent::memory::{MemoryClaims, MemoryQueue};
use agent::ports::{ClaimOutcome, EventClaim, EventClaims, PortError, WorkQueue};
use agent::{Clock, FixedClock, SystemClock, WorkMessage};
use anyhow::{Context, Result};
use e2e::lambda::{LambdaUnderRie, Launch};
use http::{HeaderMap, HeaderValue};
use intake::Intake;
use intake::service::Request;
use slack::SigningSecret;
use slack::signature::{SIGNATURE_HEADER, TIMESTAMP_HEADER};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const SECRET: &str = "bench-signing-secret";
const NOW: i64 = 1_763_800_000;
const WARM_ITERATIONS: usize = 20_000;
const COLD_RUNS: usize = 15;

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let profile = if cfg!(debug_assertions) { "debug: figures not representative" } else { "optimised" };
    println!("ingress benchmark ({profile} build)");
    warm_handling(&runtime)?;
    match std::env::var("INGRESS_BIN") {
        Ok(binary) => runtime.block_on(shipped_binary(&binary))?,
        Err(_) => println!("\nINGRESS_BIN not set: cold start, size and RSS skipped (infra/bench.sh sets it)"),
    }
    Ok(())
}

fn signed_request(body: &str, signed_at: i64) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let signature = SigningSecret::new(SECRET).expect("secret").sign(signed_at, body.as_bytes());
    headers.insert(TIMESTAMP_HEADER, HeaderValue::from_str(&signed_at.to_string()).expect("digits"));
    headers.insert(SIGNATURE_HEADER, HeaderValue::from_str(&signature).expect("hex"));
    headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers
}

/// Counts the calls that would be AWS calls in production.
#[derive(Default)]
struct Counting<T> {
    inner: T,
    calls: AtomicUsize,
}

impl<T: EventClaims> EventClaims for Counting<T> {
    async fn claim(&self, claim: &EventClaim, now_unix: i64) -> Result<ClaimOutcome, PortError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.claim(claim, now_unix).await
    }

    async fn release(&self, claim: &EventClaim) -> Result<(), PortError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.release(claim).await
    }
}

impl<T: WorkQueue> WorkQueue for Counting<T> {
    async fn enqueue(&self, message: &WorkMessage) -> Result<(), PortError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.enqueue(message).await
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
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
    let intake = Intake::new(
        SigningSecret::new(SECRET)?,
        Counting::<MemoryClaims>::default(),
        Counting::<MemoryQueue>::default(),
        FixedClock::at(NOW),
    );
    let body = slack::fixtures::APP_MENTION;
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
    let calls = intake.claims().calls.load(Ordering::Relaxed) + intake.queue().calls.load(Ordering::Relaxed);
    println!(
        "  port calls per new event (= AWS calls on the ack path): {} (budget: ≤ 2)",
        calls as f64 / WARM_ITERATIONS as f64
    );
    Ok(())
}

async fn shipped_binary(binary: &str) -> Result<()> {
    let size = std::fs::metadata(binary).with_context(|| format!("{binary} missing"))?.len();
    println!("\nshipped binary {binary}");
    println!("  size {:.1} MiB (budget: < 10 MB)", size as f64 / (1024.0 * 1024.0));

    // url_verification needs no AWS call: this is the function's own start.
    let body = slack::fixtures::URL_VERIFICATION;
    let (dir, name) = binary.rsplit_once('/').context("INGRESS_BIN must be a path")?;
    // SAFETY: set before any thread that reads the environment is started.
    unsafe { std::env::set_var("FUNCTION_BIN_DIR", dir) };

    let mut cold = Vec::new();
    let mut init = Vec::new();
    let mut warm = Vec::new();
    let mut peak_rss_kib = 0;
    for _ in 0..COLD_RUNS {
        let env = vec![
            ("SLACK_SIGNING_SECRET", SECRET.to_owned()),
            ("TURNS_TABLE", "bench-table".to_owned()),
            ("WORK_QUEUE_URL", "http://127.0.0.1:9/000000000000/bench.fifo".to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ACCESS_KEY_ID", "bench".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "bench".to_owned()),
        ];
        let lambda = LambdaUnderRie::start(name, Launch { env, clock: None })?;
        let event = http_event(body, SystemClock.now_unix());
        let started = Instant::now();
        let first = lambda.invoke(&event).await?;
        cold.push(started.elapsed());
        anyhow::ensure!(first["statusCode"] == 200, "cold invoke failed: {first}");

        let event = http_event(body, SystemClock.now_unix());
        let started = Instant::now();
        lambda.invoke(&event).await?;
        warm.push(started.elapsed());

        if let Some(ms) = init_duration_ms(&lambda.logs()) {
            init.push(Duration::from_secs_f64(ms / 1e3));
        }
        if let Some(rss) = lambda.function_pid().and_then(peak_rss_kib_of) {
            peak_rss_kib = peak_rss_kib.max(rss);
        }
    }
    println!("cold start through the Runtime Interface Emulator (budget: < 30 ms), {COLD_RUNS} fresh processes");
    report_ms("first invoke: process start → response", cold);
    report_ms("emulator's INIT phase (process start → ready)", init);
    report_ms("second invoke of the same process", warm);
    println!("  peak RSS of the function process {:.1} MiB (budget: < 40 MB)", peak_rss_kib as f64 / 1024.0);
    Ok(())
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

/// A Function URL event carrying `body`, signed now.
fn http_event(body: &str, now: i64) -> serde_json::Value {
    let template = e2e::events::parse(e2e::events::URL_VERIFICATION);
    let mut event = template.clone();
    event["body"] = body.into();
    event["headers"]["x-slack-request-timestamp"] = now.to_string().into();
    event["headers"]["x-slack-signature"] =
        SigningSecret::new(SECRET).expect("secret").sign(now, body.as_bytes()).into();
    event
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
