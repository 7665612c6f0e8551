//! Slack's agent surface as the worker sees it, in memory, behaving as
//! Slack does: a stream outside a DM needs its recipient, nothing can be
//! appended once a stream is stopped (`message_not_in_streaming_state`),
//! and one call's markdown is at most 12,000 characters (`msg_too_long`).
//! Every call is recorded; failures are scripted per method.

use crate::slack_memory::Scripted;
use assistant_core::ThreadRef;
use assistant_core::delivery::{MessageKey, MessageMetadata, PostError};
use assistant_core::incidents::BotIdentity;
use assistant_core::ports::{AgentSlack, FileUpload, StreamChunk, SuggestedPrompt, TaskSource, TaskStatus, TaskUpdate};
use async_trait::async_trait;
use serde_json::Value;
use slack::{ChannelId, TeamId, Ts, UserId};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

pub const SET_PROMPTS: &str = "assistant.threads.setSuggestedPrompts";
pub const SET_TITLE: &str = "assistant.threads.setTitle";
pub const START_STREAM: &str = "chat.startStream";
pub const APPEND_STREAM: &str = "chat.appendStream";
pub const STOP_STREAM: &str = "chat.stopStream";
pub const DELETE: &str = "chat.delete";
/// `conversations.replies`, looking for the bot's unrecorded streams.
pub const UNRECORDED_STREAMS: &str = "conversations.replies (unrecorded streams)";
pub const PUBLISH_HOME: &str = "views.publish";
pub const UPLOAD: &str = "files.getUploadURLExternal";
pub const POST: &str = "chat.postMessage";
/// `chat.postMessage` with metadata (an incident's messages).
pub const POST_TAGGED: &str = "chat.postMessage (tagged)";
pub const FIND_TAGGED: &str = "conversations.history/replies (tagged)";
pub const AUTH_TEST: &str = "auth.test";
pub const OPEN_DM: &str = "conversations.open";
pub const PERMALINK: &str = "chat.getPermalink";
/// A POST to a slash command's `response_url`.
pub const RESPOND: &str = "response_url";

/// The most markdown one stream call may carry.
pub const STREAM_TEXT_LIMIT: usize = 12_000;

/// A streamed message as it now stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    pub thread: ThreadRef,
    pub ts: Ts,
    pub recipient: Option<UserId>,
    /// The markdown appended so far, in order.
    pub text: String,
    /// Each task's id and its latest title and status, in order of first
    /// appearance.
    pub tasks: Vec<(String, String, TaskStatus)>,
    /// The sources each task's updates carried: `(task id, sources)`.
    pub sources: Vec<(String, Vec<TaskSource>)>,
    /// Each task's card as it now stands: (what it ran with, what came of it).
    pub cards: std::collections::BTreeMap<String, (Option<String>, Option<String>)>,
    pub appends: usize,
    /// When the first text was appended (for the benchmark's timing).
    pub first_text_at: Option<std::time::Instant>,
    pub stopped: bool,
    pub blocks: Vec<Value>,
    pub metadata: Option<MessageMetadata>,
}

/// Prompts set: where (the DM, and a thread for assistant threads), which.
pub type PromptsSet = (ChannelId, Option<Ts>, Vec<SuggestedPrompt>);

#[derive(Debug, Default)]
pub struct MemoryAgent {
    calls: Mutex<Vec<&'static str>>,
    scripts: Mutex<HashMap<&'static str, VecDeque<Scripted>>>,
    prompts: Mutex<Vec<PromptsSet>>,
    titles: Mutex<Vec<(ThreadRef, String)>>,
    streams: Mutex<Vec<Stream>>,
    homes: Mutex<Vec<(UserId, Value)>>,
    uploads: Mutex<Vec<(String, FileUpload)>>,
    posts: Mutex<Vec<(ChannelId, String)>>,
    tagged: Mutex<Vec<Tagged>>,
    /// What was shown through commands' `response_url`s: (path, text).
    responses: Mutex<Vec<(String, String)>>,
    /// Also print what is streamed (when the stream stops), as the local
    /// runner shows Slack.
    echo: bool,
}

impl MemoryAgent {
    pub fn echoing() -> Self {
        Self { echo: true, ..Self::default() }
    }

    /// Every file uploaded (not shared: the responder shares): (id, file).
    pub fn uploads(&self) -> Vec<(String, FileUpload)> {
        self.uploads.lock().expect("uploads lock").clone()
    }

    /// Every message posted at the top of a channel: (channel, text).
    pub fn posts(&self) -> Vec<(ChannelId, String)> {
        self.posts.lock().expect("posts lock").clone()
    }

    /// Every ephemeral message sent through a `response_url`: (its path, text).
    pub fn responses(&self) -> Vec<(String, String)> {
        self.responses.lock().expect("responses lock").clone()
    }

    /// Every message posted with metadata, in order.
    pub fn tagged(&self) -> Vec<Tagged> {
        self.tagged.lock().expect("tagged lock").clone()
    }

    pub fn script(&self, method: &'static str, outcomes: impl IntoIterator<Item = Scripted>) {
        self.scripts.lock().expect("scripts lock").entry(method).or_default().extend(outcomes);
    }

    pub fn calls(&self, method: &str) -> usize {
        self.calls.lock().expect("calls lock").iter().filter(|m| **m == method).count()
    }

    /// Home tabs published, in order: whose, and the view.
    pub fn homes(&self) -> Vec<(UserId, Value)> {
        self.homes.lock().expect("homes lock").clone()
    }

    pub fn prompts(&self) -> Vec<PromptsSet> {
        self.prompts.lock().expect("prompts lock").clone()
    }

    pub fn titles(&self) -> Vec<(ThreadRef, String)> {
        self.titles.lock().expect("titles lock").clone()
    }

    pub fn streams(&self) -> Vec<Stream> {
        self.streams.lock().expect("streams lock").clone()
    }

    fn called(&self, method: &'static str) -> Result<(), PostError> {
        self.calls.lock().expect("calls lock").push(method);
        match self.scripts.lock().expect("scripts lock").get_mut(method).and_then(VecDeque::pop_front) {
            Some(Scripted::Fail(err) | Scripted::LandThenFail(err)) => Err(err),
            None => Ok(()),
        }
    }

    fn with_stream<T>(&self, ts: &Ts, f: impl FnOnce(&mut Stream) -> Result<T, PostError>) -> Result<T, PostError> {
        let mut streams = self.streams.lock().expect("streams lock");
        let stream = streams.iter_mut().find(|s| &s.ts == ts).ok_or_else(|| refused("message_not_found"))?;
        if stream.stopped {
            return Err(refused("message_not_in_streaming_state"));
        }
        f(stream)
    }
}

fn refused(code: &str) -> PostError {
    PostError::Rejected { code: code.to_owned() }
}

/// A task card's status as the card shows it.
fn task_words(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::InProgress => "in progress",
        TaskStatus::Complete => "done",
        TaskStatus::Error => "failed",
    }
}

fn apply(stream: &mut Stream, chunks: &[StreamChunk]) -> Result<(), PostError> {
    let text: usize = chunks.iter().map(|c| if let StreamChunk::Text(t) = c { t.chars().count() } else { 0 }).sum();
    if text > STREAM_TEXT_LIMIT {
        return Err(refused("msg_too_long"));
    }
    for chunk in chunks {
        match chunk {
            StreamChunk::Text(text) => {
                if !text.is_empty() {
                    stream.first_text_at.get_or_insert_with(std::time::Instant::now);
                }
                stream.text.push_str(text);
            }
            StreamChunk::Task(TaskUpdate { id, title, status, sources, details, output }) => {
                stream.cards.insert(id.clone(), (details.clone(), output.clone()));
                if !sources.is_empty() {
                    stream.sources.push((id.clone(), sources.clone()));
                }
                match stream.tasks.iter_mut().find(|(known, ..)| known == id) {
                    Some(task) => *task = (id.clone(), title.clone(), *status),
                    None => stream.tasks.push((id.clone(), title.clone(), *status)),
                }
            }
        }
    }
    stream.appends += 1;
    Ok(())
}

#[async_trait]
impl AgentSlack for MemoryAgent {
    async fn set_suggested_prompts(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        prompts: &[SuggestedPrompt],
    ) -> Result<(), PostError> {
        self.called(SET_PROMPTS)?;
        self.prompts.lock().expect("prompts lock").push((channel.clone(), thread_ts.cloned(), prompts.to_vec()));
        Ok(())
    }

    async fn set_title(&self, thread: &ThreadRef, title: &str) -> Result<(), PostError> {
        self.called(SET_TITLE)?;
        self.titles.lock().expect("titles lock").push((thread.clone(), title.to_owned()));
        Ok(())
    }

    /// `LandThenFail` starts the stream, then answers with the error (an
    /// answer lost, as a process killed mid-call never reads it).
    async fn start_stream(&self, thread: &ThreadRef, recipient: Option<&UserId>) -> Result<Ts, PostError> {
        self.calls.lock().expect("calls lock").push(START_STREAM);
        let scripted = self.scripts.lock().expect("scripts lock").get_mut(START_STREAM).and_then(VecDeque::pop_front);
        let lost = match scripted {
            Some(Scripted::Fail(err)) => return Err(err),
            Some(Scripted::LandThenFail(err)) => Some(err),
            None => None,
        };
        if recipient.is_none() && !thread.channel.as_str().starts_with('D') {
            return Err(refused("invalid_arguments"));
        }
        let mut streams = self.streams.lock().expect("streams lock");
        // Echoing (the local runner): the stream is posted now, after the
        // thread's message, as in Slack; tests get fixed stamps.
        let ts = if self.echo {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            Ts::new(format!("{}.{:06}", now.as_secs(), now.subsec_micros()))
        } else {
            Ts::new(format!("1763800500.{:06}", streams.len() + 1))
        };
        if self.echo {
            println!("── Slack stream {ts} in {} (thread {}) ──", thread.channel, thread.thread_ts);
        }
        streams.push(Stream {
            thread: thread.clone(),
            ts: ts.clone(),
            recipient: recipient.cloned(),
            text: String::new(),
            tasks: Vec::new(),
            sources: Vec::new(),
            cards: Default::default(),
            appends: 0,
            first_text_at: None,
            stopped: false,
            blocks: Vec::new(),
            metadata: None,
        });
        match lost {
            Some(err) => Err(err),
            None => Ok(ts),
        }
    }

    async fn append_stream(&self, _thread: &ThreadRef, ts: &Ts, chunks: &[StreamChunk]) -> Result<(), PostError> {
        self.called(APPEND_STREAM)?;
        if self.echo {
            for chunk in chunks {
                if let StreamChunk::Task(TaskUpdate { title, status, .. }) = chunk {
                    println!("── Slack task {title}: {}", task_words(*status));
                }
            }
        }
        self.with_stream(ts, |stream| apply(stream, chunks))
    }

    async fn delete_message(&self, _thread: &ThreadRef, ts: &Ts) -> Result<(), PostError> {
        self.called(DELETE)?;
        self.streams.lock().expect("streams lock").retain(|stream| &stream.ts != ts);
        Ok(())
    }

    /// The streams in the thread started after `after` with nothing in
    /// them and never stopped (a stopped one carries metadata).
    async fn unrecorded_streams(&self, thread: &ThreadRef, after: &Ts) -> Result<Vec<Ts>, PostError> {
        self.called(UNRECORDED_STREAMS)?;
        Ok(self
            .streams
            .lock()
            .expect("streams lock")
            .iter()
            .filter(|stream| &stream.thread == thread && &stream.ts > after)
            .filter(|stream| !stream.stopped && stream.text.is_empty() && stream.tasks.is_empty())
            .map(|stream| stream.ts.clone())
            .collect())
    }

    async fn stop_stream(
        &self,
        _thread: &ThreadRef,
        ts: &Ts,
        blocks: &[Value],
        metadata: &MessageMetadata,
    ) -> Result<(), PostError> {
        self.called(STOP_STREAM)?;
        let echo = self.echo;
        self.with_stream(ts, |stream| {
            if echo {
                println!("── Slack stream {ts} stopped; it reads ──\n{}\n", stream.text);
            }
            stream.stopped = true;
            stream.blocks = blocks.to_vec();
            stream.metadata = Some(metadata.clone());
            Ok(())
        })
    }

    async fn publish_home(&self, user: &UserId, view: &Value) -> Result<(), PostError> {
        self.called(PUBLISH_HOME)?;
        if view["type"] != "home" {
            return Err(refused("invalid_arguments"));
        }
        self.homes.lock().expect("homes lock").push((user.clone(), view.clone()));
        Ok(())
    }

    async fn upload(&self, file: &FileUpload) -> Result<String, PostError> {
        self.called(UPLOAD)?;
        let mut uploads = self.uploads.lock().expect("uploads lock");
        let id = format!("F0AGENT{:03}", uploads.len() + 1);
        uploads.push((id.clone(), file.clone()));
        Ok(id)
    }

    async fn post_to_channel(&self, channel: &ChannelId, text: &str) -> Result<Ts, PostError> {
        self.called(POST)?;
        let mut posts = self.posts.lock().expect("posts lock");
        posts.push((channel.clone(), text.to_owned()));
        Ok(Ts::new(format!("1763900000.{:06}", posts.len())))
    }

    /// Scripted under [`POST_TAGGED`]; `LandThenFail` posts, then answers
    /// with the error (an answer lost).
    async fn post_tagged(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        text: &str,
        metadata: &MessageMetadata,
    ) -> Result<Ts, PostError> {
        self.calls.lock().expect("calls lock").push(POST_TAGGED);
        let scripted = self.scripts.lock().expect("scripts lock").get_mut(POST_TAGGED).and_then(VecDeque::pop_front);
        if let Some(Scripted::Fail(err)) = scripted {
            return Err(err);
        }
        let mut tagged = self.tagged.lock().expect("tagged lock");
        let ts = Ts::new(format!("1763950000.{:06}", tagged.len() + 1));
        if self.echo {
            match thread_ts {
                Some(thread_ts) => println!("── Slack message in {channel} (thread {thread_ts}) ──\n{text}\n"),
                None => println!("── Slack message at the top of {channel} (ts {ts}) ──\n{text}\n"),
            }
        }
        tagged.push(Tagged {
            channel: channel.clone(),
            thread_ts: thread_ts.cloned(),
            text: text.to_owned(),
            metadata: metadata.clone(),
            ts: ts.clone(),
        });
        match scripted {
            Some(Scripted::LandThenFail(err)) => Err(err),
            _ => Ok(ts),
        }
    }

    async fn find_tagged(
        &self,
        channel: &ChannelId,
        thread_ts: Option<&Ts>,
        owner: &assistant_core::TurnId,
    ) -> Result<std::collections::BTreeMap<MessageKey, Ts>, PostError> {
        self.called(FIND_TAGGED)?;
        Ok(self
            .tagged
            .lock()
            .expect("tagged lock")
            .iter()
            .filter(|post| &post.channel == channel && post.thread_ts.as_ref() == thread_ts)
            .filter(|post| &post.metadata.event_payload.turn_id == owner)
            .map(|post| (post.metadata.event_payload.key.clone(), post.ts.clone()))
            .collect())
    }

    /// The DM with `U…` is `D…` with the same letters after the first.
    async fn open_dm(&self, user: &UserId) -> Result<ChannelId, PostError> {
        self.called(OPEN_DM)?;
        Ok(dm_of(user))
    }

    async fn permalink(&self, channel: &ChannelId, ts: &Ts) -> Result<String, PostError> {
        self.called(PERMALINK)?;
        Ok(format!("https://acme.slack.com/archives/{channel}/p{}", ts.as_str().replace('.', "")))
    }

    /// Scripted under [`RESPOND`]; `LandThenFail` shows the text, then
    /// answers with the error (an answer lost).
    async fn respond(&self, url: &slack::command::ResponseUrl, text: &str) -> Result<(), PostError> {
        self.calls.lock().expect("calls lock").push(RESPOND);
        let scripted = self.scripts.lock().expect("scripts lock").get_mut(RESPOND).and_then(VecDeque::pop_front);
        if let Some(Scripted::Fail(err)) = scripted {
            return Err(err);
        }
        self.responses.lock().expect("responses lock").push((url.path().to_owned(), text.to_owned()));
        match scripted {
            Some(Scripted::LandThenFail(err)) => Err(err),
            _ => Ok(()),
        }
    }

    async fn identity(&self) -> Result<BotIdentity, PostError> {
        self.called(AUTH_TEST)?;
        Ok(BotIdentity { team: TeamId::new(TEAM), user: UserId::new(crate::fixtures::BOT_USER) })
    }
}

/// A message posted with metadata (an incident's root and notes).
#[derive(Debug, Clone, PartialEq)]
pub struct Tagged {
    pub channel: ChannelId,
    /// None: at the top of the channel.
    pub thread_ts: Option<Ts>,
    pub text: String,
    pub metadata: MessageMetadata,
    pub ts: Ts,
}

/// The bot's DM with `user` as [`MemoryAgent::open_dm`] opens it.
pub fn dm_of(user: &UserId) -> ChannelId {
    ChannelId::new(format!("D{}", &user.as_str()[1..]))
}

/// The workspace [`MemoryAgent::identity`] answers with.
pub const TEAM: &str = "T0LAN2Q65";
