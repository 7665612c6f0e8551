use super::*;
use assistant_core::signals::{Alarm, MetricSeries};
use assistant_core::turn::{ToolStatus, ToolUse};
use testkit::clock::ManualClock;
use testkit::signals_memory::{MemoryAws, MemorySignals};
use tools_registry::{ToolPolicy, ToolRegistry};

const NOW: i64 = 1_795_000_000;

fn config(json: Value) -> AwsToolsConfig {
    serde_json::from_value(json).expect("a valid aws_tools")
}

async fn registry(signals: &Arc<MemorySignals>, json: Value) -> ToolRegistry {
    let tools =
        aws_tools(&config(json), &MemoryAws(signals.clone()), Arc::new(ManualClock::at(NOW)), None).await.unwrap();
    ToolRegistry::new(tools, ToolPolicy::allow_all()).unwrap()
}

async fn call(registry: &ToolRegistry, name: &str, input: Value) -> (ToolStatus, Value) {
    let call = ToolUse { id: "t1".into(), name: name.into(), input };
    let result = registry.run(&call, &slack::ChannelId::new("C1")).await;
    let output = match result.output {
        ToolOutput::Json(value) => value,
        ToolOutput::Text(text) => Value::String(text),
        other => panic!("unexpected {other:?}"),
    };
    (result.status, output)
}

fn logs() -> Value {
    json!({"logs": {"log_groups": ["/aws/lambda/checkout-*"], "max_rows": 50, "max_bytes": 4096, "timeout_secs": 5}})
}

#[tokio::test]
async fn nothing_configured_means_no_aws_tool_and_each_section_adds_its_own() {
    let signals = Arc::new(MemorySignals::default());
    assert!(
        aws_tools(&AwsToolsConfig::default(), &MemoryAws(signals.clone()), Arc::new(ManualClock::at(NOW)), None)
            .await
            .unwrap()
            .is_empty()
    );
    let names: Vec<String> = aws_tools(
        &config(json!({"alarms": {}, "metrics": {}, "logs": {"log_groups": ["/aws/lambda/*"]}})),
        &MemoryAws(signals),
        Arc::new(ManualClock::at(NOW)),
        None,
    )
    .await
    .unwrap()
    .iter()
    .map(|tool| tool.spec().name.clone())
    .collect();
    assert_eq!(names, ["cloudwatch_alarms", "cloudwatch_metrics", "logs_query"]);
}

#[tokio::test]
async fn a_group_outside_the_globs_a_pattern_or_too_many_groups_are_refused_before_any_aws_call() {
    let signals = Arc::new(MemorySignals::default());
    let registry = registry(&signals, logs()).await;
    let too_many: Vec<String> = (0..11).map(|n| format!("/aws/lambda/checkout-{n}")).collect();
    for (groups, says) in [
        (json!(["/aws/lambda/payroll-api"]), "not one this assistant may read"),
        (json!(["/aws/lambda/checkout-*"]), "is a pattern"),
        (json!(["/aws/lambda/checkout-api", "/aws/rds/prod"]), "not one this assistant may read"),
        (json!(too_many), "log_groups"),
    ] {
        let (status, output) =
            call(&registry, "logs_query", json!({"log_groups": groups, "query": "fields @message"})).await;
        assert_eq!(status, ToolStatus::Error, "{groups}");
        assert!(output.to_string().contains(says), "{groups}: {output}");
    }
    assert!(signals.calls().is_empty(), "refused before any AWS call: {:?}", signals.calls());
}

#[tokio::test]
async fn a_thirty_day_window_is_refused_and_the_default_window_is_the_configured_one() {
    let signals = Arc::new(MemorySignals::default());
    let registry = registry(&signals, logs()).await;
    let (status, output) = call(
        &registry,
        "logs_query",
        json!({"log_groups": ["/aws/lambda/checkout-api"], "query": "fields @message", "since_minutes": 30 * 24 * 60}),
    )
    .await;
    assert_eq!(status, ToolStatus::Error);
    assert!(output.to_string().contains("wider than the 24 hours allowed"), "{output}");
    assert!(signals.calls().is_empty());

    let (status, _) =
        call(&registry, "logs_query", json!({"log_groups": ["/aws/lambda/checkout-api"], "query": "fields @message"}))
            .await;
    assert_eq!(status, ToolStatus::Success);
    let query = signals.logs_queries.lock().unwrap()[0].clone();
    assert_eq!((query.start, query.end, query.limit), (NOW - 3_600, NOW, 50), "the last hour, capped rows");
}

#[tokio::test]
async fn a_query_returning_a_hundred_megabytes_is_cut_to_the_byte_and_row_limits() {
    let signals = Arc::new(MemorySignals::default());
    let line = "x".repeat(1024 * 1024);
    *signals.rows.lock().unwrap() = (0..100)
        .map(|n| vec![("@timestamp".to_owned(), n.to_string()), ("@message".to_owned(), line.clone())])
        .collect();
    let registry = registry(&signals, logs()).await;
    let (status, output) =
        call(&registry, "logs_query", json!({"log_groups": ["/aws/lambda/checkout-api"], "query": "fields @message"}))
            .await;
    assert_eq!(status, ToolStatus::Success);
    let text = output.to_string();
    assert!(text.len() < 8 * 1024, "{} bytes reach the model", text.len());
    assert_eq!(output["rows_found"], 100);
    assert!(output["rows_shown"].as_u64().unwrap() < 100);
    assert!(output["note"].as_str().unwrap().contains("narrow the query"), "{output}");
}

#[tokio::test(start_paused = true)]
async fn a_query_still_running_at_its_time_limit_is_stopped_and_its_rows_so_far_returned() {
    let signals = Arc::new(MemorySignals::default());
    *signals.polls_to_complete.lock().unwrap() = usize::MAX;
    *signals.rows.lock().unwrap() = vec![vec![("@message".to_owned(), "ERROR timeout calling payments".to_owned())]];
    let registry = registry(&signals, logs()).await;
    let (status, output) =
        call(&registry, "logs_query", json!({"log_groups": ["/aws/lambda/checkout-api"], "query": "fields @message"}))
            .await;
    assert_eq!(status, ToolStatus::Success, "{output}");
    assert!(output["stopped"].as_str().unwrap().contains("stopped after 5 s"), "{output}");
    assert_eq!(output["rows"][0]["@message"], "ERROR timeout calling payments");
    let calls = signals.calls();
    assert_eq!(calls.last().map(String::as_str), Some("StopQuery query-1"), "{calls:?}");
    assert!(
        calls.iter().filter(|c| c.starts_with("GetQueryResults")).count() >= 5,
        "polled until the limit: {calls:?}"
    );
}

#[tokio::test]
async fn alarms_are_listed_by_state_within_the_configured_prefixes() {
    let signals = Arc::new(MemorySignals::default());
    let alarm = |name: &str, state: &str| Alarm {
        name: name.into(),
        state: state.into(),
        reason: "Threshold Crossed: 1 datapoint [12.0] was greater than the threshold (5.0).".into(),
        since: Some(NOW - 600),
        metric: Some("AWS/ApiGateway/5XXError{ApiName=checkout}".into()),
        condition: Some("GreaterThanThreshold 5 (Sum over 60 s, 1 of 1 periods)".into()),
    };
    *signals.alarms.lock().unwrap() =
        vec![alarm("prod-checkout-5xx", "ALARM"), alarm("prod-search-latency", "OK"), alarm("staging-x", "ALARM")];
    let registry = registry(&signals, json!({"alarms": {"name_prefixes": ["prod-"]}})).await;

    let (status, output) = call(&registry, "cloudwatch_alarms", json!({})).await;
    assert_eq!(status, ToolStatus::Success);
    assert_eq!(output["count"], 1);
    assert_eq!(output["alarms"][0]["name"], "prod-checkout-5xx");
    assert_eq!(output["alarms"][0]["since"], iso8601_utc(NOW - 600));
    assert!(output["alarms"][0]["condition"].as_str().unwrap().contains("GreaterThanThreshold 5"));

    let (status, output) = call(&registry, "cloudwatch_alarms", json!({"name_prefix": "staging-"})).await;
    assert_eq!(status, ToolStatus::Error);
    assert!(output.to_string().contains("only names starting with prod-"), "{output}");
    assert_eq!(signals.calls(), ["DescribeAlarms Some(\"ALARM\") Some(\"prod-\")"]);
}

#[tokio::test]
async fn a_metric_is_answered_as_a_summary_with_few_points_never_thousands() {
    let signals = Arc::new(MemorySignals::default());
    *signals.series.lock().unwrap() =
        MetricSeries { points: (0..1_440).map(|n| (NOW - 86_400 + n * 60, (n % 10) as f64)).collect(), partial: false };
    let registry = registry(&signals, json!({"metrics": {"namespaces": ["AWS/*"], "max_points": 24}})).await;
    let (status, output) = call(
        &registry,
        "cloudwatch_metrics",
        json!({"namespace": "AWS/Lambda", "metric": "Errors", "dimensions": {"FunctionName": "checkout"}, "stat": "Sum", "since_minutes": 1440}),
    )
    .await;
    assert_eq!(status, ToolStatus::Success, "{output}");
    let query = signals.metric_queries.lock().unwrap()[0].clone();
    assert_eq!(query.period_secs, 3_600, "a day in 24 points: hourly");
    assert_eq!(query.dimensions, [("FunctionName".to_owned(), "checkout".to_owned())]);
    assert_eq!(output["summary"]["points"].as_array().unwrap().len(), 24);
    assert_eq!((output["summary"]["min"].as_f64(), output["summary"]["max"].as_f64()), (Some(0.0), Some(9.0)));
    assert_eq!(output["partial"], true, "more points came back than are shown");

    let (status, output) = call(&registry, "cloudwatch_metrics", json!({"namespace": "Payroll", "metric": "X"})).await;
    assert_eq!(status, ToolStatus::Error);
    assert!(output.to_string().contains("cannot be read here"), "{output}");
    let (status, _) = call(
        &registry,
        "cloudwatch_metrics",
        json!({"namespace": "AWS/Lambda", "metric": "X", "since_minutes": 30 * 1440}),
    )
    .await;
    assert_eq!(status, ToolStatus::Error, "wider than the 24 hours allowed");
    assert_eq!(signals.calls().len(), 1);
}

#[test]
fn a_configuration_that_would_read_too_much_or_name_no_account_is_refused_with_its_field() {
    for (json, says) in [
        (json!({"logs": {"log_groups": []}}), "aws_tools.logs.log_groups"),
        (json!({"logs": {"log_groups": ["*"]}}), r#"not "*" alone"#),
        (json!({"logs": {"log_groups": ["/a"], "max_window_hours": 24 * 30}}), "aws_tools.logs.max_window_hours"),
        (json!({"logs": {"log_groups": ["/a"], "max_bytes": 100_000_000}}), "aws_tools.logs.max_bytes"),
        (json!({"logs": {"log_groups": ["/a"], "account": {"role_arn": "admin"}}}), "is not an IAM role ARN"),
        (json!({"alarms": {"max_alarms": 1000}}), "aws_tools.alarms.max_alarms"),
        (json!({"metrics": {"namespaces": []}}), "aws_tools.metrics.namespaces"),
        (json!({"traces": {}}), "unknown field"),
    ] {
        let err = serde_json::from_value::<AwsToolsConfig>(json.clone()).expect_err("refused").to_string();
        assert!(err.contains(says), "{json}: {err}");
    }
    let ok: AwsToolsConfig = serde_json::from_value(json!({"logs": {"log_groups": ["/a/*"], "account": {"role_arn": "arn:aws:iam::222222222222:role/read", "region": "eu-west-1"}}})).unwrap();
    assert_eq!(ok.logs.unwrap().account.role_arn.as_deref(), Some("arn:aws:iam::222222222222:role/read"));
}

#[tokio::test]
async fn each_entry_opens_its_own_account() {
    let signals = Arc::new(MemorySignals::default());
    let role = "arn:aws:iam::222222222222:role/read";
    registry(&signals, json!({"alarms": {}, "logs": {"log_groups": ["/a/*"], "account": {"role_arn": role}}})).await;
    let accounts = signals.accounts.lock().unwrap().clone();
    assert_eq!(accounts[0], AwsAccount::default(), "alarms: the worker's own account");
    assert_eq!(accounts[1].role_arn.as_deref(), Some(role), "logs: the production account's role");
}

#[tokio::test]
async fn a_service_from_the_catalog_names_its_log_groups_still_within_the_globs() {
    let signals = Arc::new(MemorySignals::default());
    let catalog: ServiceCatalog = serde_json::from_value(json!({"services": [
        {"name": "checkout-api", "aliases": ["cast-core"], "log_groups": ["/aws/lambda/checkout-api", "/aws/lambda/checkout-worker"]},
        {"name": "payroll", "log_groups": ["/aws/lambda/payroll"]}
    ]}))
    .unwrap();
    let tools = aws_tools(
        &config(logs()),
        &MemoryAws(signals.clone()),
        Arc::new(ManualClock::at(NOW)),
        Some(Arc::new(catalog)),
    )
    .await
    .unwrap();
    let registry = ToolRegistry::new(tools, ToolPolicy::allow_all()).unwrap();
    let (status, _) = call(&registry, "logs_query", json!({"service": "cast-core", "query": "fields @message"})).await;
    assert_eq!(status, ToolStatus::Success);
    assert_eq!(
        signals.logs_queries.lock().unwrap()[0].log_groups,
        ["/aws/lambda/checkout-api", "/aws/lambda/checkout-worker"]
    );

    let (status, output) =
        call(&registry, "logs_query", json!({"service": "payroll", "query": "fields @message"})).await;
    assert_eq!(status, ToolStatus::Error, "the catalog cannot widen the globs");
    assert!(output.to_string().contains("not one this assistant may read"), "{output}");
    let (status, output) = call(&registry, "logs_query", json!({"service": "nope", "query": "fields @message"})).await;
    assert_eq!(status, ToolStatus::Error);
    assert!(output.as_str().unwrap().contains(r#"no service "nope""#), "{output}");
    assert_eq!(signals.logs_queries.lock().unwrap().len(), 1);
}
