//! A busy day, measured: the three functions' real handlers on the local
//! AWS emulator's real queues, as in the soak ([`crate::soak`]), but with
//! questions arriving on a clock, many at once, and with the fakes behaving
//! as the real services do under load: Bedrock draws its time to first
//! token and its pace, enforces a tokens-a-minute quota and fails now and
//! then ([`Realism`]); Slack enforces its rate limits ([`RateLimits`]).
//!
//! The test plays Lambda: up to `workers` worker instances take one work
//! message each (the template's batch size of one and maximum concurrency),
//! responder instances take up to ten replies, and a record a function
//! reports failed comes back when the function said (it sets the message's
//! visibility itself), not at once as in the soak. It plays Slack too: each
//! event is delivered at its time, retried when not answered 200 within 3 s
//! (after 1 s, 10 s and 30 s, not Slack's 1 and 5 minutes: the only
//! compression of time in the run), and some are delivered twice as Slack
//! does after a lost 200.
//!
//! Three workloads, each on a fresh stack and fresh fakes:
//! - a steady day: a question a minute in each of 20 channels, for a few
//!   of the day's minutes, in real time;
//! - a burst: 300 questions in 60 s in 150 threads (a question and a
//!   follow-up in each) across five channels;
//! - an alert storm: 30 CloudWatch alarms in a minute, put on the work
//!   queue as the template's EventBridge rule puts them, during the burst.
//!
//! `tests/load_harness.rs` runs a tiny version; `infra/bench.sh --load`
//! runs the full one (`cargo run -p tests --bin load`) and prints
//! [`Figures`] for each.

use crate::events;
use crate::fake_bedrock::{FakeBedrock, Outcome, Realism, Scripted, TOOL_USE_REPLY};
use crate::fake_slack::{CONVERSATIONS_INFO, Call, FakeSlack, RateLimits};
use crate::fault_proxy::{FaultProxy, Plan, Upstream};
use crate::soak::{Pipeline, messages_left, retry_of};
use crate::{Stack, batch_failures, emulator_config, env_from_test_command, queue_arn, sqs_event};
use assistant_core::ports::TurnStore;
use assistant_core::pricing::{self, ModelPrices};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Slack's workspace and the channel the alerts go to.
const TEAM: &str = "T061EG9R6";
pub const ONCALL: &str = "C0ONCALL01";

/// Which day is played.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    SteadyDay,
    Burst,
    AlertStorm,
}

impl Workload {
    pub const ALL: [Workload; 3] = [Workload::SteadyDay, Workload::Burst, Workload::AlertStorm];

    pub fn name(self) -> &'static str {
        match self {
            Workload::SteadyDay => "steady day",
            Workload::Burst => "burst",
            Workload::AlertStorm => "alert storm",
        }
    }
}

/// How big the day is, and how the services behave.
#[derive(Clone, Copy)]
pub struct Load {
    pub seed: u64,
    /// The steady day: channels, and how many of its minutes are played,
    /// each this long (a minute, but for the harness's own short test).
    pub steady_channels: usize,
    pub steady_minutes: u32,
    pub minute: Duration,
    /// The burst: threads (each gets a question and a follow-up), over how
    /// long, in how many channels.
    pub burst_threads: usize,
    pub burst_over: Duration,
    pub burst_channels: usize,
    /// The storm's alarms, over how long.
    pub alarms: usize,
    pub alarms_over: Duration,
    /// Worker instances at once (the template's `WorkerMaxConcurrency`).
    pub workers: usize,
    pub bedrock: Realism,
    pub slack_limits: &'static RateLimits,
    /// How long after the last arrival the run waits for every question to
    /// be answered or apologized for.
    pub settle_within: Duration,
}

impl Load {
    /// The day: 20 channels, 300 questions in 60 s, 30 alarms.
    pub fn full(seed: u64) -> Self {
        Self {
            seed,
            steady_channels: 20,
            steady_minutes: 2,
            minute: Duration::from_secs(60),
            burst_threads: 150,
            burst_over: Duration::from_secs(60),
            burst_channels: 5,
            alarms: 30,
            alarms_over: Duration::from_secs(60),
            workers: 20,
            bedrock: Realism::sonnet_like(seed),
            slack_limits: &RateLimits::SLACK,
            settle_within: Duration::from_secs(300),
        }
    }
}

/// One thing that arrives: a person's question, or an alarm.
#[derive(Debug, Clone)]
enum Arrival {
    Question(Question),
    Alarm { index: usize },
}

#[derive(Debug, Clone)]
struct Question {
    index: usize,
    channel: String,
    /// Its own ts, and its thread's (its own for a new thread).
    ts: String,
    thread_ts: String,
}

impl Question {
    fn marker(&self) -> String {
        marker(self.index)
    }

    fn event_id(&self, seed: u64) -> String {
        format!("Ev{seed:02}L{:05}", self.index)
    }
}

fn marker(index: usize) -> String {
    format!("Q-{index:05}")
}

fn question_ts(index: usize) -> String {
    format!("1763800000.{:06}", 1_000 + index)
}

fn alarm_name(index: usize) -> String {
    format!("checkout-load-{index:02}")
}

/// What arrives when, from the workload's start.
fn schedule(load: &Load, workload: Workload) -> Vec<(Duration, Arrival)> {
    let mut arrivals = Vec::new();
    let question = |index: usize, channel: String, thread: Option<usize>| {
        let ts = question_ts(index);
        let thread_ts = thread.map_or_else(|| ts.clone(), question_ts);
        Arrival::Question(Question { index, channel, ts, thread_ts })
    };
    match workload {
        Workload::SteadyDay => {
            // A question a minute per channel, the channels a little apart.
            let minute = load.minute;
            for m in 0..load.steady_minutes as usize {
                for c in 0..load.steady_channels {
                    let index = m * load.steady_channels + c;
                    let at = minute * m as u32 + minute * c as u32 / load.steady_channels as u32;
                    arrivals.push((at, question(index, format!("C0STEADY{c:02}"), None)));
                }
            }
        }
        Workload::Burst | Workload::AlertStorm => {
            // Each thread's question in the first half, its follow-up in
            // the second, the threads shuffled over the window (seeded).
            let half = load.burst_over / 2;
            let n = load.burst_threads;
            for t in 0..n {
                let channel = format!("C0BURST{:02}", t % load.burst_channels);
                let jitter = |k: u64| Duration::from_millis(mix(load.seed ^ (t as u64) << 8 ^ k) % 500);
                let first_at = half * t as u32 / n as u32 + jitter(1);
                arrivals.push((first_at, question(t, channel.clone(), None)));
                arrivals.push((half + half * t as u32 / n as u32 + jitter(2), question(n + t, channel, Some(t))));
            }
            if workload == Workload::AlertStorm {
                for a in 0..load.alarms {
                    arrivals
                        .push((load.alarms_over * a as u32 / load.alarms.max(1) as u32, Arrival::Alarm { index: a }));
                }
            }
        }
    }
    arrivals.sort_by_key(|(at, _)| *at);
    arrivals
}

/// SplitMix64, for the seeded choices.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Slack's delivery of `question`: the fixture's app mention, in its
/// channel and thread, with its own event id and text, signed.
fn mention(seed: u64, question: &Question) -> Value {
    let event = events::parse(events::APP_MENTION);
    let mut body: Value = serde_json::from_slice(&events::body(&event)).expect("a JSON body");
    body["event_id"] = question.event_id(seed).into();
    body["event"]["ts"] = question.ts.clone().into();
    body["event"]["event_ts"] = question.ts.clone().into();
    body["event"]["channel"] = question.channel.clone().into();
    body["event"]["text"] = format!("<@U0LAN0Z89> what about {}?", question.marker()).into();
    body["event"]["blocks"] = json!([]);
    if question.thread_ts != question.ts {
        body["event"]["thread_ts"] = question.thread_ts.clone().into();
    }
    events::with_body(&event, &body.to_string())
}

/// The CloudWatch alarm `index` going to ALARM, as EventBridge sends it.
fn alarm_event(seed: u64, index: usize) -> Value {
    let mut event: Value = serde_json::from_str(testkit::fixtures::alerts::CLOUDWATCH_ALARM).expect("fixture");
    let name = alarm_name(index);
    event["id"] = format!("load-{seed}-{index}").into();
    event["detail"]["alarmName"] = name.clone().into();
    event["resources"] = json!([format!("arn:aws:cloudwatch:us-east-1:123456789012:alarm:{name}")]);
    event
}

/// The fake model: a tool step first for odd questions, then an answer
/// naming the question, a few hundred words long (drawn from the question's
/// number); an alert's investigation gets an answer of its own.
fn answer(request: &Value) -> Scripted {
    let body = request.to_string();
    let Some(at) = body.rfind("what about Q-") else {
        return Scripted::text(&format!("The alarm is investigated. {}", filler(7)));
    };
    let number: String = body[at + "what about Q-".len()..].chars().take_while(char::is_ascii_digit).collect();
    let n = number.parse::<u64>().unwrap_or_default();
    if n % 2 == 1 && !body.contains("toolResult") {
        return Scripted::fixture(TOOL_USE_REPLY);
    }
    Scripted::text(&format!("Answered Q-{number}. {}", filler(n)))
}

/// Between 80 and 400 words of plain prose.
fn filler(n: u64) -> String {
    const WORDS: [&str; 8] = ["the", "service", "returned", "errors", "after", "deploy", "of", "checkout"];
    let count = 80 + mix(n) % 320;
    (0..count).map(|i| WORDS[(mix(n ^ i) % 8) as usize]).collect::<Vec<_>>().join(" ")
}

/// What the run saw of one question.
#[derive(Debug, Clone, Default)]
struct Seen {
    /// Slack's first delivery.
    sent: Option<Instant>,
    acknowledged: Option<Instant>,
    /// A worker took its turn's first message.
    picked_up: Option<Instant>,
}

/// The measurements shared between the run's tasks.
#[derive(Default)]
struct Log {
    seen: Mutex<HashMap<String, Seen>>,
    /// Every delivery's time to the ingress's answer, in milliseconds.
    acks_ms: Mutex<Vec<f64>>,
    deliveries: Mutex<usize>,
    /// Deliveries Slack retried because the answer was not a 200 in 3 s.
    slack_retries: Mutex<usize>,
    /// The ingress's answers other than 200, by status.
    refusals: Mutex<BTreeMap<i64, usize>>,
}

impl Log {
    fn note(&self, ts: &str, change: impl FnOnce(&mut Seen)) {
        change(self.seen.lock().expect("seen lock").entry(ts.to_owned()).or_default());
    }
}

/// Slack delivers `question`: retried (up to three times) until answered
/// 200 within 3 s; one in ten acknowledged ones delivered again (a lost 200).
async fn deliver(pipeline: &Pipeline, log: &Log, seed: u64, question: &Question) {
    let event = mention(seed, question);
    log.note(&question.ts, |seen| seen.sent = Some(Instant::now()));
    for (attempt, retry_after) in SLACK_RETRIES_AFTER.into_iter().enumerate() {
        let delivery = if attempt == 0 { event.clone() } else { retry_of(&event, attempt, "http_timeout") };
        let started = Instant::now();
        let response = pipeline.ingress.handle(delivery).await.expect("an HTTP response");
        let took = started.elapsed();
        log.acks_ms.lock().expect("acks lock").push(took.as_secs_f64() * 1_000.0);
        *log.deliveries.lock().expect("deliveries lock") += 1;
        if response["statusCode"] == 200 && took < Duration::from_secs(3) {
            log.note(&question.ts, |seen| seen.acknowledged = seen.acknowledged.or(Some(Instant::now())));
            if mix(seed ^ question.index as u64).is_multiple_of(10) {
                *log.deliveries.lock().expect("deliveries lock") += 1;
                pipeline.ingress.handle(retry_of(&event, 1, "http_timeout")).await.expect("an HTTP response");
            }
            return;
        }
        *log.slack_retries.lock().expect("retries lock") += 1;
        let status = response["statusCode"].as_i64().unwrap_or_default();
        *log.refusals.lock().expect("refusals lock").entry(status).or_default() += 1;
        tokio::time::sleep(retry_after).await;
    }
}

/// When Slack retries an event not answered 200 within 3 s: at once, then
/// a minute later, then five minutes later; here 1 s, 10 s and 30 s, so a
/// workload ends within minutes (the one compression of time in the run).
const SLACK_RETRIES_AFTER: [Duration; 4] =
    [Duration::from_secs(1), Duration::from_secs(10), Duration::from_secs(30), Duration::ZERO];

/// EventBridge puts the alarm on the work queue, as the template's rule
/// does: the whole event in a versioned envelope, the rule's message group,
/// the event id as deduplication id.
async fn alarm(stack: &Stack, seed: u64, index: usize) {
    let event = alarm_event(seed, index);
    let body = json!({"v": 1, "kind": "cloudwatch_alarm", "event": event}).to_string();
    stack
        .sqs
        .send_message()
        .queue_url(&stack.work_queue.queue)
        .message_body(body)
        .message_group_id("cloudwatch-alarms")
        .message_deduplication_id(event["id"].as_str().unwrap_or_default())
        .send()
        .await
        .expect("sent as EventBridge sends");
}

/// The question timestamps a work message names (its turn's thread).
fn question_ts_in(body: &str) -> Vec<String> {
    body.match_indices("1763800000.").map(|(at, _)| body[at..].chars().take(17).collect()).collect()
}

/// One Lambda instance polling `queue`: up to `batch` messages at a time
/// to its function, deleting what was handled; a failed record is left
/// for when the function said it should come back.
async fn poll(pipeline: &Pipeline, stack: &Stack, log: &Log, queue: String, batch: i32, stop: &AtomicBool) {
    let is_work = queue == stack.work_queue.queue;
    while !stop.load(Ordering::SeqCst) {
        let received = stack
            .sqs
            .receive_message()
            .queue_url(&queue)
            .max_number_of_messages(batch)
            .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
            .send()
            .await;
        let messages = received.ok().and_then(|r| r.messages).unwrap_or_default();
        if messages.is_empty() {
            // Lambda's pollers wait on the queue (long polling); here a
            // short pause, so that 40 idle pollers leave the emulator be.
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        let event = sqs_event(&messages, &queue_arn(&queue));
        let response = if is_work {
            for message in &messages {
                for ts in question_ts_in(message.body().unwrap_or_default()) {
                    log.note(&ts, |seen| seen.picked_up = seen.picked_up.or(Some(Instant::now())));
                }
            }
            let deadline = SystemTime::now().duration_since(UNIX_EPOCH).expect("time").as_millis() as u64 + 900_000;
            Box::pin(pipeline.worker.handle(event, deadline)).await
        } else {
            Box::pin(pipeline.responder.handle(event)).await
        };
        let Ok(response) = response else { continue };
        let failed = batch_failures(&response);
        for message in messages.iter().filter(|m| !failed.iter().any(|id| Some(id.as_str()) == m.message_id())) {
            let receipt = message.receipt_handle().unwrap_or_default();
            let _ = stack.sqs.delete_message().queue_url(&queue).receipt_handle(receipt).send().await;
        }
    }
}

/// Percentiles of a set of durations, in milliseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spread {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    fn of(mut values: Vec<f64>) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        values.sort_by(f64::total_cmp);
        let at = |q: f64| values[((values.len() as f64 * q).ceil() as usize).clamp(1, values.len()) - 1];
        Self { p50: at(0.50), p95: at(0.95), p99: at(0.99), max: at(1.0), n: values.len() }
    }

    fn show(&self) -> String {
        if self.n == 0 {
            return "-".into();
        }
        let s = |ms: f64| if ms >= 10_000.0 { format!("{:.0}s", ms / 1e3) } else { format!("{:.2}s", ms / 1e3) };
        format!("{} / {} / {}", s(self.p50), s(self.p95), s(self.p99))
    }
}

/// The kind a status line's clearing is counted under.
const STATUS_CLEARED: &str = "assistant.threads.setStatus (clear)";

/// Throttles met, and how long they added: from each refused call to the
/// next call of the same kind for the same turn that went through.
#[derive(Debug, Clone, Default)]
pub struct Throttles {
    pub met: usize,
    /// Turns (Bedrock) or messages and threads (Slack) that met one.
    pub turns: usize,
    pub added_total: Duration,
    pub added_max: Duration,
    /// The ones never followed by a call that went through (kind and
    /// where), but for the kinds the bot gives up by design (a stream's
    /// calls: the answer is then posted once, which the answered count
    /// checks; clearing a status line Slack clears itself on the reply).
    pub never_recovered: Vec<String>,
    /// By method (Slack) or kind.
    pub by_kind: BTreeMap<String, usize>,
}

impl Throttles {
    /// `calls`: (key of the turn and kind, when, refused?) in time order;
    /// a refused call of a kind in `given_up` needs no call after it.
    fn of(calls: &[(String, String, Instant, bool)], given_up: &[&str]) -> Self {
        let mut throttles = Self::default();
        let mut turns = std::collections::HashSet::new();
        // Whether the last call for each key was refused: a run of refusals
        // adds its time once, from the first to the call that went through.
        let mut refusing: HashMap<&str, bool> = HashMap::new();
        for (i, (key, kind, at, refused)) in calls.iter().enumerate() {
            let already = refusing.insert(key.as_str(), *refused).unwrap_or(false);
            if !refused {
                continue;
            }
            throttles.met += 1;
            *throttles.by_kind.entry(kind.clone()).or_default() += 1;
            turns.insert(key.clone());
            if already {
                continue;
            }
            match calls[i + 1..].iter().find(|(k, _, _, refused)| k == key && !refused) {
                Some((_, _, later, _)) => {
                    let added = later.duration_since(*at);
                    throttles.added_total += added;
                    throttles.added_max = throttles.added_max.max(added);
                }
                None if given_up.contains(&kind.as_str()) => {}
                None => throttles.never_recovered.push(format!("{kind} at {key}")),
            }
        }
        throttles.turns = turns.len();
        throttles
    }

    fn show(&self) -> String {
        if self.met == 0 {
            return "0".into();
        }
        let kinds: Vec<String> = self.by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
        format!(
            "{} over {} turns ({}); +{:.1}s total, +{:.1}s at most{}",
            self.met,
            self.turns,
            kinds.join(", "),
            self.added_total.as_secs_f64(),
            self.added_max.as_secs_f64(),
            if !self.never_recovered.is_empty() {
                format!(", {} never recovered", self.never_recovered.len())
            } else {
                String::new()
            }
        )
    }
}

/// A workload's figures: what a team plans by.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    pub workload: &'static str,
    /// What the run compressed or scaled, said plainly.
    pub played: String,
    pub questions: usize,
    pub alarms: usize,
    pub deliveries: usize,
    /// Deliveries Slack retried because the answer was not a 200 in 3 s.
    pub slack_retries: usize,
    /// The ingress's answers other than 200, by status.
    pub refusals: BTreeMap<i64, usize>,
    pub acknowledgement: Spread,
    pub first_status: Spread,
    pub first_words: Spread,
    pub answer: Spread,
    /// Acknowledged → a worker took the turn: the longest a thread's first
    /// question waited, and which.
    pub longest_wait: Duration,
    pub longest_waiter: String,
    pub bedrock_throttles: Throttles,
    pub bedrock_server_errors: usize,
    pub slack_throttles: Throttles,
    pub answered: usize,
    pub apologized: usize,
    pub lost: usize,
    pub doubled: usize,
    /// Questions with no answer or apology when the run stopped waiting.
    pub unfinished: usize,
    pub left_on_queues: usize,
    /// Per turn (questions and investigations).
    pub dynamodb_per_turn: f64,
    pub sqs_per_turn: f64,
    pub s3_per_turn: f64,
    pub slack_per_turn: f64,
    pub bedrock_per_turn: f64,
    /// The mean settled question's estimated cost (model, AWS), US dollars.
    pub model_cost_per_turn: f64,
    pub aws_cost_per_turn: f64,
    pub costed_turns: usize,
    /// The storm: root messages in the on-call channel, alarms with more
    /// than one, investigations answered there, posts refused there.
    pub oncall_roots: usize,
    pub alarms_doubled: usize,
    pub oncall_answers: usize,
    pub oncall_posts_refused: usize,
    pub problems: Vec<String>,
    pub elapsed: Duration,
}

impl Figures {
    /// Every question answered or apologized for, once.
    pub fn kept_every_promise(&self) -> bool {
        self.lost == 0 && self.doubled == 0 && self.unfinished == 0 && self.alarms_doubled == 0
    }
}

/// Runs one workload on a fresh stack and fresh fakes.
pub async fn run(load: &Load, workload: Workload) -> Figures {
    tokio::task::LocalSet::new().run_until(run_here(load, workload)).await
}

async fn run_here(load: &Load, workload: Workload) -> Figures {
    let started = Instant::now();
    let direct = emulator_config().await;
    let stack = Stack::new(&direct).await.expect("emulator resources");
    let config =
        json!({"alerts": [{"source": "cloudwatch", "match": {"alarm_name": "checkout-*"}, "channel": ONCALL}]});
    stack.put("config/assistant.json", &config.to_string()).await;
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    bedrock.answer_with(answer);
    bedrock.behave_realistically(load.bedrock);
    let endpoint = env_from_test_command("AWS_ENDPOINT_URL");
    // Proxies that inject nothing: they count every call.
    let aws = FaultProxy::start(Upstream::Aws, &endpoint, Plan::none()).await;
    let bedrock_proxy = FaultProxy::start(Upstream::Bedrock, bedrock.url(), Plan::none()).await;
    let pipeline = Pipeline::start(&stack, &aws, slack.url(), &bedrock_proxy, Duration::from_millis(500)).await;
    // Limits from the first question on: the start-up's calls are not the day's.
    slack.enforce_rate_limits_as(load.slack_limits);
    let aws_before = aws.calls_by_operation();
    let slack_before = slack.all_calls().len();

    let pipeline = Arc::new(pipeline);
    let stack = Arc::new(stack);
    let log = Arc::new(Log::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut pollers = Vec::new();
    let queues = [
        (stack.work_queue.queue.clone(), 1, load.workers),
        (stack.reply_queue.queue.clone(), 10, load.workers),
        (stack.work_queue.dead_letter.clone(), 10, 1),
        (stack.reply_queue.dead_letter.clone(), 10, 1),
    ];
    for (queue, batch, instances) in queues {
        for _ in 0..instances {
            let (pipeline, stack, log, stop, queue) =
                (pipeline.clone(), stack.clone(), log.clone(), stop.clone(), queue.clone());
            // On this thread: the worker's futures are not `Send`. The
            // deliveries run on the runtime's other threads, as the ingress
            // runs on Lambda instances of its own.
            pollers.push(tokio::task::spawn_local(
                async move { poll(&pipeline, &stack, &log, queue, batch, &stop).await },
            ));
        }
    }

    let arrivals = schedule(load, workload);
    let questions: Vec<Question> = arrivals
        .iter()
        .filter_map(|(_, arrival)| match arrival {
            Arrival::Question(q) => Some(q.clone()),
            Arrival::Alarm { .. } => None,
        })
        .collect();
    let alarms = arrivals.len() - questions.len();
    let day_started = Instant::now();
    let mut senders = Vec::new();
    for (at, arrival) in arrivals {
        let (pipeline, stack, log, seed) = (pipeline.clone(), stack.clone(), log.clone(), load.seed);
        senders.push(tokio::spawn(async move {
            tokio::time::sleep_until((day_started + at).into()).await;
            match arrival {
                Arrival::Question(question) => deliver(&pipeline, &log, seed, &question).await,
                Arrival::Alarm { index } => alarm(&stack, seed, index).await,
            }
        }));
    }
    for sender in senders {
        sender.await.expect("a delivery");
    }
    let last_arrival = Instant::now();
    while last_arrival.elapsed() < load.settle_within {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let posted = slack.posted();
        let settled = questions.iter().all(|q| fate_of(&posted, &questions, q) != Fate::Nothing);
        if settled && messages_left(&stack).await == 0 {
            break;
        }
    }
    // Whatever is still running finishes; nothing new is taken.
    stop.store(true, Ordering::SeqCst);
    for poller in pollers {
        let _ = poller.await;
    }

    let mut figures = measure(load, workload, &stack, &slack, &bedrock, &log, &questions).await;
    figures.alarms = alarms;
    figures.left_on_queues = messages_left(&stack).await;
    let turns = (questions.len() + figures.oncall_answers).max(1) as f64;
    let aws_after = aws.calls_by_operation();
    let count = |prefix: &str| -> f64 {
        aws_after
            .iter()
            .filter(|(op, _)| op.starts_with(prefix))
            .map(|(op, n)| n - aws_before.get(op).copied().unwrap_or_default())
            .sum::<u64>() as f64
    };
    figures.dynamodb_per_turn = count("DynamoDB") / turns;
    figures.sqs_per_turn = count("AmazonSQS") / turns;
    figures.s3_per_turn = count("S3 ") / turns;
    figures.slack_per_turn = (slack.all_calls().len() - slack_before) as f64 / turns;
    figures.bedrock_per_turn = bedrock.requests().len() as f64 / turns;
    figures.played = played(load, workload);
    figures.elapsed = started.elapsed();
    figures
}

/// What the workload played, said plainly.
fn played(load: &Load, workload: Workload) -> String {
    match workload {
        Workload::SteadyDay => format!(
            "{} of the day's minutes, each {} s long ({} channels, a question a minute each)",
            load.steady_minutes,
            load.minute.as_secs(),
            load.steady_channels
        ),
        Workload::Burst => format!(
            "{} questions in {} s in {} threads across {} channels",
            load.burst_threads * 2,
            load.burst_over.as_secs(),
            load.burst_threads,
            load.burst_channels
        ),
        Workload::AlertStorm => format!(
            "{} CloudWatch alarms in {} s to {ONCALL}, during the burst",
            load.alarms,
            load.alarms_over.as_secs()
        ),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Nothing,
    Answered,
    Apologized,
    Doubled,
}

/// What became of `question` in its thread: its answer once, more than
/// once, an apology (as many messages saying sorry as the thread has
/// questions left unanswered), or nothing yet. A streamed message counts
/// once its stream is stopped: until then the responder may still replace
/// it (a stop Slack refused), and the answer's time is not yet known.
fn fate_of(posted: &[crate::fake_slack::Posted], questions: &[Question], question: &Question) -> Fate {
    let in_thread = |m: &&crate::fake_slack::Posted| {
        m.channel == question.channel && m.thread_ts == question.thread_ts && !m.streaming
    };
    let thread: Vec<_> = posted.iter().filter(in_thread).collect();
    let answers = |q: &Question| {
        let needle = format!("Answered {}.", q.marker());
        thread.iter().filter(|m| m.text.contains(&needle)).count()
    };
    match answers(question) {
        0 => {
            let unanswered = questions
                .iter()
                .filter(|q| q.channel == question.channel && q.thread_ts == question.thread_ts && answers(q) == 0)
                .count();
            let apologies = thread.iter().filter(|m| m.text.contains("Sorry")).count();
            if apologies >= unanswered { Fate::Apologized } else { Fate::Nothing }
        }
        1 => Fate::Answered,
        _ => Fate::Doubled,
    }
}

/// The figures, from what the fakes and the run saw.
async fn measure(
    load: &Load,
    workload: Workload,
    stack: &Stack,
    slack: &FakeSlack,
    bedrock: &FakeBedrock,
    log: &Log,
    questions: &[Question],
) -> Figures {
    let posted = slack.posted();
    let calls = slack.all_calls();
    let seen = log.seen.lock().expect("seen lock").clone();
    let mut figures = Figures {
        workload: workload.name(),
        questions: questions.len(),
        deliveries: *log.deliveries.lock().expect("deliveries lock"),
        slack_retries: *log.slack_retries.lock().expect("retries lock"),
        refusals: log.refusals.lock().expect("refusals lock").clone(),
        acknowledgement: Spread::of(log.acks_ms.lock().expect("acks lock").clone()),
        ..Figures::default()
    };
    let (mut status, mut words, mut answers) = (Vec::new(), Vec::new(), Vec::new());
    let ms = |from: Instant, to: Instant| to.duration_since(from).as_secs_f64() * 1_000.0;
    for question in questions {
        let seen = seen.get(&question.ts).cloned().unwrap_or_default();
        let Some(sent) = seen.sent else { continue };
        match fate_of(&posted, questions, question) {
            Fate::Answered => figures.answered += 1,
            Fate::Apologized => figures.apologized += 1,
            Fate::Doubled => {
                figures.doubled += 1;
                figures.problems.push(format!("{}: answered more than once", question.marker()));
            }
            Fate::Nothing if seen.acknowledged.is_some() => {
                figures.unfinished += 1;
                figures.problems.push(format!("{}: acknowledged, nothing in its thread yet", question.marker()));
            }
            Fate::Nothing => {
                figures.lost += 1;
                figures.problems.push(format!("{}: never acknowledged, nothing in its thread", question.marker()));
            }
        }
        if let (Some(acknowledged), Some(picked_up)) = (seen.acknowledged, seen.picked_up)
            && question.ts == question.thread_ts
        {
            let waited = picked_up.saturating_duration_since(acknowledged);
            if waited > figures.longest_wait {
                figures.longest_wait = waited;
                figures.longest_waiter = format!("{} in {}", question.marker(), question.channel);
            }
        }
        let timing = timing_of(&calls, &posted, question, sent);
        if let Some(at) = timing.status {
            status.push(ms(sent, at));
        }
        if let Some(at) = timing.words {
            words.push(ms(sent, at));
        }
        if let Some(at) = timing.answer {
            answers.push(ms(sent, at));
        }
    }
    figures.first_status = Spread::of(status);
    figures.first_words = Spread::of(words);
    figures.answer = Spread::of(answers);

    // Bedrock: each call keyed by the question it answers (or the alarm).
    let requests = bedrock.requests();
    let keyed: Vec<(String, String, Instant, bool)> = requests
        .iter()
        .map(|r| {
            let body = r.body.to_string();
            let key = body
                .rfind("what about Q-")
                .map_or_else(|| alarm_key(&body), |at| body[at..].chars().take("what about Q-00000".len()).collect());
            (key, "ThrottlingException".to_owned(), r.at, r.outcome == Outcome::Throttled)
        })
        .collect();
    figures.bedrock_throttles = Throttles::of(&keyed, &[]);
    figures.bedrock_server_errors = requests.iter().filter(|r| r.outcome == Outcome::ServerError).count();
    // Slack: each call keyed by its method and where it went.
    let keyed: Vec<(String, String, Instant, bool)> = calls
        .iter()
        .map(|c| {
            let field = |name: &str| c.form.get(name).cloned().unwrap_or_default();
            // A refused call is recovered from when Slack next takes a call
            // for the same message or thread (an append refused may be
            // followed by the responder's update of that message).
            let place = format!("{}{} {}{}", field("channel"), field("channel_id"), field("thread_ts"), field("ts"));
            let kind = match c.method.as_str() {
                "assistant.threads.setStatus" if field("status").is_empty() => STATUS_CLEARED.to_owned(),
                method => method.to_owned(),
            };
            (place, kind, c.at, c.rate_limited)
        })
        .collect();
    // A stream's calls are never retried in place: a turn Slack refuses a
    // stream posts its answer once instead. The responder clears the status
    // line after the answer only in case Slack has not (it does on a
    // reply); refused three times, it is left.
    let given_up = ["chat.startStream", "chat.appendStream", "chat.stopStream", STATUS_CLEARED];
    figures.slack_throttles = Throttles::of(&keyed, &given_up);

    if workload == Workload::AlertStorm {
        storm_figures(&mut figures, &posted, &calls, load.alarms);
    }
    cost_figures(&mut figures, stack, load.seed, questions).await;
    figures
}

/// The storm's channel: roots, alarms posted twice, answers, refusals.
fn storm_figures(figures: &mut Figures, posted: &[crate::fake_slack::Posted], calls: &[Call], alarms: usize) {
    let roots: Vec<_> = posted.iter().filter(|m| m.channel == ONCALL && m.thread_ts == m.ts).collect();
    figures.oncall_roots = roots.len();
    for index in 0..alarms {
        let name = alarm_name(index);
        let n = roots
            .iter()
            .filter(|m| m.text.contains(&name) || m.blocks.as_ref().is_some_and(|b| b.to_string().contains(&name)))
            .count();
        if n > 1 {
            figures.alarms_doubled += 1;
            figures.problems.push(format!("alarm {name}: {n} root messages"));
        }
    }
    figures.oncall_answers = posted
        .iter()
        .filter(|m| m.channel == ONCALL && m.thread_ts != m.ts && m.text.contains("The alarm is investigated"))
        .count();
    figures.oncall_posts_refused = calls
        .iter()
        .filter(|c| c.rate_limited && c.form.get("channel").is_some_and(|channel| channel == ONCALL))
        .count();
}

/// The alarm a request is about (its name), or the whole body's hash.
fn alarm_key(body: &str) -> String {
    match body.find("checkout-load-") {
        Some(at) => body[at..].chars().take("checkout-load-00".len()).collect(),
        None => format!("{:x}", mix(body.len() as u64)),
    }
}

/// When a question's thread first showed a status, its answer's first
/// words, and its answer (the first call of each that Slack took).
#[derive(Debug, Default)]
struct Timing {
    status: Option<Instant>,
    words: Option<Instant>,
    answer: Option<Instant>,
}

fn timing_of(calls: &[Call], posted: &[crate::fake_slack::Posted], question: &Question, sent: Instant) -> Timing {
    let needle = format!("Answered {}.", question.marker());
    let message_ts = posted.iter().find(|m| m.text.contains(&needle)).map(|m| m.ts.clone());
    let field = |call: &Call, name: &str| call.form.get(name).cloned().unwrap_or_default();
    let taken = calls.iter().filter(|c| !c.rate_limited && c.at >= sent);
    let mut timing = Timing::default();
    for call in taken {
        let here = |channel: &str| channel == question.channel;
        match call.method.as_str() {
            "assistant.threads.setStatus"
                if timing.status.is_none()
                    && here(&field(call, "channel_id"))
                    && field(call, "thread_ts") == question.thread_ts
                    && !field(call, "status").is_empty() =>
            {
                timing.status = Some(call.at)
            }
            "chat.appendStream" if timing.words.is_none() && Some(field(call, "ts")) == message_ts => {
                timing.words = Some(call.at)
            }
            "chat.stopStream" if Some(field(call, "ts")) == message_ts => {
                timing.answer = timing.answer.or(Some(call.at));
            }
            "chat.postMessage" | "chat.update" if call.form.values().any(|v| v.contains(&needle)) => {
                timing.answer = timing.answer.or(Some(call.at));
            }
            _ => {}
        }
    }
    timing.words = timing.words.or(timing.answer);
    timing
}

/// The mean settled question's cost, as the worker prices it.
async fn cost_figures(figures: &mut Figures, stack: &Stack, seed: u64, questions: &[Question]) {
    let turns = stack.turns();
    let prices = ModelPrices::for_model(crate::MODEL_ID);
    let (mut model, mut aws, mut n) = (0.0, 0.0, 0);
    for question in questions {
        let id = assistant_core::TurnId::new(format!("{TEAM}-{}", question.event_id(seed)));
        let Ok(Some(turn)) = turns.load(&id).await else { continue };
        let enhancer = turn.enhancer.as_ref().map(|run| (&run.usage, ModelPrices::for_model(&run.model_id)));
        let cost = pricing::estimate(pricing::Spent {
            usage: &turn.usage,
            prices,
            enhancer,
            metered: &turn.metered,
            guard_units: &turn.guard_units,
            worker_memory_mb: 512,
        });
        model += cost.model.unwrap_or_default();
        aws += cost.aws;
        n += 1;
    }
    if n > 0 {
        figures.model_cost_per_turn = model / n as f64;
        figures.aws_cost_per_turn = aws / n as f64;
    }
    figures.costed_turns = n;
}

/// The figures of every workload, as one table: a row per figure, a column
/// per workload.
pub fn table(all: &[Figures]) -> String {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut row = |name: &str, value: &dyn Fn(&Figures) -> String| {
        rows.push((name.to_owned(), all.iter().map(value).collect()));
    };
    row("questions (alarms)", &|f| format!("{} ({})", f.questions, f.alarms));
    row("Slack deliveries (retried: no 200 in 3 s)", &|f| format!("{} ({})", f.deliveries, f.slack_retries));
    row("ingress answers not 200 (by status)", &|f| {
        let statuses: Vec<String> = f.refusals.iter().map(|(status, n)| format!("{status}: {n}")).collect();
        if statuses.is_empty() { "0".into() } else { statuses.join(", ") }
    });
    row("acknowledgement p50/p95/p99", &|f| f.acknowledgement.show());
    row("acknowledgement max", &|f| format!("{:.2}s", f.acknowledgement.max / 1e3));
    row("first status p50/p95/p99", &|f| f.first_status.show());
    row("first streamed words p50/p95/p99", &|f| f.first_words.show());
    row("answer p50/p95/p99", &|f| f.answer.show());
    row("longest wait for a worker (new thread)", &|f| {
        format!(
            "{:.1}s ({})",
            f.longest_wait.as_secs_f64(),
            if f.longest_waiter.is_empty() { "-" } else { &f.longest_waiter }
        )
    });
    row("Bedrock throttles", &|f| f.bedrock_throttles.show());
    row("Bedrock 503s", &|f| f.bedrock_server_errors.to_string());
    row("Slack 429s", &|f| f.slack_throttles.show());
    row("answered / apologized", &|f| format!("{} / {}", f.answered, f.apologized));
    row("lost / doubled / unfinished", &|f| format!("{} / {} / {}", f.lost, f.doubled, f.unfinished));
    row("left on queues", &|f| f.left_on_queues.to_string());
    row("calls per turn: DynamoDB / SQS / S3", &|f| {
        format!("{:.1} / {:.1} / {:.1}", f.dynamodb_per_turn, f.sqs_per_turn, f.s3_per_turn)
    });
    row("calls per turn: Slack / Bedrock", &|f| format!("{:.1} / {:.1}", f.slack_per_turn, f.bedrock_per_turn));
    row("cost per turn: model + AWS", &|f| {
        format!("${:.5} + ${:.6} ({} turns)", f.model_cost_per_turn, f.aws_cost_per_turn, f.costed_turns)
    });
    for per_day in [100.0, 1_000.0, 10_000.0] {
        row(&format!("cost a day at {per_day:.0} questions"), &|f| {
            format!("${:.2}", (f.model_cost_per_turn + f.aws_cost_per_turn) * per_day)
        });
    }
    row("storm: roots in on-call / doubled", &|f| {
        if f.alarms == 0 { "-".into() } else { format!("{} / {}", f.oncall_roots, f.alarms_doubled) }
    });
    row("storm: investigations answered / posts refused", &|f| {
        if f.alarms == 0 { "-".into() } else { format!("{} / {}", f.oncall_answers, f.oncall_posts_refused) }
    });
    row("took", &|f| format!("{:.0}s", f.elapsed.as_secs_f64()));

    let header: Vec<String> = all.iter().map(|f| f.workload.to_owned()).collect();
    let widths: Vec<usize> = (0..all.len())
        .map(|i| rows.iter().map(|(_, v)| v[i].chars().count()).chain([header[i].len()]).max().unwrap_or(0))
        .collect();
    let first = rows.iter().map(|(name, _)| name.chars().count()).max().unwrap_or(0);
    let line = |name: &str, values: &[String]| {
        let cells: Vec<String> = values.iter().zip(&widths).map(|(v, w)| format!("{v:<w$}")).collect();
        format!("| {name:<first$} | {} |", cells.join(" | "))
    };
    let mut out = vec![line("", &header)];
    out.push(format!(
        "|{}|{}|",
        "-".repeat(first + 2),
        widths.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("|")
    ));
    out.extend(rows.iter().map(|(name, values)| line(name, values)));
    for f in all {
        out.push(format!("{}: {}", f.workload, f.played));
    }
    out.join("\n")
}
