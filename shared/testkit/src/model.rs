//! The models tests and the benchmark talk to instead of Bedrock, each
//! once:
//!
//! - [`ScriptedModel`]: the replies a test scripted, in order; it records
//!   what each call was sent, can take its time ([`ScriptedModel::pausing`]),
//!   write its text in pieces as ConverseStream does
//!   ([`ScriptedModel::streamed_in`]), drop a stream midway
//!   ([`ScriptedModel::dropping_streams`]) and run something during each call
//!   ([`ScriptedModel::during_each_call`]: another worker's save, say);
//! - [`InstantModel`]: calls a tool for a given number of steps, then
//!   answers, counting tokens as Bedrock does with cache points (the
//!   benchmark's turns);
//! - [`PacedModel`]: writes its answer a token at a time, as Bedrock
//!   streams (the benchmark's time to first text).
//!
//! And the replies they are scripted with: [`text`], [`calls`], [`stop`].

use assistant_core::model::{Model, ModelError, ModelReply, ModelRequest, StopReason, TextSink};
use assistant_core::turn::{Content, Message, Role, ToolUse, Usage};
use async_trait::async_trait;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The usage every scripted reply reports.
pub fn usage() -> Usage {
    Usage { input_tokens: 100, output_tokens: 20, ..Usage::default() }
}

/// An answer.
pub fn text(answer: &str) -> Result<ModelReply, ModelError> {
    stop(StopReason::EndTurn, answer)
}

/// Tool calls: `(id, name, input)` each.
pub fn calls(tools: &[(&str, &str, serde_json::Value)]) -> Result<ModelReply, ModelError> {
    let content = tools
        .iter()
        .map(|(id, name, input)| {
            Content::ToolUse(ToolUse { id: (*id).into(), name: (*name).into(), input: input.clone() })
        })
        .collect();
    Ok(ModelReply {
        message: Message { role: Role::Assistant, content },
        stop_reason: StopReason::ToolUse,
        usage: usage(),
    })
}

/// Text that stopped for `reason`.
pub fn stop(reason: StopReason, said: &str) -> Result<ModelReply, ModelError> {
    Ok(ModelReply {
        message: Message { role: Role::Assistant, content: vec![Content::Text(said.into())] },
        stop_reason: reason,
        usage: usage(),
    })
}

type DuringCall = Box<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The replies a test scripted, handed out in order; what each call was
/// sent, kept to look at.
#[derive(Default)]
pub struct ScriptedModel {
    replies: Mutex<VecDeque<Result<ModelReply, ModelError>>>,
    /// For each call: the transcript length and the advertised tool names.
    calls: Mutex<Vec<(usize, Vec<String>)>>,
    /// The system prompt of each call.
    systems: Mutex<Vec<String>>,
    /// The messages of each call.
    sent: Mutex<Vec<Vec<Message>>>,
    /// The tool each call forced, if any.
    forced: Mutex<Vec<Option<String>>>,
    pause: Duration,
    /// Where a streamed reply's text is cut into pieces (byte offsets);
    /// none: one piece.
    cuts: Vec<usize>,
    /// For each streamed reply in turn: after how many pieces its stream
    /// drops (`None`: it does not).
    drops: Mutex<VecDeque<Option<usize>>>,
    during_call: Option<DuringCall>,
}

impl ScriptedModel {
    pub fn new(replies: impl IntoIterator<Item = Result<ModelReply, ModelError>>) -> Self {
        Self { replies: Mutex::new(replies.into_iter().collect()), ..Self::default() }
    }

    /// Each call takes `pause` before it answers (a slow model).
    pub fn pausing(mut self, pause: Duration) -> Self {
        self.pause = pause;
        self
    }

    /// Streamed replies' text is written in pieces cut at these byte
    /// offsets, as Bedrock's ConverseStream does.
    pub fn streamed_in(mut self, cuts: &[usize]) -> Self {
        self.cuts = cuts.to_vec();
        self
    }

    /// The streamed replies' streams drop after these many pieces, one
    /// entry a reply (`None`: that one does not drop).
    pub fn dropping_streams(self, after: impl IntoIterator<Item = Option<usize>>) -> Self {
        *self.drops.lock().unwrap() = after.into_iter().collect();
        self
    }

    /// `during` runs inside each call, before it answers.
    pub fn during_each_call<F>(mut self, during: impl Fn() -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.during_call = Some(Box::new(move || Box::pin(during())));
        self
    }

    /// How many calls were made.
    pub fn calls(&self) -> usize {
        self.calls.lock().unwrap().len()
    }

    /// The tools call `call` (from 0) was offered.
    pub fn advertised(&self, call: usize) -> Vec<String> {
        self.calls.lock().unwrap()[call].1.clone()
    }

    /// The system prompt of each call.
    pub fn systems(&self) -> Vec<String> {
        self.systems.lock().unwrap().clone()
    }

    /// The tool each call forced, if any.
    pub fn forced(&self) -> Vec<Option<String>> {
        self.forced.lock().unwrap().clone()
    }

    /// The messages call `call` (from 0) was sent.
    pub fn sent(&self, call: usize) -> Vec<Message> {
        self.sent.lock().unwrap()[call].clone()
    }
}

#[async_trait]
impl Model for ScriptedModel {
    async fn converse(&self, request: ModelRequest<'_>) -> Result<ModelReply, ModelError> {
        let tools = request.tools.iter().map(|t| t.name.clone()).collect();
        self.calls.lock().unwrap().push((request.messages.len(), tools));
        self.systems.lock().unwrap().push(request.system.to_owned());
        self.sent.lock().unwrap().push(request.messages.to_vec());
        self.forced.lock().unwrap().push(request.force_tool.map(str::to_owned));
        if let Some(during) = &self.during_call {
            during().await;
        }
        if !self.pause.is_zero() {
            tokio::time::sleep(self.pause).await;
        }
        self.replies.lock().unwrap().pop_front().expect("the test scripted fewer model replies than were asked for")
    }

    async fn converse_streaming(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn TextSink,
    ) -> Result<ModelReply, ModelError> {
        let reply = self.converse(request).await?;
        let text = reply.message.text();
        let mut bounds: Vec<usize> = self.cuts.iter().copied().filter(|&cut| cut < text.len()).collect();
        bounds.push(text.len());
        let drop_after = self.drops.lock().unwrap().pop_front().flatten();
        let mut from = 0;
        for (index, to) in bounds.into_iter().enumerate() {
            if drop_after == Some(index) {
                return Err(ModelError::Unavailable("the stream dropped".into()));
            }
            if to > from {
                sink.text(&text[from..to]).await;
            }
            from = to;
        }
        Ok(reply)
    }
}

/// Answers at once: a tool call with some prose for the first steps, then
/// an answer, like a model would, minus the wait. Counts tokens as Bedrock
/// does with cache points (a token is four bytes of the request).
pub struct InstantModel {
    steps: u32,
    /// What the previous request of the turn put in the cache, in bytes.
    cached: Mutex<usize>,
}

impl InstantModel {
    pub fn new(steps: u32) -> Self {
        Self { steps, cached: Mutex::new(0) }
    }

    fn usage(&self, request: &ModelRequest<'_>, first: bool) -> Usage {
        let tools: usize = request
            .tools
            .iter()
            .map(|tool| tool.name.len() + tool.description.len() + tool.input_schema.to_string().len())
            .sum();
        let stable = request.system.len() + tools;
        let conversation = serde_json::to_string(request.messages).map_or(0, |json| json.len());
        let mut cached = self.cached.lock().expect("cache lock");
        if first {
            *cached = 0;
        }
        let read = *cached;
        let cached_now = stable + if request.cache_conversation { conversation } else { 0 };
        let written = cached_now.saturating_sub(read);
        *cached = cached_now;
        let tokens = |bytes: usize| bytes as u64 / 4;
        Usage {
            input_tokens: tokens(stable + conversation - read - written),
            output_tokens: 100,
            cache_read_tokens: tokens(read),
            cache_write_tokens: tokens(written),
        }
    }
}

#[async_trait]
impl Model for InstantModel {
    async fn converse(&self, request: ModelRequest<'_>) -> Result<ModelReply, ModelError> {
        let step = request.messages.len() / 2;
        let usage = self.usage(&request, step == 0);
        let prose = Content::Text("Let me look at the runbook section on connection pools. ".repeat(4));
        let (content, stop_reason) = if (step as u32) < self.steps - 1 {
            let call = ToolUse {
                id: format!("tooluse_{step:04}"),
                name: "search_docs".into(),
                input: serde_json::json!({"query": format!("checkout-api pool {step}")}),
            };
            (vec![prose, Content::ToolUse(call)], StopReason::ToolUse)
        } else {
            (vec![Content::Text("The pool is exhausted since the 14:02 deploy.".into())], StopReason::EndTurn)
        };
        Ok(ModelReply { message: Message { role: Role::Assistant, content }, stop_reason, usage })
    }
}

/// A model writing its answer a token (about 4 characters) at a time,
/// `every` apart, as Bedrock streams.
pub struct PacedModel {
    answer: &'static str,
    every: Duration,
    first_token: Mutex<Option<Instant>>,
}

impl PacedModel {
    pub fn new(answer: &'static str, every: Duration) -> Self {
        Self { answer, every, first_token: Mutex::new(None) }
    }

    /// When it wrote its first token.
    pub fn first_token(&self) -> Option<Instant> {
        *self.first_token.lock().expect("lock")
    }
}

#[async_trait]
impl Model for PacedModel {
    async fn converse(&self, _: ModelRequest<'_>) -> Result<ModelReply, ModelError> {
        Err(ModelError::Rejected("this model only streams".into()))
    }

    async fn converse_streaming(&self, _: ModelRequest<'_>, sink: &mut dyn TextSink) -> Result<ModelReply, ModelError> {
        let chars: Vec<char> = self.answer.chars().collect();
        for token in chars.chunks(4) {
            tokio::time::sleep(self.every).await;
            self.first_token.lock().expect("lock").get_or_insert_with(Instant::now);
            sink.text(&token.iter().collect::<String>()).await;
        }
        Ok(ModelReply {
            message: Message { role: Role::Assistant, content: vec![Content::Text(self.answer.into())] },
            stop_reason: StopReason::EndTurn,
            usage: Usage { input_tokens: 900, output_tokens: (chars.len() / 4) as u64, ..Usage::default() },
        })
    }
}
