//! Slack kept in memory: threads of posted messages (with their metadata,
//! so [`SlackPoster::find_posted`] works as on Slack), every call recorded,
//! and failures scripted per method. For the responder's tests and the
//! local runner, which prints what it would post.

use assistant_core::ThreadRef;
use assistant_core::delivery::{MessageKey, Outgoing, PostError};
use assistant_core::ports::{AlertPoster, FileUpload, SlackPoster};
use assistant_core::turn::TurnId;
use async_trait::async_trait;
use serde_json::Value;
use slack::{ChannelId, Ts, UserId};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Mutex;

/// A message in a thread.
#[derive(Debug, Clone, PartialEq)]
pub struct Posted {
    pub thread: ThreadRef,
    pub ts: Ts,
    pub turn: TurnId,
    pub message: Outgoing,
}

/// What a scripted call does instead of succeeding.
#[derive(Debug, Clone, PartialEq)]
pub enum Scripted {
    Fail(PostError),
    /// The post lands in the thread, but the caller sees this error (a
    /// response lost on the way back).
    LandThenFail(PostError),
}

#[derive(Debug, Default)]
pub struct MemoryPoster {
    messages: Mutex<Vec<Posted>>,
    calls: Mutex<Vec<&'static str>>,
    scripts: Mutex<HashMap<&'static str, VecDeque<Scripted>>>,
    statuses: Mutex<Vec<(ThreadRef, String)>>,
    ephemerals: Mutex<Vec<Ephemeral>>,
    alerts: Mutex<Vec<(ChannelId, String)>>,
    /// Files uploaded (id → the upload), and those shared: (thread, id).
    uploads: Mutex<BTreeMap<String, FileUpload>>,
    shares: Mutex<Vec<(ThreadRef, String)>>,
    /// Also print each message, as the local runner shows Slack.
    echo: bool,
}

/// A message only one person saw.
#[derive(Debug, Clone)]
struct Ephemeral {
    user: UserId,
    text: String,
    blocks: Vec<Value>,
}

pub const POST: &str = "chat.postMessage";
pub const UPDATE: &str = "chat.update";
pub const SET_STATUS: &str = "assistant.threads.setStatus";
pub const REPLIES: &str = "conversations.replies";
pub const EPHEMERAL: &str = "chat.postEphemeral";
pub const STOP_STREAM: &str = "chat.stopStream";
pub const UPLOAD: &str = "files.getUploadURLExternal";
pub const SHARE_UPLOAD: &str = "files.completeUploadExternal";
/// A top-level message (operator alerts): `chat.postMessage` too, counted
/// apart from the thread posts.
pub const CHANNEL_POST: &str = "chat.postMessage (channel)";

impl MemoryPoster {
    /// A poster that prints what it posts to standard output.
    pub fn echoing() -> Self {
        Self { echo: true, ..Self::default() }
    }

    /// The next calls of `method` (one of the constants here) do these.
    pub fn script(&self, method: &'static str, outcomes: impl IntoIterator<Item = Scripted>) {
        self.scripts.lock().expect("scripts lock").entry(method).or_default().extend(outcomes);
    }

    /// Every message now in any thread, oldest first.
    pub fn messages(&self) -> Vec<Posted> {
        self.messages.lock().expect("messages lock").clone()
    }

    /// How many times `method` was called.
    pub fn calls(&self, method: &str) -> usize {
        self.calls.lock().expect("calls lock").iter().filter(|m| **m == method).count()
    }

    /// A file another process uploaded (the worker), as Slack holds it.
    pub fn uploaded(&self, file_id: &str, file: FileUpload) {
        self.uploads.lock().expect("uploads lock").insert(file_id.to_owned(), file);
    }

    /// Every file shared in a thread, in order: (thread, its upload).
    pub fn shared_files(&self) -> Vec<(ThreadRef, FileUpload)> {
        let uploads = self.uploads.lock().expect("uploads lock");
        let shares = self.shares.lock().expect("shares lock");
        shares.iter().map(|(thread, id)| (thread.clone(), uploads[id].clone())).collect()
    }

    /// Every status line set, in order (empty: cleared).
    pub fn statuses(&self) -> Vec<String> {
        self.statuses.lock().expect("statuses lock").iter().map(|(_, status)| status.clone()).collect()
    }

    /// Every message posted at the top of a channel (operator alerts).
    pub fn alerts(&self) -> Vec<(ChannelId, String)> {
        self.alerts.lock().expect("alerts lock").clone()
    }

    /// Every ephemeral message: (who saw it, what it said).
    pub fn ephemerals(&self) -> Vec<(UserId, String)> {
        self.ephemerals
            .lock()
            .expect("ephemerals lock")
            .iter()
            .map(|shown| (shown.user.clone(), shown.text.clone()))
            .collect()
    }

    /// Every ephemeral message's blocks: (who saw it, its blocks).
    pub fn ephemeral_blocks(&self) -> Vec<(UserId, Vec<Value>)> {
        self.ephemerals
            .lock()
            .expect("ephemerals lock")
            .iter()
            .map(|shown| (shown.user.clone(), shown.blocks.clone()))
            .collect()
    }

    /// Records the call; the scripted outcome, if any.
    fn called(&self, method: &'static str) -> Option<Scripted> {
        self.calls.lock().expect("calls lock").push(method);
        self.scripts.lock().expect("scripts lock").get_mut(method).and_then(VecDeque::pop_front)
    }

    fn show(&self, verb: &str, posted: &Posted) {
        if self.echo {
            let thread = &posted.thread;
            println!(
                "── Slack {verb} in {} (thread {}) ──\n{}\n",
                thread.channel, thread.thread_ts, posted.message.text
            );
        }
    }
}

#[async_trait]
impl SlackPoster for MemoryPoster {
    async fn post(&self, thread: &ThreadRef, turn: &TurnId, message: &Outgoing) -> Result<Ts, PostError> {
        let scripted = self.called(POST);
        if let Some(Scripted::Fail(err)) = scripted {
            return Err(err);
        }
        let mut messages = self.messages.lock().expect("messages lock");
        let ts = Ts::new(format!("1763800100.{:06}", messages.len() + 1));
        let posted = Posted { thread: thread.clone(), ts: ts.clone(), turn: turn.clone(), message: message.clone() };
        self.show("post", &posted);
        messages.push(posted);
        match scripted {
            Some(Scripted::LandThenFail(err)) => Err(err),
            _ => Ok(ts),
        }
    }

    async fn update(&self, thread: &ThreadRef, ts: &Ts, turn: &TurnId, message: &Outgoing) -> Result<(), PostError> {
        if let Some(Scripted::Fail(err) | Scripted::LandThenFail(err)) = self.called(UPDATE) {
            return Err(err);
        }
        let mut messages = self.messages.lock().expect("messages lock");
        let Some(posted) = messages.iter_mut().find(|p| &p.thread == thread && &p.ts == ts) else {
            return Err(PostError::Rejected { code: "message_not_found".into() });
        };
        posted.turn = turn.clone();
        posted.message = message.clone();
        self.show("update", posted);
        Ok(())
    }

    async fn set_status(&self, thread: &ThreadRef, status: &str) -> Result<(), PostError> {
        if let Some(Scripted::Fail(err) | Scripted::LandThenFail(err)) = self.called(SET_STATUS) {
            return Err(err);
        }
        if self.echo && !status.is_empty() {
            println!("── Slack status in {}: {status}", thread.channel);
        }
        self.statuses.lock().expect("statuses lock").push((thread.clone(), status.to_owned()));
        Ok(())
    }

    async fn post_ephemeral(
        &self,
        thread: &ThreadRef,
        user: &UserId,
        text: &str,
        blocks: &[Value],
    ) -> Result<(), PostError> {
        if let Some(Scripted::Fail(err) | Scripted::LandThenFail(err)) = self.called(EPHEMERAL) {
            return Err(err);
        }
        if self.echo {
            println!("── Slack ephemeral to {user} in {}: {text}", thread.channel);
        }
        let shown = Ephemeral { user: user.clone(), text: text.to_owned(), blocks: blocks.to_vec() };
        self.ephemerals.lock().expect("ephemerals lock").push(shown);
        Ok(())
    }

    async fn stop_stream(&self, _thread: &ThreadRef, _ts: &Ts) -> Result<(), PostError> {
        if let Some(Scripted::Fail(err) | Scripted::LandThenFail(err)) = self.called(STOP_STREAM) {
            return Err(err);
        }
        Ok(())
    }

    async fn find_posted(&self, thread: &ThreadRef, turn: &TurnId) -> Result<BTreeMap<MessageKey, Ts>, PostError> {
        if let Some(Scripted::Fail(err) | Scripted::LandThenFail(err)) = self.called(REPLIES) {
            return Err(err);
        }
        let messages = self.messages.lock().expect("messages lock");
        Ok(messages
            .iter()
            .filter(|p| &p.thread == thread && &p.turn == turn)
            .map(|p| (p.message.key.clone(), p.ts.clone()))
            .collect())
    }

    async fn upload(&self, file: &FileUpload) -> Result<String, PostError> {
        if let Some(Scripted::Fail(err) | Scripted::LandThenFail(err)) = self.called(UPLOAD) {
            return Err(err);
        }
        let mut uploads = self.uploads.lock().expect("uploads lock");
        let id = format!("F0UPLOAD{:03}", uploads.len() + 1);
        uploads.insert(id.clone(), file.clone());
        Ok(id)
    }

    async fn share_upload(&self, thread: &ThreadRef, file_id: &str, _title: &str) -> Result<(), PostError> {
        let scripted = self.called(SHARE_UPLOAD);
        if let Some(Scripted::Fail(err)) = scripted {
            return Err(err);
        }
        if !self.uploads.lock().expect("uploads lock").contains_key(file_id) {
            return Err(PostError::Rejected { code: "file_not_found".into() });
        }
        self.shares.lock().expect("shares lock").push((thread.clone(), file_id.to_owned()));
        match scripted {
            Some(Scripted::LandThenFail(err)) => Err(err),
            _ => Ok(()),
        }
    }

    async fn files_in_thread(&self, thread: &ThreadRef) -> Result<BTreeSet<String>, PostError> {
        if let Some(Scripted::Fail(err) | Scripted::LandThenFail(err)) = self.called(REPLIES) {
            return Err(err);
        }
        let shares = self.shares.lock().expect("shares lock");
        Ok(shares.iter().filter(|(shared, _)| shared == thread).map(|(_, id)| id.clone()).collect())
    }
}

#[async_trait]
impl AlertPoster for MemoryPoster {
    async fn post_to_channel(&self, channel: &ChannelId, text: &str) -> Result<(), PostError> {
        if let Some(Scripted::Fail(err) | Scripted::LandThenFail(err)) = self.called(CHANNEL_POST) {
            return Err(err);
        }
        if self.echo {
            println!("── Slack alert in {channel} ──\n{text}\n");
        }
        self.alerts.lock().expect("alerts lock").push((channel.clone(), text.to_owned()));
        Ok(())
    }
}
