//! The answer streamed into Slack as the model writes it.
//!
//! One stream per turn, ever: before `chat.startStream` the worker saves a
//! [`StreamRecord`] (its own item), and the message's `ts` right after, so
//! a redelivered or continued turn finds the record and streams nothing
//! more; the responder then makes that one message the saved answer.
//!
//! Text goes through a [`StreamRedactor`]: nothing is appended whose
//! redaction could still change. Appends are batched (at most one per
//! [`APPEND_INTERVAL`], each under Slack's 12,000 characters); tool steps
//! show as task cards. When the turn settles in the same invocation the
//! stream is stopped with the answer's footer (the AI line and feedback
//! buttons) and the metadata that names it, and the record keeps a digest
//! of what was streamed; the responder compares it with the saved answer.
//!
//! Whatever Slack refuses (no stream in that conversation, a missing scope,
//! a stream no longer streaming) only ends the streaming: the responder
//! delivers the answer the usual way. Slack's rate limits never hold the
//! worker: a stream's calls are not retried in place. Each stream start
//! takes one of the workspace's starts for the minute
//! ([`STREAM_STARTS_PER_MINUTE`], below Slack's Tier 2 for `chat.startStream`
//! and `chat.stopStream`); a turn that finds them taken streams nothing, its
//! status line shows progress and the responder posts the answer. An
//! append Slack asks to wait for (429) keeps its text, sent with the next
//! append after `Retry-After`; task cards that must wait are left out.
//!
//! A stream Slack started whose `ts` never reached the record (the process
//! was killed during `chat.startStream`, or its answer was lost) would stay
//! empty and streaming above the answer. `chat.startStream` takes no
//! metadata to find it by, so the record says a start began; a later
//! invocation of the turn (or this one, after a lost answer) finds the
//! bot's own empty message without metadata posted after the question,
//! deletes it before the answer is delivered, and records that no message
//! is left. Turns in one thread run one at a time (the FIFO group), so the
//! only such message is this turn's.

use assistant_core::Clock;
use assistant_core::ThreadRef;
use assistant_core::delivery::{MessageKey, MessageMetadata, PostError, StreamRecord, stream_digest};
use assistant_core::feedback::answer_footer;
use assistant_core::model::TextSink;
use assistant_core::ports::{AgentSlack, StreamChunk, TaskSource, TaskStatus, TaskUpdate};
use assistant_core::store::StreamLog;
use assistant_core::turn::{Content, Message, ToolOutput, ToolResult, ToolStatus, ToolUse, TurnId};
use async_trait::async_trait;
use redact::{Redactor, StreamRedactor};
use slack::UserId;
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// The least time between two appends of one stream. Slack takes 100
/// appends a minute from a workspace (`chat.appendStream` is Tier 4): at one
/// a second a stream leaves room for others beside it, and an append Slack
/// asks to wait for keeps its text for a later one.
pub const APPEND_INTERVAL: Duration = Duration::from_millis(1_000);
/// Slack's limit on the markdown of one append.
pub const APPEND_CHARS: usize = 12_000;
/// The streams a workspace starts a minute, across every worker: below
/// Slack's Tier 2 (20 a minute) for `chat.startStream`, and for the
/// `chat.stopStream` that ends each, with room for a turn that stops late.
pub const STREAM_STARTS_PER_MINUTE: u64 = 15;

enum State {
    /// Nothing streamed yet in this invocation.
    NotStarted,
    /// This invocation streams nothing (an earlier one tried, or Slack
    /// refused).
    Off,
    Live(Box<Live>),
}

struct Live {
    ts: slack::Ts,
    record: StreamRecord,
    redactor: StreamRedactor<'static>,
    /// Everything appended so far (redacted, as Slack shows it).
    streamed: String,
    /// Released text Slack has not taken yet (it asked to wait).
    held: String,
    /// Slack's `Retry-After`: no append before then.
    not_before: Option<Instant>,
    last_append: Option<Instant>,
    /// A step's text follows earlier text: the two are separated as the
    /// saved answer separates them.
    separate: bool,
    /// An append failed: nothing more goes out, and the stream is not
    /// complete (the responder replaces the message).
    broken: bool,
}

/// One invocation's stream of one turn's answer.
pub struct AnswerStream<'w> {
    agent: &'w dyn AgentSlack,
    log: &'w StreamLog,
    clock: &'w dyn Clock,
    turn_id: TurnId,
    thread: ThreadRef,
    /// Who asked: Slack streams to them outside a DM.
    recipient: UserId,
    /// The question's `ts`: a stream of this turn's is posted after it.
    asked_at: slack::Ts,
    state: State,
    /// When the first text reached Slack (Unix milliseconds).
    pub first_text_at_ms: Option<i64>,
    /// Saves of the stream record, for the turn's cost.
    pub record_writes: u64,
}

impl<'w> AnswerStream<'w> {
    pub fn new(
        agent: &'w dyn AgentSlack,
        log: &'w StreamLog,
        clock: &'w dyn Clock,
        turn_id: TurnId,
        thread: ThreadRef,
        recipient: UserId,
        asked_at: slack::Ts,
    ) -> Self {
        Self {
            agent,
            log,
            clock,
            turn_id,
            thread,
            recipient,
            asked_at,
            state: State::NotStarted,
            first_text_at_ms: None,
            record_writes: 0,
        }
    }

    /// A stream that streams nothing: the answer is checked whole before
    /// any of it is posted (a guardrail on the answer), then delivered by
    /// the responder.
    pub fn silent(mut self) -> Self {
        self.state = State::Off;
        self
    }

    /// Starts the stream unless this turn had one: the record first, then
    /// `chat.startStream`, then its `ts` in the record, before any append.
    async fn start(&mut self) {
        if !matches!(self.state, State::NotStarted) {
            return;
        }
        self.state = State::Off;
        let mut record = match self.log.load(&self.turn_id).await {
            Ok(record) if record.version == 0 => record,
            Ok(mut record) => {
                if record.may_have_unrecorded_stream() {
                    self.close_unrecorded(&mut record).await;
                } else {
                    info!("this turn streamed before (or Slack refused it): the responder finishes the answer");
                }
                return;
            }
            Err(err) => {
                warn!(error = %err, "stream record unreadable: not streaming");
                return;
            }
        };
        match self.log.take_start(&self.thread.team, self.clock.now_unix(), STREAM_STARTS_PER_MINUTE).await {
            Ok(true) => {}
            Ok(false) => {
                info!("the workspace's stream starts for this minute are taken: the answer is posted when done");
                return;
            }
            Err(err) => {
                warn!(error = %err, "the workspace's stream starts could not be counted: not streaming");
                return;
            }
        }
        // The counter's write and the record's, for the turn's cost.
        self.record_writes += 2;
        record.updated_at = self.clock.now_unix();
        if let Err(err) = self.log.save(&self.turn_id, &mut record).await {
            warn!(error = %err, "stream not recorded: not streaming");
            return;
        }
        let ts = match self.agent.start_stream(&self.thread, Some(&self.recipient)).await {
            Ok(ts) => ts,
            // Slack said no (or to wait): no message was made.
            Err(err @ (PostError::Rejected { .. } | PostError::RateLimited { .. })) => {
                info!(error = %err, "Slack did not start a stream: the answer is posted when done");
                record.no_message = true;
                self.save_quietly(&mut record).await;
                return;
            }
            // Slack may have started one: look for it now.
            Err(err) => {
                info!(error = %err, "a stream's start has an unknown outcome: looking for it in the thread");
                self.close_unrecorded(&mut record).await;
                return;
            }
        };
        record.ts = Some(ts.clone());
        record.updated_at = self.clock.now_unix();
        self.record_writes += 1;
        if let Err(err) = self.log.save(&self.turn_id, &mut record).await {
            // Without its ts on record, nothing may go into this message,
            // and nobody else can find it: take it back. The answer is
            // posted the usual way.
            warn!(error = %err, "stream's ts not recorded: deleting the empty stream");
            if let Err(err) = self.agent.delete_message(&self.thread, &ts).await {
                warn!(error = %err, ts = %ts, "an empty streamed message could not be deleted");
            }
            return;
        }
        info!(ts = %ts, "streaming the answer");
        self.state = State::Live(Box::new(Live {
            ts,
            record,
            redactor: StreamRedactor::new(Redactor::global()),
            streamed: String::new(),
            held: String::new(),
            not_before: None,
            last_append: None,
            separate: false,
            broken: false,
        }));
    }

    /// Deletes this turn's stream that Slack started with its `ts` never
    /// recorded, if it is in the thread, then records that no message is
    /// left. Best effort: when Slack cannot be read or refuses, the record
    /// is left as it was and the turn's next invocation looks again.
    async fn close_unrecorded(&mut self, record: &mut StreamRecord) {
        let found = match self.agent.unrecorded_streams(&self.thread, &self.asked_at).await {
            Ok(found) => found,
            Err(err) => {
                warn!(error = %err, "the thread could not be searched for an unrecorded stream");
                return;
            }
        };
        for ts in &found {
            if let Err(err) = self.agent.delete_message(&self.thread, ts).await {
                warn!(error = %err, ts = %ts, "an unrecorded stream could not be deleted");
                return;
            }
            info!(ts = %ts, "an unrecorded stream of this turn's, left empty by an earlier attempt, deleted");
        }
        record.no_message = true;
        self.save_quietly(record).await;
    }

    /// Saves the record; a failure is only logged (the next invocation
    /// acts on the record as it stood).
    async fn save_quietly(&mut self, record: &mut StreamRecord) {
        record.updated_at = self.clock.now_unix();
        self.record_writes += 1;
        if let Err(err) = self.log.save(&self.turn_id, record).await {
            warn!(error = %err, "stream record not saved");
        }
    }

    /// An invocation that streamed nothing: an unrecorded stream an
    /// earlier one may have left is closed before the turn goes on or its
    /// answer is delivered.
    pub async fn close_left_behind(&mut self) {
        if !matches!(self.state, State::NotStarted) {
            return;
        }
        self.state = State::Off;
        match self.log.load(&self.turn_id).await {
            Ok(mut record) if record.may_have_unrecorded_stream() => self.close_unrecorded(&mut record).await,
            Ok(_) => {}
            Err(err) => warn!(error = %err, "stream record unreadable"),
        }
    }

    /// Appends what the redactor released (all of it when `whole`), with
    /// what an earlier append had to keep. Where Slack asks to wait, the
    /// text is kept for the next append after it; at the last one (`whole`)
    /// the stream ends there and the responder posts the whole answer.
    async fn flush(&mut self, whole: bool) {
        let State::Live(live) = &mut self.state else { return };
        if live.broken {
            return;
        }
        let released = if whole { live.redactor.finish() } else { live.redactor.release() };
        if !released.is_empty() {
            live.held.push_str(&slack::text::unpinging_markdown(&released));
        }
        if live.held.is_empty() {
            return;
        }
        if live.not_before.is_some_and(|at| Instant::now() < at) {
            if whole {
                info!("Slack asks the stream to wait past its last append: the responder posts the whole answer");
                live.broken = true;
            }
            return;
        }
        let text = std::mem::take(&mut live.held);
        let mut sent = 0;
        for piece in pieces(&text, APPEND_CHARS) {
            let chunk = [StreamChunk::Text(piece.to_owned())];
            match self.agent.append_stream(&self.thread, &live.ts, &chunk).await {
                Ok(()) => {}
                Err(PostError::RateLimited { retry_after }) if !whole => {
                    info!(
                        retry_after_ms = retry_after.as_millis() as u64,
                        "Slack asks the stream to wait: its text is kept for the next append"
                    );
                    live.not_before = Some(Instant::now() + retry_after);
                    live.held = text[sent..].to_owned();
                    return;
                }
                Err(err) => {
                    warn!(error = %err, "Slack refused an append: the responder replaces the streamed message");
                    live.broken = true;
                    return;
                }
            }
            live.streamed.push_str(piece);
            sent += piece.len();
        }
        live.last_append = Some(Instant::now());
        if self.first_text_at_ms.is_none() {
            self.first_text_at_ms = Some(self.clock.now_millis());
        }
    }

    /// The model's step ended: its text goes out whole, and the next
    /// step's text is separated from it.
    pub async fn step_done(&mut self) {
        self.flush(true).await;
        if let State::Live(live) = &mut self.state {
            live.separate = !live.streamed.is_empty();
        }
    }

    /// Task cards for a step's tool calls, in one append, each with the
    /// sources its result named.
    pub async fn tasks(&mut self, updates: Vec<TaskUpdate>) {
        if updates.is_empty() {
            return;
        }
        self.start().await;
        let State::Live(live) = &mut self.state else { return };
        if live.broken {
            return;
        }
        // Cards are progress: where Slack asks to wait, these are left out.
        if live.not_before.is_some_and(|at| Instant::now() < at) {
            return;
        }
        let chunks: Vec<StreamChunk> = updates.into_iter().map(StreamChunk::Task).collect();
        match self.agent.append_stream(&self.thread, &live.ts, &chunks).await {
            Ok(()) => {}
            Err(PostError::RateLimited { retry_after }) => live.not_before = Some(Instant::now() + retry_after),
            Err(err) => {
                warn!(error = %err, "Slack refused a task update: the responder replaces the streamed message");
                live.broken = true;
            }
        }
    }

    /// The turn settled in this invocation: the rest of the text, then the
    /// stream stopped with the answer's footer, and the record told what
    /// was streamed.
    pub async fn finish(&mut self) {
        self.close_left_behind().await;
        let footer = answer_footer(&self.turn_id);
        let Some(mut live) = self.stop(&footer).await else { return };
        if live.broken {
            return;
        }
        live.record.completed = Some(stream_digest(&live.streamed));
        live.record.updated_at = self.clock.now_unix();
        self.record_writes += 1;
        if let Err(err) = self.log.save(&self.turn_id, &mut live.record).await {
            warn!(error = %err, "streamed answer not recorded: the responder replaces the message");
        }
    }

    /// The turn waits (for a human, or the next invocation): the stream
    /// stops where it is; the responder finishes the message later.
    pub async fn pause(&mut self) {
        self.close_left_behind().await;
        self.stop(&[]).await;
    }

    /// The rest of the text, then `chat.stopStream` with `blocks` and the
    /// answer's metadata; the stream as it ended, if Slack stopped it. This
    /// invocation streams nothing more either way.
    async fn stop(&mut self, blocks: &[serde_json::Value]) -> Option<Box<Live>> {
        self.flush(true).await;
        let State::Live(live) = std::mem::replace(&mut self.state, State::Off) else { return None };
        let metadata = MessageMetadata::new(&self.turn_id, &MessageKey::Answer { part: 1, of: 1 });
        match self.agent.stop_stream(&self.thread, &live.ts, blocks, &metadata).await {
            Ok(()) => Some(live),
            Err(err) => {
                warn!(error = %err, "stream not stopped: the responder replaces the streamed message");
                None
            }
        }
    }
}

#[async_trait]
impl TextSink for AnswerStream<'_> {
    async fn text(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.start().await;
        let State::Live(live) = &mut self.state else { return };
        if live.separate {
            live.redactor.push("\n\n");
            live.separate = false;
        }
        live.redactor.push(delta);
        if live.last_append.is_none_or(|at| at.elapsed() >= APPEND_INTERVAL) {
            self.flush(false).await;
        }
    }
}

/// `text` in pieces of at most `limit` characters (on char boundaries).
fn pieces(text: &str, limit: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.char_indices().nth(limit).map_or(rest.len(), |(at, _)| at);
        pieces.push(&rest[..end]);
        rest = &rest[end..];
    }
    pieces
}

/// Sources shown on one card at most.
const MAX_SOURCES: usize = 10;

/// Slack's limit on a card's `details` and `output`.
const CARD_LINE: usize = 256;

/// One line for a card: redacted, whitespace folded, cut to Slack's limit.
fn card_line(text: &str) -> Option<String> {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let redacted = Redactor::global().redact(&folded).into_owned();
    let line: String = if redacted.chars().count() > CARD_LINE {
        redacted.chars().take(CARD_LINE - 1).collect::<String>() + "…"
    } else {
        redacted
    };
    (!line.is_empty()).then_some(line)
}

/// A tool step's card as it starts: the tool and what it runs with (the
/// input's keys and values, one line).
pub fn started(call: &ToolUse) -> TaskUpdate {
    let details = match &call.input {
        serde_json::Value::Object(fields) => fields
            .iter()
            .map(|(key, value)| match value {
                serde_json::Value::String(text) => format!("{key}: {text}"),
                other => format!("{key}: {other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    };
    TaskUpdate {
        id: call.id.clone(),
        title: call.name.clone(),
        status: TaskStatus::InProgress,
        sources: Vec::new(),
        details: card_line(&details),
        output: None,
    }
}

/// A tool step's card as it ends: how, its sources, and the first line of
/// what it returned (or of its error).
pub fn ended(call: &ToolUse, result: &ToolResult) -> TaskUpdate {
    let ok = result.status == ToolStatus::Success;
    let first = match &result.output {
        ToolOutput::Text(text) => text.lines().find(|line| !line.trim().is_empty()).unwrap_or_default().to_owned(),
        ToolOutput::Json(value) => value.to_string(),
        ToolOutput::Stored { preview, bytes, .. } => {
            format!("{} ({bytes} bytes)", preview.lines().next().unwrap_or_default())
        }
        ToolOutput::Task(task) => {
            let said = task.message.as_deref().map(|message| format!(": {message}")).unwrap_or_default();
            return TaskUpdate { output: card_line(&format!("running on the server{said}")), ..started(call) };
        }
    };
    TaskUpdate {
        status: if ok { TaskStatus::Complete } else { TaskStatus::Error },
        sources: sources_of(&result.output),
        output: card_line(&first),
        ..started(call)
    }
}

/// The most sources an answer ends with.
const ANSWER_SOURCES: usize = 6;

/// The line an answer ends with: the sources its tools used (links a
/// knowledge base or tool returned, runbooks read), those the answer does
/// not already cite, at most [`ANSWER_SOURCES`]; none when there are none.
/// Titles are a tool's words: markup characters and line breaks are dropped
/// so a title cannot make a link, a mention or emphasis of its own, it is
/// cut to 80 characters, and the link's real host follows it
/// (`[Pool tuning · wiki.example.com](https://wiki.example.com/pool)`), so a
/// title cannot pass one site off as another.
pub fn sources_line(transcript: &[Message], answer: &str) -> Option<String> {
    let succeeded: std::collections::HashSet<&str> = transcript
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|content| match content {
            Content::ToolResult(result) if result.status == ToolStatus::Success => Some(result.tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    let mut cited: Vec<(String, String)> = Vec::new();
    for content in transcript.iter().flat_map(|message| &message.content) {
        match content {
            Content::ToolResult(result) if result.status == ToolStatus::Success => {
                for source in sources_of(&result.output) {
                    let host = url::Url::parse(&source.url).ok().and_then(|url| url.host_str().map(str::to_owned));
                    let label = format!("{} · {}", plain_title(&source.title), host.unwrap_or_default());
                    cited.push((source.url.clone(), format!("[{label}]({})", source.url)));
                }
            }
            Content::ToolUse(call) if call.name == "read_doc" && succeeded.contains(call.id.as_str()) => {
                if let Some(path) = call.input["path"].as_str().filter(|path| !path.contains('`')) {
                    cited.push((path.to_owned(), format!("`{path}`")));
                }
            }
            _ => {}
        }
    }
    let mut seen = std::collections::HashSet::new();
    let listed: Vec<String> = cited
        .into_iter()
        .filter(|(what, _)| !answer.contains(what.as_str()) && seen.insert(what.clone()))
        .map(|(_, shown)| shown)
        .take(ANSWER_SOURCES)
        .collect();
    (!listed.is_empty()).then(|| format!("*Sources:* {}", listed.join(" · ")))
}

/// A source's title as plain words: no markup, and no `·`, so the one
/// before the host is always ours.
fn plain_title(title: &str) -> String {
    let kept: String = title.chars().filter(|c| !"[]()<>*_`|\n\r·".contains(*c)).collect();
    let kept = kept.split_whitespace().collect::<Vec<_>>().join(" ");
    if kept.is_empty() { "source".to_owned() } else { kept.chars().take(80).collect() }
}

/// The sources a tool's result names (`"sources": [{"title", "url"}]`, as
/// the knowledge-base tools answer): web links only, a few, titles short
/// and unable to mention anyone (no `<`, `>` or line breaks).
pub fn sources_of(output: &ToolOutput) -> Vec<TaskSource> {
    let ToolOutput::Json(value) = output else { return Vec::new() };
    value["sources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|source| {
            let url = web_link(source["url"].as_str()?)?;
            let title = source["title"].as_str().filter(|title| !title.trim().is_empty()).unwrap_or(&url);
            let title: String =
                title.chars().filter(|c| !"<>".contains(*c)).map(|c| if c.is_control() { ' ' } else { c }).collect();
            Some(TaskSource { title: title.trim().chars().take(100).collect(), url })
        })
        .take(MAX_SOURCES)
        .collect()
}

/// `url` as a link may carry it: an `http`/`https` URL with a host and no
/// user name or password, in the URL's own spelling, with the characters
/// that could end a Markdown or Slack link (`( ) [ ] < > |`, spaces)
/// percent-encoded. `None` for anything else.
fn web_link(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    let web = matches!(parsed.scheme(), "http" | "https") && parsed.host_str().is_some();
    if !web || !parsed.username().is_empty() || parsed.password().is_some() {
        return None;
    }
    let mut link = String::with_capacity(parsed.as_str().len());
    for c in parsed.as_str().chars() {
        match c {
            '(' | ')' | '[' | ']' | '<' | '>' | '|' | ' ' => link.push_str(&format!("%{:02X}", c as u32)),
            c => link.push(c),
        }
    }
    Some(link)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_goes_in_pieces_under_the_limit() {
        let text = "é".repeat(25_000);
        let parts = pieces(&text, APPEND_CHARS);
        assert_eq!(parts.iter().map(|p| p.chars().count()).collect::<Vec<_>>(), [12_000, 12_000, 1_000]);
        assert_eq!(parts.concat(), text);
        assert!(pieces("", APPEND_CHARS).is_empty());
    }

    fn call(id: &str, name: &str, input: serde_json::Value) -> Content {
        Content::ToolUse(ToolUse { id: id.into(), name: name.into(), input })
    }

    fn result(id: &str, status: ToolStatus, output: serde_json::Value) -> Content {
        Content::ToolResult(ToolResult { tool_use_id: id.into(), status, output: ToolOutput::Json(output) })
    }

    #[test]
    fn an_answer_ends_with_the_sources_its_tools_used_once_each_and_not_those_it_cites() {
        use assistant_core::turn::Role;
        let kb = serde_json::json!({"results": [], "sources": [
            {"title": "Checkout SLOs", "url": "https://wiki.example.com/slo"},
            {"title": "Pool tuning](https://evil.example) [x", "url": "https://wiki.example.com/pool"},
            {"title": "", "url": "https://wiki.example.com/slo"},
            {"title": "local", "url": "file:///etc/passwd"}
        ]});
        let transcript = vec![
            Message {
                role: Role::Assistant,
                content: vec![
                    call("k", "search_kb", serde_json::json!({"query": "pool"})),
                    call("d", "read_doc", serde_json::json!({"path": "runbooks/checkout.md"})),
                    call("x", "read_doc", serde_json::json!({"path": "runbooks/missing.md"})),
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    result("k", ToolStatus::Success, kb),
                    result("d", ToolStatus::Success, serde_json::json!("…")),
                    result("x", ToolStatus::Error, serde_json::json!("no such doc")),
                ],
            },
        ];
        let line = sources_line(&transcript, "The pool is exhausted; see <https://wiki.example.com/slo>.").unwrap();
        assert_eq!(
            line,
            "*Sources:* `runbooks/checkout.md` · [Pool tuninghttps://evil.example x · wiki.example.com](https://wiki.example.com/pool)"
        );
        assert_eq!(sources_line(&transcript[..1], "anything"), None, "no results, no sources");
    }

    #[test]
    fn a_tools_sources_cannot_disguise_a_link_add_one_of_their_own_or_ping() {
        use assistant_core::turn::Role;
        // GIVEN a tool result whose sources were written by someone hostile
        let hostile = serde_json::json!({"sources": [
            {"title": "bank.example.com · bank.example.com", "url": "https://evil.example/login"},
            {"title": "runbook", "url": "https://wiki.example.com/x) **URGENT** [Log in](https://evil.example/y"},
            {"title": "creds", "url": "https://admin:hunter2@wiki.example.com/z"},
            {"title": "<!channel> look\nnow", "url": "https://wiki.example.com/w"},
            {"title": "script", "url": "javascript:alert(1)"}
        ]});
        let transcript = vec![
            Message { role: Role::Assistant, content: vec![call("k", "search_kb", serde_json::json!({}))] },
            Message { role: Role::User, content: vec![result("k", ToolStatus::Success, hostile.clone())] },
        ];

        // WHEN the answer's sources line is written
        let line = sources_line(&transcript, "The answer.").unwrap();

        // THEN each link shows its real host, none closes early, none
        // carries credentials or another scheme, and none pings
        assert_eq!(
            line,
            "*Sources:* [bank.example.com bank.example.com · evil.example](https://evil.example/login) · \
             [runbook · wiki.example.com](https://wiki.example.com/x%29%20**URGENT**%20%5BLog%20in%5D%28https://evil.example/y) · \
             [!channel look now · wiki.example.com](https://wiki.example.com/w)"
        );
        // AND the task card's sources are the same links, titles unable to mention
        let cards = sources_of(&ToolOutput::Json(hostile));
        assert_eq!(cards.len(), 3, "{cards:?}");
        assert!(cards.iter().all(|source| !source.title.contains('<') && !source.url.contains(')')), "{cards:?}");
    }
}
