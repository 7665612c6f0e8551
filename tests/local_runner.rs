//! The README's first command: the `local` runner binary on its embedded
//! defaults (no AWS, no Slack, the offline model), asked one question, and
//! serving Slack's requests on a port.

use axum::Router;
use axum::routing::get;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tests::env_from_test_command;
use tests::local_server::LocalServer;

fn runner() -> Command {
    let binary = PathBuf::from(env_from_test_command("FUNCTION_BIN_DIR")).join("local");
    let mut command = Command::new(binary);
    // Embedded defaults: nothing from the test environment leaks in.
    command.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
    command
}

/// The runner pointed at the test command's local AWS emulator.
fn at_the_emulator() -> Command {
    let mut command = runner();
    command
        .env("AWS_ENDPOINT_URL", env_from_test_command("AWS_ENDPOINT_URL"))
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
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
        "search_docs returned: {",
        "step 2: answer",
        "in C0LOCAL (thread ",
        "Let me check the runbook and the time.\n\n## What the runbook says",
        "1 message(s) posted",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
    // AND every line reads as a person would put it, in the order the
    // thread shows it: the status before the stream, the answer after it
    for debug in ["Ok(", "Err(", "TurnId(", "Settled {", "Success"] {
        assert!(!stdout.contains(debug), "a Debug value ({debug:?}) in:\n{stdout}");
    }
    let at = |text: &str| stdout.find(text).unwrap_or_else(|| panic!("missing {text:?} in:\n{stdout}"));
    assert!(at("status in C0LOCAL: is thinking…") < at("── Slack stream "), "{stdout}");
    assert!(at("is running search_docs") < at("stopped; it reads"), "{stdout}");
    assert!(at("stopped; it reads") < at("the answer: 1 message(s) posted"), "{stdout}");
    assert!(!stdout[at("the answer:")..].contains("is thinking"), "no status after the answer:\n{stdout}");
    // AND the stream is posted in the thread after its question
    let line = stdout.lines().find(|line| line.starts_with("── Slack stream ") && line.contains("(thread ")).unwrap();
    let stamps: Vec<f64> = line
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter(|word| word.contains('.') && word.len() > 10)
        .map(|word| word.parse().unwrap())
        .collect();
    assert!(stamps.len() == 2 && stamps[0] > stamps[1], "the stream's ts is after the thread's: {line}");
}

#[test]
fn with_the_local_aws_emulator_configured_it_keeps_turns_in_its_table() {
    let table = tests::unique_name("local-turns");
    let output = at_the_emulator().env("TURNS_TABLE", &table).arg("hello").output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains(&format!("created table {table} at the local AWS emulator")), "{stdout}");
    assert!(stdout.contains(&format!("store: DynamoDB table {table}")), "{stdout}");
    assert!(stdout.contains("1 message(s) posted"), "{stdout}");
}

#[test]
fn a_turn_in_the_table_is_exported_as_a_draft_evaluation_case_that_names_its_tools() {
    let table = tests::unique_name("local-export");
    let asked = at_the_emulator().env("TURNS_TABLE", &table).arg("why is checkout-api failing?").output().unwrap();
    let stdout = String::from_utf8_lossy(&asked.stdout);
    let start = stdout.find("(turn ").expect("the turn's id is printed") + "(turn ".len();
    let turn = &stdout[start..start + stdout[start..].find(')').unwrap()];

    let exported = at_the_emulator().env("TURNS_TABLE", &table).args(["--export-turn", turn]).output().unwrap();
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    let draft: serde_json::Value = serde_json::from_slice(&exported.stdout).expect("a JSON case");
    assert_eq!(draft["question"], "why is checkout-api failing?");
    assert_eq!(draft["expect"]["calls"], serde_json::json!(["current_time", "search_docs"]));
    assert_eq!(draft["tools"].as_array().unwrap().len(), 2, "{draft}");

    let missing = at_the_emulator().env("TURNS_TABLE", &table).args(["--export-turn", "T0-Ev0NONE"]).output().unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no such turn"));
}

/// The runner's output, asked `question` with the assistant configuration
/// `config`, the model replaying `recording` (under
/// `fixtures/local-runner/`), and one more environment variable; fails
/// unless it succeeds.
async fn run_with_config(config: String, recording: &str, question: &str, variable: (&str, &str)) -> String {
    let dir = std::env::temp_dir().join(tests::unique_name("runner-config"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("assistant.json");
    std::fs::write(&path, config).unwrap();
    let recording = format!("{}/fixtures/local-runner/{recording}", env!("CARGO_MANIFEST_DIR"));
    let (question, (name, value)) = (question.to_owned(), (variable.0.to_owned(), variable.1.to_owned()));
    let output = tokio::task::spawn_blocking(move || {
        runner()
            .env(name, value)
            .args(["--config", path.to_str().unwrap(), "--replay", &recording, &question])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

/// The runner is the same bot as the worker: with `--config` it reads the
/// assistant configuration the worker reads from S3, and runs its declared
/// HTTP tools exactly as the worker does.
#[tokio::test]
async fn with_a_config_file_it_runs_a_declared_http_tool_against_a_local_api() {
    // GIVEN a team's status API on a loopback port, and a configuration that declares it
    // (path and query, Authorization header) of each request.
    type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;
    let seen: Seen = Arc::default();
    let app = {
        let seen = seen.clone();
        Router::new().route(
            "/api/{env}/services/{service}",
            get(move |request: axum::extract::Request| {
                let seen = seen.clone();
                async move {
                    let auth = request.headers().get("authorization").map(|v| v.to_str().unwrap().to_owned());
                    seen.lock().unwrap().push((request.uri().to_string(), auth));
                    axum::Json(serde_json::json!({"status": "degraded", "since": "14:02"}))
                }
            }),
        )
    };
    let api = LocalServer::start(app).await;
    let port = api.base_url.rsplit(':').next().unwrap();
    let config = include_str!("fixtures/local-runner/assistant.json").replace("{{PORT}}", port);

    // WHEN the runner is asked, with the configuration and a recording that calls the tool
    let stdout = run_with_config(
        config,
        "service-status-recording.json",
        "is checkout-api ok?",
        ("STATUS_API_TOKEN", "status-token-for-tests"),
    )
    .await;

    // THEN the API got exactly the call the model asked for, with its secret header
    assert_eq!(
        *seen.lock().unwrap(),
        [("/api/prod/services/checkout-api".to_owned(), Some("Bearer status-token-for-tests".to_owned()))]
    );
    // AND its result reached the model, and the answer was posted
    for expected in [
        "config: ",
        "step 1: tool calls service_status",
        r#"service_status returned: {"since":"14:02","status":"degraded"}"#,
        "checkout-api is **degraded** in prod since 14:02.",
        "1 message(s) posted",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
}

/// MCP servers in `--config` are discovered and called as the worker does.
#[tokio::test]
async fn with_a_config_file_it_calls_an_mcp_servers_tool() {
    let url = tests::env_from_test_command("MCP_EVERYTHING_URL");
    let config = include_str!("fixtures/local-runner/mcp-assistant.json").replace("{{EVERYTHING_URL}}", &url);
    let stdout = run_with_config(config, "mcp-get-sum-recording.json", "what is 40 + 2?", ("UNUSED", "")).await;
    for expected in [
        "step 1: tool calls everything__get-sum",
        "everything__get-sum returned: The sum of 40 and 2 is 42.",
        "40 + 2 is **42**.",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
}

#[test]
fn a_config_file_with_a_misspelt_field_refuses_to_start() {
    let dir = std::env::temp_dir().join(tests::unique_name("runner-config"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("assistant.json");
    std::fs::write(&config, r#"{"tool_polcy": []}"#).unwrap();
    let output = runner().args(["--config", config.to_str().unwrap(), "hi"]).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is not a valid assistant configuration") && stderr.contains("tool_polcy"), "{stderr}");
}

#[test]
fn a_broken_recording_refuses_to_start() {
    let output = runner().args(["--replay", "/nonexistent/recording.json", "hi"]).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot read the recording"));
}

#[tokio::test]
async fn serve_mode_answers_slack_and_posts_to_the_console() {
    // Port 0: the runner takes one the system picks and says which.
    let mut child =
        runner().args(["--serve", "--port", "0"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = lines
        .by_ref()
        .take(10)
        .map_while(Result::ok)
        .find_map(|line| {
            let rest = line.strip_prefix("listening on http://127.0.0.1:")?;
            rest.split('/').next()?.parse::<u16>().ok()
        })
        .expect("the runner says where it listens");

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
            Some(Ok(line)) => posted = line.contains("stopped; it reads"),
            _ => break,
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(posted, "the answer was streamed to the console");
}

#[test]
fn against_the_seeded_emulator_the_aws_tools_read_its_alarms_metrics_and_logs() {
    // As `infra/emulator.sh` does: the stack's resources and sample signals.
    let provisioned = at_the_emulator().arg("--provision").output().unwrap();
    assert!(provisioned.status.success(), "{}", String::from_utf8_lossy(&provisioned.stderr));

    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = at_the_emulator()
        .current_dir(&root)
        .args(["--config", "infra/local/aws-tools.json", "--replay", "infra/local/recorded/aws-tools.json"])
        .arg("why is checkout-api failing?")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    for expected in [
        "cloudwatch_alarms returned: {\"alarms\":[{",
        "cloudwatch_metrics returned: {\"dimensions\":{\"Service\":\"checkout-api\"}",
        "logs_query returned: {\"bytes_scanned\"",
        "3 tool calls (0 failed)",
        "1 message(s) posted",
    ] {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }
}

#[test]
fn a_configuration_is_checked_before_upload_ok_with_what_it_sets_up_or_every_problem_by_its_path() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let check = |file: &str| runner().current_dir(&root).args(["--config", file, "--check"]).output().unwrap();

    // GIVEN a good file: "ok", and what it sets up
    let good = check("tests/fixtures/local-runner/tools-assistant.json");
    let stdout = String::from_utf8_lossy(&good.stdout);
    assert!(good.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&good.stderr));
    assert!(stdout.starts_with("ok: tests/fixtures/local-runner/tools-assistant.json"), "{stdout}");
    for expected in ["tool policy: 2 rule(s)", "http tools: restart_service, delete_deployment", "mcp servers: github"]
    {
        assert!(stdout.contains(expected), "missing {expected:?} in:\n{stdout}");
    }

    // WHEN a field is misspelt, another has a token where a number goes,
    // and a header names a variable not in allowed_env
    let bad = check("tests/fixtures/local-runner/misspelt-assistant.json");
    let stderr = String::from_utf8_lossy(&bad.stderr);

    // THEN it fails, naming each by its path, and shows no value
    assert_eq!(bad.status.code(), Some(1), "{stderr}");
    assert!(bad.stdout.is_empty(), "{}", String::from_utf8_lossy(&bad.stdout));
    for expected in [
        "misspelt-assistant.json: 2 problem(s)",
        "  approvals.expires_after_secs: invalid type: a string, expected u64",
        "  tool_polcy: unknown field `tool_polcy` (did you mean `tool_policy`?)",
    ] {
        assert!(stderr.contains(expected), "missing {expected:?} in:\n{stderr}");
    }
    assert!(!stderr.contains("xoxb"), "{stderr}");

    // AND once it parses, what the assembly would refuse is shown too
    let dir = std::env::temp_dir().join(tests::unique_name("config-check"));
    std::fs::create_dir_all(&dir).unwrap();
    let parses = dir.join("parses.json");
    let text = include_str!("fixtures/local-runner/misspelt-assistant.json")
        .replace("tool_polcy", "tool_policy")
        .replace(r#""expires_after_secs": "xoxb-1234567890-notavalue""#, r#""expires_after_secs": 600"#);
    std::fs::write(&parses, text).unwrap();
    let refused = check(parses.to_str().unwrap());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("http tool service_status names ${env:STATUS_API_TOKEN}, which is not in"), "{stderr}");

    // AND text that is not JSON, a missing file, and --check alone fail too
    let not_json = dir.join("not.json");
    std::fs::write(&not_json, "docs_prefix: kb/").unwrap();
    let output = check(not_json.to_str().unwrap());
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains(".: not JSON: expected value at line 1 column 1"));
    assert_eq!(check(dir.join("absent.json").to_str().unwrap()).status.code(), Some(1));
    assert_eq!(runner().arg("--check").output().unwrap().status.code(), Some(2), "usage");
}

#[test]
fn the_tool_inspection_shows_two_channels_with_different_policies_and_why_tools_are_missing() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = runner()
        .current_dir(&root)
        .args(["--config", "tests/fixtures/local-runner/tools-assistant.json", "--tools"])
        .args(["--channel", "C0INCIDENTS", "--channel", "C0GENERAL"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let (incidents, general) = stdout.split_once("== tools in C0GENERAL ==").expect("both channels");
    let incidents = incidents.split_once("== tools in C0INCIDENTS ==").expect("the first channel").1;
    for expected in [
        "✓ restart_service (tool_policy[0] (channels \"C0INCIDENTS*\")): waits for approval by S0ONCALL",
        "✓ logs_query (tool_policy[0] (channels \"C0INCIDENTS*\")): runs at once (read-only)",
        // The schema as the Converse request carries it.
        "\"toolSpec\": {",
        "\"required\": [\n              \"service\"\n            ]",
        "✗ delete_deployment: denied by tool_policy[0] (channels \"C0INCIDENTS*\").deny \"*delete*\"",
        "✗ github__*: server down",
        "✗ cloudwatch_alarms: not configured: add aws_tools.alarms",
    ] {
        assert!(incidents.contains(expected), "missing {expected:?} in:\n{incidents}");
    }
    for expected in [
        "✓ search_docs (tool_policy[1] (channels \"C*\")): runs at once (read-only)",
        "✗ restart_service: not in tool_policy[1] (channels \"C*\").tools",
        "✗ delete_deployment: not in tool_policy[1] (channels \"C*\").tools",
    ] {
        assert!(general.contains(expected), "missing {expected:?} in:\n{general}");
    }
    assert!(!general.contains("✓ restart_service"), "a tool outside the channel's rule is not offered there");
}

#[test]
fn the_tool_inspection_for_a_person_applies_the_rules_that_name_them() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let config = std::env::temp_dir().join(format!("{}.json", tests::unique_name("people-policy")));
    let rules = r#"{"tool_policy": [
        {"channels": "*", "users": ["U0ADMIN"], "tools": ["*"]},
        {"channels": "*", "tools": ["current_time"]}]}"#;
    std::fs::write(&config, rules).unwrap();
    let output = runner()
        .current_dir(&root)
        .args(["--config", config.to_str().unwrap(), "--tools", "--channel", "D0DM"])
        .args(["--user", "U0ADMIN", "--user", "U0SOMEONE"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let (admin, someone) = stdout.split_once("== tools in D0DM for U0SOMEONE").expect("both people");
    assert!(
        admin.contains("== tools in D0DM for U0ADMIN") && admin.contains("✓ search_docs (tool_policy[0]"),
        "{admin}"
    );
    assert!(someone.contains("✓ current_time (tool_policy[1]"), "{someone}");
    assert!(someone.contains("✗ search_docs: not in tool_policy[1]"), "{someone}");
}

#[test]
fn an_alert_file_opens_its_thread_and_the_investigation_runs_there() {
    // GIVEN a configuration sending Alertmanager's critical alerts to the
    // on-call channel, and Alertmanager's real payload in a file
    let dir = std::env::temp_dir().join(tests::unique_name("runner-alert"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("assistant.json");
    std::fs::write(
        &config,
        r#"{"alerts": [{"source": "alertmanager", "match": {"severity": "critical"}, "channel": "C0ONCALL01"}]}"#,
    )
    .unwrap();
    let alert = dir.join("alert.json");
    std::fs::write(&alert, testkit::fixtures::alerts::ALERTMANAGER_FIRING).unwrap();

    // WHEN the runner is given it
    let output =
        runner().args(["--config", config.to_str().unwrap(), "--alert", alert.to_str().unwrap()]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    // THEN the root is posted at the top of the channel, and the
    // investigation is answered in its thread
    assert!(stdout.contains("Slack message at the top of C0ONCALL01"), "{stdout}");
    assert!(stdout.contains("*checkout-api 5xx rate above 5%*"), "{stdout}");
    assert!(stdout.contains("I'm looking into it in this thread"), "{stdout}");
    assert!(stdout.contains("question: answered after"), "{stdout}");

    // and a file that is no alert is refused
    std::fs::write(&alert, "{\"version\": \"3\"}").unwrap();
    let output = runner().args(["--alert", alert.to_str().unwrap()]).output().unwrap();
    assert!(!output.status.success());
}
