use super::*;
use assistant_core::mcp::McpResourcePart;
use assistant_core::turn::{ToolStatus, ToolUse};
use serde_json::json;
use slack::ChannelId;
use testkit::mcp_memory::{MemoryMcp, MemoryMcpServer, MemoryMcpSession};
use tools_registry::{ToolPolicy, ToolRegistry};

fn info(name: &str, read_only: Option<bool>) -> McpToolInfo {
    McpToolInfo {
        name: name.to_owned(),
        description: format!("{name} does things"),
        input_schema: json!({"type": "object", "properties": {"a": {"type": "number"}}}),
        read_only,
        destructive: None,
    }
}

fn servers(json: Value) -> Vec<McpServerConfig> {
    serde_json::from_value(json).unwrap()
}

fn no_env(_: &Reference) -> Option<String> {
    None
}

async fn discover_all(configs: &[McpServerConfig], connector: &MemoryMcp) -> Vec<Tool> {
    mcp_tools(configs, connector, no_env, &HashSet::new(), DISCOVERY_DEADLINE).await.unwrap()
}

fn names(tools: &[Tool]) -> Vec<String> {
    tools.iter().map(|tool| tool.spec().name.clone()).collect()
}

fn channel() -> ChannelId {
    ChannelId::new("C0OPS")
}

#[tokio::test]
async fn tools_are_namespaced_filtered_and_fit_the_models_rules() {
    let long = "a".repeat(80);
    let session = MemoryMcpSession::new(vec![
        info("get-sum", Some(true)),
        info("echo", Some(true)),
        info("weird name/../ü", Some(true)),
        info(&long, Some(true)),
        info(&format!("{long}b"), Some(true)),
        info("admin_reset", Some(false)),
    ]);
    let connector = MemoryMcp::default().with("https://mcp.example.com/mcp", MemoryMcpServer::Serves(session));
    let configs = servers(json!([{"name": "everything", "url": "https://mcp.example.com/mcp", "tools": ["*"]}]));
    let tools = discover_all(&configs, &connector).await;
    let names = names(&tools);
    assert_eq!(&names[..3], ["everything__get-sum", "everything__echo", "everything__weird_name_____"]);
    for name in &names {
        assert!(name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'), "{name}");
    }
    assert_ne!(names[3], names[4], "two long names stay two");
    assert_eq!(tools[0].spec().description, "get-sum does things");

    // `tools` filters by the server's own names.
    let configs =
        servers(json!([{"name": "everything", "url": "https://mcp.example.com/mcp", "tools": ["get-*", "echo"]}]));
    assert_eq!(discover_all(&configs, &connector).await.len(), 2);

    // A name another tool has already is never reused.
    let taken = HashSet::from(["everything__echo".to_owned()]);
    let tools = mcp_tools(&configs, &connector, no_env, &taken, DISCOVERY_DEADLINE).await.unwrap();
    assert_eq!(self::names(&tools), ["everything__get-sum", "everything__echo_2"]);
}

#[tokio::test]
async fn auto_approval_follows_read_only_hints_and_the_configuration_overrides() {
    let session = MemoryMcpSession::new(vec![
        info("read", Some(true)),
        info("write", Some(false)),
        info("unknown", None),
        McpToolInfo { destructive: Some(false), ..info("append", Some(false)) },
    ]);
    let connector = MemoryMcp::default().with("https://mcp.example.com/mcp", MemoryMcpServer::Serves(session));
    let effects = |requires_approval: Value| {
        let configs = servers(
            json!([{"name": "s", "url": "https://mcp.example.com/mcp", "requires_approval": requires_approval}]),
        );
        let connector = &connector;
        async move {
            let tools = discover_all(&configs, connector).await;
            tools.iter().map(|tool| (tool.effect(), tool.is_destructive())).collect::<Vec<_>>()
        }
    };
    use Effect::{ChangesThings, ReadOnly};
    assert_eq!(
        effects(json!("auto")).await,
        [(ReadOnly, false), (ChangesThings, true), (ChangesThings, true), (ChangesThings, false)]
    );
    assert!(effects(json!(true)).await.iter().all(|(effect, _)| *effect == ChangesThings));
    assert!(effects(json!(false)).await.iter().all(|(effect, _)| *effect == ReadOnly));
    let json = json!({"name": "s", "url": "https://x", "requires_approval": "sometimes"});
    assert!(serde_json::from_value::<McpServerConfig>(json).is_err());
}

#[tokio::test(start_paused = true)]
async fn a_server_that_fails_or_hangs_at_start_up_loses_only_its_own_tools() {
    let good = MemoryMcpSession::new(vec![info("echo", Some(true))]);
    let connector = MemoryMcp::default()
        .with("https://good.example.com/mcp", MemoryMcpServer::Serves(good))
        .with("https://refuses.example.com/mcp", MemoryMcpServer::Refuses)
        .with("https://hangs.example.com/mcp", MemoryMcpServer::Hangs);
    let configs = servers(json!([
        {"name": "hangs", "url": "https://hangs.example.com/mcp"},
        {"name": "refuses", "url": "https://refuses.example.com/mcp"},
        {"name": "down", "url": "https://down.example.com/mcp"},
        {"name": "good", "url": "https://good.example.com/mcp"}
    ]));
    let started = tokio::time::Instant::now();
    let tools = discover_all(&configs, &connector).await;
    assert_eq!(names(&tools), ["good__echo"]);
    assert_eq!(started.elapsed(), DISCOVERY_DEADLINE, "concurrent, and bounded by the deadline");
}

#[tokio::test]
async fn configuration_mistakes_are_refused_with_the_servers_name() {
    let connector = MemoryMcp::default();
    for (bad, expected) in [
        (json!([{"name": "has space", "url": "https://x/mcp"}]), "name must be"),
        (json!([{"name": "", "url": "https://x/mcp"}]), "name must be"),
        (json!([{"name": "a", "url": "ftp://x/mcp"}]), "http(s)"),
        (json!([{"name": "a", "url": "not a url"}]), "url"),
        (json!([{"name": "a", "url": "https://x/mcp", "timeout_secs": 0}]), "timeout_secs"),
        (json!([{"name": "a", "url": "https://x/mcp", "timeout_secs": 100000}]), "timeout_secs"),
        (json!([{"name": "a", "url": "https://x/mcp", "tasks": true, "task_wait_secs": 0}]), "task_wait_secs"),
        (json!([{"name": "a", "url": "https://x/mcp", "tasks": true, "task_wait_secs": 901}]), "task_wait_secs"),
        (json!([{"name": "a", "url": "https://x/mcp", "task_wait_secs": 60}]), "tasks is not"),
        (json!([{"name": "a", "url": "https://x/mcp", "approvers": []}]), "approvers"),
        (json!([{"name": "a", "url": "https://x/mcp", "headers": {"Bad Header": "x"}}]), "header"),
        (json!([{"name": "a", "url": "https://x/mcp", "headers": {"X-Key": "${env:UNSET}"}}]), "UNSET"),
        (json!([{"name": "a", "url": "https://x/mcp"}, {"name": "a", "url": "https://y/mcp"}]), "two servers"),
    ] {
        let err = mcp_tools(&servers(bad.clone()), &connector, no_env, &HashSet::new(), DISCOVERY_DEADLINE)
            .await
            .err()
            .unwrap_or_else(|| panic!("accepted: {bad}"));
        assert!(err.to_string().contains(expected), "{bad}: {err}");
    }
    assert!(serde_json::from_value::<McpServerConfig>(json!({"name": "a", "url": "https://x", "tols": []})).is_err());
}

#[tokio::test]
async fn headers_are_resolved_and_the_endpoint_never_prints_them() {
    let connector = MemoryMcp::default();
    let configs = servers(
        json!([{"name": "grafana", "url": "https://g/mcp", "headers": {"Authorization": "Bearer ${env:GRAFANA_TOKEN}", "X-Org": "${secret:grafana/org}"}}]),
    );
    let lookup = |reference: &Reference| match reference {
        Reference::Env(name) if name == "GRAFANA_TOKEN" => Some("glsa_secretvalue".to_owned()),
        Reference::Secret(name) if name == "grafana/org" => Some("org-secret-42".to_owned()),
        _ => None,
    };
    mcp_tools(&configs, &connector, lookup, &HashSet::new(), DISCOVERY_DEADLINE).await.unwrap();
    let mut endpoint = connector.connected()[0].clone();
    assert!(!format!("{endpoint:?}").contains("glsa_secretvalue"));
    endpoint.headers.sort();
    assert_eq!(
        endpoint.headers,
        [
            ("Authorization".to_owned(), "Bearer glsa_secretvalue".to_owned()),
            ("X-Org".to_owned(), "org-secret-42".to_owned())
        ]
    );
    assert_eq!(
        references(&configs[0]),
        [Reference::Env("GRAFANA_TOKEN".into()), Reference::Secret("grafana/org".into())]
    );
}

async fn registry_with(session: Arc<MemoryMcpSession>, policy: ToolPolicy) -> ToolRegistry {
    let connector = MemoryMcp::default().with("https://mcp.example.com/mcp", MemoryMcpServer::Serves(session));
    let configs = servers(json!([{"name": "srv", "url": "https://mcp.example.com/mcp", "timeout_secs": 2}]));
    ToolRegistry::new(discover_all(&configs, &connector).await, policy).unwrap()
}

fn call(name: &str, input: Value) -> ToolUse {
    ToolUse { id: "t1".into(), name: name.into(), input }
}

#[tokio::test]
async fn results_become_what_the_model_can_read() {
    let session = MemoryMcpSession::new(vec![info("tool", Some(true))]);
    let registry = registry_with(session.clone(), ToolPolicy::allow_all()).await;
    let (channel, the_call) = (channel(), call("srv__tool", json!({"a": 1})));
    let run = |answer: Result<McpCallResult, McpError>| {
        session.answers(answer);
        registry.run(&the_call, &channel)
    };
    let text = |t: &str| McpContent::Text(t.to_owned());

    let result = run(Ok(McpCallResult { content: vec![text("one"), text("two")], ..Default::default() })).await;
    assert_eq!((result.status, result.output), (ToolStatus::Success, ToolOutput::Text("one\ntwo".into())));
    assert_eq!(session.calls()[0], ("tool".to_owned(), json!({"a": 1}).as_object().unwrap().clone()));

    // Structured content, sent again as text for older clients: once.
    let structured = json!({"sum": 3});
    let result = run(Ok(McpCallResult {
        content: vec![text(&structured.to_string())],
        structured: Some(structured.clone()),
        is_error: false,
    }))
    .await;
    assert_eq!(result.output, ToolOutput::Json(structured.clone()));
    // With other content: both.
    let image = McpContent::Media { kind: "image", mime_type: "image/png".into(), bytes: 2_048 };
    let result = run(Ok(McpCallResult {
        content: vec![text("chart"), image.clone()],
        structured: Some(structured.clone()),
        is_error: false,
    }))
    .await;
    assert_eq!(
        result.output,
        ToolOutput::Json(json!({"structured": {"sum": 3}, "content": "chart\n[image: image/png, 2.0 kB (not shown)]"}))
    );

    // Media and resources are named and sized, never pasted.
    let result = run(Ok(McpCallResult {
        content: vec![
            image,
            McpContent::Resource { uri: "file:///tmp/big.log".into(), mime_type: Some("text/plain".into()), bytes: 12 },
            McpContent::Link { uri: "https://x/r/1".into(), name: "report".into(), mime_type: None },
        ],
        ..Default::default()
    }))
    .await;
    assert_eq!(
        result.output,
        ToolOutput::Text(
            "[image: image/png, 2.0 kB (not shown)]\n[resource: file:///tmp/big.log, text/plain, 12 B (not shown)]\n[link: report <https://x/r/1>]"
                .into()
        )
    );

    // isError: an error result the model can act on.
    let result =
        run(Ok(McpCallResult { content: vec![text("no such dashboard")], structured: None, is_error: true })).await;
    assert_eq!((result.status, result.output), (ToolStatus::Error, ToolOutput::Text("no such dashboard".into())));
    let result = run(Ok(McpCallResult { is_error: true, ..Default::default() })).await;
    assert_eq!(result.output, ToolOutput::Text("The tool failed without saying why.".into()));
}

#[tokio::test]
async fn a_failed_call_is_an_error_result_that_says_what_to_do() {
    let session = MemoryMcpSession::new(vec![info("tool", Some(true))]);
    let registry = registry_with(session.clone(), ToolPolicy::allow_all()).await;
    for (answer, expected) in [
        (McpError::Unauthorized { status: 401 }, "refused our credentials (HTTP 401)"),
        (McpError::Unreachable("connection refused".into()), "could not be reached: connection refused"),
        (McpError::TimedOut(Duration::from_secs(2)), "did not finish within 2 s and was cancelled"),
        (McpError::Server("-32602: unknown argument".into()), "answered with an error: -32602"),
    ] {
        session.answers(Err(answer));
        let result = registry.run(&call("srv__tool", json!({})), &channel()).await;
        assert_eq!(result.status, ToolStatus::Error);
        let ToolOutput::Text(message) = result.output else { panic!("text") };
        assert!(message.contains(expected), "{message}");
    }
    // A server whose schema says nothing still gets an object.
    let session = MemoryMcpSession::new(vec![McpToolInfo { input_schema: json!({}), ..info("tool", Some(true)) }]);
    let registry = registry_with(session.clone(), ToolPolicy::allow_all()).await;
    let result = registry.run(&call("srv__tool", json!(["not", "an", "object"])), &channel()).await;
    assert_eq!(result.output, ToolOutput::Text("The input must be a JSON object.".into()));
    assert!(session.calls().is_empty());
}

#[tokio::test]
async fn secrets_in_a_servers_answer_never_reach_the_model() {
    let session = MemoryMcpSession::new(vec![info("tool", Some(true))]);
    let registry = registry_with(session.clone(), ToolPolicy::allow_all()).await;
    let key = format!("AKIA{}", "Q7W2E5R8T1Y4U6I3");
    let structured = json!({"db": {"password": "hunter2 horse staple"}, "status": "ok"});
    session.answers(Ok(McpCallResult {
        content: vec![McpContent::Text(format!("key {key}"))],
        structured: Some(structured),
        is_error: false,
    }));
    let result = registry.run(&call("srv__tool", json!({})), &channel()).await;
    let shown = serde_json::to_string(&result.output).unwrap();
    assert!(!shown.contains(&key) && !shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("\"status\":\"ok\""), "{shown}");
}

/// A registry with the server `srv`, resources on, allowing everything.
async fn registry_with_resources(session: Arc<MemoryMcpSession>, requires_approval: Value) -> ToolRegistry {
    let connector = MemoryMcp::default().with("https://mcp.example.com/mcp", MemoryMcpServer::Serves(session));
    let configs = servers(json!([{"name": "srv", "url": "https://mcp.example.com/mcp", "timeout_secs": 2,
                                  "resources": true, "requires_approval": requires_approval}]));
    ToolRegistry::new(discover_all(&configs, &connector).await, ToolPolicy::allow_all()).unwrap()
}

fn text_part(uri: &str, text: &str) -> McpResourcePart {
    McpResourcePart::Text { uri: uri.into(), mime_type: Some("text/plain".into()), text: text.into() }
}

#[tokio::test]
async fn resources_are_read_from_their_server_and_its_links_name_the_tool_that_reads_them() {
    // GIVEN a server with resources on, and a tool of its own that takes our tool's name
    let session = MemoryMcpSession::new(vec![info("tool", Some(true)), info("read_resource", Some(false))]);
    session.serves("demo://notes/1", vec![text_part("demo://notes/1", "deploys freeze on Fridays")]);
    session.serves(
        "demo://both",
        vec![
            text_part("demo://both/a", "alpha"),
            McpResourcePart::Blob { uri: "demo://both/b".into(), mime_type: Some("image/png".into()), bytes: 4_096 },
        ],
    );
    let registry = registry_with_resources(session.clone(), json!("auto")).await;
    let advertised: Vec<String> = registry.advertised(&channel()).into_iter().map(|spec| spec.name).collect();
    assert_eq!(advertised, ["srv__read_resource", "srv__tool", "srv__read_resource_2"], "ours keeps its name");
    assert_eq!(registry.effect(&channel(), "srv__read_resource"), Some(Effect::ReadOnly));

    // WHEN the model reads a resource THEN it gets its text; several parts each under its URI, binaries sized
    let read = |uri: &str| {
        let (the_call, registry) = (call("srv__read_resource", json!({"uri": uri})), &registry);
        async move { registry.run(&the_call, &channel()).await }
    };
    let result = read("demo://notes/1").await;
    assert_eq!(
        (result.status, result.output),
        (ToolStatus::Success, ToolOutput::Text("deploys freeze on Fridays".into()))
    );
    let result = read("demo://both").await;
    assert_eq!(
        result.output,
        ToolOutput::Text(
            "--- demo://both/a (text/plain) ---\nalpha\n[binary: demo://both/b, image/png, 4.1 kB (not shown)]".into()
        )
    );

    // AND a tool result's links and embedded resources name the tool that reads them
    session.answers(Ok(McpCallResult {
        content: vec![
            McpContent::Link { uri: "demo://notes/1".into(), name: "notes".into(), mime_type: None },
            McpContent::Resource { uri: "demo://r".into(), mime_type: None, bytes: 3 },
        ],
        ..Default::default()
    }));
    let result = registry.run(&call("srv__tool", json!({})), &channel()).await;
    assert_eq!(
        result.output,
        ToolOutput::Text(
            "[link: notes <demo://notes/1>; read it with srv__read_resource]\n[resource: demo://r, 3 B (not shown; read it with srv__read_resource)]".into()
        )
    );

    // AND a server that does not trust its hints (`requires_approval: true`) has its reads approved too
    let registry = registry_with_resources(session, json!(true)).await;
    assert_eq!(registry.effect(&channel(), "srv__read_resource"), Some(Effect::ChangesThings));
}

#[tokio::test]
async fn a_hostile_uri_goes_only_to_the_server_and_what_it_answers_is_redacted_and_an_error_is_a_result() {
    let session = MemoryMcpSession::new(vec![info("tool", Some(true))]);
    let key = format!("AKIA{}", "Q7W2E5R8T1Y4U6I3");
    session.serves("demo://config", vec![text_part("demo://config", &format!("aws_access_key_id = {key}"))]);
    let registry = registry_with_resources(session.clone(), json!("auto")).await;
    let read = |input: Value| {
        let (the_call, registry) = (call("srv__read_resource", input), &registry);
        async move { registry.run(&the_call, &channel()).await }
    };

    // A secret in a resource never reaches the model.
    let result = read(json!({"uri": "demo://config"})).await;
    let shown = serde_json::to_string(&result.output).unwrap();
    assert!(result.status == ToolStatus::Success && !shown.contains(&key), "{shown}");

    // Another scheme is the server's to refuse: it is asked, and its error is a result the model reads.
    for uri in ["file:///etc/passwd", "http://169.254.169.254/latest/meta-data/"] {
        let result = read(json!({"uri": uri})).await;
        assert_eq!(result.status, ToolStatus::Error);
        let ToolOutput::Text(message) = result.output else { panic!("text") };
        assert!(message.contains("The MCP server srv answered with an error: Resource not found"), "{message}");
    }
    // What is not a URI, or too long, or has control characters, no server sees.
    let long = format!("demo://{}", "a".repeat(resources::MAX_URI_CHARS));
    for input in [json!({"uri": "no scheme here"}), json!({"uri": long}), json!({"uri": "demo://a\r\nb"}), json!({})] {
        let result = read(input.clone()).await;
        assert_eq!(result.status, ToolStatus::Error, "{input}");
    }
    assert_eq!(
        session.reads(),
        ["demo://config", "file:///etc/passwd", "http://169.254.169.254/latest/meta-data/"],
        "asked of the server only: nothing here fetches a URI"
    );
}

#[tokio::test]
async fn resources_prompts_or_tasks_from_a_server_that_acts_as_the_person_are_refused_at_configuration() {
    for field in ["resources", "prompts", "tasks"] {
        let configs = servers(json!([{"name": "gh", "url": "https://gh/mcp", field: true,
            "auth": {"oauth": {"provider": "github"}}}]));
        let err = mcp_tools(&configs, &MemoryMcp::default(), no_env, &HashSet::new(), DISCOVERY_DEADLINE).await.err();
        assert!(
            err.is_some_and(|err| err.to_string().contains("resources, prompts and tasks are not yet used")),
            "{field}"
        );
    }
}

#[tokio::test]
async fn the_channel_policy_applies_to_the_namespaced_names() {
    let session = MemoryMcpSession::new(vec![info("echo", Some(true)), info("delete", Some(false))]);
    let policy = ToolPolicy::new(vec![tools_registry::ChannelRule::everyone("C0OPS", vec!["srv__echo".into()])]);
    let registry = registry_with(session, policy).await;
    let advertised: Vec<String> = registry.advertised(&channel()).into_iter().map(|spec| spec.name).collect();
    assert_eq!(advertised, ["srv__echo"]);
    assert!(registry.approval_rule(&channel(), "srv__delete").is_none());
    assert!(registry.advertised(&ChannelId::new("C0ELSE")).is_empty());
}

#[tokio::test]
async fn a_hostile_server_cannot_flood_the_prompt() {
    let mut tools: Vec<McpToolInfo> = (0..200).map(|n| info(&format!("t{n}"), Some(true))).collect();
    tools[0].description = "x".repeat(100_000);
    tools[1].description = "   ".into();
    let connector =
        MemoryMcp::default().with("https://mcp.example.com/mcp", MemoryMcpServer::Serves(MemoryMcpSession::new(tools)));
    let configs = servers(json!([{"name": "big", "url": "https://mcp.example.com/mcp"}]));
    let tools = discover_all(&configs, &connector).await;
    assert_eq!(tools.len(), MAX_TOOLS_PER_SERVER);
    assert_eq!(tools[0].spec().description.chars().count(), MAX_DESCRIPTION_CHARS);
    assert_eq!(tools[1].spec().description, "The tool t1 of the MCP server big.");
}

mod acting_as_the_person {
    use super::*;
    use assistant_core::oauth::{AccessToken, OAuthProvider};
    use assistant_core::ports::ArtifactStore;
    use testkit::memory::MemoryArtifacts;

    const URL: &str = "https://mcp.tracker.example/mcp";

    fn config() -> Vec<McpServerConfig> {
        servers(
            json!([{"name": "tracker", "url": URL, "deny": ["delete_*"], "auth": {"oauth": {"provider": "tracker"}}}]),
        )
    }

    fn providers() -> BTreeMap<String, OAuthProvider> {
        let provider = OAuthProvider {
            name: "tracker".into(),
            authorization_endpoint: "https://id.tracker.example/auth".parse().unwrap(),
            token_endpoint: "https://id.tracker.example/token".parse().unwrap(),
            revocation_endpoint: None,
            client_id: "registered".into(),
            client_secret: None,
            scopes: Vec::new(),
            redirect_uri: "https://bot.example/oauth/callback/tracker".parse().unwrap(),
            resource: Some(URL.parse().unwrap()),
            issuer: Some("https://id.tracker.example".parse().unwrap()),
            issuer_sends_iss: true,
        };
        BTreeMap::from([("tracker".to_owned(), provider)])
    }

    async fn tools_with(
        connector: &Arc<MemoryMcp>,
        cache: &Arc<MemoryArtifacts>,
        providers: &BTreeMap<String, OAuthProvider>,
        lost: &[(String, String)],
    ) -> (Vec<Tool>, Vec<Unoffered>) {
        let connector: Arc<dyn McpConnector> = connector.clone();
        let clock = Arc::new(testkit::clock::ManualClock::at(1_700_000_000));
        person_tools(&config(), providers, lost, connector, cache.clone(), no_env, &mut HashSet::new(), clock)
            .await
            .unwrap()
    }

    /// Runs `tool` as the registry does, with `token` as the person's.
    async fn run(tool: Tool, token: Option<&str>) -> (ToolStatus, String) {
        let name = tool.spec().name.clone();
        let registry = ToolRegistry::new(vec![tool], ToolPolicy::allow_all()).unwrap();
        let credentials = match token {
            Some(token) => BTreeMap::from([("tracker".to_owned(), Ok(AccessToken::new(token)))]),
            None => BTreeMap::from([("tracker".to_owned(), Err("no sign-in".into()))]),
        };
        let the_call = call(&name, json!({}));
        let result = registry.run_all(&[&the_call], &channel(), &credentials).await.remove(0);
        (result.status, format!("{:?}", result.output))
    }

    #[tokio::test]
    async fn until_someone_connects_the_server_offers_connect_which_keeps_the_list_read_with_their_token() {
        let session = MemoryMcpSession::new(vec![info("list_issues", Some(true)), info("delete_issue", Some(false))]);
        let connector = Arc::new(MemoryMcp::default().with(URL, MemoryMcpServer::Serves(session.clone())));
        let cache = Arc::new(MemoryArtifacts::default());

        // Nobody connected yet: one tool, acting as the person, nothing asked of the server.
        let (tools, _) = tools_with(&connector, &cache, &providers(), &[]).await;
        assert_eq!(names(&tools), ["tracker__connect"]);
        assert_eq!(tools[0].provider(), Some("tracker"));
        assert!(connector.connected().is_empty(), "not listed at start-up");

        // Without the person's token it does nothing; with it, it lists and keeps.
        let mut tools = tools;
        let connect = tools.remove(0);
        let (status, refused) = run(connect, None).await;
        assert_eq!(status, ToolStatus::Error);
        assert!(refused.contains("no sign-in"), "{refused}");
        assert!(connector.connected().is_empty());
        let (tools, _) = tools_with(&connector, &cache, &providers(), &[]).await;
        let (status, connected) = run(tools.into_iter().next().unwrap(), Some("tok-alice")).await;
        assert_eq!(status, ToolStatus::Success, "{connected}");
        assert!(connected.contains("list_issues"), "{connected}");
        assert!(!connected.contains("delete_issue"), "denied tools are not named");
        let endpoint = &connector.connected()[0];
        assert!(endpoint.headers.contains(&("Authorization".to_owned(), "Bearer tok-alice".to_owned())));
        assert!(!format!("{endpoint:?}").contains("tok-alice"), "the token never prints");
        assert!(cache.get(&tool_list_key("tracker")).await.unwrap().is_some());

        // A worker started after that offers the server's own tools, as the person.
        let (tools, unoffered) = tools_with(&connector, &cache, &providers(), &[]).await;
        assert_eq!(names(&tools), ["tracker__list_issues"]);
        assert_eq!(tools[0].provider(), Some("tracker"));
        assert!(unoffered.iter().any(|u| u.name == "tracker__delete_issue"), "{unoffered:?}");
        session.answers(Ok(McpCallResult { content: vec![McpContent::Text("2 open".into())], ..Default::default() }));
        let (status, output) = run(tools.into_iter().next().unwrap(), Some("tok-alice")).await;
        assert_eq!((status, output.as_str()), (ToolStatus::Success, r#"Text("2 open")"#));
        assert_eq!(connector.connected().len(), 2, "each call in a session of its own");
    }

    #[tokio::test]
    async fn a_list_kept_for_another_url_is_not_used_and_a_server_without_its_sign_in_offers_nothing() {
        let connector = Arc::new(MemoryMcp::default());
        let cache = Arc::new(MemoryArtifacts::default());
        let other =
            json!({"url": "https://elsewhere.example/mcp", "listed_at": 1, "tools": [info("list_issues", Some(true))]});
        cache.put(&tool_list_key("tracker"), other.to_string().into_bytes(), "application/json").await.unwrap();
        let (tools, _) = tools_with(&connector, &cache, &providers(), &[]).await;
        assert_eq!(names(&tools), ["tracker__connect"]);

        let lost = [("tracker".to_owned(), "discovery: the provider is unavailable".to_owned())];
        let (tools, unoffered) = tools_with(&connector, &cache, &BTreeMap::new(), &lost).await;
        assert!(tools.is_empty());
        assert_eq!(unoffered[0].name, "tracker__*");
        assert!(unoffered[0].reason.contains("unavailable"), "{unoffered:?}");
    }
}

pub(super) mod kept_lists {
    use super::*;
    use assistant_core::ports::ArtifactStore;
    use testkit::clock::ManualClock;
    use testkit::memory::MemoryArtifacts;
    use tools_registry::background::Background;

    const URL: &str = "https://mcp.example.com/mcp";
    const NOW: i64 = 1_763_800_000;

    pub(super) struct Start {
        connector: Arc<MemoryMcp>,
        cache: Arc<MemoryArtifacts>,
        /// What the last start's tools mark when a server's list changes.
        pub(super) changed: std::sync::Mutex<tools_registry::changes::ToolsChanged>,
        /// The last start's suggested prompts.
        pub(super) suggested: std::sync::Mutex<Vec<assistant_core::ports::SuggestedPrompt>>,
    }

    impl Start {
        fn new(server: MemoryMcpServer) -> Self {
            Self {
                connector: Arc::new(MemoryMcp::default().with(URL, server)),
                cache: Arc::default(),
                changed: Default::default(),
                suggested: Default::default(),
            }
        }

        /// One worker's start at `now`: its tools, once the start's
        /// background work is done.
        pub(super) async fn tools(&self, configs: &[McpServerConfig], now: i64) -> Vec<Tool> {
            let background = Background::default();
            let kept = KeptLists {
                cache: self.cache.clone(),
                clock: Arc::new(ManualClock::at(now)),
                background: &background,
                changed: {
                    let fresh = tools_registry::changes::ToolsChanged::default();
                    *self.changed.lock().unwrap() = fresh.clone();
                    fresh
                },
            };
            let (tools, _, suggested) = kept_or_discovered_tools(
                configs,
                self.connector.clone(),
                no_env,
                &HashSet::new(),
                DISCOVERY_DEADLINE,
                kept,
            )
            .await
            .unwrap();
            background.settle(Duration::from_secs(10)).await;
            *self.suggested.lock().unwrap() = suggested;
            tools
        }

        fn connects(&self) -> usize {
            self.connector.connected().len()
        }

        async fn kept(&self) -> Option<kept::ToolList> {
            let bytes = self.cache.get(&tool_list_key("srv")).await.unwrap()?;
            Some(serde_json::from_slice(&bytes).unwrap())
        }
    }

    fn config() -> Vec<McpServerConfig> {
        servers(json!([{"name": "srv", "url": URL, "headers": {"X-Team": "sre"}}]))
    }

    pub(super) fn start_serving(session: Arc<MemoryMcpSession>) -> Start {
        Start::new(MemoryMcpServer::Serves(session))
    }

    #[tokio::test]
    async fn a_list_is_kept_and_the_next_start_offers_it_without_asking_the_server() {
        let session = MemoryMcpSession::new(vec![info("get-sum", Some(true)), info("echo", Some(true))]);
        let start = Start::new(MemoryMcpServer::Serves(session.clone()));

        let first = start.tools(&config(), NOW).await;
        assert_eq!(names(&first), ["srv__get-sum", "srv__echo"]);
        assert_eq!(start.connects(), 1, "no list kept yet: asked at start-up");
        let kept = start.kept().await.expect("kept for the next start");
        assert_eq!((kept.url.as_str(), kept.listed_at, kept.tools.len()), (URL, NOW, 2));

        let second = start.tools(&config(), NOW + 60).await;
        assert_eq!(names(&second), ["srv__get-sum", "srv__echo"]);
        assert_eq!(start.connects(), 1, "from the kept list: the server is not asked at start-up");

        // Its session opens at the first call, once.
        let registry = ToolRegistry::new(second, ToolPolicy::allow_all()).unwrap();
        for _ in 0..2 {
            session.answers(Ok(McpCallResult { content: vec![McpContent::Text("5".into())], ..Default::default() }));
            let result = registry.run(&call("srv__get-sum", json!({"a": 2})), &channel()).await;
            assert_eq!((result.status, result.output), (ToolStatus::Success, ToolOutput::Text("5".into())));
        }
        assert_eq!(start.connects(), 2);
    }

    #[tokio::test]
    async fn a_list_older_than_five_minutes_is_listed_again_beside_the_start_and_the_change_picked_up() {
        let session = MemoryMcpSession::new(vec![info("get-sum", Some(true)), info("echo", Some(true))]);
        let start = Start::new(MemoryMcpServer::Serves(session));
        let old = kept::ToolList {
            url: URL.into(),
            config: kept::fingerprint(&config()[0]),
            listed_at: NOW - REFRESH_AFTER_SECS - 1,
            tools: vec![info("get-sum", Some(true))],
            prompts: Vec::new(),
        };
        kept::keep(start.cache.as_ref(), "srv", &old).await;

        // Offered from the old list at once; listed again in the background.
        assert_eq!(names(&start.tools(&config(), NOW).await), ["srv__get-sum"]);
        assert_eq!(start.connects(), 1, "the refresh");
        let kept = start.kept().await.unwrap();
        assert_eq!((kept.listed_at, kept.tools.len()), (NOW, 2));

        // The next worker to assemble offers the server's tools as they are now.
        assert_eq!(names(&start.tools(&config(), NOW + 1).await), ["srv__get-sum", "srv__echo"]);
        assert_eq!(start.connects(), 1, "fresh: not listed again");
    }

    #[tokio::test]
    async fn another_configuration_a_broken_list_or_another_servers_list_is_not_used() {
        let session = MemoryMcpSession::new(vec![info("echo", Some(true))]);
        let start = Start::new(MemoryMcpServer::Serves(session));
        let listed = |config: String, url: &str| kept::ToolList {
            url: url.into(),
            config,
            listed_at: NOW,
            tools: vec![info("drop_tables", Some(true))],
            prompts: Vec::new(),
        };
        let changed = servers(json!([{"name": "srv", "url": URL, "headers": {"X-Team": "payments"}}]));
        for (bytes, what) in [
            (serde_json::to_vec(&listed(kept::fingerprint(&changed[0]), URL)).unwrap(), "headers changed"),
            (serde_json::to_vec(&listed(kept::fingerprint(&config()[0]), "https://evil.example/mcp")).unwrap(), "url"),
            (serde_json::to_vec(&listed(String::new(), URL)).unwrap(), "a person's list"),
            (b"{not json".to_vec(), "garbage"),
        ] {
            start.cache.put(&tool_list_key("srv"), bytes, "application/json").await.unwrap();
            let before = start.connects();
            assert_eq!(names(&start.tools(&config(), NOW).await), ["srv__echo"], "{what}");
            assert_eq!(start.connects(), before + 1, "{what}: listed live");
        }
    }

    #[tokio::test]
    async fn a_server_down_keeps_its_kept_tools_whose_calls_say_why_and_its_list_is_kept_as_it_was() {
        let start = Start::new(MemoryMcpServer::Refuses);
        let old = kept::ToolList {
            url: URL.into(),
            config: kept::fingerprint(&config()[0]),
            listed_at: NOW - 3_600,
            tools: vec![info("get-sum", Some(true))],
            prompts: Vec::new(),
        };
        kept::keep(start.cache.as_ref(), "srv", &old).await;

        let tools = start.tools(&config(), NOW).await;
        assert_eq!(names(&tools), ["srv__get-sum"]);
        assert_eq!(start.kept().await.unwrap(), old, "the failed refresh kept nothing new");
        let registry = ToolRegistry::new(tools, ToolPolicy::allow_all()).unwrap();
        let result = registry.run(&call("srv__get-sum", json!({})), &channel()).await;
        assert_eq!(result.status, ToolStatus::Error);
        let ToolOutput::Text(message) = result.output else { panic!("text") };
        assert!(message.contains("refused our credentials (HTTP 401)"), "{message}");
    }
}

mod list_changes {
    use super::*;

    #[tokio::test]
    async fn a_server_that_changes_its_tools_mid_turn_has_removed_ones_refused_and_the_next_start_offers_the_new_ones()
    {
        // GIVEN a worker started with a server's kept list: a tool that
        // stays, one about to go, one about to stop saying it only reads
        let session =
            MemoryMcpSession::new(vec![info("stays", Some(true)), info("goes", Some(true)), info("flips", Some(true))]);
        let start = super::kept_lists::start_serving(session.clone());
        let configs = servers(json!([{"name": "srv", "url": "https://mcp.example.com/mcp"}]));
        start.tools(&configs, 1_763_800_000).await;
        let tools = start.tools(&configs, 1_763_800_060).await;
        let changed = start.changed.lock().unwrap().clone();
        let registry = ToolRegistry::new(tools, ToolPolicy::allow_all()).unwrap().watching(changed.clone());
        assert!(!registry.changed().is_marked());

        // WHEN the server changes its tools (and says so) during the turn
        session.change_tools(vec![info("stays", Some(true)), info("flips", Some(false)), info("added", None)]);
        session.answers(Ok(McpCallResult { content: vec![McpContent::Text("ok".into())], ..Default::default() }));
        let result = registry.run(&call("srv__stays", json!({})), &channel()).await;
        assert_eq!(result.status, ToolStatus::Success);

        // THEN a removed tool called afterwards is an error result that says why, and never reaches the server
        let result = registry.run(&call("srv__goes", json!({})), &channel()).await;
        assert_eq!(result.status, ToolStatus::Error);
        let ToolOutput::Text(message) = result.output else { panic!("text") };
        assert!(message.contains("no longer offers the tool goes"), "{message}");
        // AND a tool the server no longer calls read-only does not run without approval
        let result = registry.run(&call("srv__flips", json!({})), &channel()).await;
        let ToolOutput::Text(message) = result.output else { panic!("text") };
        assert!(result.status == ToolStatus::Error && message.contains("needs a person's approval"), "{message}");
        let called: Vec<String> = session.calls().into_iter().map(|(name, _)| name).collect();
        assert_eq!(called, ["stays"]);

        // AND the new list is kept and the worker told, so the next start
        // offers it, the new tool under the same rules (it waits for approval)
        assert!(registry.changed().is_marked());
        let next = start.tools(&configs, 1_763_800_070).await;
        let effects: Vec<(String, Effect)> =
            next.iter().map(|tool| (tool.spec().name.clone(), tool.effect())).collect();
        assert_eq!(
            effects,
            [
                ("srv__stays".to_owned(), Effect::ReadOnly),
                ("srv__flips".to_owned(), Effect::ChangesThings),
                ("srv__added".to_owned(), Effect::ChangesThings)
            ]
        );
    }
}

mod server_prompts {
    use super::*;
    use assistant_core::mcp::McpPromptInfo;
    use assistant_core::ports::SuggestedPrompt;

    fn prompt(name: &str, title: Option<&str>, description: Option<&str>, needs_arguments: bool) -> McpPromptInfo {
        McpPromptInfo {
            name: name.into(),
            title: title.map(Into::into),
            description: description.map(Into::into),
            needs_arguments,
        }
    }

    #[tokio::test]
    async fn a_servers_prompts_are_suggested_bounded_redacted_and_kept_with_its_tools() {
        // GIVEN a hostile server's prompts: one needs an argument, one
        // carries a key, one a title far too long over several lines, and
        // more than Slack shows
        let key = format!("AKIA{}", "P4S8D2F6G1H3J5K7");
        let session = MemoryMcpSession::new(vec![info("tool", Some(true))]);
        session.offers_prompts(vec![
            prompt("deploys", Some("Deploys today"), Some("What shipped today?"), false),
            prompt("incident", Some("Open incident"), Some("Summarize incident {id}"), true),
            prompt("creds", Some("Credentials"), Some(&format!("Why does key {key} fail?")), false),
            prompt("long", Some(&format!("A\n{}", "very ".repeat(40))), Some(&"x".repeat(5_000)), false),
            prompt("bare", None, None, false),
            prompt("fifth", Some("One too many"), None, false),
        ]);
        let start = super::kept_lists::start_serving(session);
        let configs = servers(json!([{"name": "srv", "url": "https://mcp.example.com/mcp", "prompts": true}]));

        // WHEN a worker starts (asking the server), and another (from the kept list)
        start.tools(&configs, 1_763_800_000).await;
        let first = start.suggested.lock().unwrap().clone();
        start.tools(&configs, 1_763_800_060).await;
        let second = start.suggested.lock().unwrap().clone();

        // THEN at most four, none needing an argument, redacted, within Slack's bounds
        assert_eq!(first, second, "kept with the tools");
        let titles: Vec<&str> = first.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(titles.len(), assistant_core::ports::MAX_SUGGESTED_PROMPTS);
        assert_eq!(titles[..2], ["Deploys today", "Credentials"]);
        assert_eq!(titles[3], "bare");
        assert_eq!(first[0].message, "What shipped today?");
        assert_eq!(first[3].message, "bare", "no description: its title is sent");
        assert!(!first[1].message.contains(&key), "{}", first[1].message);
        assert!(first[2].title.chars().count() <= 75 && !first[2].title.contains('\n'), "{:?}", first[2].title);
        assert_eq!(first[2].message.chars().count(), 2_000);

        // AND the servers' come first, then the configured ones, four in all
        let configured = vec![SuggestedPrompt { title: "Mine".into(), message: "Mine?".into() }];
        let two = prompts::with_configured(first[..2].to_vec(), &configured);
        assert_eq!(two.iter().map(|p| p.title.as_str()).collect::<Vec<_>>(), ["Deploys today", "Credentials", "Mine"]);
        assert_eq!(prompts::with_configured(first, &configured).len(), 4);

        // AND a server without "prompts": true suggests nothing
        let off = servers(json!([{"name": "srv", "url": "https://mcp.example.com/mcp"}]));
        start.tools(&off, 1_763_800_120).await;
        assert!(start.suggested.lock().unwrap().is_empty());
    }
}
