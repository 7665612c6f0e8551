//! `ReadAhead`: turns read beside a cold start, each taken once.

use assistant_core::ports::{PortError, Put, RecordKey, RecordWrite, StoredRecord, TurnStore, VersionedRecords};
use assistant_core::store::{ReadAhead, RecordTurns};
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use testkit::memory::MemoryRecords;
use testkit::store_contract::new_turn;

/// Records that count their reads (a batch is one) and can be made to
/// fail them.
#[derive(Default)]
struct Counted {
    inner: MemoryRecords,
    reads: AtomicUsize,
    failing: AtomicBool,
}

impl Counted {
    fn read(&self) -> Result<(), PortError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        match self.failing.load(Ordering::SeqCst) {
            true => Err(PortError::new("GetItem", "throttled")),
            false => Ok(()),
        }
    }
}

#[async_trait]
impl VersionedRecords for Counted {
    async fn get(&self, key: &RecordKey) -> Result<Option<StoredRecord>, PortError> {
        self.read()?;
        self.inner.get(key).await
    }
    async fn get_many(&self, keys: &[RecordKey]) -> Result<Vec<Option<StoredRecord>>, PortError> {
        self.read()?;
        let mut found = Vec::new();
        for key in keys {
            found.push(self.inner.get(key).await?);
        }
        Ok(found)
    }
    async fn put(&self, key: &RecordKey, write: &RecordWrite) -> Result<Put, PortError> {
        self.inner.put(key, write).await
    }
    async fn put_part(&self, partition: &str, sort_key: &str, state: String, expires_at: i64) -> Result<(), PortError> {
        self.inner.put_part(partition, sort_key, state, expires_at).await
    }
    async fn delete_part(&self, partition: &str, sort_key: &str) -> Result<(), PortError> {
        self.inner.delete_part(partition, sort_key).await
    }
    async fn parts(&self, partition: &str, prefix: &str) -> Result<Vec<(String, String)>, PortError> {
        self.inner.parts(partition, prefix).await
    }
}

fn stores() -> (Arc<Counted>, RecordTurns, ReadAhead) {
    let records = Arc::new(Counted::default());
    let turns = RecordTurns::new(records.clone());
    (records, turns.clone(), ReadAhead::new(turns))
}

fn kept() -> RecordKey {
    RecordKey { partition: "CONFIG".into(), kind: "KEPT" }
}

#[tokio::test]
async fn a_turn_read_ahead_is_taken_by_its_first_load_only() {
    let (records, store, ahead) = stores();
    let mut turn = new_turn("Ev0AHEAD1");
    store.create(&mut turn).await.unwrap();
    let missing = new_turn("Ev0AHEAD2").id;
    let also = ahead.read([turn.id.clone(), turn.id.clone(), missing.clone()], &[kept()]).await.unwrap();
    assert_eq!(records.reads.load(Ordering::SeqCst), 1, "both turns and the kept record in one request");
    assert_eq!(also, vec![None], "the record asked for beside them, in its place");

    let first = ahead.load(&turn.id).await.unwrap().expect("stored");
    assert_eq!(first.version, 1);
    assert_eq!(ahead.load(&missing).await.unwrap(), None, "a turn that does not exist is known not to");
    assert_eq!(records.reads.load(Ordering::SeqCst), 1, "taken, not read again");

    // Another worker saves; the next load must see it, not the old copy.
    let mut newer = first.clone();
    store.save(&mut newer).await.unwrap();
    assert_eq!(ahead.load(&turn.id).await.unwrap().expect("stored").version, 2);
    assert_eq!(records.reads.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn nothing_to_read_reads_nothing() {
    let (records, _, ahead) = stores();
    assert_eq!(ahead.read([], &[]).await.unwrap(), Vec::<Option<StoredRecord>>::new());
    assert_eq!(records.reads.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_write_or_the_end_of_the_invocation_drops_what_was_read_ahead() {
    let (records, store, ahead) = stores();
    let mut turn = new_turn("Ev0AHEAD3");
    store.create(&mut turn).await.unwrap();

    ahead.read([turn.id.clone()], &[]).await.unwrap();
    let mut saved = turn.clone();
    ahead.save(&mut saved).await.unwrap();
    assert_eq!(ahead.load(&turn.id).await.unwrap().unwrap().version, 2, "the saved turn, not the copy before");

    ahead.read([turn.id.clone()], &[]).await.unwrap();
    ahead.forget();
    let before = records.reads.load(Ordering::SeqCst);
    ahead.load(&turn.id).await.unwrap();
    assert_eq!(records.reads.load(Ordering::SeqCst), before + 1, "forgotten: read again");
}

#[tokio::test]
async fn a_read_ahead_that_fails_is_not_kept_and_the_load_reads_again() {
    let (records, store, ahead) = stores();
    let mut turn = new_turn("Ev0AHEAD4");
    store.create(&mut turn).await.unwrap();
    records.failing.store(true, Ordering::SeqCst);
    assert!(ahead.read([turn.id.clone()], &[kept()]).await.is_err(), "the caller hears the read failed");
    assert!(ahead.load(&turn.id).await.is_err(), "the work's own load reports the store's error");
    records.failing.store(false, Ordering::SeqCst);
    assert_eq!(ahead.load(&turn.id).await.unwrap().unwrap().version, 1);
    assert_eq!(records.reads.load(Ordering::SeqCst), 3);
}
