use super::*;
use assistant_core::model::{ModelError, ModelReply, StopReason};
use assistant_core::turn::ToolUse;
use testkit::model::ScriptedModel;

fn calls(input: Value) -> Result<ModelReply, String> {
    Ok(ModelReply {
        message: Message {
            role: Role::Assistant,
            content: vec![Content::ToolUse(ToolUse { id: "e1".into(), name: TOOL_NAME.into(), input })],
        },
        stop_reason: StopReason::ToolUse,
        usage: Usage { input_tokens: 210, output_tokens: 35, ..Usage::default() },
    })
}

fn catalog() -> Arc<ServiceCatalog> {
    Arc::new(
        serde_json::from_value(json!({"services": [{
            "name": "checkout-api", "aliases": ["cast-core", "checkout"], "owners": ["@payments"],
            "log_groups": ["/aws/lambda/checkout-api"], "dashboards": ["https://grafana.example.com/d/checkout"]
        }]}))
        .unwrap(),
    )
}

fn enhancer(reply: Result<ModelReply, String>, pause: Duration) -> (Enhancer, Arc<ScriptedModel>) {
    let cheap = Arc::new(ScriptedModel::new([reply.map_err(ModelError::Rejected)]).pausing(pause));
    let enhancer = Enhancer {
        model: cheap.clone(),
        model_id: "us.amazon.nova-micro-v1:0".into(),
        timeout: Duration::from_millis(500),
        prompt: DEFAULT_PROMPT.into(),
        catalog: Some(catalog()),
    };
    (enhancer, cheap)
}

#[tokio::test]
async fn the_extraction_is_forced_through_the_tool_and_its_services_resolved_in_the_catalog() {
    let input = json!({"intent": "investigate", "services": ["cast-core", "ledger"], "environment": "prod", "since_minutes": 60});
    let (enhancer, cheap) = enhancer(calls(input), Duration::ZERO);
    let (block, run) = enhancer.run("show me errors in cast-core prod").await;
    let block = block.expect("used");
    assert_eq!(cheap.forced().as_slice(), [Some(TOOL_NAME.to_owned())], "forced through the tool");
    assert!(block.starts_with("[Question context, extracted from the question by a helper model."), "{block}");
    assert!(block.contains("service: checkout-api; aliases: cast-core, checkout; owners: @payments; log groups: /aws/lambda/checkout-api"), "{block}");
    assert!(block.contains(r#"service: "ledger" (not in the service catalog)"#), "{block}");
    assert!(block.contains("environment: prod") && block.contains("time range: the last 60 minutes"), "{block}");
    assert!(run.used);
    assert_eq!((run.usage.input_tokens, run.usage.output_tokens), (210, 35));
}

#[tokio::test(start_paused = true)]
async fn a_slow_broken_or_garbled_enhancer_is_skipped_and_says_so() {
    let cases = [
        (calls(json!({"intent": "investigate"})), Duration::from_secs(5), "slow"),
        (Err("AccessDenied".to_owned()), Duration::ZERO, "refused"),
        (calls(json!({"intent": "rm -rf", "services": "everything"})), Duration::ZERO, "garbage"),
        (calls(json!("not an object")), Duration::ZERO, "not an object"),
    ];
    for (reply, pause, case) in cases {
        let (enhancer, _) = enhancer(reply, pause);
        let (block, run) = enhancer.run("why is checkout failing?").await;
        assert_eq!(block, None, "{case}");
        assert!(!run.used, "{case}");
    }
}

#[test]
fn the_block_follows_the_question_in_the_persons_message() {
    let mut transcript =
        vec![Message { role: Role::User, content: vec![Content::Text("errors in cast-core?".into())] }];
    attach(&mut transcript, "[Question context…]".into());
    assert_eq!(transcript[0].content.len(), 2);
    assert_eq!(transcript[0].content[1], Content::Text("[Question context…]".into()));
}
