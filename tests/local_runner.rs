//! The README's first command: the `local` runner binary on its embedded
//! defaults (no AWS, no Slack, the offline model), asked one question, and
//! serving Slack's requests on a port.

use e2e::env_from_test_command;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn runner() -> Command {
    let binary = PathBuf::from(env_from_test_command("FUNCTION_BIN_DIR")).join("local");
    let mut command = Command::new(binary);
    // Embedded defaults: nothing from the test environment leaks in.
    command.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
    command
}

#[test]
fn one_question_runs_every_stage_and_prints_the_answer() {
    let output = runner().arg("why is checkout-api failing?").output().expect("the runner starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    for expected in [
        "model: OFFLINE replay of infra/local/recorded/converse.json",
        "signature verified; work enqueued",
        "step 1: tool calls search_docs",
        "result  tooluse_offline_1 Success",
        "step 2: answer",
        "Slack post in C0LOCAL",
        "*What the runbook says*",
        "1 message(s) posted",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
}

#[test]
fn with_the_local_aws_emulator_configured_it_keeps_turns_in_its_table() {
    let table = e2e::unique_name("local-turns");
    let output = runner()
        .env("AWS_ENDPOINT_URL", env_from_test_command("AWS_ENDPOINT_URL"))
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("TURNS_TABLE", &table)
        .arg("hello")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains(&format!("created table {table} at the local AWS emulator")), "{stdout}");
    assert!(stdout.contains(&format!("store: DynamoDB table {table}")), "{stdout}");
    assert!(stdout.contains("1 message(s) posted"), "{stdout}");
}

#[test]
fn a_broken_recording_refuses_to_start() {
    let output = runner().args(["--replay", "/nonexistent/recording.json", "hi"]).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot read the recording"));
}

#[tokio::test]
async fn serve_mode_answers_slack_and_posts_to_the_console() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = runner()
        .args(["--serve", "--port", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let listening = lines.by_ref().take(10).map_while(Result::ok).any(|line| line.starts_with("listening on"));
    assert!(listening, "the runner says where it listens");

    // A bad signature is refused; a signed mention is acknowledged.
    let http = reqwest::Client::new();
    let url = format!("http://127.0.0.1:{port}/slack/events");
    let body = r#"{"type":"event_callback","team_id":"T0LOCAL","event_id":"Ev0SERVE01","event_time":1,"event":{"type":"app_mention","user":"U0LOCALUSER","text":"<@U0LOCALBOT> hello","ts":"1.000100","channel":"C0LOCAL"},"authorizations":[{"user_id":"U0LOCALBOT","is_bot":true}]}"#;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    let secret = slack::SigningSecret::new("local-runner-signing-secret").unwrap();
    let post = |signature: String| {
        http.post(&url)
            .header("content-type", "application/json")
            .header("x-slack-request-timestamp", now.to_string())
            .header("x-slack-signature", signature)
            .body(body)
            .send()
    };
    assert_eq!(post("v0=00".into()).await.unwrap().status(), 401);
    assert_eq!(post(secret.sign(now, body.as_bytes())).await.unwrap().status(), 200);

    let deadline = Instant::now() + Duration::from_secs(20);
    let mut posted = false;
    while !posted && Instant::now() < deadline {
        match lines.next() {
            Some(Ok(line)) => posted = line.contains("Slack post in C0LOCAL"),
            _ => break,
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(posted, "the answer was posted to the console");
}
