use super::*;
use assistant_core::TurnId;
use assistant_core::incidents::{AlertRoute, Loudness, sources};
use assistant_core::turn::{ActionRecord, Message, ToolResult, ToolUse};
use testkit::clock::ManualClock;
use testkit::fixtures::alerts::*;
use testkit::memory::{MemoryCanvases, MemoryRecords};
use tools_registry::{Asker, ToolPolicy, ToolRegistry};

struct World {
    registry: ToolRegistry,
    canvases: Arc<MemoryCanvases>,
    records: Arc<MemoryRecords>,
    thread: ThreadRef,
}

const NOW: i64 = ALERTS_NOW + 3600;

async fn world() -> World {
    let records = Arc::new(MemoryRecords::default());
    let as_records: Arc<dyn VersionedRecords> = records.clone();
    let tables = testkit::memory::tables_on(records.clone());
    let turns: Arc<dyn TurnStore> = Arc::new(tables.turns.clone());
    let canvases = Arc::new(MemoryCanvases::default());
    let incidents = Incidents::new(as_records.clone());
    let memory = ChannelMemory::new(as_records.clone(), assistant_core::memory::DEFAULT_RETENTION_SECS);
    let thread = ThreadRef {
        team: slack::TeamId::new("T0LAN2Q65"),
        channel: slack::ChannelId::new("C0ONCALL01"),
        thread_ts: slack::Ts::new("1795640300.000100"),
    };

    // GIVEN an incident whose thread this is: fired, investigated, resolved
    let notice = sources::alertmanager(ALERTMANAGER_FIRING.as_bytes(), ALERTS_NOW).unwrap().remove(0);
    let route = AlertRoute { channel: thread.channel.clone(), prompt_key: None };
    let mut record = incidents.load(&notice).await.unwrap();
    record.apply(&notice, &route, &thread.team, ALERTS_NOW, Some(Loudness::Investigate));
    let resolved = sources::alertmanager(ALERTMANAGER_RESOLVED.as_bytes(), ALERTS_NOW + 1200).unwrap().remove(0);
    record.apply(&resolved, &route, &thread.team, ALERTS_NOW + 1200, None);
    let root = record.incident.as_mut().unwrap().post_mut("root").unwrap();
    root.state = assistant_core::incidents::PostState::Posted { ts: thread.thread_ts.clone() };
    incidents.save(&notice, &mut record, ALERTS_NOW).await.unwrap();
    incidents.point_thread(&notice, &thread, ALERTS_NOW).await.unwrap();

    // and a person's turn in it that restarted the service, approved
    let event = slack::EventId::new("Ev0RESTART");
    let mut turn = testkit::store_contract::new_turn("Ev0RESTART");
    turn.id = TurnId::for_event(&thread, &event);
    turn.thread = thread.clone();
    turn.transcript = vec![
        Message::user_text("restart checkout-api"),
        Message {
            role: assistant_core::turn::Role::Assistant,
            content: vec![Content::ToolUse(ToolUse {
                id: "tooluse_restart".into(),
                name: "restart_service".into(),
                input: json!({"service": "checkout-api"}),
            })],
        },
        Message {
            role: assistant_core::turn::Role::User,
            content: vec![Content::ToolResult(ToolResult {
                tool_use_id: "tooluse_restart".into(),
                status: ToolStatus::Success,
                output: ToolOutput::Text("restarted".into()),
            })],
        },
    ];
    turn.actions = vec![ActionRecord {
        tool_use_id: "tooluse_restart".into(),
        tool: "restart_service".into(),
        approved_by: slack::UserId::new("U0ONCALL"),
        at: ALERTS_NOW + 600,
        grant: None,
        gave: None,
        outcome_unknown: false,
    }];
    let mut stored = turn.clone();
    turns.create(&mut stored).await.unwrap();
    let remembered = assistant_core::memory::Memory {
        turn_id: turn.id.clone(),
        thread_ts: thread.thread_ts.clone(),
        settled_at: ALERTS_NOW + 660,
        question: "restart checkout-api".into(),
        summary: "Restarted.".into(),
        tools: vec!["restart_service".into()],
        status: assistant_core::turn::TurnStatus::Answered,
        rating: None,
    };
    memory.remember(&thread.team, &thread.channel, &remembered).await.unwrap();

    let ports = PostmortemPorts {
        memory,
        incidents,
        turns,
        records: as_records,
        canvases: canvases.clone(),
        clock: Arc::new(ManualClock::at(NOW)),
    };
    let registry = ToolRegistry::new(vec![write_postmortem(ports)], ToolPolicy::allow_all()).unwrap();
    World { registry, canvases, records, thread }
}

async fn write(world: &World, input: Value) -> (ToolStatus, String) {
    let asker = Asker {
        channel: world.thread.channel.clone(),
        user: Some(slack::UserId::new("U0ONCALL")),
        groups: Vec::new(),
        turn: Some(TurnId::for_event(&world.thread, &slack::EventId::new("Ev0POSTMORTEM"))),
        thread: Some(world.thread.clone()),
        membership: slack::Membership::Home,
    };
    let call = ToolUse { id: "tooluse_pm".into(), name: WRITE_POSTMORTEM.into(), input };
    let result = world.registry.run(&call, &asker).await;
    let ToolOutput::Text(text) = result.output else { panic!("text") };
    (result.status, text)
}

fn input(impact: &str) -> Value {
    json!({
        "title": "checkout-api 5xx after the 20:55 deploy",
        "summary": "A bad deploy exhausted the database pool.",
        "impact": impact,
        "open_questions": ["Why did the canary not catch it?"],
    })
}

#[tokio::test]
async fn a_postmortem_canvas_holds_the_records_timeline_and_actions_and_its_link_comes_back() {
    let world = world().await;
    let (status, text) = write(&world, input("5% of checkouts failed for 22 minutes.")).await;
    assert_eq!(status, ToolStatus::Success, "{text}");
    let made = world.canvases.canvases();
    assert_eq!(made.len(), 1);
    let canvas = &made[0];
    assert!(text.contains(&canvas.url), "{text}");
    assert_eq!(canvas.channel.as_str(), "C0ONCALL01");
    assert_eq!(canvas.title, "checkout-api 5xx after the 20:55 deploy");
    let body = &canvas.markdown;
    for expected in [
        "## Impact\n\n5% of checkouts failed for 22 minutes.",
        "2026-11-25T20:58:00Z Alertmanager alert fired: checkout-api 5xx rate above 5%",
        "2026-11-25T21:10:00Z `restart_service`, approved by ![](@U0ONCALL): succeeded",
        "2026-11-25T21:11:00Z Asked: \"restart checkout-api\" (answered)",
        "2026-11-25T21:20:00Z Resolved",
        "## Open questions\n\n- Why did the canary not catch it?",
        "[The alert at its source](http://prometheus.internal:9090/",
    ] {
        assert!(body.contains(expected), "{expected:?} in\n{body}");
    }
}

#[tokio::test]
async fn asking_again_rewrites_the_same_canvas_and_secrets_never_reach_it() {
    let world = world().await;
    write(&world, input("first draft")).await;
    let token = format!("xoxb-{}-{}-{}", "2024061715", "7342811937", "q8Xv2LmN4pR7sT1wY9zK3bC6");
    let (status, text) = write(&world, input(&format!("second draft; the leaked token was {token}"))).await;
    assert_eq!(status, ToolStatus::Success, "{text}");
    let made = world.canvases.canvases();
    assert_eq!(made.len(), 1, "one canvas per thread");
    assert!(made[0].markdown.contains("second draft") && !made[0].markdown.contains(&token), "{}", made[0].markdown);
    assert!(text.contains("rewritten"), "{text}");
}

#[tokio::test]
async fn a_create_whose_answer_was_lost_is_owned_up_to_on_the_next_try() {
    let world = world().await;
    world.canvases.lose_next_answer();
    let (status, text) = write(&world, input("x")).await;
    assert_eq!(status, ToolStatus::Error);
    assert!(text.contains("may or may not exist"), "{text}");
    let (status, text) = write(&world, input("x")).await;
    assert_eq!(status, ToolStatus::Success, "{text}");
    assert!(text.contains("An earlier attempt may have made one too"), "{text}");
    assert_eq!(world.canvases.canvases().len(), 2, "Slack takes no idempotency key: said, not hidden");
    let _ = &world.records;
}
