//! The assistant configuration as a worker last read it from the bucket,
//! kept in the turns table, so that a cold worker reads it in the same
//! request as its first turns instead of waiting for the bucket first.
//!
//! The bucket stays the source. A worker that reads the configuration from
//! the bucket keeps its text with the time it read it; a cold worker starts
//! from a copy read less than [`FRESH_FOR_SECS`] ago (the five minutes a
//! warm worker goes before reading the bucket again) and from the bucket
//! otherwise, so an upload reaches every worker, new or warm, within five
//! minutes, as it did before copies were kept. A copy for another object (a
//! changed `ASSISTANT_CONFIG_KEY`), one that no longer reads, or a read that
//! failed: the bucket.
//!
//! Only the configuration's own text is kept: the objects it names (a
//! system prompt, a service catalog) are read from the bucket as before.
//!
//! The copy is also the last configuration that parsed (and assembled): a
//! copy is kept only of one that parses, so a broken upload never replaces
//! it, and a worker whose bucket object is broken starts from it however
//! old it is ([`KeptConfiguration::last_good`], [`crate::config_fallback`]):
//! freshness decides whether to read the bucket, not whether a good copy may
//! be served.

use crate::AssistantConfig;
use crate::StartupError;
use assistant_core::keys::{self, KEPT_FOR_SECS};
use assistant_core::ports::{PortError, Put, RecordKey, StoredRecord, VersionedRecords};
use assistant_core::retry::{Raced, retry_races};
use assistant_core::store::put_versioned;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How old a kept copy may be for a cold worker to start from it.
pub const FRESH_FOR_SECS: i64 = 300;
/// The largest configuration kept (a table item holds 400 KB); a larger
/// one is read from the bucket at every start.
pub const MAX_KEPT_BYTES: usize = 300 * 1024;
/// Writers that keep losing to others' newer copies stop after this many tries.
const KEEP_ATTEMPTS: u32 = 3;

/// The record's place in the turns table ([`keys::worker_config`]: a
/// partition only the worker's role may write), kept [`KEPT_FOR_SECS`].
pub fn record_key() -> RecordKey {
    keys::worker_config()
}

#[derive(Debug, Serialize, Deserialize)]
struct Kept {
    /// The bucket key it was read from.
    object: String,
    /// When it was read from the bucket (Unix seconds).
    read_at: i64,
    /// The object's text; none: there was no object (the defaults).
    text: Option<String>,
}

/// A configuration as read from the bucket at a time: what a cold worker
/// starts from, fresh or kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadConfiguration {
    /// The object's bytes; none: there is no object (the defaults apply).
    pub bytes: Option<Vec<u8>>,
    /// When it was read from the bucket (Unix seconds).
    pub read_at: i64,
}

impl ReadConfiguration {
    /// The configuration it holds (the defaults when there was no
    /// object); `origin` names it in the error.
    pub fn parse(&self, origin: &str) -> Result<AssistantConfig, StartupError> {
        match &self.bytes {
            Some(json) => crate::assembly::parse_config(json, origin),
            None => Ok(AssistantConfig::default()),
        }
    }
}

/// The copy of one configuration object the workers keep.
#[derive(Clone)]
pub struct KeptConfiguration {
    records: Arc<dyn VersionedRecords>,
    object: String,
}

impl KeptConfiguration {
    /// The copy of the bucket's `object`.
    pub fn new(records: Arc<dyn VersionedRecords>, object: &str) -> Self {
        Self { records, object: object.to_owned() }
    }

    /// The configuration kept in `stored` (the record at [`record_key`]),
    /// when it is this object's and was read from the bucket less than
    /// [`FRESH_FOR_SECS`] before `now`.
    pub fn fresh(&self, stored: Option<&StoredRecord>, now: i64) -> Option<ReadConfiguration> {
        let kept = self.kept(stored?)?;
        let age = now - kept.read_at;
        (0..FRESH_FOR_SECS)
            .contains(&age)
            .then(|| ReadConfiguration { bytes: kept.text.map(String::into_bytes), read_at: kept.read_at })
    }

    /// The configuration kept in `stored`, however old, when it is this
    /// object's and still parses: what a worker serves while the bucket's
    /// object is broken.
    pub fn last_good(&self, stored: Option<&StoredRecord>) -> Option<(AssistantConfig, ReadConfiguration)> {
        let kept = self.kept(stored?)?;
        let read = ReadConfiguration { bytes: kept.text.map(String::into_bytes), read_at: kept.read_at };
        match read.parse(&self.object) {
            Ok(assistant) => Some((assistant, read)),
            Err(err) => {
                tracing::warn!(error = %err, "the kept configuration no longer parses: it is no fallback");
                None
            }
        }
    }

    fn kept(&self, stored: &StoredRecord) -> Option<Kept> {
        let kept: Kept = serde_json::from_str(&stored.state).ok()?;
        (kept.object == self.object).then_some(kept)
    }

    /// Keeps `read`, unless the copy kept is more recent, or this very text
    /// read in the same second (`read_at` has seconds: two reads of
    /// different texts in one second, the later keep stands). A versioned
    /// put: its answer lost, the put or the read after it finds its own
    /// write; another worker's newer copy stands. A configuration that does
    /// not parse is refused: the copy is the fallback from broken uploads.
    pub async fn keep(&self, read: &ReadConfiguration) -> Result<(), PortError> {
        if let Err(err) = read.parse(&self.object) {
            return Err(PortError::new("keep the configuration", format!("only one that parses is kept: {err}")));
        }
        let text = match &read.bytes {
            Some(bytes) if bytes.len() > MAX_KEPT_BYTES => {
                tracing::warn!(
                    bytes = bytes.len(),
                    "the assistant configuration is too large to keep: every cold start reads the bucket"
                );
                return Ok(());
            }
            Some(bytes) => Some(
                String::from_utf8(bytes.clone())
                    .map_err(|_| PortError::new("keep the configuration", "the configuration is not UTF-8"))?,
            ),
            None => None,
        };
        let state = serde_json::to_string(&Kept { object: self.object.clone(), read_at: read.read_at, text })
            .expect("a kept configuration serializes");
        let as_recent = |kept: Kept| {
            let same_text = kept.text.as_deref().map(str::as_bytes) == read.bytes.as_deref();
            kept.read_at > read.read_at || (kept.read_at == read.read_at && same_text)
        };
        let key = &record_key();
        // A writer that keeps losing leaves the newer copies to the others.
        retry_races(KEEP_ATTEMPTS, |_| async {
            let stored = self.records.get(key).await?;
            if stored.as_ref().and_then(|stored| self.kept(stored)).is_some_and(as_recent) {
                return Ok(());
            }
            let version = stored.map_or(0, |stored| stored.version);
            let expires_at = read.read_at + KEPT_FOR_SECS;
            match put_versioned(self.records.as_ref(), key, version, state.clone(), expires_at).await? {
                Put::Written => Ok(()),
                Put::Conflict { .. } => Err(Raced::Lost),
            }
        })
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::memory::{LostAnswer, MemoryRecords};

    const OBJECT: &str = "config/assistant.json";

    fn kept_on(records: &Arc<MemoryRecords>) -> KeptConfiguration {
        KeptConfiguration::new(records.clone(), OBJECT)
    }

    fn read(text: &str, read_at: i64) -> ReadConfiguration {
        ReadConfiguration { bytes: Some(text.as_bytes().to_vec()), read_at }
    }

    async fn stored(records: &MemoryRecords) -> Option<StoredRecord> {
        records.get(&record_key()).await.unwrap()
    }

    #[tokio::test]
    async fn a_copy_is_fresh_for_five_minutes_for_its_own_object_only() {
        let records = Arc::new(MemoryRecords::default());
        let kept = kept_on(&records);
        kept.keep(&read(r#"{"docs_prefix": "runbooks/"}"#, 1_000)).await.unwrap();
        let found = stored(&records).await;
        assert_eq!(kept.fresh(found.as_ref(), 1_000), Some(read(r#"{"docs_prefix": "runbooks/"}"#, 1_000)));
        assert_eq!(kept.fresh(found.as_ref(), 1_299).map(|read| read.read_at), Some(1_000));
        assert_eq!(kept.fresh(found.as_ref(), 1_300), None, "five minutes old: read the bucket");
        assert_eq!(kept.fresh(found.as_ref(), 999), None, "from the future (a clock off): read the bucket");
        let other = KeptConfiguration::new(records.clone(), "config/other.json");
        assert_eq!(other.fresh(found.as_ref(), 1_000), None, "another object's copy");
        assert_eq!(kept.fresh(None, 1_000), None);
    }

    #[tokio::test]
    async fn no_object_is_kept_as_the_defaults_and_broken_records_are_not_copies() {
        let records = Arc::new(MemoryRecords::default());
        let kept = kept_on(&records);
        kept.keep(&ReadConfiguration { bytes: None, read_at: 1_000 }).await.unwrap();
        let found = stored(&records).await;
        assert_eq!(kept.fresh(found.as_ref(), 1_010), Some(ReadConfiguration { bytes: None, read_at: 1_000 }));
        let broken = StoredRecord { version: 1, state: "not json".into(), token: None };
        assert_eq!(kept.fresh(Some(&broken), 1_010), None);
    }

    #[tokio::test]
    async fn an_older_copy_never_replaces_a_newer_one() {
        let records = Arc::new(MemoryRecords::default());
        let kept = kept_on(&records);
        kept.keep(&read(r#"{"docs_prefix": "new/"}"#, 2_000)).await.unwrap();
        kept.keep(&read(r#"{"docs_prefix": "old/"}"#, 1_000)).await.unwrap();
        let found = stored(&records).await;
        assert_eq!(kept.fresh(found.as_ref(), 2_000), Some(read(r#"{"docs_prefix": "new/"}"#, 2_000)));
        kept.keep(&read(r#"{"docs_prefix": "newer/"}"#, 2_100)).await.unwrap();
        let found = stored(&records).await.unwrap();
        assert_eq!(kept.fresh(Some(&found), 2_100), Some(read(r#"{"docs_prefix": "newer/"}"#, 2_100)));
        assert_eq!(found.version, 2, "written twice, the older copy refused without a write");
        // A fixed upload read in the same second as the copy kept: the later
        // keep stands; the same text again is no write.
        kept.keep(&read(r#"{"docs_prefix": "fixed/"}"#, 2_100)).await.unwrap();
        kept.keep(&read(r#"{"docs_prefix": "fixed/"}"#, 2_100)).await.unwrap();
        let found = stored(&records).await.unwrap();
        assert_eq!(kept.fresh(Some(&found), 2_100), Some(read(r#"{"docs_prefix": "fixed/"}"#, 2_100)));
        assert_eq!(found.version, 3, "the same text in the same second is not written again");
    }

    #[tokio::test]
    async fn a_configuration_that_does_not_parse_is_never_kept_over_a_good_one() {
        let records = Arc::new(MemoryRecords::default());
        let kept = kept_on(&records);
        kept.keep(&read(r#"{"docs_prefix": "runbooks/"}"#, 1_000)).await.unwrap();
        for broken in [&br#"{"docs_prefx": "kb/"}"#[..], b"not json", b"\xff\xfe", b""] {
            let newer = ReadConfiguration { bytes: Some(broken.to_vec()), read_at: 2_000 };
            let err = kept.keep(&newer).await.expect_err("refused");
            assert!(err.to_string().contains("only one that parses is kept"), "{err}");
        }
        let found = stored(&records).await.unwrap();
        assert_eq!(
            (found.version, kept.fresh(Some(&found), 1_001)),
            (1, Some(read(r#"{"docs_prefix": "runbooks/"}"#, 1_000)))
        );
    }

    #[tokio::test]
    async fn the_last_good_copy_is_served_however_old_while_it_parses_and_is_this_objects() {
        let records = Arc::new(MemoryRecords::default());
        let kept = kept_on(&records);
        kept.keep(&read(r#"{"docs_prefix": "runbooks/"}"#, 1_000)).await.unwrap();
        let found = stored(&records).await;
        let a_month_later = 1_000 + 30 * 24 * 3600;
        assert_eq!(kept.fresh(found.as_ref(), a_month_later), None, "not fresh: the bucket is read");
        let (assistant, last) = kept.last_good(found.as_ref()).expect("a fallback");
        assert_eq!((assistant.docs_prefix.as_str(), last.read_at), ("runbooks/", 1_000));
        assert!(KeptConfiguration::new(records.clone(), "config/other.json").last_good(found.as_ref()).is_none());
        assert!(kept.last_good(None).is_none());
        // A copy kept by an older release that this one no longer reads.
        let state = serde_json::json!({"object": OBJECT, "read_at": 1_000, "text": r#"{"retired_field": 1}"#});
        let retired = StoredRecord { version: 1, state: state.to_string(), token: None };
        assert!(kept.last_good(Some(&retired)).is_none());
    }

    #[tokio::test]
    async fn a_keep_whose_answer_was_lost_is_written_once() {
        for lost in [LostAnswer::Error, LostAnswer::RetryRefused] {
            let records = Arc::new(MemoryRecords::default());
            let kept = kept_on(&records);
            records.lose_answers([lost]);
            kept.keep(&read(r#"{"docs_prefix": "v1/"}"#, 1_000)).await.unwrap();
            let found = stored(&records).await.unwrap();
            assert_eq!(found.version, 1, "{lost:?}: applied once");
            assert_eq!(kept.fresh(Some(&found), 1_000), Some(read(r#"{"docs_prefix": "v1/"}"#, 1_000)));
        }
    }

    #[test]
    fn only_the_workers_role_may_write_the_copy() {
        let template = include_str!("../../../../template.yaml");
        // A resource's lines, up to the next line indented by two spaces.
        let section = |name: &str| {
            let start = template.find(&format!("\n  {name}:\n")).expect("the function is in the template") + 1;
            let rest = &template[start..];
            let next = rest.match_indices("\n  ").map(|(at, _)| at).find(|&at| !rest[at + 3..].starts_with(' '));
            &rest[..next.unwrap_or(rest.len())]
        };
        assert!(record_key().partition.starts_with("WORKER#"));
        // Both other functions write only the partitions they name, none of them the workers'
        // (infra/iam/check.py's self-test proves the responder's write of one refused).
        for function in ["ResponderFunction", "IngressFunction"] {
            let lines = section(function);
            assert!(lines.contains("dynamodb:LeadingKeys"), "{function} writes only its own partitions");
            assert!(!lines.contains("WORKER#") && !lines.contains("- \"*\""), "{lines}");
        }
    }

    #[tokio::test]
    async fn a_configuration_too_large_for_an_item_is_not_kept() {
        let records = Arc::new(MemoryRecords::default());
        let kept = kept_on(&records);
        let large = format!(r#"{{"docs_prefix": "{}"}}"#, "x".repeat(MAX_KEPT_BYTES));
        kept.keep(&read(&large, 1_000)).await.unwrap();
        assert_eq!(stored(&records).await, None);
        let not_text = ReadConfiguration { bytes: Some(vec![0xff, 0xfe]), read_at: 1_000 };
        assert!(kept.keep(&not_text).await.is_err());
        assert_eq!(stored(&records).await, None);
    }
}
