//! What every [`TurnStore`] and [`DeliveryLog`] must do, written once and
//! run against each backend: memory here, DynamoDB in `tests/`. Each
//! function panics on a broken promise.

use assistant_core::delivery::{DeliveryRecord, MessageKey, Settled};
use assistant_core::messages::{ThreadRef, TurnRequest};
use assistant_core::ports::{Created, DeliveryLog, StoreError, TurnStore};
use assistant_core::turn::{Message, Turn, TurnStatus};
use slack::{ChannelId, EventId, TeamId, Ts, UserId};

/// A fresh turn whose id no other call of this function returns.
pub fn new_turn(event_id: &str) -> Turn {
    let request = TurnRequest {
        event_id: EventId::new(event_id),
        thread: ThreadRef {
            team: TeamId::new("T061EG9R6"),
            channel: ChannelId::new("C0LAN2Q65"),
            thread_ts: Ts::new("1763800000.000100"),
        },
        message_ts: Ts::new("1763800000.000100"),
        user: UserId::new("U061F7AUR"),
        text: "why is checkout-api failing?".into(),
        context_channel: None,
        bot_user: None,
        files: Vec::new(),
        membership: slack::Membership::Home,
        asked_at: None,
    };
    Turn::start(&request, 1_763_800_001)
}

/// Create stores version 1 once; a second create returns what is stored.
pub async fn create_is_once(store: &dyn TurnStore, event_id: &str) {
    let mut turn = new_turn(event_id);
    turn.transcript.push(Message::user_text("first"));
    assert_eq!(store.create(&mut turn).await.expect("create"), Created::New);
    assert_eq!(turn.version, 1);

    let mut again = new_turn(event_id);
    let Created::Existing(stored) = store.create(&mut again).await.expect("second create") else {
        panic!("a second create must find the first turn")
    };
    assert_eq!(stored.version, 1);
    assert_eq!(stored.transcript, turn.transcript, "the stored turn, not the new copy");
    assert_eq!(store.load(&turn.id).await.expect("load").expect("stored"), turn);
}

/// Of two writers holding the same version, the first save wins and the
/// second is refused without writing.
pub async fn stale_writer_loses(store: &dyn TurnStore, event_id: &str) {
    let mut turn = new_turn(event_id);
    store.create(&mut turn).await.expect("create");
    let mut first = store.load(&turn.id).await.expect("load").expect("stored");
    let mut second = first.clone();

    first.steps = 1;
    first.transcript.push(Message::user_text("from the first worker"));
    store.save(&mut first).await.expect("first save");
    assert_eq!(first.version, 2);

    second.steps = 1;
    second.status = TurnStatus::Failed;
    second.transcript.push(Message::user_text("from the second worker, never to be read"));
    match store.save(&mut second).await {
        Err(StoreError::Conflict { expected: 1, .. }) => {}
        other => panic!("a stale save must conflict, got {other:?}"),
    }
    assert_eq!(second.version, 1, "a refused save leaves the copy's version");

    let stored = store.load(&turn.id).await.expect("load").expect("stored");
    assert_eq!(stored, first, "the winner's state, untouched by the loser");
}

/// Missing turns load as none; saving one that was never created conflicts.
pub async fn missing_turns(store: &dyn TurnStore, event_id: &str) {
    let mut never_created = new_turn(event_id);
    assert_eq!(store.load(&never_created.id).await.expect("load"), None);
    never_created.version = 1;
    assert!(matches!(store.save(&mut never_created).await, Err(StoreError::Conflict { .. })));
}

/// State over the item limit is refused, not truncated.
pub async fn oversized_state_is_refused(store: &dyn TurnStore, event_id: &str) {
    let mut turn = new_turn(event_id);
    store.create(&mut turn).await.expect("create");
    turn.transcript.push(Message::user_text("x".repeat(500_000)));
    assert!(matches!(store.save(&mut turn).await, Err(StoreError::TooLarge { .. })));
    assert_eq!(store.load(&turn.id).await.expect("load").expect("stored").transcript, vec![]);
}

/// A delivery record starts empty at version 0, saves conditionally on its
/// version, and comes back as saved.
pub async fn delivery_records_are_versioned(log: &dyn DeliveryLog, event_id: &str) {
    let id = new_turn(event_id).id;
    let mut record = log.load(&id).await.expect("load missing");
    assert_eq!(record, DeliveryRecord::default(), "a turn with no record has an empty one");

    record.attempted.insert(MessageKey::Answer { part: 1, of: 1 });
    record.updated_at = 1_763_800_100;
    log.save(&id, &mut record).await.expect("first save");
    assert_eq!(record.version, 1);

    let mut stale = DeliveryRecord::default();
    assert!(
        matches!(log.save(&id, &mut stale).await, Err(StoreError::Conflict { .. })),
        "a second first save must conflict"
    );

    record.attempted.clear();
    record.posted.insert(MessageKey::Answer { part: 1, of: 1 }, Ts::new("1763800100.000200"));
    record.settled = Some(Settled::Delivered);
    log.save(&id, &mut record).await.expect("second save");
    let loaded = log.load(&id).await.expect("load");
    assert_eq!(loaded, record, "as saved, version included");
    assert_eq!(loaded.version, 2);
}

/// A create and a save whose answers were lost (the store applied them; the
/// caller heard an error, or the refusal of the SDK's retry of the same
/// put) are the writer's own: each succeeds once, the version moves on by
/// one, and the next save goes on from there. `lose_next_answer` makes the
/// backend lose the answer to its next applied put.
pub async fn lost_answers_are_the_writers_own(store: &dyn TurnStore, event_id: &str, lose_next_answer: &dyn Fn()) {
    let mut turn = new_turn(event_id);
    lose_next_answer();
    assert_eq!(store.create(&mut turn).await.expect("a create whose answer was lost"), Created::New);
    assert_eq!(turn.version, 1);

    turn.steps = 1;
    turn.transcript.push(Message::user_text("step one"));
    lose_next_answer();
    store.save(&mut turn).await.expect("a save whose answer was lost is the writer's own, not a conflict");
    assert_eq!(turn.version, 2);
    assert_eq!(store.load(&turn.id).await.expect("load").expect("stored"), turn, "saved once, as written");

    turn.steps = 2;
    store.save(&mut turn).await.expect("the next save goes on from it");
    assert_eq!(turn.version, 3);
}

/// Another writer's save stays a conflict, whatever answer the loser's own
/// put got: `lose_next_answer` is armed before the loser's put, which the
/// store refuses (so nothing of the loser's is applied).
pub async fn another_writers_save_is_still_a_conflict(
    store: &dyn TurnStore,
    event_id: &str,
    lose_next_answer: &dyn Fn(),
) {
    let mut turn = new_turn(event_id);
    store.create(&mut turn).await.expect("create");
    let mut loser = turn.clone();
    turn.steps = 1;
    store.save(&mut turn).await.expect("the winner's save");
    loser.status = TurnStatus::Failed;
    lose_next_answer();
    assert!(matches!(store.save(&mut loser).await, Err(StoreError::Conflict { expected: 1, .. })));
    assert_eq!(store.load(&turn.id).await.expect("load").expect("stored"), turn, "the winner's state");
}

/// A save writes what it added: the head and the new messages, not the
/// transcript again. Over a 30-step turn the bytes each save writes grow by
/// no more than the name of the part each step adds to the head (about 20
/// bytes), while the turn grows by the whole message; the turn loads whole.
pub async fn saves_write_what_they_added(store: &dyn TurnStore, event_id: &str) {
    let mut turn = new_turn(event_id);
    store.create(&mut turn).await.expect("create");
    let mut per_save = Vec::new();
    for step in 1..=30 {
        turn.steps = step;
        turn.transcript.push(Message::user_text(format!("step {step}: {}", "result text ".repeat(80))));
        store.save(&mut turn).await.expect("save");
        per_save.push(turn.stored.written.iter().sum::<u64>());
    }
    let (first, last) = (per_save[0], per_save[29]);
    let growth = per_save.windows(2).map(|pair| pair[1] as i64 - pair[0] as i64).max().unwrap_or(0);
    assert!(growth <= 24, "a save wrote {growth} bytes more than the one before: {per_save:?}");
    assert!(last < first + 30 * 24, "the 30th save wrote {last} bytes, the first {first}: {per_save:?}");
    assert!(turn.stored.bytes > 25 * first / 2, "the turn grew while its saves did not: {}", turn.stored.bytes);
    let loaded = store.load(&turn.id).await.expect("load").expect("stored");
    assert_eq!(loaded.transcript, turn.transcript);
    assert_eq!(loaded, turn);
}

/// A save after earlier messages changed (compaction moved a result out)
/// stores them as changed.
pub async fn earlier_messages_changed_are_saved(store: &dyn TurnStore, event_id: &str) {
    let mut turn = new_turn(event_id);
    turn.transcript.push(Message::user_text("the question"));
    turn.transcript.push(Message::user_text(format!("a large result {}", "x".repeat(2_000))));
    store.create(&mut turn).await.expect("create");
    turn.transcript[1] = Message::user_text("a large result, now in the artifact store");
    turn.transcript.push(Message::user_text("the next step"));
    store.save(&mut turn).await.expect("save");
    let loaded = store.load(&turn.id).await.expect("load").expect("stored");
    assert_eq!(loaded.transcript, turn.transcript);
    turn.transcript.push(Message::user_text("and one more"));
    store.save(&mut turn).await.expect("a save after the rewrite");
    assert_eq!(store.load(&turn.id).await.expect("load").expect("stored").transcript, turn.transcript);
}

/// A turn stored whole in its record, as before transcripts were stored in
/// parts, loads; its next save moves it to parts and it loads again.
pub async fn turns_stored_whole_still_load(
    records: &dyn assistant_core::ports::VersionedRecords,
    store: &dyn TurnStore,
    event_id: &str,
) {
    let mut turn = new_turn(event_id);
    turn.transcript.push(Message::user_text("asked before the upgrade"));
    turn.steps = 1;
    let whole = serde_json::to_string(&turn).expect("a turn serializes");
    let key = assistant_core::ports::RecordKey { partition: format!("TURN#{}", turn.id), kind: "STATE" };
    let written = assistant_core::store::put_versioned(records, &key, 0, whole, turn.updated_at + 3_600).await;
    assert_eq!(written.expect("the old record is written"), assistant_core::ports::Put::Written);

    let mut loaded = store.load(&turn.id).await.expect("load").expect("stored");
    assert_eq!((loaded.version, &loaded.transcript, loaded.steps), (1, &turn.transcript, 1));
    loaded.transcript.push(Message::user_text("answered after it"));
    store.save(&mut loaded).await.expect("save");
    assert_eq!(loaded.stored.parts.len(), 1, "moved to parts");
    assert_eq!(store.load(&turn.id).await.expect("load").expect("stored"), loaded);
}
