//! `ReadAhead`: turns read beside a cold start, each taken once.

use assistant_core::ports::{Created, PortError, StoreError, TurnStore};
use assistant_core::store::{ReadAhead, RecordTurns};
use assistant_core::turn::{Turn, TurnId};
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use testkit::store_contract::new_turn;

/// A store that counts its loads and can be made to fail them.
struct Counted {
    inner: RecordTurns,
    loads: AtomicUsize,
    failing: AtomicBool,
}

#[async_trait]
impl TurnStore for Counted {
    async fn create(&self, turn: &mut Turn) -> Result<Created, StoreError> {
        self.inner.create(turn).await
    }
    async fn load(&self, id: &TurnId) -> Result<Option<Turn>, StoreError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        if self.failing.load(Ordering::SeqCst) {
            return Err(PortError::new("GetItem", "throttled").into());
        }
        self.inner.load(id).await
    }
    async fn save(&self, turn: &mut Turn) -> Result<(), StoreError> {
        self.inner.save(turn).await
    }
}

fn stores() -> (Arc<Counted>, ReadAhead) {
    let (turns, _) = testkit::memory::stores();
    let counted = Arc::new(Counted { inner: turns, loads: AtomicUsize::new(0), failing: AtomicBool::new(false) });
    (counted.clone(), ReadAhead::new(counted))
}

#[tokio::test]
async fn a_turn_read_ahead_is_taken_by_its_first_load_only() {
    let (store, ahead) = stores();
    let mut turn = new_turn("Ev0AHEAD1");
    store.create(&mut turn).await.unwrap();
    let missing = new_turn("Ev0AHEAD2").id;
    ahead.read([turn.id.clone(), turn.id.clone(), missing.clone()]).await;
    assert_eq!(store.loads.load(Ordering::SeqCst), 2, "each turn read once, together");

    let first = ahead.load(&turn.id).await.unwrap().expect("stored");
    assert_eq!(first.version, 1);
    assert_eq!(ahead.load(&missing).await.unwrap(), None, "a turn that does not exist is known not to");
    assert_eq!(store.loads.load(Ordering::SeqCst), 2, "taken, not read again");

    // Another worker saves; the next load must see it, not the old copy.
    let mut newer = first.clone();
    store.save(&mut newer).await.unwrap();
    assert_eq!(ahead.load(&turn.id).await.unwrap().expect("stored").version, 2);
    assert_eq!(store.loads.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_write_or_the_end_of_the_invocation_drops_what_was_read_ahead() {
    let (store, ahead) = stores();
    let mut turn = new_turn("Ev0AHEAD3");
    store.create(&mut turn).await.unwrap();

    ahead.read([turn.id.clone()]).await;
    let mut saved = turn.clone();
    ahead.save(&mut saved).await.unwrap();
    assert_eq!(ahead.load(&turn.id).await.unwrap().unwrap().version, 2, "the saved turn, not the copy before");

    ahead.read([turn.id.clone()]).await;
    ahead.forget();
    let before = store.loads.load(Ordering::SeqCst);
    ahead.load(&turn.id).await.unwrap();
    assert_eq!(store.loads.load(Ordering::SeqCst), before + 1, "forgotten: read again");
}

#[tokio::test]
async fn a_read_ahead_that_fails_is_not_kept_and_the_load_reads_again() {
    let (store, ahead) = stores();
    let mut turn = new_turn("Ev0AHEAD4");
    store.create(&mut turn).await.unwrap();
    store.failing.store(true, Ordering::SeqCst);
    ahead.read([turn.id.clone()]).await;
    assert!(ahead.load(&turn.id).await.is_err(), "the work's own load reports the store's error");
    store.failing.store(false, Ordering::SeqCst);
    assert_eq!(ahead.load(&turn.id).await.unwrap().unwrap().version, 1);
    assert_eq!(store.loads.load(Ordering::SeqCst), 3);
}
