//! The turn store on DynamoDB's versioned records, through the real SDK
//! against the local AWS emulator, keeps the same contract as on memory
//! (`testkit::store_contract`): create once, optimistic locking, item limit,
//! a write whose answer was lost known as its writer's own;
//! and so does the responder's delivery log beside it.

use adapters_aws::dynamodb::DynamoRecords;
use assistant_core::store::RecordTurns;
use testkit::sign_in::{BROWSER, ComeBack};
use testkit::store_contract;
use tests::fault_proxy::{Fault, FaultProxy, LOST_ANSWERS, Plan, Upstream};
use tests::{Stack, emulator_config};

/// The turns table's records through `proxy`, with `attempts` SDK attempts per call.
async fn records_through(proxy: &FaultProxy, attempts: u32, table: &str) -> DynamoRecords {
    let aws = tests::config_through(proxy.url(), attempts, adapters_aws::config::worker_timeouts()).await;
    DynamoRecords::new(aws_sdk_dynamodb::Client::new(&aws), table)
}

async fn store() -> (Stack, RecordTurns) {
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    let store = stack.turns();
    (stack, store)
}

/// The emulator's resources, and a proxy in front of it that loses the
/// answers it is told to.
async fn behind_a_lossy_proxy() -> (Stack, FaultProxy) {
    let (stack, _) = store().await;
    let endpoint = tests::env_from_test_command("AWS_ENDPOINT_URL");
    (stack, FaultProxy::start(Upstream::Aws, &endpoint, Plan::none()).await)
}

/// Every scripted fault was injected: `times` of each kind.
fn each_fault_injected(proxy: &FaultProxy, times: u32) {
    let injected = proxy.injected_by_kind();
    assert_eq!(
        (injected.get(&Fault::AppliedThenServerError), injected.get(&Fault::AppliedThenReset)),
        (Some(&times), Some(&times)),
        "every scripted fault was injected: {injected:?}"
    );
}

#[tokio::test]
async fn a_turn_is_created_once_and_a_redelivery_gets_the_stored_one() {
    let (_stack, store) = store().await;
    store_contract::create_is_once(&store, "Ev0CREATE1").await;
}

#[tokio::test]
async fn a_stale_writer_loses_and_never_overwrites() {
    let (_stack, store) = store().await;
    store_contract::stale_writer_loses(&store, "Ev0STALE01").await;
}

#[tokio::test]
async fn missing_turns_load_as_none_and_cannot_be_saved() {
    let (_stack, store) = store().await;
    store_contract::missing_turns(&store, "Ev0MISSING").await;
}

#[tokio::test]
async fn saves_write_what_they_added_and_earlier_changes_are_kept() {
    let (_stack, store) = store().await;
    store_contract::saves_write_what_they_added(&store, "Ev0LINEAR1").await;
    store_contract::earlier_messages_changed_are_saved(&store, "Ev0REWRITE").await;
}

#[tokio::test]
async fn a_turn_stored_whole_before_parts_still_loads() {
    let (stack, store) = store().await;
    let records = DynamoRecords::new(stack.dynamodb.clone(), &stack.table);
    store_contract::turns_stored_whole_still_load(&records, &store, "Ev0WHOLE01").await;
}

#[tokio::test]
async fn state_over_the_item_limit_is_refused_before_dynamodb_sees_it() {
    let (_stack, store) = store().await;
    store_contract::oversized_state_is_refused(&store, "Ev0LARGE01").await;
}

#[tokio::test]
async fn a_put_applied_with_its_answer_lost_is_the_writers_own() {
    // GIVEN a proxy between the store and the emulator that loses answers
    // to puts the emulator applied
    let (stack, proxy) = behind_a_lossy_proxy().await;
    // WHEN the SDK retries once (its retry meets the write its first
    // attempt applied), or not at all (the store reads to find out)
    for (attempts, fault) in LOST_ANSWERS {
        let store = RecordTurns::new(std::sync::Arc::new(records_through(&proxy, attempts, &stack.table).await));
        // The head's put: a part's is a plain put, its retry idempotent.
        let lose = || proxy.script_when("DynamoDB_20120810.PutItem", r#""sk":{"S":"STATE"}"#, fault);
        // THEN each write is its writer's own, and another's still conflicts
        store_contract::lost_answers_are_the_writers_own(&store, &format!("Ev0LOST0{attempts}"), &lose).await;
        store_contract::another_writers_save_is_still_a_conflict(&store, &format!("Ev0LOSE0{attempts}"), &lose).await;
    }
    each_fault_injected(&proxy, 3);
}

#[tokio::test]
async fn delivery_records_are_versioned_beside_the_turn() {
    let (stack, _store) = store().await;
    let log = stack.deliveries();
    store_contract::delivery_records_are_versioned(&log, "Ev0DELIVER").await;
}

#[tokio::test]
async fn the_item_keeps_version_and_ttl_beside_the_state() {
    let (stack, store) = store().await;
    let mut turn = store_contract::new_turn("Ev0ITEM001");
    assistant_core::ports::TurnStore::create(&store, &mut turn).await.unwrap();
    let item = stack
        .dynamodb
        .get_item()
        .table_name(&stack.table)
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(format!("TURN#{}", turn.id)))
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S("STATE".into()))
        .send()
        .await
        .unwrap()
        .item
        .expect("stored item");
    assert_eq!(item["version"].as_n().unwrap(), "1");
    let expires: i64 = item["expires_at"].as_n().unwrap().parse().unwrap();
    assert_eq!(expires, turn.updated_at + assistant_core::store::TURN_TTL_SECS);
    assert!(!item["state"].as_s().unwrap().contains("\"version\""), "the version lives beside the state");
}

#[tokio::test]
async fn a_thread_grant_or_revoke_whose_answer_was_lost_is_written_once_and_the_retry_finds_it() {
    use assistant_core::grants::{Revoked, ThreadGrant, ThreadGrants};
    let (stack, proxy) = behind_a_lossy_proxy().await;
    for (attempts, fault) in LOST_ANSWERS {
        let grants = ThreadGrants::new(std::sync::Arc::new(records_through(&proxy, attempts, &stack.table).await));
        let thread = assistant_core::ThreadRef {
            team: slack::TeamId::new("T1"),
            channel: slack::ChannelId::new(format!("C0GRANT{attempts}")),
            thread_ts: slack::Ts::new("1763800000.000100"),
        };
        let lead = slack::UserId::new("U0LEAD");
        let asker = slack::UserId::new("U0ASKER");
        let grant = ThreadGrant {
            scope: "deploys__*".into(),
            for_user: Some(asker.clone()),
            granted_by: lead.clone(),
            turn_id: assistant_core::TurnId::new("T1-Ev1"),
            granted_at: 1_000,
            until: 4_600,
            revoked: None,
        };
        let lose = || proxy.script_when("DynamoDB_20120810.PutItem", r#""sk":{"S":"GRANT#deploys__*#U0ASKER"}"#, fault);

        // The grant: the worker's error sends the click back; its retry writes the same item.
        lose();
        if grants.put(&thread, &grant).await.is_err() {
            grants.put(&thread, &grant).await.expect("the redelivered click's write");
        }
        assert_eq!(grants.all(&thread).await.unwrap(), std::slice::from_ref(&grant), "one grant, as written");
        assert!(grants.covering(&thread, "deploys__rollback", &asker, 2_000).await.unwrap().is_some());

        // The revoke: its retry finds its own revoke and returns it, so the thread is still told.
        lose();
        // As the worker does: find what the click revokes, then mark it.
        let revoke = || async {
            let found = grants.revocable(&thread, "deploys__*", Some(&asker), &lead, 2_000).await?;
            match found {
                Some(grant) => grants.revoke(&thread, grant, &lead, 2_000).await.map(Some),
                None => Ok(None),
            }
        };
        let revoked = match revoke().await {
            Ok(revoked) => revoked,
            Err(_) => revoke().await.expect("the retry"),
        };
        let expected = ThreadGrant { revoked: Some(Revoked { by: lead.clone(), at: 2_000 }), ..grant.clone() };
        assert_eq!(revoked.as_ref(), Some(&expected));
        assert_eq!(grants.all(&thread).await.unwrap(), [expected]);
        assert!(grants.covering(&thread, "deploys__rollback", &asker, 2_001).await.unwrap().is_none(), "revoked");
        let other = slack::UserId::new("U0OTHER");
        let second = grants.revocable(&thread, "deploys__*", Some(&asker), &other, 2_100).await.unwrap();
        assert_eq!(second, None, "no second revoke");
    }
    each_fault_injected(&proxy, 2);
}

#[tokio::test]
async fn a_sign_ins_writes_whose_answer_was_lost_are_the_writers_own_on_retry() {
    use assistant_core::oauth::{ConnectStates, ConnectionKey, SealedVault, StateRefused, TokenVault, Tokens};
    let (stack, proxy) = behind_a_lossy_proxy().await;
    let thread = assistant_core::ThreadRef {
        team: slack::TeamId::new("T1"),
        channel: slack::ChannelId::new("C0SIGNIN"),
        thread_ts: slack::Ts::new("1763800000.000100"),
    };
    let (alice, bob) = (slack::UserId::new("U0ALICE"), slack::UserId::new("U0BOB"));
    let turn = assistant_core::TurnId::new("T1-Ev1");
    for (attempts, fault) in LOST_ANSWERS {
        let records = std::sync::Arc::new(records_through(&proxy, attempts, &stack.table).await);
        let states = ConnectStates::new(records.clone());
        let lose = || proxy.script_when("DynamoDB_20120810.PutItem", r#""sk":{"S":"STATE"}"#, fault);

        // The person's click arming it, their browser's binding, the
        // callback's take: each lost, then (the SDK's retry, a redelivered
        // click, the person's reload after a 503) its own write again, the
        // code kept once. (A put whose answer is lost is resolved by
        // reading it back: see `store::put_versioned`.)
        let (state, _) =
            states.open(&thread, &alice, &turn, &testkit::sign_in::provider("tracker"), 1_000).await.unwrap();
        lose();
        let armed = match states.arm(&state, 1_000).await {
            Ok(armed) => armed,
            Err(_) => states.arm(&state, 1_000).await.expect("the redelivered click"),
        };
        assert!(armed);
        lose();
        let bound = match states.bind_browser(&state, BROWSER, 1_000, 1_001).await {
            Err(StateRefused::Store(_)) => states.bind_browser(&state, BROWSER, 1_000, 1_001).await,
            other => other,
        };
        assert_eq!(bound.expect("a lost answer is not a refusal").browser.as_deref(), Some(BROWSER));
        assert_eq!(
            states.bind_browser(&state, "another", 1_001, 1_001).await.map(|_| ()),
            Err(StateRefused::OtherBrowser),
            "and no one else's"
        );
        lose();
        let back =
            assistant_core::oauth::CallbackParams { code: "code-1", provider: "tracker", iss: None, browser: BROWSER };
        let taken = match states.take(&state, &back, 1_001).await {
            Ok(taken) => taken,
            Err(StateRefused::Store(_)) => states.take(&state, &back, 1_002).await.expect("the reload"),
            Err(other) => panic!("a lost answer is not a refusal: {other}"),
        };
        assert_eq!(taken.code.as_deref(), Some("code-1"));
        assert_eq!(states.come_back(&state, "code-2", 1_003).await.map(|_| ()), Err(StateRefused::Replayed));

        // How the worker's exchange ended: lost, then the redelivery's write; the first stays.
        let connected = assistant_core::oauth::SignInOutcome::Connected { account: Some("alice".into()) };
        proxy.script_when("DynamoDB_20120810.PutItem", r#""sk":{"S":"OUTCOME"}"#, fault);
        if states.record_outcome(&state, &connected, 1_600).await.is_err() {
            states.record_outcome(&state, &connected, 1_600).await.expect("the redelivery");
        }
        let refused = assistant_core::oauth::SignInOutcome::Refused { reason: "late".into() };
        states.record_outcome(&state, &refused, 1_600).await.unwrap();
        assert_eq!(states.outcome(&state).await.unwrap(), Some(connected));

        // Someone else's click: burned once, and the retry knows it burned it.
        let (state, _) =
            states.open(&thread, &alice, &turn, &testkit::sign_in::provider("tracker"), 1_000).await.unwrap();
        lose();
        let burned = match states.burn(&state, &bob).await {
            Ok(burned) => burned,
            Err(_) => states.burn(&state, &bob).await.expect("the redelivered click"),
        };
        assert_eq!(burned.and_then(|record| record.burned_by), Some(bob.clone()));
        assert_eq!(states.come_back(&state, "code-3", 1_004).await.map(|_| ()), Err(StateRefused::Replayed));

        // The tokens: a plain put, its retry the same item.
        let vault = SealedVault::new(records.clone(), std::sync::Arc::new(testkit::memory::MemorySealer));
        let key = ConnectionKey { team: thread.team.clone(), user: alice.clone(), provider: format!("p{attempts}") };
        let tokens = Tokens {
            access_token: "tok".into(),
            refresh_token: None,
            expires_at: Some(5_000),
            scope: None,
            subject: Some("alice".into()),
            account: None,
        };
        proxy.script_when("DynamoDB_20120810.PutItem", r#""sk":{"S":"TOKENS#"#, fault);
        if vault.put(&key, &tokens, 1_000).await.is_err() {
            vault.put(&key, &tokens, 1_000).await.expect("the redelivered sign-in's write");
        }
        assert_eq!(vault.get(&key).await.unwrap(), Some(tokens));
        let connections = vault.connections(&key.team, &key.user).await.unwrap();
        assert_eq!(connections.iter().filter(|found| found.provider == key.provider).count(), 1, "one item");
    }
    // Arm, bind, take, outcome, burn, tokens: each lost once per kind of fault.
    each_fault_injected(&proxy, 6);
}

#[tokio::test]
async fn a_registered_client_id_or_published_channels_whose_answer_was_lost_are_kept_once() {
    use assistant_core::oauth::ConnectStates;
    use assistant_core::response_modes::EveryQuestionChannels;
    let (stack, proxy) = behind_a_lossy_proxy().await;
    let callback = url::Url::parse("https://bot.example/oauth/callback").unwrap();
    for (attempts, fault) in LOST_ANSWERS {
        let records = std::sync::Arc::new(records_through(&proxy, attempts, &stack.table).await);
        let issuer = url::Url::parse(&format!("https://id{attempts}.example")).unwrap();

        // The client id a worker registered: its own kept once, then another
        // worker's registration gives way to it.
        let states = ConnectStates::new(records.clone());
        proxy.script_when("DynamoDB_20120810.PutItem", r#""sk":{"S":"CLIENT"}"#, fault);
        let kept = match states.keep_registered_client(&issuer, &callback, "client-a", 1_000).await {
            Ok(kept) => kept,
            // The next start reads what landed.
            Err(_) => states.registered_client(&issuer, &callback).await.unwrap().expect("it landed"),
        };
        assert_eq!(kept, "client-a");
        assert_eq!(states.keep_registered_client(&issuer, &callback, "client-b", 1_001).await.unwrap(), "client-a");

        // The every-question channels: a plain put, the same item again.
        let channels =
            EveryQuestionChannels::new(records.clone(), std::sync::Arc::new(testkit::clock::ManualClock::at(1_000)));
        proxy.script_when("DynamoDB_20120810.PutItem", r#""sk":{"S":"RESPONSE_MODES"}"#, fault);
        if channels.publish(&["C0ASK*".to_owned()]).await.is_err() {
            channels.publish(&["C0ASK*".to_owned()]).await.expect("the next start's publish");
        }
        assert!(channels.include(&slack::ChannelId::new("C0ASK1")).await.unwrap());
    }
    each_fault_injected(&proxy, 2);
}

#[tokio::test]
async fn a_memory_record_whose_answer_was_lost_is_there_once_and_a_forget_whose_answer_was_lost_is_done() {
    use assistant_core::memory::{ChannelMemory, Memory};
    let (stack, proxy) = behind_a_lossy_proxy().await;
    let (team, channel) = (slack::TeamId::new("T1"), slack::ChannelId::new("C0MEMORY"));
    for (attempts, fault) in LOST_ANSWERS {
        let records = std::sync::Arc::new(records_through(&proxy, attempts, &stack.table).await);
        let memories = ChannelMemory::new(records, assistant_core::memory::DEFAULT_RETENTION_SECS);
        let thread = slack::Ts::new(format!("176380000{attempts}.000100"));
        let memory = Memory {
            turn_id: assistant_core::TurnId::new(format!("T1-Ev0MEMORY{attempts}")),
            thread_ts: thread.clone(),
            settled_at: 1_763_800_000,
            question: "why is checkout-api failing?".into(),
            summary: "The pool was exhausted.".into(),
            tools: Vec::new(),
            status: assistant_core::turn::TurnStatus::Answered,
            rating: None,
        };

        // Kept at a turn's end: applied, its answer lost. The worker logs
        // the error and goes on; the record is there, once.
        proxy.script_when("DynamoDB_20120810.PutItem", r#""sk":{"S":"THREAD#"#, fault);
        let _ = memories.remember(&team, &channel, &memory).await;
        let found = memories.recall(&team, &channel, "checkout-api", 1_763_800_100).await.unwrap();
        assert_eq!(found, std::slice::from_ref(&memory));

        // Forgotten on request: the delete applied, its answer lost; the
        // tool's error asks the person to ask again, which finds nothing left.
        proxy.script_when("DynamoDB_20120810.DeleteItem", "MEMORY#", fault);
        if memories.forget_thread(&team, &channel, &thread).await.is_err() {
            assert_eq!(memories.forget_thread(&team, &channel, &thread).await.unwrap(), 0);
        }
        assert!(memories.recall(&team, &channel, "checkout-api", 1_763_800_100).await.unwrap().is_empty());

        // The channel's listing (written first, for an uninstall to find
        // the record): applied, its answer lost. Retried, the memory is
        // kept; its retries spent, the memory is not written, and the
        // next turn's record is kept and listed.
        proxy.script_when("DynamoDB_20120810.PutItem", r#""sk":{"S":"KEPT#MEMORY#"#, fault);
        let kept = memories.remember(&team, &channel, &memory).await;
        let found = memories.recall(&team, &channel, "checkout-api", 1_763_800_100).await.unwrap();
        match attempts {
            1 => assert!(kept.is_err() && found.is_empty(), "{kept:?} {found:?}"),
            _ => assert!(kept.is_ok() && found == std::slice::from_ref(&memory), "{kept:?} {found:?}"),
        }
        memories.remember(&team, &channel, &memory).await.unwrap();
        let found = memories.recall(&team, &channel, "checkout-api", 1_763_800_100).await.unwrap();
        assert_eq!(found, std::slice::from_ref(&memory));
        let records = records_through(&proxy, 3, &stack.table).await;
        let listed = assistant_core::ports::VersionedRecords::parts(
            &records,
            &assistant_core::keys::team_records(&team),
            "KEPT#MEMORY#",
        )
        .await
        .unwrap();
        assert_eq!(listed.len(), 1, "the channel is listed once: {listed:?}");
        memories.forget_thread(&team, &channel, &thread).await.unwrap();
    }
    each_fault_injected(&proxy, 3);
}

#[tokio::test]
async fn incident_records_and_hourly_counts_whose_answers_were_lost_are_written_once() {
    use assistant_core::incidents::{AlertRoute, Applied, Incidents, Loudness, StormLimits, sources};
    use testkit::fixtures::alerts::{ALERTMANAGER_FIRING, ALERTS_NOW};
    let (stack, proxy) = behind_a_lossy_proxy().await;
    let route = AlertRoute { channel: slack::ChannelId::new("C0ONCALL01"), prompt_key: None };
    let limits = StormLimits { investigate: 1, threads: 2 };
    for (attempts, fault) in LOST_ANSWERS {
        let incidents = Incidents::new(std::sync::Arc::new(records_through(&proxy, attempts, &stack.table).await));
        let body = ALERTMANAGER_FIRING.replace("c2b1f4a9d0e87a31", &format!("lost{attempts:012}"));
        let notice = sources::alertmanager(body.as_bytes(), ALERTS_NOW).unwrap().remove(0);
        let hour = ALERTS_NOW + i64::from(attempts) * 3600;

        // The hour's count: applied, its answer lost; counted once.
        proxy.script_when("DynamoDB_20120810.PutItem", "INCIDENT_RATE#", fault);
        let (loudness, opened) = incidents.count_opening(&route.channel, limits, hour).await.unwrap();
        assert_eq!((loudness, opened), (Loudness::Investigate, 1));

        // The incident: applied, its answer lost; the save counts as
        // written, and a redelivery of the notice changes nothing.
        let mut record = incidents.load(&notice).await.unwrap();
        assert_eq!(record.apply(&notice, &route, &slack::TeamId::new("T1"), hour, Some(loudness)), Applied::Changed);
        proxy.script_when("DynamoDB_20120810.PutItem", "INCIDENT#", fault);
        incidents.save(&notice, &mut record, hour).await.unwrap();
        let mut stored = incidents.load(&notice).await.unwrap();
        assert_eq!(stored, record);
        assert_eq!(
            stored.apply(&notice, &route, &slack::TeamId::new("T1"), hour, None),
            Applied::Unchanged("already applied")
        );
        assert_eq!(incidents.count_opening(&route.channel, limits, hour).await.unwrap(), (Loudness::ThreadOnly, 2));
    }
    each_fault_injected(&proxy, 2);
}

#[tokio::test]
async fn records_are_read_in_one_batch_in_the_order_asked_and_missing_ones_are_none() {
    use assistant_core::ports::{RecordKey, VersionedRecords};
    use assistant_core::store::put_versioned;
    let (stack, proxy) = behind_a_lossy_proxy().await;
    let records = records_through(&proxy, 3, &stack.table).await;
    let key = |n: usize| RecordKey { partition: format!("BATCH#{n:03}"), kind: "STATE" };
    // 130 records, every third one stored: two requests of at most 100 keys.
    for n in (0..130).step_by(3) {
        put_versioned(&records, &key(n), 0, format!("\"record {n}\""), 2_000_000_000).await.unwrap();
    }
    let mut keys: Vec<RecordKey> = (0..130).rev().map(key).collect();
    keys.push(key(129));
    keys.push(key(3));
    let found = records.get_many(&keys).await.unwrap();
    assert_eq!(found.len(), keys.len(), "one answer per key asked, repeats included");
    for (asked, found) in keys.iter().zip(&found) {
        let n: usize = asked.partition["BATCH#".len()..].parse().unwrap();
        match found {
            Some(stored) => {
                assert_eq!((n % 3, stored.state.as_str(), stored.version), (0, &*format!("\"record {n}\""), 1))
            }
            None => assert_ne!(n % 3, 0, "record {n} is stored"),
        }
    }
    assert_eq!(proxy.calls_of("DynamoDB_20120810.BatchGetItem"), 2, "130 distinct keys: two requests");

    // A read is safe to repeat: failures before or after DynamoDB answered
    // are retried by the SDK and the read is the same.
    for fault in Fault::ALL {
        proxy.script_when("DynamoDB_20120810.BatchGetItem", "BATCH#", fault);
        assert_eq!(records.get_many(&keys[..10]).await.unwrap(), found[..10], "{fault:?}");
    }
    assert_eq!(records.get_many(&[]).await.unwrap(), vec![], "nothing asked, nothing read");
    let gets = proxy.calls_of("DynamoDB_20120810.GetItem");
    let one = records.get_many(&[key(3), key(3)]).await.unwrap();
    assert_eq!(one, vec![found[keys.len() - 1].clone(), found[keys.len() - 1].clone()], "one key, asked twice");
    assert_eq!(proxy.calls_of("DynamoDB_20120810.GetItem"), gets + 1, "one key: one GetItem");
}

#[tokio::test]
async fn a_kept_configuration_whose_answer_was_lost_is_kept_once_and_an_older_one_never_replaces_it() {
    use assistant_core::ports::VersionedRecords;
    use worker_config::kept::{KeptConfiguration, ReadConfiguration, record_key};
    let (stack, proxy) = behind_a_lossy_proxy().await;
    for (round, (attempts, fault)) in (1..).zip(LOST_ANSWERS) {
        let records = std::sync::Arc::new(records_through(&proxy, attempts, &stack.table).await);
        let kept = KeptConfiguration::new(records.clone(), "config/assistant.json");
        let read_at = 1_000 * round;
        let read = ReadConfiguration { bytes: Some(br#"{"docs_prefix": "runbooks/"}"#.to_vec()), read_at };
        proxy.script_when("DynamoDB_20120810.PutItem", r#""sk":{"S":"ASSISTANT"}"#, fault);
        kept.keep(&read).await.unwrap();
        let stored = records.get(&record_key()).await.unwrap();
        assert_eq!(kept.fresh(stored.as_ref(), read_at + 1), Some(read.clone()), "{fault:?}");

        // A worker that read the bucket earlier keeps nothing over it.
        let older = ReadConfiguration { bytes: Some(br#"{"docs_prefix": "old/"}"#.to_vec()), read_at: read_at - 1 };
        kept.keep(&older).await.unwrap();
        assert_eq!(records.get(&record_key()).await.unwrap(), stored);
    }
    each_fault_injected(&proxy, 1);
}

#[tokio::test]
async fn spend_counters_whose_answers_were_lost_count_once_and_a_persons_are_forgotten_with_them() {
    use assistant_core::budgets::{BudgetsConfig, Caps, DeploymentCaps, Period, Scope, Spender, Spending};
    use assistant_core::departures::Departures;
    use slack::{ChannelId, TeamId, UserId};
    let (stack, proxy) = behind_a_lossy_proxy().await;
    let budgets = BudgetsConfig {
        per_person: Some(Caps { daily_usd: Some(2.0), monthly_usd: None }),
        per_channel: None,
        deployment: Some(DeploymentCaps { daily_usd: None, monthly_usd: Some(100.0), alert_at: 0.8 }),
        admins: Vec::new(),
    };
    let now = 1_795_901_400;
    let (channel, mut deployment) = (ChannelId::new("C1"), 0);
    for (n, (attempts, fault)) in LOST_ANSWERS.into_iter().enumerate() {
        let records = std::sync::Arc::new(records_through(&proxy, attempts, &stack.table).await);
        let spending = Spending::new(records.clone(), 512);
        let (team, user, turn) =
            (TeamId::new("T1"), UserId::new(format!("U{n}")), assistant_core::TurnId::new(format!("T1-Ev{n}")));
        let who = Spender { turn: &turn, team: &team, user: &user, channel: &channel };
        // GIVEN both counters' puts applied and their answers lost
        proxy.script_when("DynamoDB_20120810.PutItem", "SPEND_DAY", fault);
        proxy.script_when("DynamoDB_20120810.PutItem", "SPEND_MONTH", fault);
        // WHEN the turn charges, and charges again after a crash before its save
        let charged = spending.charge(&budgets, who, 300_000, 0, now).await.unwrap();
        let again = spending.charge(&budgets, who, 300_000, 0, now + 1).await.unwrap();
        // THEN each counter counted it once
        deployment += 300_000;
        let held = |used: &[assistant_core::budgets::Used]| used.iter().map(|used| used.micros).collect::<Vec<_>>();
        assert_eq!(held(&charged.used), [300_000, deployment], "{attempts} attempts, {fault:?}");
        assert_eq!(held(&again.used), held(&charged.used));
        // AND a person who left has their counter forgotten, the deployment's kept
        Departures::new(records.clone()).forget_person(&team, &user).await.unwrap();
        let read = spending
            .usage(&budgets, &[Scope::Person(team.clone(), user.clone()), Scope::Deployment], now)
            .await
            .unwrap();
        assert_eq!(held(&read), [0, deployment]);
        assert_eq!(read[1].period, Period::Month);
    }
    each_fault_injected(&proxy, 2);
}
