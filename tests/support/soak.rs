//! Questions under injected faults: the three functions' real handlers,
//! their AWS, Slack and Bedrock calls each through a [`FaultProxy`], the
//! local AWS emulator's real queues between them, and Slack's retries.
//! The test drives Lambda's part: it delivers Slack's events to the
//! ingress (retrying what was not answered 200, and retrying some that
//! were, as Slack does after a slow answer), and it feeds each queue's
//! messages to its function as the event source mapping would, deleting
//! what was handled and making failed records visible again at once (the
//! functions' backoffs are what a real queue would wait; the test does not
//! wait for them). It runs until every queue is drained, then reads every
//! thread in the fake Slack.
//!
//! `tests/faults.rs` runs it at a few seeds; `infra/bench.sh` runs a longer
//! soak (`cargo run -p tests --bin soak`).

use crate::events;
use crate::fake_bedrock::{FakeBedrock, Scripted, TOOL_USE_REPLY};
use crate::fake_slack::{CONVERSATIONS_INFO, FakeSlack};
use crate::fault_proxy::{Fault, FaultProxy, Plan, Upstream};
use crate::{Stack, batch_failures, emulator_config, env_from_test_command, queue_arn, sqs_event};
use aws_config::SdkConfig;
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What a soak is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct Soak {
    pub seed: u64,
    pub questions: usize,
    /// About one call in this many fails.
    pub one_in: u64,
}

/// What happened to the questions, and what the proxies did to the calls.
#[derive(Debug, Default)]
pub struct Report {
    pub questions: usize,
    /// Questions some delivery of which Slack got a 200 for.
    pub acknowledged: usize,
    /// Deliveries Slack made, retries included.
    pub deliveries: usize,
    /// Threads with exactly one message, the question's answer.
    pub answered: usize,
    /// Threads with exactly one message, an apology.
    pub apologized: usize,
    /// Threads with more than one message.
    pub doubled: usize,
    /// Acknowledged questions whose thread has no message.
    pub lost: usize,
    /// Threads whose one message is not the question's answer nor an
    /// apology (another question's answer, a message left empty).
    pub wrong: usize,
    /// Messages still streaming when every queue was drained.
    pub still_streaming: usize,
    /// Messages left on any queue.
    pub left_on_queues: usize,
    pub calls: u64,
    pub faults: BTreeMap<Fault, u32>,
    pub elapsed: Duration,
    /// What a failing check needs to see: each thread's messages.
    pub problems: Vec<String>,
}

impl Report {
    pub fn faults_injected(&self) -> u32 {
        self.faults.values().sum()
    }

    /// Every promise kept: each acknowledged question answered or told
    /// with one apology, nothing doubled, nothing left behind.
    pub fn assert_exactly_once(&self) {
        assert!(
            self.doubled == 0
                && self.lost == 0
                && self.wrong == 0
                && self.still_streaming == 0
                && self.left_on_queues == 0,
            "{self}\n{}",
            self.problems.join("\n")
        );
        assert_eq!(self.answered + self.apologized, self.acknowledged, "{self}");
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let faults: Vec<String> = self.faults.iter().map(|(kind, n)| format!("{}: {n}", kind.as_str())).collect();
        write!(
            f,
            "questions {} (acknowledged {}, Slack deliveries {}) · answered {} · apologized {} · doubled {} · lost {} \
             · wrong {} · still streaming {} · left on queues {} · calls {} · faults {} ({}) · {:.1} s",
            self.questions,
            self.acknowledged,
            self.deliveries,
            self.answered,
            self.apologized,
            self.doubled,
            self.lost,
            self.wrong,
            self.still_streaming,
            self.left_on_queues,
            self.calls,
            self.faults_injected(),
            faults.join(", "),
            self.elapsed.as_secs_f64()
        )
    }
}

/// The marker each question carries, and its answer carries back.
fn marker(i: usize) -> String {
    format!("Q-{i:04}")
}

fn question_ts(i: usize) -> String {
    format!("1763800000.{:06}", 1_000 + i)
}

/// The fake model: a tool step first for odd questions, then an answer
/// naming the question.
fn answer(request: &serde_json::Value) -> Scripted {
    let body = request.to_string();
    let Some(at) = body.find("what about Q-") else {
        return Scripted::text("I do not know which question this is.");
    };
    let number: String = body[at + "what about Q-".len()..].chars().take_while(char::is_ascii_digit).collect();
    let odd = number.parse::<usize>().is_ok_and(|n| n % 2 == 1);
    if odd && !body.contains("toolResult") {
        return Scripted::fixture(TOOL_USE_REPLY);
    }
    Scripted::text(&format!("Answered Q-{number}."))
}

/// Slack's delivery of question `i`: the fixture's app mention in its own
/// thread, with its own event id and text, signed.
fn mention(seed: u64, i: usize) -> serde_json::Value {
    let event = events::parse(events::APP_MENTION);
    let original = String::from_utf8(events::body(&event)).expect("UTF-8 body");
    let body = original
        .replace("Ev0LAN670R", &format!("Ev{seed:02}S{i:05}"))
        .replace("1763800000.000100", &question_ts(i))
        .replace("why is checkout-api failing in prod?", &format!("what about {}?", marker(i)));
    events::with_body(&event, &body)
}

pub(crate) fn retry_of(event: &serde_json::Value, n: usize, reason: &str) -> serde_json::Value {
    events::with_header(
        &events::with_header(event, "x-slack-retry-num", &n.to_string()),
        "x-slack-retry-reason",
        reason,
    )
}

/// The functions' AWS configuration: through `proxy`, with the SDK's usual
/// three attempts and `timeouts`.
async fn through(proxy: &FaultProxy, timeouts: aws_config::timeout::TimeoutConfig) -> SdkConfig {
    crate::config_through(proxy.url(), 3, timeouts).await
}

/// Slack faults: every kind, except that a `chat.startStream` whose answer
/// is lost is left out: Slack takes no key or metadata there, so a stream
/// started that way cannot be found again (docs/src/reliability.md).
fn slack_faults(method: &str) -> &'static [Fault] {
    match method {
        "chat.startStream" => &Fault::BEFORE,
        _ => &Fault::ALL,
    }
}

/// The three functions' handlers, each calling through the proxies (the
/// load test's share them too).
pub(crate) struct Pipeline {
    pub(crate) ingress: ingress::Ingress,
    pub(crate) worker: worker::WorkerFunction,
    pub(crate) responder: responder::ResponderFunction,
}

impl Pipeline {
    /// The functions as Lambda would start them; a start that fails (its
    /// configuration read failed) is started again, as Lambda does. The
    /// worker retries Bedrock as it does deployed, from `bedrock_backoff`
    /// (the soak shortens it; the load test keeps the worker's own).
    pub(crate) async fn start(
        stack: &Stack,
        aws: &FaultProxy,
        slack_url: &str,
        bedrock: &FaultProxy,
        bedrock_backoff: Duration,
    ) -> Self {
        let ingress_aws = crate::Role::Ingress.config(&through(aws, adapters_aws::config::ack_path_timeouts()).await);
        let ingress = ingress::Ingress::new(
            crate::ingress_config(stack),
            &ingress_aws,
            std::sync::Arc::new(testkit::clock::ManualClock::at(events::SIGNED_AT + 1)),
        );
        let worker_aws = crate::Role::Worker.config(&through(aws, adapters_aws::config::worker_timeouts()).await);
        let bedrock_config = aws_sdk_bedrockruntime::config::Builder::from(&worker_aws)
            .endpoint_url(bedrock.url())
            .retry_config(adapters_bedrock::retry_config().with_initial_backoff(bedrock_backoff))
            .build();
        let mut worker = None;
        for _ in 0..5 {
            let clients = worker::Clients {
                dynamodb: aws_sdk_dynamodb::Client::new(&worker_aws),
                sqs: aws_sdk_sqs::Client::new(&worker_aws).into(),
                bedrock: aws_sdk_bedrockruntime::Client::from_conf(bedrock_config.clone()).into(),
                http: adapters_slack::web::http_client(),
                aws: worker_aws.clone(),
            };
            match worker::WorkerFunction::load(crate::worker_config(stack, slack_url), clients).await {
                Ok(loaded) => {
                    worker = Some(loaded);
                    break;
                }
                Err(err) => eprintln!("worker start failed ({err}); starting again"),
            }
        }
        let responder_aws =
            crate::Role::Responder.config(&through(aws, adapters_aws::config::responder_timeouts()).await);
        let dead_letters = vec![queue_arn(&stack.work_queue.dead_letter), queue_arn(&stack.reply_queue.dead_letter)];
        let responder = responder::ResponderFunction::new(
            crate::responder_config(stack, slack_url, dead_letters),
            responder::Clients {
                dynamodb: aws_sdk_dynamodb::Client::new(&responder_aws),
                sqs: aws_sdk_sqs::Client::new(&responder_aws).into(),
                http: adapters_slack::web::http_client(),
            },
        );
        Self { ingress, worker: worker.expect("the worker starts within five tries"), responder }
    }

    async fn deliver(&self, event: &serde_json::Value) -> bool {
        let response = self.ingress.handle(event.clone()).await.expect("an HTTP response");
        response["statusCode"] == 200
    }
}

/// Feeds every queue to its function until all are empty; how many
/// messages were handled.
async fn drain(stack: &Stack, pipeline: &Pipeline) -> usize {
    let queues = [
        (stack.work_queue.queue.clone(), true),
        (stack.reply_queue.queue.clone(), false),
        (stack.work_queue.dead_letter.clone(), false),
        (stack.reply_queue.dead_letter.clone(), false),
    ];
    let (mut handled, mut idle) = (0, 0);
    for _ in 0..5_000 {
        let mut this_round = 0;
        for (url, is_work) in &queues {
            let batch = stack.receive_batch(url).await.expect("receive");
            if batch.is_empty() {
                continue;
            }
            this_round += batch.len();
            let event = sqs_event(&batch, &queue_arn(url));
            let response = if *is_work {
                let deadline = SystemTime::now().duration_since(UNIX_EPOCH).expect("time").as_millis() as u64 + 600_000;
                pipeline.worker.handle(event, deadline).await
            } else {
                pipeline.responder.handle(event).await
            }
            .expect("an SQS batch response");
            let failed = batch_failures(&response);
            for message in &batch {
                let receipt = message.receipt_handle().unwrap_or_default();
                if failed.iter().any(|id| Some(id.as_str()) == message.message_id()) {
                    let visible = stack.sqs.change_message_visibility().queue_url(url).receipt_handle(receipt);
                    visible.visibility_timeout(0).send().await.expect("make visible");
                } else {
                    stack.sqs.delete_message().queue_url(url).receipt_handle(receipt).send().await.expect("delete");
                }
            }
        }
        handled += this_round;
        if this_round == 0 {
            idle += 1;
            if idle >= 3 {
                return handled;
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        } else {
            idle = 0;
        }
    }
    panic!("the queues did not drain");
}

pub(crate) async fn messages_left(stack: &Stack) -> usize {
    let mut left = 0;
    for url in [
        &stack.work_queue.queue,
        &stack.reply_queue.queue,
        &stack.work_queue.dead_letter,
        &stack.reply_queue.dead_letter,
    ] {
        let attributes = stack
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .expect("queue attributes");
        for value in attributes.attributes().map(|a| a.values().cloned().collect::<Vec<_>>()).unwrap_or_default() {
            left += value.parse::<usize>().unwrap_or(0);
        }
    }
    left
}

/// Runs `soak`; the report says what happened to every question.
pub async fn run(soak: Soak) -> Report {
    let started = Instant::now();
    let direct = emulator_config().await;
    let stack = Stack::new(&direct).await.expect("emulator resources");
    let slack = FakeSlack::start().await;
    slack.default_reply("conversations.info", CONVERSATIONS_INFO);
    let bedrock = FakeBedrock::start().await;
    bedrock.answer_with(answer);

    let endpoint = env_from_test_command("AWS_ENDPOINT_URL");
    let aws_proxy = FaultProxy::start(Upstream::Aws, &endpoint, Plan::every_fault(soak.seed, soak.one_in)).await;
    let slack_plan = Plan { seed: soak.seed.wrapping_mul(31) ^ 0x51ac, one_in: soak.one_in, kinds: slack_faults };
    let slack_proxy = FaultProxy::start(Upstream::Slack, slack.url(), slack_plan).await;
    let bedrock_plan =
        Plan { seed: soak.seed.wrapping_mul(17) ^ 0xbed, one_in: soak.one_in, kinds: |_| &Fault::BEFORE };
    let bedrock_proxy = FaultProxy::start(Upstream::Bedrock, bedrock.url(), bedrock_plan).await;
    let slack_url = slack_proxy.reach(slack.url());
    let pipeline = Pipeline::start(&stack, &aws_proxy, &slack_url, &bedrock_proxy, Duration::from_millis(5)).await;

    let mut report = Report { questions: soak.questions, ..Report::default() };
    let mut acknowledged = vec![false; soak.questions];
    // Slack's deliveries: the event, and up to three retries until one is
    // answered 200; after a slow 200 Slack retries too (one in four).
    for (i, done) in acknowledged.iter_mut().enumerate() {
        let event = mention(soak.seed, i);
        for attempt in 0..4 {
            let delivery = if attempt == 0 { event.clone() } else { retry_of(&event, attempt, "http_error") };
            report.deliveries += 1;
            if pipeline.deliver(&delivery).await {
                *done = true;
                break;
            }
        }
        if *done && (soak.seed as usize + i).is_multiple_of(4) {
            report.deliveries += 1;
            pipeline.deliver(&retry_of(&event, 1, "http_timeout")).await;
        }
        // A few questions are handled while others still arrive.
        if i % 8 == 7 {
            drain(&stack, &pipeline).await;
        }
    }
    drain(&stack, &pipeline).await;
    // Slack's last retry, five minutes on, for a few: the turn is long
    // answered.
    for (i, _) in acknowledged.iter().enumerate().filter(|(i, done)| **done && i % 5 == 0) {
        report.deliveries += 1;
        pipeline.deliver(&retry_of(&mention(soak.seed, i), 3, "http_timeout")).await;
    }
    drain(&stack, &pipeline).await;

    let posted = slack.posted();
    for (i, was_acknowledged) in acknowledged.iter().enumerate() {
        report.acknowledged += usize::from(*was_acknowledged);
        let thread: Vec<_> = posted.iter().filter(|m| m.thread_ts == question_ts(i)).collect();
        report.still_streaming += thread.iter().filter(|m| m.streaming).count();
        let answered = |text: &str| text.contains(&format!("Answered {}.", marker(i)));
        let apology = |text: &str| text.contains("Sorry");
        match thread.as_slice() {
            [] if *was_acknowledged => {
                report.lost += 1;
                report.problems.push(format!("{}: acknowledged, nothing in its thread", marker(i)));
            }
            [] => {}
            [one] if answered(&one.text) => report.answered += 1,
            [one] if apology(&one.text) => report.apologized += 1,
            [one] => {
                report.wrong += 1;
                report.problems.push(format!("{}: {:?}", marker(i), one.text));
            }
            many => {
                report.doubled += 1;
                let texts: Vec<&str> = many.iter().map(|m| m.text.as_str()).collect();
                report.problems.push(format!("{}: {} messages: {texts:?}", marker(i), many.len()));
            }
        }
    }
    report.left_on_queues = messages_left(&stack).await;
    report.calls = aws_proxy.calls() + slack_proxy.calls() + bedrock_proxy.calls();
    for proxy in [&aws_proxy, &slack_proxy, &bedrock_proxy] {
        for (kind, n) in proxy.injected_by_kind() {
            *report.faults.entry(kind).or_default() += n;
        }
    }
    report.elapsed = started.elapsed();
    report
}
