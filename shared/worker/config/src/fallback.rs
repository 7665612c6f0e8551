//! A bad configuration never takes the bot down.
//!
//! The assistant configuration is a file people edit and upload; a
//! misspelt field must not stop the workers, or every question goes to the
//! dead-letter queue. A starting worker serves, best first ([`start`]):
//!
//! 1. the bucket's configuration (or its fresh copy, [`crate::kept_config`]);
//! 2. when that cannot be used (it is not a configuration, is over
//!    [`MAX_CONFIG_BYTES`], is gone while a configuration was kept, or
//!    names what cannot be assembled): the last configuration that parsed,
//!    the copy kept in the turns table, however old;
//!
//! A read that fails (the bucket or a secret did not answer) is none of
//! these: the start fails and is retried, and a running worker keeps what it
//! serves until its next re-read, so a throttled burst of cold starts never
//! puts workers on the defaults.
//! 3. when there is none: the built-in defaults (the bundled prompt and the
//!    read-only built-in tools).
//!
//! A running worker whose five-minutely re-read finds the object broken
//! keeps the worker it has ([`reassemble`]); the first re-read that finds
//! it good serves it. Meanwhile the problem (the object's key and what is
//! wrong, with paths, never a value from the text) is an ERROR log line
//! ([`ConfigProblem::log`]), the health check's failed `config` check, and
//! one ops-channel alert per distinct text of the object ([`report_once`]).

use crate::AssistantConfig;
use crate::StartupError;
use crate::kept::ReadConfiguration;
use assistant_core::alerts::{Alert, OpsAlerts, Raised};
use sha2::Digest;
use std::fmt::Display;

/// The largest assistant configuration read: a larger object is refused
/// before its body is read (the function's memory is not a place to find
/// out how large an upload can be). The most the table keeps as the last
/// good copy, so every configuration served can be the fallback of a later
/// broken upload.
pub const MAX_CONFIG_BYTES: u64 = crate::kept::MAX_KEPT_BYTES as u64;

/// What a problem's reason may take of an alert or a health report.
const MAX_REASON_CHARS: usize = 1_500;

/// The configuration a worker serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving {
    /// The bucket's, as read (or kept less than five minutes before).
    Current,
    /// The last configuration that parsed, read from the bucket at `read_at`.
    LastGood { read_at: i64 },
    /// The built-in defaults: no good configuration was kept.
    Defaults,
}

impl Serving {
    fn describe(self) -> String {
        match self {
            Serving::Current => "the bucket's configuration".into(),
            Serving::LastGood { read_at } => format!(
                "the last configuration that parsed (read from the bucket at {})",
                assistant_core::clock::iso8601_utc(read_at)
            ),
            Serving::Defaults => {
                "the built-in defaults (the bundled prompt, only the read-only built-in tools): no good configuration was kept"
                    .into()
            }
        }
    }
}

/// Why the bucket's configuration object is not what a worker serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The object's key.
    pub object: String,
    /// What is wrong: paths and reasons, never a value from the text.
    pub reason: String,
    /// Tells this object's text (or its absence, or its size) from others,
    /// so one upload is reported once; none when there is nothing to tell
    /// apart (the object could not be read: the health check's own hourly
    /// alert tells of that).
    fingerprint: Option<String>,
}

impl ConfigProblem {
    fn new(object: &str, reason: impl Display, fingerprint: Option<String>) -> Self {
        let reason = redact::redact(&reason.to_string()).into_owned();
        let reason = match reason.char_indices().nth(MAX_REASON_CHARS) {
            Some((cut, _)) => format!("{}…", &reason[..cut]),
            None => reason,
        };
        Self { object: object.to_owned(), reason, fingerprint }
    }

    /// A configuration that parsed but from which no worker could be
    /// assembled (a system prompt object that is missing, a secret that
    /// cannot be read, a variable not in `allowed_env`).
    pub fn not_assembled(object: &str, read: &ReadConfiguration, err: &StartupError) -> Self {
        let fingerprint = fingerprint(object, "text", read.bytes.as_deref().unwrap_or_default());
        Self::new(object, format_args!("it cannot be assembled: {err}"), Some(fingerprint))
    }

    /// The ops alert's reference: one per distinct text of the object.
    pub fn reference(&self) -> Option<String> {
        self.fingerprint.as_ref().map(|fingerprint| format!("config-{fingerprint}"))
    }

    /// What the health check and the ops channel say of it.
    pub fn describe(&self, serving: Serving) -> String {
        format!("{}: {}. Serving {} until it is fixed.", self.object, self.reason, serving.describe())
    }

    /// The log line, at ERROR, every time a worker finds it.
    pub fn log(&self, serving: Serving) {
        tracing::error!(
            object = %self.object,
            reason = %self.reason,
            serving = ?serving,
            "the assistant configuration cannot be used: {}",
            self.describe(serving)
        );
    }

    /// Whether it is about `read`'s text (trying that again would fail again).
    fn is_about(&self, read: &ReadConfiguration) -> bool {
        let text = fingerprint(&self.object, "text", read.bytes.as_deref().unwrap_or_default());
        self.fingerprint.as_deref() == Some(text.as_str())
    }
}

/// 16 hex digits of SHA-256 over the object, what is fingerprinted, and
/// the bytes.
fn fingerprint(object: &str, what: &str, bytes: &[u8]) -> String {
    let mut digest = sha2::Sha256::new();
    for part in [object.as_bytes(), b"\0", what.as_bytes(), b"\0", bytes] {
        digest.update(part);
    }
    hex::encode(&digest.finalize()[..8])
}

/// The configuration in `read` (the bucket's object, as
/// [`crate::assembly::read_config`] read it), or why it cannot be served.
/// `kept_text`: a configuration object was kept as the last good one; then
/// an object gone from the bucket is a problem (uploading `{}` serves the
/// defaults), not a quiet return to the defaults.
pub fn inspect(
    object: &str,
    read: Result<ReadConfiguration, StartupError>,
    kept_text: bool,
) -> Result<(AssistantConfig, ReadConfiguration), ConfigProblem> {
    let read = match read {
        Ok(read) => read,
        Err(StartupError::TooLarge { bytes, .. }) => {
            let reason =
                format_args!("it is {bytes} bytes, over the {MAX_CONFIG_BYTES} an assistant configuration may be");
            return Err(ConfigProblem::new(object, reason, Some(fingerprint(object, "size", &bytes.to_be_bytes()))));
        }
        Err(StartupError::Read { source, .. }) => {
            return Err(ConfigProblem::new(object, format_args!("it cannot be read: {source}"), None));
        }
        Err(err) => return Err(ConfigProblem::new(object, format_args!("it cannot be read: {err}"), None)),
    };
    match &read.bytes {
        None if kept_text => {
            let reason = "the object is gone from the bucket (upload `{}` to serve the defaults)";
            Err(ConfigProblem::new(object, reason, Some(fingerprint(object, "gone", b""))))
        }
        None => Ok((AssistantConfig::default(), read)),
        Some(bytes) => match AssistantConfig::check(bytes) {
            Ok(assistant) => Ok((assistant, read)),
            Err(issues) => Err(ConfigProblem::new(object, issues, Some(fingerprint(object, "text", bytes)))),
        },
    }
}

/// What a worker was built for.
#[derive(Debug)]
pub struct Started<T> {
    pub built: T,
    pub serving: Serving,
    /// The bucket's configuration, when it is what is served (to keep for
    /// later starts); none for a fallback.
    pub read: Option<ReadConfiguration>,
    /// Why the bucket's is not served.
    pub problem: Option<ConfigProblem>,
}

/// The last good configuration, read only when it is needed.
struct LastGood<L> {
    pending: Option<L>,
    found: Option<(AssistantConfig, ReadConfiguration)>,
}

impl<L: Future<Output = Option<(AssistantConfig, ReadConfiguration)>>> LastGood<L> {
    async fn get(&mut self) -> Option<&(AssistantConfig, ReadConfiguration)> {
        if let Some(pending) = self.pending.take() {
            self.found = pending.await;
        }
        self.found.as_ref()
    }
}

/// A starting worker: built by `assemble` for `read` (the bucket's
/// configuration, or its fresh kept copy) when that can be used and
/// assembles; else for `last_good` (the kept copy, however old:
/// [`KeptConfiguration::last_good`](crate::kept::KeptConfiguration::last_good)),
/// awaited only then, when that does; else for the defaults. Fails when a
/// read failed ([`StartupError::is_transient`]: the start is retried, as
/// any start whose store did not answer), or when not even the defaults
/// assemble.
pub async fn start<T, F, Fut>(
    object: &str,
    read: Result<ReadConfiguration, StartupError>,
    last_good: impl Future<Output = Option<(AssistantConfig, ReadConfiguration)>>,
    mut assemble: F,
) -> Result<Started<T>, StartupError>
where
    F: FnMut(AssistantConfig) -> Fut,
    Fut: Future<Output = Result<T, StartupError>>,
{
    let read = match read {
        Err(err) if err.is_transient() => return Err(err),
        read => read,
    };
    let mut last_good = LastGood { pending: Some(last_good), found: None };
    let kept_text = match &read {
        Ok(ReadConfiguration { bytes: None, .. }) => {
            last_good.get().await.is_some_and(|(_, kept)| kept.bytes.is_some())
        }
        _ => false,
    };
    let problem = match inspect(object, read, kept_text) {
        Ok((assistant, read)) => match assemble(assistant).await {
            Ok(built) => return Ok(Started { built, serving: Serving::Current, read: Some(read), problem: None }),
            Err(err) if err.is_transient() => return Err(err),
            Err(err) => ConfigProblem::not_assembled(object, &read, &err),
        },
        Err(problem) => problem,
    };
    // A kept "no object" is the defaults, tried last anyway; the text that
    // just failed would fail again.
    let last_good = last_good.get().await.filter(|(_, read)| read.bytes.is_some() && !problem.is_about(read));
    if let Some((assistant, read)) = last_good.cloned() {
        match assemble(assistant).await {
            Ok(built) => {
                let serving = Serving::LastGood { read_at: read.read_at };
                return Ok(Started { built, serving, read: None, problem: Some(problem) });
            }
            Err(err) => {
                tracing::error!(error = %err, "the last good configuration cannot be assembled either: the defaults")
            }
        }
    }
    let built = assemble(AssistantConfig::default()).await?;
    Ok(Started { built, serving: Serving::Defaults, read: None, problem: Some(problem) })
}

/// A running worker's re-read: built by `assemble` for the bucket's
/// configuration when it can be used, `None` when a read failed (the worker
/// keeps what it serves and tries at its next re-read, nothing reported),
/// or why it cannot be used (then the worker keeps what it serves too).
/// `serving_text`: what it serves came from an object (see [`inspect`]'s
/// `kept_text`).
pub async fn reassemble<T, Fut>(
    object: &str,
    read: Result<ReadConfiguration, StartupError>,
    serving_text: bool,
    assemble: impl FnOnce(AssistantConfig) -> Fut,
) -> Result<Option<(T, ReadConfiguration)>, ConfigProblem>
where
    Fut: Future<Output = Result<T, StartupError>>,
{
    if let Err(err) = &read
        && err.is_transient()
    {
        tracing::warn!(error = %err, config = %object, "the configuration could not be read again: kept what is served");
        return Ok(None);
    }
    let (assistant, read) = inspect(object, read, serving_text)?;
    match assemble(assistant).await {
        Ok(built) => Ok(Some((built, read))),
        Err(err) if err.is_transient() => {
            tracing::warn!(error = %err, config = %object, "the configuration could not be assembled again: kept what is served");
            Ok(None)
        }
        Err(err) => Err(ConfigProblem::not_assembled(object, &read, &err)),
    }
}

/// Tells the ops channel of `problem` once per distinct text of the object,
/// whichever worker finds it first: its fingerprint is the alert's
/// reference, which [`OpsAlerts`] posts once (a conditional put whose lost
/// answer the retry recognises as its own). None: a problem with no text
/// to tell apart is not told here (see [`ConfigProblem`]).
pub async fn report_once(alerts: &OpsAlerts, problem: &ConfigProblem, serving: Serving) -> Option<Raised> {
    let reference = problem.reference()?;
    let what = problem.describe(serving);
    let raised = alerts.raise(Alert { reference: &reference, what: &what, thread: None }).await;
    match &raised {
        Raised::Failed(reason) => tracing::error!(reason, %reference, "ops alert for the configuration not posted"),
        raised => tracing::info!(?raised, %reference, "ops alert for the configuration"),
    }
    Some(raised)
}

#[cfg(test)]
mod tests {
    use super::*;
    use assistant_core::ports::PortError;
    use std::sync::{Arc, Mutex};
    use testkit::clock::ManualClock;
    use testkit::memory::{LostAnswer, MemoryRecords};
    use testkit::slack_memory::MemoryPoster;

    const OBJECT: &str = "config/assistant.json";
    const GOOD: &str = r#"{"docs_prefix": "runbooks/"}"#;
    const MISSPELT: &str = r#"{"docs_prefix": "runbooks/", "tool_polcy": []}"#;

    fn read(text: &[u8], read_at: i64) -> ReadConfiguration {
        ReadConfiguration { bytes: Some(text.to_vec()), read_at }
    }

    fn last_good() -> Option<(AssistantConfig, ReadConfiguration)> {
        let kept = read(br#"{"docs_prefix": "kept/"}"#, 1_000);
        Some((kept.parse(OBJECT).unwrap(), kept))
    }

    /// An assembly that builds the docs prefix it was given, refusing the
    /// ones listed, and remembers what it was asked.
    #[derive(Default)]
    struct Assembly {
        refuse: Vec<&'static str>,
        asked: Mutex<Vec<String>>,
    }

    impl Assembly {
        fn refusing(refuse: &[&'static str]) -> Self {
            Self { refuse: refuse.to_vec(), ..Self::default() }
        }

        async fn build(&self, assistant: AssistantConfig) -> Result<String, StartupError> {
            self.asked.lock().unwrap().push(assistant.docs_prefix.clone());
            match self.refuse.contains(&assistant.docs_prefix.as_str()) {
                true => Err(StartupError::MissingPrompt(format!("{}prompt.md", assistant.docs_prefix))),
                false => Ok(assistant.docs_prefix),
            }
        }

        fn asked(&self) -> Vec<String> {
            self.asked.lock().unwrap().clone()
        }
    }

    async fn start_with(
        bucket: Result<ReadConfiguration, StartupError>,
        kept: Option<(AssistantConfig, ReadConfiguration)>,
        assembly: &Assembly,
    ) -> Started<String> {
        start(OBJECT, bucket, async { kept }, |assistant| assembly.build(assistant)).await.expect("started")
    }

    #[tokio::test]
    async fn a_good_bucket_configuration_is_served_and_kept_without_reading_the_last_good_one() {
        let assembly = Assembly::default();
        let bucket = Ok(read(GOOD.as_bytes(), 2_000));
        let started = start(OBJECT, bucket, async { unreachable!("not read") }, |a| assembly.build(a)).await.unwrap();
        assert_eq!((started.built.as_str(), started.serving, started.problem), ("runbooks/", Serving::Current, None));
        assert_eq!(started.read, Some(read(GOOD.as_bytes(), 2_000)), "to keep");
        assert_eq!(assembly.asked(), ["runbooks/"]);
    }

    #[tokio::test]
    async fn a_misspelt_field_serves_the_last_good_copy_however_old_and_names_the_field() {
        let assembly = Assembly::default();
        let started = start_with(Ok(read(MISSPELT.as_bytes(), 900_000)), last_good(), &assembly).await;
        assert_eq!((started.built.as_str(), started.serving), ("kept/", Serving::LastGood { read_at: 1_000 }));
        assert_eq!(started.read, None, "a broken configuration is never kept");
        let problem = started.problem.expect("reported");
        assert_eq!(problem.object, OBJECT);
        assert_eq!(problem.reason, "tool_polcy: unknown field `tool_polcy` (did you mean `tool_policy`?)");
        let said = problem.describe(started.serving);
        assert!(said.starts_with("config/assistant.json: tool_polcy: unknown field `tool_polcy`"), "{said}");
        assert!(
            said.ends_with("Serving the last configuration that parsed (read from the bucket at 1970-01-01T00:16:40Z) until it is fixed."),
            "{said}"
        );
    }

    #[tokio::test]
    async fn with_no_good_configuration_kept_the_defaults_are_served_and_said_to_be() {
        let assembly = Assembly::default();
        let started = start_with(Ok(read(b"{not json", 2_000)), None, &assembly).await;
        assert_eq!((started.built.as_str(), started.serving), ("docs/", Serving::Defaults));
        let said = started.problem.unwrap().describe(started.serving);
        assert!(said.contains("not JSON: key must be a string at line 1 column 2"), "{said}");
        assert!(said.contains("Serving the built-in defaults"), "{said}");
        // A kept "no object" is the defaults too.
        let none = ReadConfiguration { bytes: None, read_at: 1_000 };
        let started = start_with(Ok(read(b"[]", 2_000)), Some((AssistantConfig::default(), none)), &assembly).await;
        assert_eq!(started.serving, Serving::Defaults);
    }

    #[tokio::test]
    async fn a_configuration_that_parses_but_cannot_be_assembled_falls_back_and_so_does_a_failing_fallback() {
        let good_but_missing = br#"{"docs_prefix": "new/"}"#;
        // The bucket's names what is missing: the kept copy.
        let assembly = Assembly::refusing(&["new/"]);
        let started = start_with(Ok(read(good_but_missing, 2_000)), last_good(), &assembly).await;
        assert_eq!(started.serving, Serving::LastGood { read_at: 1_000 });
        let problem = started.problem.unwrap();
        assert!(problem.reason.contains("it cannot be assembled: the system prompt new/prompt.md"), "{problem:?}");
        // Neither assembles: the defaults.
        let assembly = Assembly::refusing(&["new/", "kept/"]);
        let started = start_with(Ok(read(good_but_missing, 2_000)), last_good(), &assembly).await;
        assert_eq!((started.built.as_str(), started.serving), ("docs/", Serving::Defaults));
        assert_eq!(assembly.asked(), ["new/", "kept/", "docs/"]);
        // The kept copy is the text that failed: not tried twice.
        let assembly = Assembly::refusing(&["kept/"]);
        let same = last_good().unwrap().1;
        let started = start_with(Ok(same.clone()), last_good(), &assembly).await;
        assert_eq!((started.serving, assembly.asked()), (Serving::Defaults, vec!["kept/".into(), "docs/".into()]));
        // Not even the defaults: the start fails, as it did before.
        let assembly = Assembly::refusing(&["kept/", "docs/"]);
        let bucket = Ok(read(MISSPELT.as_bytes(), 2_000));
        assert!(start(OBJECT, bucket, async { last_good() }, |assistant| assembly.build(assistant)).await.is_err());
    }

    #[tokio::test]
    async fn a_read_that_failed_fails_the_start_and_a_huge_or_deleted_object_falls_back() {
        let assembly = Assembly::default();
        // A throttled read (a burst of cold starts): the start fails and is
        // retried, as any start whose store did not answer; no fallback.
        let unreadable = StartupError::Read { key: OBJECT.into(), source: PortError::new("S3 GetObject", "throttled") };
        let failed = start(OBJECT, Err(unreadable), async { last_good() }, |a| assembly.build(a)).await;
        assert!(matches!(failed, Err(StartupError::Read { .. })), "{failed:?}");
        assert!(assembly.asked().is_empty(), "nothing assembled on a read that failed");
        // So is a secret the configuration names that could not be read.
        let secret = |_| async {
            Err::<String, _>(StartupError::SecretUnreadable {
                tool: "status".into(),
                name: "status-token".into(),
                source: PortError::new("Secrets Manager GetSecretValue", "throttled"),
            })
        };
        let failed = start(OBJECT, Ok(read(GOOD.as_bytes(), 2_000)), async { last_good() }, secret).await;
        assert!(matches!(failed, Err(StartupError::SecretUnreadable { .. })), "{failed:?}");

        let huge = StartupError::TooLarge { key: OBJECT.into(), bytes: 50_000_000 };
        let started = start_with(Err(huge), last_good(), &assembly).await;
        let problem = started.problem.unwrap();
        assert!(problem.reason.contains(&format!("it is 50000000 bytes, over the {MAX_CONFIG_BYTES}")), "{problem:?}");
        assert!(problem.reference().is_some());

        // Deleted while a configuration was kept: not a quiet return to the defaults.
        let gone = ReadConfiguration { bytes: None, read_at: 2_000 };
        let started = start_with(Ok(gone.clone()), last_good(), &assembly).await;
        assert_eq!(started.serving, Serving::LastGood { read_at: 1_000 });
        assert!(started.problem.unwrap().reason.contains("gone from the bucket (upload `{}` to serve the defaults)"));
        // No object and nothing kept: a deployment on the defaults, no problem.
        let started = start_with(Ok(gone), None, &assembly).await;
        assert_eq!((started.serving, started.problem), (Serving::Current, None));
    }

    #[tokio::test]
    async fn a_running_worker_keeps_what_it_serves_until_the_object_is_fixed() {
        let assembly = Assembly::default();
        let broken = reassemble(OBJECT, Ok(read(MISSPELT.as_bytes(), 2_000)), true, |a| assembly.build(a)).await;
        assert!(broken.unwrap_err().reason.contains("tool_polcy"));
        let gone = ReadConfiguration { bytes: None, read_at: 2_000 };
        assert!(reassemble(OBJECT, Ok(gone.clone()), true, |a| assembly.build(a)).await.is_err());
        let (built, _) = reassemble(OBJECT, Ok(gone), false, |a| assembly.build(a)).await.unwrap().unwrap();
        assert_eq!(built, "docs/", "serving the defaults already: no object is the defaults");
        let (built, fixed) =
            reassemble(OBJECT, Ok(read(GOOD.as_bytes(), 2_300)), true, |a| assembly.build(a)).await.unwrap().unwrap();
        assert_eq!((built.as_str(), fixed.read_at), ("runbooks/", 2_300));
        let refusing = Assembly::refusing(&["runbooks/"]);
        let failed = reassemble(OBJECT, Ok(read(GOOD.as_bytes(), 2_300)), true, |a| refusing.build(a)).await;
        assert!(failed.unwrap_err().reason.contains("cannot be assembled"));
        // A read that failed: kept what is served, nothing to report.
        let unreadable = StartupError::Read { key: OBJECT.into(), source: PortError::new("S3 GetObject", "timeout") };
        assert!(matches!(reassemble(OBJECT, Err(unreadable), true, |a| assembly.build(a)).await, Ok(None)));
    }

    #[test]
    fn a_problem_never_shows_a_value_from_the_text_and_stays_short() {
        let leaky = br#"{"approvals": {"thread_grants": "Bearer xoxb-1234567890-abcdefghijklmnop"}}"#;
        let problem = inspect(OBJECT, Ok(read(leaky, 1)), false).unwrap_err();
        assert!(!problem.describe(Serving::Defaults).contains("xoxb"), "{problem:?}");
        let fields: String = (0..400).map(|n| format!(r#""unknown_{n}": 1,"#)).collect();
        let many = format!("{{{fields} \"docs_prefix\": \"x\"}}");
        let problem = inspect(OBJECT, Ok(read(many.as_bytes(), 1)), false).unwrap_err();
        assert_eq!(problem.reason.chars().count(), MAX_REASON_CHARS + 1, "cut, with an ellipsis");
    }

    #[test]
    fn the_same_text_is_the_same_problem_and_another_text_another() {
        let problem = |text: &str| inspect(OBJECT, Ok(read(text.as_bytes(), 1)), true).unwrap_err().reference();
        assert_eq!(problem(MISSPELT), problem(MISSPELT));
        assert_ne!(problem(MISSPELT), problem(r#"{"tool_polcy": []}"#));
        let other = inspect("config/other.json", Ok(read(MISSPELT.as_bytes(), 1)), true).unwrap_err();
        assert_ne!(other.reference(), problem(MISSPELT), "another object");
    }

    struct Ops {
        slack: Arc<MemoryPoster>,
        records: Arc<MemoryRecords>,
        clock: Arc<ManualClock>,
        alerts: OpsAlerts,
    }

    fn ops() -> Ops {
        let (slack, records) = (Arc::new(MemoryPoster::default()), Arc::new(MemoryRecords::default()));
        let clock = Arc::new(ManualClock::at(1_763_800_000));
        let channel = slack::ChannelId::new("C0OPS");
        let alerts = OpsAlerts::new(channel, slack.clone(), records.clone(), clock.clone());
        Ops { slack, records, clock, alerts }
    }

    #[tokio::test]
    async fn the_ops_channel_hears_of_each_broken_text_once_whichever_worker_finds_it() {
        let ops = ops();
        let misspelt = inspect(OBJECT, Ok(read(MISSPELT.as_bytes(), 1)), true).unwrap_err();
        let serving = Serving::LastGood { read_at: 1_000 };
        // Every re-assembly of every worker, an hour of them.
        for minute in 0..60 {
            ops.clock.set(1_763_800_000 + minute * 60);
            report_once(&ops.alerts, &misspelt, serving).await.expect("told");
        }
        let alerts = ops.slack.alerts();
        assert_eq!(alerts.len(), 1, "{alerts:#?}");
        assert!(
            alerts[0].1.contains("config/assistant.json: tool_polcy: unknown field `tool_polcy`"),
            "{}",
            alerts[0].1
        );
        assert!(alerts[0].1.contains("Serving the last configuration that parsed"), "{}", alerts[0].1);

        // Another broken upload is told; the unreadable object is left to the health check.
        let other = inspect(OBJECT, Ok(read(b"{", 2)), true).unwrap_err();
        assert!(matches!(report_once(&ops.alerts, &other, serving).await, Some(Raised::Posted)));
        let unreadable = StartupError::Read { key: OBJECT.into(), source: PortError::new("S3 GetObject", "timeout") };
        let unreadable = inspect(OBJECT, Err(unreadable), true).unwrap_err();
        assert!(report_once(&ops.alerts, &unreadable, serving).await.is_none());
        assert_eq!(ops.slack.alerts().len(), 2);
    }

    #[tokio::test]
    async fn a_report_whose_record_was_written_but_its_answer_lost_is_posted_once() {
        for lost in [LostAnswer::Error, LostAnswer::RetryRefused] {
            let ops = ops();
            let misspelt = inspect(OBJECT, Ok(read(MISSPELT.as_bytes(), 1)), true).unwrap_err();
            // The first write is the once-record: applied, its answer lost.
            ops.records.lose_answers([lost]);
            let raised = report_once(&ops.alerts, &misspelt, Serving::Defaults).await;
            assert!(matches!(raised, Some(Raised::Posted)), "{lost:?}: {raised:?}");
            let again = report_once(&ops.alerts, &misspelt, Serving::Defaults).await;
            assert!(matches!(again, Some(Raised::Duplicate)), "{lost:?}: {again:?}");
            assert_eq!(ops.slack.alerts().len(), 1, "{lost:?}");
        }
    }
}
