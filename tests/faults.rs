//! Questions never lost and never doubled under injected faults: about one
//! call in eight from the functions to AWS, Slack and Bedrock fails (a
//! 5xx, throttling, a reset, or applied with its answer lost), Slack
//! retries, and every question is answered exactly once, or told with one
//! apology. Each seed is a different, reproducible set of faults
//! (`tests::soak`).

use tests::soak::{Soak, run};

const QUESTIONS: usize = 24;

async fn soak_at(seed: u64) {
    let report = run(Soak { seed, questions: QUESTIONS, one_in: 8 }).await;
    println!("seed {seed}: {report}");
    assert!(report.faults_injected() > 20, "the proxies injected too few faults to prove anything: {report}");
    report.assert_exactly_once();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_question_is_answered_exactly_once_under_faults_seed_1() {
    soak_at(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_question_is_answered_exactly_once_under_faults_seed_2() {
    soak_at(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_question_is_answered_exactly_once_under_faults_seed_3() {
    soak_at(3).await;
}
