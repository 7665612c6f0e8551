//! The local runner: the bot's whole pipeline (ingress, worker, responder)
//! in one process, on embedded defaults, with no AWS account.
//!
//! ```text
//! cargo run -p local -- "why is checkout-api failing?"   one question, each stage printed, then exit
//! cargo run -p local -- --serve [--port 3000]            serve Slack's requests on 127.0.0.1 until stopped
//! cargo run -p local -- --config FILE "question"         with an assistant configuration (as in S3)
//! cargo run -p local -- --provision                      the stack's resources at a local AWS emulator
//! cargo run -p local -- --tools [--channel C…] [--user U…] [--config FILE]
//!                                                        every tool the model is offered in each channel, and why not the rest
//! cargo run -p local -- --export-turn TURN_ID            a turn (a 👎 above all) as a draft evaluation case, redacted
//! cargo run -p local -- --config FILE --alert ALERT.json   an alert (Alertmanager, PagerDuty or CloudWatch JSON) as the on-call channel sees it
//! cargo run -p local -- --config FILE --check            check a configuration before uploading it: "ok" and what it sets up,
//!                                                        or every problem with its path (exit status 1)
//! ```
//!
//! What it talks to comes from the environment (see docs/src/running.md): with no
//! variables, an embedded store and queues, the console as Slack, and an
//! offline model replaying recorded Converse responses. `MODEL_ID` (and AWS
//! credentials) selects Bedrock; `SLACK_BOT_TOKEN` and `SLACK_SIGNING_SECRET`
//! real Slack; `AWS_ENDPOINT_URL` with `TURNS_TABLE` the local AWS emulator's
//! table.

mod offline;
mod pipeline;
mod provision;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use pipeline::{Pipeline, Settings};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Notify;

const USAGE: &str = "usage: local [--config FILE] [--replay FILE] \"QUESTION\"\n       local [--config FILE] [--replay FILE] --serve [--port PORT]\n       local [--config FILE] --tools [--channel CHANNEL_ID]... [--user USER_ID]...\n       local --provision\n       local --export-turn TURN_ID   (reads TURNS_TABLE with the usual AWS settings)\n       local --config FILE --alert ALERT.json   (an Alertmanager, PagerDuty or CloudWatch alarm payload)\n       local --config FILE --check   (before an upload: every problem, or \"ok\")";

enum Mode {
    Ask(String),
    Serve(u16),
    Provision,
    /// A stored turn as a draft evaluation case.
    ExportTurn(String),
    /// What the model is offered in these channels (to these people).
    Tools(Vec<String>, Vec<String>),
    /// An alert's payload, from a file, as its source would send it.
    Alert(String),
    /// The `--config` file checked, as a worker would read it.
    Check(String),
}

struct Args {
    mode: Mode,
    replay: Option<String>,
    config: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut serve, mut port, mut replay, mut config, mut words) = (false, 3000, None, None, Vec::new());
    let (mut provision, mut export, mut alert, mut check) = (false, None, None, false);
    let (mut tools, mut channels, mut users) = (false, Vec::new(), Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tools" => tools = true,
            "--channel" => channels.push(args.next().ok_or("--channel takes a channel id")?),
            "--user" => users.push(args.next().ok_or("--user takes a user id")?),
            "--serve" => serve = true,
            "--port" => port = args.next().and_then(|p| p.parse().ok()).ok_or("--port takes a number")?,
            "--replay" => replay = Some(args.next().ok_or("--replay takes a file")?),
            "--config" => config = Some(args.next().ok_or("--config takes a file")?),
            "--provision" => provision = true,
            "--export-turn" => export = Some(args.next().ok_or("--export-turn takes a turn id")?),
            "--alert" => alert = Some(args.next().ok_or("--alert takes a file")?),
            "--check" => check = true,
            "-h" | "--help" => return Err(String::new()),
            _ => words.push(arg),
        }
    }
    if (!channels.is_empty() || !users.is_empty()) && !tools {
        return Err("--channel and --user go with --tools".into());
    }
    if check {
        if serve || provision || tools || export.is_some() || alert.is_some() || replay.is_some() || !words.is_empty() {
            return Err("--check takes only --config".into());
        }
        let file = config.clone().ok_or("--check checks the --config FILE")?;
        return Ok(Args { mode: Mode::Check(file), replay, config });
    }
    if let Some(turn) = export {
        if serve || provision || tools || !words.is_empty() {
            return Err("--export-turn takes nothing else".into());
        }
        return Ok(Args { mode: Mode::ExportTurn(turn), replay, config });
    }
    let mode = match (serve, words.is_empty()) {
        _ if tools && (serve || provision || !words.is_empty()) => {
            return Err("--tools takes only --channel, --user and --config".into());
        }
        _ if alert.is_some() && (serve || tools || provision || !words.is_empty()) => {
            return Err("--alert takes only --config and --replay".into());
        }
        _ if alert.is_some() => Mode::Alert(alert.unwrap_or_default()),
        _ if tools && channels.is_empty() => Mode::Tools(vec![pipeline::LOCAL_CHANNEL.to_owned()], users),
        _ if tools => Mode::Tools(channels, users),
        _ if provision && (serve || !words.is_empty()) => return Err("--provision takes nothing else".into()),
        _ if provision => Mode::Provision,
        (true, true) => Mode::Serve(port),
        (false, false) => Mode::Ask(words.join(" ")),
        (true, false) => return Err("--serve takes no question".into()),
        (false, true) => Mode::Ask("why is checkout-api failing in prod?".into()),
    };
    Ok(Args { mode, replay, config })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Args { mode, replay, config } = match parse_args() {
        Ok(parsed) => parsed,
        Err(problem) => {
            if !problem.is_empty() {
                eprintln!("{problem}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Mode::ExportTurn(turn) = &mode {
        return match export_turn(turn).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("cannot export {turn}: {err}");
                ExitCode::FAILURE
            }
        };
    }
    if let Mode::Check(path) = &mode {
        return check(path);
    }
    if let Mode::Provision = mode {
        return match provision::provision().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("cannot provision: {err}");
                ExitCode::FAILURE
            }
        };
    }
    let pipeline = match Pipeline::new(Settings::from_env(replay, config)).await {
        Ok(pipeline) => Arc::new(pipeline),
        Err(err) => {
            eprintln!("cannot start: {err}");
            return ExitCode::FAILURE;
        }
    };
    match mode {
        Mode::Serve(port) => serve(pipeline, port).await,
        Mode::Ask(question) => ask(&pipeline, &question).await,
        Mode::Alert(path) => alert(&pipeline, &path).await,
        Mode::Provision | Mode::ExportTurn(_) | Mode::Check(_) => unreachable!("returned above"),
        Mode::Tools(channels, users) => {
            let users: Vec<Option<slack::UserId>> = match users.is_empty() {
                true => vec![None],
                false => users.iter().map(|user| Some(slack::UserId::new(user))).collect(),
            };
            for channel in channels {
                for user in &users {
                    println!("{}", pipeline.tools_report(&slack::ChannelId::new(&channel), user.as_ref()));
                }
            }
            ExitCode::SUCCESS
        }
    }
}

/// Checks the configuration file at `path` as a worker would read it from
/// the bucket: prints "ok" and what it sets up, or every problem found (with
/// its path in the file) and fails. What needs the deployment (the objects
/// it names, secrets' values, MCP servers) is checked when a worker starts,
/// which serves the last good configuration if that fails.
fn check(path: &str) -> ExitCode {
    let json = match std::fs::read(path) {
        Ok(json) => json,
        Err(err) => {
            eprintln!("cannot read {path}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let max = worker_config::fallback::MAX_CONFIG_BYTES;
    if json.len() as u64 > max {
        eprintln!("{path}: it is {} bytes, over the {max} an assistant configuration may be", json.len());
        return ExitCode::FAILURE;
    }
    match worker_config::assembly::check_config(&json) {
        Ok(assistant) => {
            println!("ok: {path} is a valid assistant configuration");
            println!("{}", summary(&assistant));
            ExitCode::SUCCESS
        }
        Err(problems) => {
            let count = problems.len();
            eprintln!(
                "{path}: {count} problem(s); uploaded, it would be refused and the last good configuration served:"
            );
            for problem in problems {
                eprintln!("  {problem}");
            }
            ExitCode::FAILURE
        }
    }
}

/// What a configuration sets up, a line each.
fn summary(assistant: &worker_config::AssistantConfig) -> String {
    let names = |names: Vec<&str>| if names.is_empty() { "none".to_owned() } else { names.join(", ") };
    let policy = match &assistant.tool_policy {
        Some(rules) => format!("{} rule(s)", rules.len()),
        None => "none (only the read-only built-in tools, in every channel)".to_owned(),
    };
    [
        format!("  system prompt: {}", assistant.system_prompt_key.as_deref().unwrap_or("the bundled one")),
        format!("  docs: {}", assistant.docs_prefix),
        format!("  tool policy: {policy}"),
        format!("  http tools: {}", names(assistant.http_tools.iter().map(|tool| tool.name.as_str()).collect())),
        format!("  mcp servers: {}", names(assistant.mcp_servers.iter().map(|server| server.name.as_str()).collect())),
        format!(
            "  knowledge bases: {}",
            names(assistant.knowledge_bases.iter().map(|base| base.name.as_str()).collect())
        ),
        format!("  alerts: {}, schedules: {}", assistant.alerts.len(), assistant.schedules.len()),
    ]
    .join("\n")
}

async fn ask(pipeline: &Pipeline, question: &str) -> ExitCode {
    println!("question: {question}\n");
    let started = Instant::now();
    let (headers, body) = pipeline::mention(&pipeline.signing_secret, question);
    let reply = pipeline.receive(&headers, &body).await;
    if reply.status != 200 {
        return ExitCode::FAILURE;
    }
    let posted = pipeline.process().await;
    println!("\ndone in {:.0} ms: {posted} message(s) posted", started.elapsed().as_secs_f64() * 1_000.0);
    if posted > 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

async fn alert(pipeline: &Pipeline, path: &str) -> ExitCode {
    let payload = match std::fs::read_to_string(path) {
        Ok(payload) => payload,
        Err(err) => {
            eprintln!("cannot read {path}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let started = Instant::now();
    match pipeline.alert(&payload).await {
        Ok(alerts) => println!("alert: {alerts} notice(s) from {path} on the work queue\n"),
        Err(err) => {
            eprintln!("{path}: {err}");
            return ExitCode::FAILURE;
        }
    }
    let posted = pipeline.process().await;
    println!(
        "\ndone in {:.0} ms: {posted} message(s) posted by the responder",
        started.elapsed().as_secs_f64() * 1_000.0
    );
    ExitCode::SUCCESS
}

struct Served {
    pipeline: Arc<Pipeline>,
    work: Arc<Notify>,
}

/// Serves Slack's requests (events and interactivity) on 127.0.0.1:`port`,
/// for a tunnel; work is processed in the background, as the queues would.
async fn serve(pipeline: Arc<Pipeline>, port: u16) -> ExitCode {
    let work = Arc::new(Notify::new());
    let background = {
        let (pipeline, work) = (pipeline.clone(), work.clone());
        tokio::spawn(async move {
            loop {
                // New work, or a minute passed (approvals may have expired).
                let _ = tokio::time::timeout(std::time::Duration::from_secs(60), work.notified()).await;
                pipeline.process().await;
            }
        })
    };
    let app = Router::new().fallback(slack_request).with_state(Arc::new(Served { pipeline, work }));
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("cannot listen on 127.0.0.1:{port}: {err}");
            return ExitCode::FAILURE;
        }
    };
    // The bound port, so `--port 0` (the system picks one) says which.
    let port = listener.local_addr().map_or(port, |address| address.port());
    println!("listening on http://127.0.0.1:{port}/ (Slack request URL: your tunnel's https address); Ctrl-C stops");
    let server = axum::serve(listener, app).with_graceful_shutdown(async {
        let _ = tokio::signal::ctrl_c().await;
    });
    let result = server.await;
    background.abort();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("server failed: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn slack_request(State(served): State<Arc<Served>>, headers: HeaderMap, body: String) -> Response {
    let reply = served.pipeline.receive(&headers, &body).await;
    served.work.notify_one();
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = match reply.json {
        Some(json) => (status, [("content-type", "application/json")], json).into_response(),
        None => status.into_response(),
    };
    if reply.no_retry {
        response.headers_mut().insert("x-slack-no-retry", "1".parse().expect("valid header"));
    }
    response
}

/// Prints the turn `id` (as `{team}-{event_id}`, or its reference as the
/// thread shows it with `TEAM_ID`) as a draft evaluation case: read from
/// `TURNS_TABLE` with the usual AWS settings (`AWS_ENDPOINT_URL` for the
/// local emulator), with its ratings.
async fn export_turn(id: &str) -> Result<(), String> {
    use assistant_core::feedback::{FeedbackLog, Rating};
    use assistant_core::ports::TurnStore;
    let table = std::env::var("TURNS_TABLE").map_err(|_| "set TURNS_TABLE to the stack's turns table".to_owned())?;
    let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let records = Arc::new(adapters_aws::dynamodb::DynamoRecords::new(aws_sdk_dynamodb::Client::new(&aws), &table));
    let id = assistant_core::turn::TurnId::new(id);
    let turns = assistant_core::store::RecordTurns::new(records.clone());
    let turn = turns.load(&id).await.map_err(|err| err.to_string())?.ok_or("no such turn in the table")?;
    let ratings = FeedbackLog::new(records).load(&id).await.map_err(|err| err.to_string())?;
    let rating = match ratings.ratings.values().map(|rated| rated.rating).collect::<Vec<_>>() {
        rated if rated.contains(&Rating::Negative) => Some("👎"),
        rated if rated.contains(&Rating::Positive) => Some("👍"),
        _ => None,
    };
    let draft = evals::draft_case(&turn, rating);
    println!("{}", serde_json::to_string_pretty(&draft).map_err(|err| err.to_string())?);
    eprintln!("draft written: save it under evals/cases/, fill in its expectations, and run infra/eval.sh");
    Ok(())
}
