//! The turn store on DynamoDB's versioned records, through the real SDK
//! against the local AWS emulator, keeps the same contract as on memory
//! (`testkit::store_contract`): create once, optimistic locking, item limit;
//! and so does the responder's delivery log beside it.

use assistant_core::store::RecordTurns;
use testkit::store_contract;
use tests::{Stack, emulator_config};

async fn store() -> (Stack, RecordTurns) {
    let stack = Stack::new(&emulator_config().await).await.expect("emulator resources");
    let store = stack.turns();
    (stack, store)
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
async fn state_over_the_item_limit_is_refused_before_dynamodb_sees_it() {
    let (_stack, store) = store().await;
    store_contract::oversized_state_is_refused(&store, "Ev0LARGE01").await;
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
