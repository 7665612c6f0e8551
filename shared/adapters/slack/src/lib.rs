//! Slack's Web API, the one place the functions talk to it:
//!
//! - [`web`]: the client (form-encoded POSTs with the bot token, bounded
//!   retries, typed replies; every request through [`output_guard`], the
//!   one redaction and special-mention rule for all the bot sends), and the
//!   process's one HTTP client, which follows no redirects and
//!   ([`egress`]) refuses internal addresses;
//! - [`reader`]: the worker's [`SlackReader`](assistant_core::ports::SlackReader)
//!   (the channel, the thread so far);
//! - [`files`]: the worker's [`SlackFiles`](assistant_core::ports::SlackFiles)
//!   (files people paste, downloaded with the bot token from Slack's file
//!   host only);
//! - [`agent`]: the worker's [`AgentSlack`](assistant_core::ports::AgentSlack)
//!   (suggested prompts, thread titles, streamed answers);
//! - [`canvas`]: the worker's [`Canvases`](assistant_core::ports::Canvases)
//!   (a postmortem's draft);
//! - [`poster`]: the responder's [`SlackPoster`](assistant_core::ports::SlackPoster)
//!   (post, update, status line, find what was posted by its metadata).

pub mod agent;
pub mod canvas;
pub mod egress;
pub mod files;
pub mod output_guard;
pub mod poster;
pub mod reader;
pub mod web;

pub use agent::WebAgent;
pub use canvas::WebCanvases;
pub use files::WebFiles;
pub use output_guard::OutputGuard;
pub use poster::WebPoster;
pub use reader::SlackWebReader;
pub use web::{BotToken, DEFAULT_BASE_URL, WebClient, WebError, http_client};
