//! Files pasted into the thread, read when a turn starts ([`read`]); the
//! model reads the text ones through `read_attachment` (`tools-files`).
//!
//! What happens to each file is [`assistant_core::files`]'s decision; this
//! module downloads (with the bot token, bounded), checks that what Slack
//! served is what it said, keeps it in the artifact bucket under the turn
//! (`turns/{turn}/files/{file_id}`) and says what the model gets:
//! - an image or document: a [`FileBlock`] naming the key, read back for
//!   each model call ([`load_bodies`]);
//! - text: redacted before it is stored, then a note with its size, its
//!   first lines and how to read the rest through `read_attachment`;
//! - anything it could not read: a note saying why.
//!
//! A turn start that is a redelivery (the turn exists, or the worker died
//! after downloading) finds the files already kept and downloads nothing
//! again: the bucket is listed first.

use assistant_core::files::{
    self, DocumentFormat, FileBlock, FileKind, FileRef, ImageFormat, MAX_BLOCK_BYTES, MAX_DOCUMENTS, MAX_FILES, Plan,
    TEXT_BYTES, human_bytes,
};
use assistant_core::messages::TurnRequest;
use assistant_core::model::FileBodies;
use assistant_core::ports::{ArtifactStore, Author, DownloadError, PortError, SlackFiles, ThreadMessage};
use assistant_core::turn::{Content, Message, TurnId};
use std::collections::BTreeMap;
use tools_registry::READ_ATTACHMENT;
use tracing::{info, warn};

/// How much of a text file the opening shows before the tool is needed.
const PREVIEW_LINES: usize = 20;
const PREVIEW_BYTES: usize = 1_500;

/// A file and who shared it.
struct Shared<'a> {
    file: &'a FileRef,
    by: String,
}

/// The files a turn reads: the question's, then the thread's newest
/// earlier ones, each once, at most [`MAX_FILES`]; and how many more
/// there were.
fn candidates<'a>(request: &'a TurnRequest, history: &'a [ThreadMessage]) -> (Vec<Shared<'a>>, usize) {
    let mut all: Vec<Shared<'a>> =
        request.files.iter().map(|file| Shared { file, by: format!("<@{}>", request.user) }).collect();
    for message in history.iter().rev().filter(|message| message.ts != request.message_ts) {
        let by = match &message.author {
            Author::Person(user) => format!("<@{user}>"),
            Author::OtherBot(bot) => format!("bot {bot}"),
            Author::ThisBot => "you".to_owned(),
        };
        all.extend(message.files.iter().map(|file| Shared { file, by: by.clone() }));
    }
    let mut seen = std::collections::HashSet::new();
    all.retain(|shared| seen.insert(shared.file.id.clone()));
    let more = all.len().saturating_sub(MAX_FILES);
    all.truncate(MAX_FILES);
    (all, more)
}

fn image_type(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "image/png",
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Gif => "image/gif",
        ImageFormat::Webp => "image/webp",
    }
}

fn document_type(format: DocumentFormat) -> &'static str {
    match format {
        DocumentFormat::Pdf => "application/pdf",
        DocumentFormat::Doc => "application/msword",
        DocumentFormat::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        DocumentFormat::Xls => "application/vnd.ms-excel",
        DocumentFormat::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    }
}

/// What Slack serves a bot that may not read a file, when it answers 200:
/// its sign-in page.
fn is_sign_in_page(file: &FileRef, body: &[u8], content_type: Option<&str>) -> bool {
    let html = content_type.is_some_and(|t| t.starts_with("text/html"));
    let starts_html = {
        let head = String::from_utf8_lossy(&body[..body.len().min(64)]).trim_start().to_ascii_lowercase();
        head.starts_with("<!doctype html") || head.starts_with("<html")
    };
    html && starts_html && file.filetype != "html"
}

const NO_ACCESS: &str = "Slack did not let the bot read it: the app may lack the files:read scope, or the file \
     is not shared in a channel the bot is in.";

/// Why a pasted file was not read: what the model is told after its name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Unread {
    #[error("{NO_ACCESS}")]
    NoAccess,
    #[error("its link does not point to Slack, so the bot did not follow it.")]
    NotSlack,
    #[error("Slack did not serve it just now; ask again in a minute to have it read.")]
    Unavailable,
    #[error("it is larger than the {} the model reads.", human_bytes(*.0))]
    TooLarge(u64),
    #[error("its content is not a {} image.", .0.as_str())]
    NotImage(ImageFormat),
    #[error("its content is not a {} document.", .0.as_str())]
    NotDocument(DocumentFormat),
}

/// What a turn's start read of its thread's files.
#[derive(Debug, Default, PartialEq)]
pub struct Read {
    /// The blocks and notes to put before the question.
    pub content: Vec<Content>,
    /// The text files kept, for `read_attachment`.
    pub text_files: Vec<String>,
}

/// Reads the files of `request` and its thread for turn `turn`. Never
/// fails for a file: what cannot be read is said. Fails only when the
/// bucket does (the turn is retried).
pub async fn read(
    slack: &dyn SlackFiles,
    artifacts: &dyn ArtifactStore,
    turn: &TurnId,
    request: &TurnRequest,
    history: &[ThreadMessage],
) -> Result<Read, PortError> {
    let (shared, more) = candidates(request, history);
    if shared.is_empty() {
        return Ok(Read::default());
    }
    let mut text_files = Vec::new();
    let kept: BTreeMap<String, u64> =
        artifacts.list(&files::files_prefix(turn), MAX_FILES * 2).await?.into_iter().collect();
    let mut content = Vec::new();
    let (mut documents, mut block_bytes) = (0, 0);
    for Shared { file, by } in shared {
        let note = |what: String| Content::Text(format!("({by} shared {what})"));
        let plan = match file.plan() {
            Plan::Document(_) if documents >= MAX_DOCUMENTS => {
                content.push(note(format!(
                    "{}; the model reads at most {MAX_DOCUMENTS} documents at once, so it was not read.",
                    file.name
                )));
                continue;
            }
            Plan::Image(_) | Plan::Document(_) if block_bytes + file.size > MAX_BLOCK_BYTES => {
                content.push(note(format!(
                    "{}, which was not read: with the files before it, it is more than the {} of images and \
                     documents the model reads at once. Ask about fewer files at a time.",
                    file.name,
                    human_bytes(MAX_BLOCK_BYTES)
                )));
                continue;
            }
            Plan::Skip(why) => {
                info!(file = %file.id, reason = ?why, "file not read");
                content.push(note(why.note(file)));
                continue;
            }
            plan => plan,
        };
        let key = file.key(turn);
        let stored = match kept.get(&key) {
            Some(&bytes) => {
                info!(file = %file.id, "file already kept: not downloaded again");
                Ok(Kept { bytes, preview: None })
            }
            None => keep(slack, artifacts, file, plan, &key).await?,
        };
        let Kept { bytes, preview: kept_preview } = match stored {
            Ok(kept) => kept,
            Err(why) => {
                content.push(note(format!("{}, which was not read: {why}", file.name)));
                continue;
            }
        };
        match plan {
            Plan::Image(format) => {
                block_bytes += bytes;
                content.push(block(file, key, FileKind::Image(format)));
            }
            Plan::Document(format) => {
                documents += 1;
                block_bytes += bytes;
                content.push(block(file, key, FileKind::Document(format)));
            }
            Plan::Text => {
                text_files.push(file.id.clone());
                // Kept by an earlier start: its preview is read back.
                let preview = match kept_preview {
                    Some(preview) => preview,
                    None => artifacts
                        .get(&key)
                        .await?
                        .map(|text| preview(&String::from_utf8_lossy(&text)))
                        .unwrap_or_default(),
                };
                content.push(note(text_note(file, bytes, &preview)));
            }
            Plan::Skip(_) => unreachable!("skipped above"),
        }
    }
    if more > 0 {
        content.push(Content::Text(format!("({more} older files in this thread were not read.)")));
    }
    Ok(Read { content, text_files })
}

fn block(file: &FileRef, key: String, kind: FileKind) -> Content {
    Content::File(FileBlock { file_id: file.id.clone(), name: file.name.clone(), key, kind })
}

/// What was kept of a file: its size, and for text its first lines.
struct Kept {
    bytes: u64,
    preview: Option<String>,
}

/// Downloads `file` and keeps it under `key`: what was kept, or why it
/// could not be read. Only the bucket's failure is an error.
async fn keep(
    slack: &dyn SlackFiles,
    artifacts: &dyn ArtifactStore,
    file: &FileRef,
    plan: Plan,
    key: &str,
) -> Result<Result<Kept, Unread>, PortError> {
    let url = file.url.as_deref().unwrap_or_default();
    let limit = match plan {
        Plan::Image(_) => files::IMAGE_BYTES,
        Plan::Document(_) => files::DOCUMENT_BYTES,
        _ => TEXT_BYTES,
    };
    let downloaded = match slack.download(url, limit).await {
        Ok(downloaded) => downloaded,
        Err(DownloadError::NoAccess(detail)) => {
            warn!(file = %file.id, detail, "file not readable");
            return Ok(Err(Unread::NoAccess));
        }
        Err(DownloadError::NotSlack(origin)) => {
            warn!(file = %file.id, origin, "file URL is not Slack's: not downloaded");
            return Ok(Err(Unread::NotSlack));
        }
        Err(DownloadError::Failed(err)) => {
            warn!(file = %file.id, error = %err, "file download failed");
            return Ok(Err(Unread::Unavailable));
        }
    };
    if is_sign_in_page(file, &downloaded.body, downloaded.content_type.as_deref()) {
        return Ok(Err(Unread::NoAccess));
    }
    let mut text_preview = None;
    let (body, content_type) = match plan {
        Plan::Image(_) | Plan::Document(_) if downloaded.cut => {
            return Ok(Err(Unread::TooLarge(limit)));
        }
        Plan::Image(format) if !format.matches(&downloaded.body) => {
            return Ok(Err(Unread::NotImage(format)));
        }
        Plan::Document(format) if !format.matches(&downloaded.body) => {
            return Ok(Err(Unread::NotDocument(format)));
        }
        Plan::Image(format) => (downloaded.body, image_type(format)),
        Plan::Document(format) => (downloaded.body, document_type(format)),
        _ => {
            let text = redact::redact(&String::from_utf8_lossy(&downloaded.body)).into_owned();
            text_preview = Some(preview(&text));
            (text.into_bytes(), "text/plain; charset=utf-8")
        }
    };
    let bytes = body.len() as u64;
    artifacts.put(key, body, content_type).await?;
    info!(file = %file.id, bytes, cut = downloaded.cut, "file kept");
    Ok(Ok(Kept { bytes, preview: text_preview }))
}

/// The first lines of a text, for the opening.
fn preview(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines().take(PREVIEW_LINES) {
        if out.len() + line.len() > PREVIEW_BYTES {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn text_note(file: &FileRef, kept: u64, preview: &str) -> String {
    let size = if file.size > kept {
        format!("{}; its first {} are kept", human_bytes(file.size), human_bytes(kept))
    } else {
        human_bytes(kept)
    };
    format!(
        "the text file {} ({size}). Read it with {READ_ATTACHMENT} {{\"file\": \"{}\"}} by line range or grep; it \
         starts:\n```\n{preview}```",
        file.name, file.id
    )
}

/// The bytes of every image and document in `messages` not yet in
/// `bodies`, read from the bucket. A file gone from the bucket is left
/// out (the adapter says so to the model).
pub async fn load_bodies(
    artifacts: &dyn ArtifactStore,
    messages: &[Message],
    bodies: &mut FileBodies,
) -> Result<(), PortError> {
    for message in messages {
        for content in &message.content {
            if let Content::File(block) = content
                && !bodies.contains_key(&block.key)
                && let Some(body) = artifacts.get(&block.key).await?
            {
                bodies.insert(block.key.clone(), body);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::memory::MemoryArtifacts;

    #[tokio::test]
    async fn images_and_documents_together_stay_under_what_one_model_request_carries() {
        let artifacts = MemoryArtifacts::default();
        let png = |n: usize| {
            let mut body = b"\x89PNG\r\n\x1a\n".to_vec();
            body.resize(3_500_000, n as u8);
            body
        };
        let url = |n: usize| format!("https://files.slack.com/files-pri/T1-F0P{n:07}/download/{n}.png");
        let mut slack = testkit::memory::MemorySlack::default();
        for n in 0..5 {
            slack = slack.with_file(&url(n), png(n));
        }
        let turn = testkit::store_contract::new_turn("Ev2");
        let mut request = TurnRequest {
            event_id: turn.event_id.clone(),
            thread: turn.thread.clone(),
            message_ts: slack::Ts::new("1763800100.000100"),
            user: turn.user.clone(),
            text: "compare these".into(),
            context_channel: None,
            bot_user: None,
            files: Vec::new(),
            membership: slack::Membership::Home,
        };
        request.files = (0..5)
            .map(|n| FileRef {
                id: format!("F0P{n:07}"),
                name: format!("{n}.png"),
                mimetype: "image/png".into(),
                filetype: "png".into(),
                size: 3_500_000,
                url: Some(url(n)),
                access: files::Access::Readable,
            })
            .collect();

        let read = read(&slack, &artifacts, &turn.id, &request, &[]).await.unwrap();

        let blocks = read.content.iter().filter(|content| matches!(content, Content::File(_))).count();
        assert_eq!(blocks, 3, "3 × 3.5 MB fit under {MAX_BLOCK_BYTES} B; the fourth would not");
        let notes = serde_json::to_string(&read.content).unwrap();
        assert!(
            notes.contains("3.png, which was not read: with the files before it") && notes.contains("4.png"),
            "{notes}"
        );
        assert_eq!(slack.downloads().len(), 3, "the others are not downloaded");
    }

    #[tokio::test]
    async fn the_thread_files_are_read_newest_first_once_each_and_bounded() {
        let artifacts = MemoryArtifacts::default();
        let url = |n: usize| format!("https://files.slack.com/files-pri/T1-F0F{n:07}/download/{n}.log");
        let mut slack = testkit::memory::MemorySlack::default();
        for n in 0..12 {
            slack = slack.with_file(&url(n), format!("log {n}\n").into_bytes());
        }
        let file = |n: usize| FileRef {
            id: format!("F0F{n:07}"),
            name: format!("{n}.log"),
            mimetype: "text/plain".into(),
            filetype: "text".into(),
            size: 6,
            url: Some(url(n)),
            access: files::Access::Readable,
        };
        let turn = testkit::store_contract::new_turn("Ev1");
        let request = TurnRequest {
            event_id: turn.event_id.clone(),
            thread: turn.thread.clone(),
            message_ts: slack::Ts::new("1763800100.000100"),
            user: turn.user.clone(),
            text: "what are these?".into(),
            context_channel: None,
            bot_user: None,
            files: vec![file(11)],
            membership: slack::Membership::Home,
        };
        // Earlier messages, oldest first, each with one file; the question's
        // own message is in the history too.
        let mut history: Vec<ThreadMessage> = (0..11)
            .map(|n| ThreadMessage {
                ts: slack::Ts::new(format!("17638000{n:02}.000100")),
                author: Author::Person(slack::UserId::new("U2")),
                text: String::new(),
                files: vec![file(n)],
            })
            .collect();
        history.push(ThreadMessage {
            ts: request.message_ts.clone(),
            author: Author::Person(request.user.clone()),
            text: request.text.clone(),
            files: vec![file(11)],
        });

        let Read { content, text_files } = read(&slack, &artifacts, &turn.id, &request, &history).await.unwrap();
        assert_eq!(text_files.len(), MAX_FILES);
        let all = serde_json::to_string(&content).unwrap();
        assert!(all.starts_with(r#"[{"text":"(<@U061F7AUR> shared the text file 11.log"#), "{all}");
        assert!(all.contains("(<@U2> shared the text file 10.log") && all.contains("4.log"), "{all}");
        assert!(!all.contains("3.log"), "at most {MAX_FILES}: {all}");
        assert!(all.contains("(4 older files in this thread were not read.)"), "{all}");
        assert_eq!(slack.downloads().len(), MAX_FILES, "each once");

        // A second start of the same turn (a redelivery) downloads nothing.
        let again = read(&slack, &artifacts, &turn.id, &request, &history).await.unwrap();
        assert_eq!(again.content, content);
        assert_eq!(slack.downloads().len(), MAX_FILES);
    }
}
