//! The load test's harness, tested: a tiny version of each workload (a few
//! questions, a day's minute played in two seconds) against a Bedrock
//! whose quota is a few thousand tokens every five seconds and a Slack
//! whose rate limits are tighter than the real ones, so that throttling
//! and rate limiting are sure to happen. Every question is still answered
//! exactly once, and every throttle was followed by a call that went
//! through: what `infra/bench.sh --load` relies on when it prints its
//! figures.

use std::time::Duration;
use tests::fake_bedrock::Realism;
use tests::fake_slack::RateLimits;
use tests::load::{Figures, Load, Workload, run};

/// Slack, much tighter: streams started three a minute, appended ten a
/// minute, one post a second per channel with no burst.
const TIGHT: RateLimits = RateLimits {
    per_method: &[
        ("chat.startStream", 3),
        ("chat.appendStream", 10),
        ("chat.stopStream", 10),
        ("assistant.threads.setStatus", 10),
        ("chat.update", 10),
    ],
    post_burst: 1,
};

fn tiny(seed: u64) -> Load {
    Load {
        seed,
        steady_channels: 3,
        steady_minutes: 1,
        minute: Duration::from_secs(2),
        burst_threads: 3,
        burst_over: Duration::from_secs(4),
        burst_channels: 1,
        alarms: 3,
        alarms_over: Duration::from_secs(2),
        workers: 4,
        bedrock: Realism {
            seed,
            first_token_median_ms: 100.0,
            first_token_sigma: 0.3,
            tokens_per_second_median: 400.0,
            tokens_per_second_sigma: 0.3,
            quota_tokens: 4_000,
            quota_window: Duration::from_secs(5),
            server_error_one_in: 0,
        },
        slack_limits: &TIGHT,
        settle_within: Duration::from_secs(150),
    }
}

fn every_question_answered_once(figures: &Figures) {
    assert!(figures.kept_every_promise(), "{figures:#?}");
    assert_eq!(figures.answered, figures.questions, "{figures:#?}");
    assert_eq!(figures.left_on_queues, 0, "{figures:#?}");
    assert_eq!(figures.acknowledgement.n, figures.deliveries, "every delivery timed");
    assert_eq!(figures.costed_turns, figures.questions, "every settled turn priced");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_burst_is_throttled_by_bedrock_and_slack_and_every_question_is_still_answered_once() {
    // GIVEN six questions in four seconds in one channel, Bedrock's quota
    // a few turns' worth, Slack's limits tight
    // WHEN they arrive
    let figures = run(&tiny(11), Workload::Burst).await;
    eprintln!("{}", tests::load::table(std::slice::from_ref(&figures)));

    // THEN Bedrock throttled and Slack rate-limited, and each throttled
    // turn's model call later went through
    assert!(figures.bedrock_throttles.met > 0, "{figures:#?}");
    assert_eq!(figures.bedrock_throttles.never_recovered, Vec::<String>::new(), "{figures:#?}");
    assert!(figures.slack_throttles.met > 0, "{figures:#?}");
    assert_eq!(figures.slack_throttles.never_recovered, Vec::<String>::new(), "{figures:#?}");
    // AND every question has its one answer
    every_question_answered_once(&figures);
    assert!(figures.answer.n == figures.questions && figures.first_status.n > 0, "{figures:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_steady_day_and_storm_keep_every_promise_and_each_alarm_opens_one_thread() {
    // GIVEN a steady day's minute in three channels
    let steady = run(&tiny(12), Workload::SteadyDay).await;
    // THEN each question is answered once
    every_question_answered_once(&steady);
    assert_eq!(steady.questions, 3);

    // GIVEN three alarms during a burst
    let storm = run(&tiny(13), Workload::AlertStorm).await;
    eprintln!("{}", tests::load::table(&[steady.clone(), storm.clone()]));
    // THEN each alarm opened one thread in the on-call channel, and every
    // question is still answered once
    every_question_answered_once(&storm);
    assert_eq!((storm.alarms, storm.oncall_roots, storm.alarms_doubled), (3, 3, 0), "{storm:#?}");
}
