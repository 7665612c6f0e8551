//! Files pasted into the thread, read when a turn starts ([`read`]); the
//! model reads the text ones through `read_attachment` (`tools-files`).
//!
//! What happens to each file is [`assistant_core::files`]'s decision; this
//! module downloads (with the bot token, bounded), checks that what Slack
//! served is what it said, keeps it in the artifact bucket under the turn
//! (`turns/{turn}/files/{file_id}`) and says what the model gets:
//! - an image or document: a [`FileBlock`] naming the key, read back for
//!   each model call ([`load_bodies`]);
//! - text: redacted before it is stored, then a note with its size (what
//!   Slack served, and whether the bot read all of it), its first lines and
//!   how to read the rest through `read_attachment`;
//! - anything it could not read: a note saying why.
//!
//! Each file is introduced by a line naming it: its place among the files
//! shown (`File 2 of 3`), its name, who shared it and whether in the
//! message being answered (new) or an earlier one. The opening
//! ([`crate::context::opening`]) puts each file after the text of the
//! message that shared it, as a person sees them in the thread.
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
use slack::Ts;
use std::collections::BTreeMap;
use tools_registry::READ_ATTACHMENT;
use tracing::{info, warn};

/// How much of a text file the opening shows before the tool is needed.
const PREVIEW_LINES: usize = 20;
const PREVIEW_BYTES: usize = 1_500;

/// A file, who shared it, and in which message.
struct Shared<'a> {
    file: &'a FileRef,
    by: String,
    message: Ts,
    /// Shared in the message being answered.
    new: bool,
}

/// The files a turn reads: the question's, then the thread's newest
/// earlier ones, each once, at most [`MAX_FILES`]; and how many more
/// there were.
fn candidates<'a>(request: &'a TurnRequest, history: &'a [ThreadMessage]) -> (Vec<Shared<'a>>, usize) {
    let mut all: Vec<Shared<'a>> = request
        .files
        .iter()
        .map(|file| Shared { file, by: format!("<@{}>", request.user), message: request.message_ts.clone(), new: true })
        .collect();
    // Messages after the question are not shown to the model, nor their files.
    let asked_at = crate::context::order(&request.message_ts);
    for message in history.iter().rev().filter(|message| crate::context::order(&message.ts) < asked_at) {
        let by = match &message.author {
            Author::Person(user) => format!("<@{user}>"),
            Author::OtherBot(bot) => format!("bot {bot}"),
            Author::ThisBot => "you".to_owned(),
        };
        all.extend(message.files.iter().map(|file| Shared {
            file,
            by: by.clone(),
            message: message.ts.clone(),
            new: false,
        }));
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

/// One file as the model is shown it: a line naming it, then its block or
/// its note.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownFile {
    pub file_id: String,
    /// Its name, as Slack gives it.
    pub name: String,
    /// The message that shared it.
    pub message: Ts,
    /// Its place among the files shown, from 1, in the thread's order.
    pub number: usize,
    /// Shared in the message being answered.
    pub new: bool,
    pub content: Vec<Content>,
}

/// What a turn's start read of its thread's files.
#[derive(Debug, Default, PartialEq)]
pub struct Read {
    /// The files shown, in the thread's order (oldest message first, each
    /// message's files in the order it has them).
    pub files: Vec<ShownFile>,
    /// Files shared in the thread beyond the [`MAX_FILES`] read (the
    /// oldest), which are not shown.
    pub not_read: usize,
    /// The text files kept, for `read_attachment`.
    pub text_files: Vec<String>,
}

/// A file's introduction: `File 2 of 3: app.log, shared by <@U1> in an
/// earlier message`.
fn introduction(shared: &Shared, number: usize, of: usize) -> String {
    let place = if shared.new { "in the message you are answering (new)" } else { "in an earlier message" };
    format!("File {number} of {of}: {}, shared by {} {place}", shared.file.name, shared.by)
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
    let (shared, not_read) = candidates(request, history);
    if shared.is_empty() {
        return Ok(Read { not_read, ..Read::default() });
    }
    // Shown in the thread's order: the earlier messages' files oldest
    // first, the question's last. (Read in `shared`'s order: the
    // question's and the newest first get the model's limits.)
    let mut display: Vec<usize> = (0..shared.len()).collect();
    display.sort_by_key(|&at| (shared[at].new, crate::context::order(&shared[at].message)));
    let mut number = vec![0; shared.len()];
    for (place, &at) in display.iter().enumerate() {
        number[at] = place + 1;
    }
    let of = shared.len();
    let mut text_files = Vec::new();
    let kept: BTreeMap<String, u64> =
        artifacts.list(&files::files_prefix(turn), MAX_FILES * 2).await?.into_iter().collect();
    let mut contents: Vec<Vec<Content>> = Vec::with_capacity(shared.len());
    let (mut documents, mut block_bytes) = (0, 0);
    for (at, this) in shared.iter().enumerate() {
        let file = this.file;
        let intro = introduction(this, number[at], of);
        let unread = |why: String| vec![Content::Text(format!("({intro}; not read: {why})"))];
        let plan = match file.plan() {
            Plan::Document(_) if documents >= MAX_DOCUMENTS => {
                contents.push(unread(format!("the model reads at most {MAX_DOCUMENTS} documents at once.")));
                continue;
            }
            Plan::Image(_) | Plan::Document(_) if block_bytes + file.size > MAX_BLOCK_BYTES => {
                contents.push(unread(format!(
                    "with the files before it, it is more than the {} of images and documents the model reads \
                     at once. Ask about fewer files at a time.",
                    human_bytes(MAX_BLOCK_BYTES)
                )));
                continue;
            }
            Plan::Skip(why) => {
                info!(file = %file.id, reason = ?why, "file not read");
                contents.push(unread(why.note(file)));
                continue;
            }
            plan => plan,
        };
        let key = file.key(turn);
        let stored = match kept.get(&key) {
            Some(&bytes) => {
                info!(file = %file.id, "file already kept: not downloaded again");
                Ok(Kept { bytes, text: None })
            }
            None => keep(slack, artifacts, file, plan, &key).await?,
        };
        let Kept { bytes, text } = match stored {
            Ok(kept) => kept,
            Err(why) => {
                contents.push(unread(why.to_string()));
                continue;
            }
        };
        match plan {
            Plan::Image(format) => {
                block_bytes += bytes;
                contents.push(vec![
                    Content::Text(format!("({intro}; the image follows.)")),
                    block(file, key, FileKind::Image(format)),
                ]);
            }
            Plan::Document(format) => {
                documents += 1;
                block_bytes += bytes;
                contents.push(vec![
                    Content::Text(format!("({intro}; the document follows.)")),
                    block(file, key, FileKind::Document(format)),
                ]);
            }
            Plan::Text => {
                text_files.push(file.id.clone());
                // Kept by an earlier start: its preview is read back, and
                // what was read is known from Slack's size and the limit.
                let text = match text {
                    Some(text) => text,
                    None => {
                        let kept = artifacts.get(&key).await?.unwrap_or_default();
                        let read = if file.size > 0 { file.size.min(TEXT_BYTES) } else { kept.len() as u64 };
                        KeptText {
                            read,
                            cut: file.size > TEXT_BYTES,
                            preview: preview(&String::from_utf8_lossy(&kept)),
                        }
                    }
                };
                contents.push(vec![Content::Text(text_note(&intro, file, &text))]);
            }
            Plan::Skip(_) => unreachable!("skipped above"),
        }
    }
    let mut files: Vec<ShownFile> = shared
        .iter()
        .zip(contents)
        .enumerate()
        .map(|(at, (this, content))| ShownFile {
            file_id: this.file.id.clone(),
            name: this.file.name.clone(),
            message: this.message.clone(),
            number: number[at],
            new: this.new,
            content,
        })
        .collect();
    files.sort_by_key(|shown| shown.number);
    Ok(Read { files, not_read, text_files })
}

fn block(file: &FileRef, key: String, kind: FileKind) -> Content {
    Content::File(FileBlock { file_id: file.id.clone(), name: file.name.clone(), key, kind })
}

/// What was kept of a file: its size as kept, and for text what was read.
struct Kept {
    bytes: u64,
    text: Option<KeptText>,
}

/// A text file as the bot read it: how many bytes Slack served (before
/// redaction, which changes lengths), whether that was all of it, and its
/// first lines.
struct KeptText {
    read: u64,
    cut: bool,
    preview: String,
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
    let mut text = None;
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
            let redacted = redact::redact(&String::from_utf8_lossy(&downloaded.body)).into_owned();
            text =
                Some(KeptText { read: downloaded.body.len() as u64, cut: downloaded.cut, preview: preview(&redacted) });
            (redacted.into_bytes(), "text/plain; charset=utf-8")
        }
    };
    let bytes = body.len() as u64;
    artifacts.put(key, body, content_type).await?;
    info!(file = %file.id, bytes, cut = downloaded.cut, "file kept");
    Ok(Ok(Kept { bytes, text }))
}

/// The first lines of a text, for the opening; a first line longer than
/// the preview is cut, and says so.
fn preview(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines().take(PREVIEW_LINES) {
        if out.len() + line.len() > PREVIEW_BYTES {
            if out.is_empty() {
                let mut end = PREVIEW_BYTES;
                while !line.is_char_boundary(end) {
                    end -= 1;
                }
                out.push_str(&line[..end]);
                out.push_str(&format!(" …(this line goes on for {} more bytes)\n", line.len() - end));
            }
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Two sizes that differ, each written so that they look different
/// (`4.2 MB` and `4.2 MB` would not).
fn two_sizes(whole: u64, part: u64) -> (String, String) {
    let (a, b) = (human_bytes(whole), human_bytes(part));
    if a == b { (format!("{whole} bytes"), format!("{part} bytes")) } else { (a, b) }
}

fn text_note(intro: &str, file: &FileRef, text: &KeptText) -> String {
    // Slack's size when it was read whole: what a redelivery, which finds
    // the redacted copy kept, can say as well.
    let size = if !text.cut {
        format!("a text file of {}", human_bytes(if file.size > 0 { file.size } else { text.read }))
    } else if file.size > text.read {
        let (whole, read) = two_sizes(file.size, text.read);
        format!("a text file of {whole}, of which the bot read the first {read} (the rest cannot be read)")
    } else {
        format!("a text file larger than the {} the bot read (the rest cannot be read)", human_bytes(text.read))
    };
    format!(
        "({intro}: {size}. Read it with {READ_ATTACHMENT} {{\"file\": \"{}\"}} by line range or grep; it starts:\n```\n{}```)",
        file.id, text.preview
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

    fn all_content(read: &Read) -> Vec<Content> {
        read.files.iter().flat_map(|shown| shown.content.clone()).collect()
    }

    fn text_file(id: &str, name: &str, size: u64) -> FileRef {
        FileRef {
            id: id.into(),
            name: name.into(),
            mimetype: "text/plain".into(),
            filetype: "text".into(),
            size,
            url: Some(format!("https://files.slack.com/files-pri/T1-{id}/download/{name}")),
            access: files::Access::Readable,
        }
    }

    fn asking(turn: &assistant_core::turn::Turn, files: Vec<FileRef>) -> TurnRequest {
        TurnRequest {
            event_id: turn.event_id.clone(),
            thread: turn.thread.clone(),
            message_ts: slack::Ts::new("1763800100.000100"),
            user: turn.user.clone(),
            text: "what is in it?".into(),
            context_channel: None,
            bot_user: None,
            files,
            membership: slack::Membership::Home,
            asked_at: None,
        }
    }

    /// The note of the one text file `read` shows.
    fn note(read: &Read) -> String {
        match &read.files[..] {
            [shown] => match &shown.content[..] {
                [Content::Text(note)] => note.clone(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_log_whose_secrets_got_shorter_placeholders_is_described_whole_not_cut() {
        // GIVEN a 95 KB log full of tokens, which redaction shortens
        let token = format!("xox{}-{}-{}", "b", "2024061715", "q8Xv2LmN4pR7sT1wY9zK3bC6");
        let mut log = String::new();
        while log.len() < 95_000 {
            log.push_str(&format!("2025-11-22T08:00:00Z INFO call with token={token} ok\n"));
        }
        let file = text_file("F0LOG95KB1", "app.log", log.len() as u64);
        let slack =
            testkit::memory::MemorySlack::default().with_file(file.url.as_deref().unwrap(), log.clone().into_bytes());
        let artifacts = MemoryArtifacts::default();
        let turn = testkit::store_contract::new_turn("Ev3");
        let request = asking(&turn, vec![file]);

        // WHEN the turn's start reads it, and a redelivery reads it again
        let first = read(&slack, &artifacts, &turn.id, &request, &[]).await.unwrap();
        let again = read(&slack, &artifacts, &turn.id, &request, &[]).await.unwrap();

        // THEN it is described by the size Slack served, as read whole
        let kept = artifacts.get(&format!("turns/{}/files/F0LOG95KB1", turn.id)).await.unwrap().unwrap();
        assert!(kept.len() < log.len(), "redaction shortened it: {} < {}", kept.len(), log.len());
        let note = note(&first);
        assert!(note.contains("in the message you are answering (new): a text file of 95 KB. Read it with"), "{note}");
        assert!(!note.contains("first") && !note.contains("cannot be read"), "not cut: {note}");
        assert!(!note.contains(&token), "{note}");
        assert_eq!(self::note(&again), note, "the redelivery says the same");
    }

    #[tokio::test]
    async fn a_log_over_what_the_bot_reads_says_it_was_cut_with_sizes_that_differ() {
        // GIVEN a log just over the 4 MiB the bot reads: 4.2 MB both ways
        let log = "ERROR pool exhausted\n".repeat(200_000);
        let file = text_file("F0LOGBIG01", "big.log", log.len() as u64);
        let slack =
            testkit::memory::MemorySlack::default().with_file(file.url.as_deref().unwrap(), log.clone().into_bytes());
        let artifacts = MemoryArtifacts::default();
        let turn = testkit::store_contract::new_turn("Ev4");
        let request = asking(&turn, vec![file]);

        let first = read(&slack, &artifacts, &turn.id, &request, &[]).await.unwrap();
        let again = read(&slack, &artifacts, &turn.id, &request, &[]).await.unwrap();

        let note = note(&first);
        assert!(
            note.contains(&format!(
                "a text file of {} bytes, of which the bot read the first {TEXT_BYTES} bytes (the rest cannot be read)",
                log.len()
            )),
            "{note}"
        );
        assert_eq!(self::note(&again), note, "the redelivery says the same");
    }

    #[test]
    fn a_preview_whose_first_line_is_long_shows_its_start_and_says_so() {
        let text = format!("{}\nsecond line\n", "x".repeat(5_000));
        let shown = preview(&text);
        assert!(shown.starts_with(&"x".repeat(PREVIEW_BYTES)), "{shown}");
        assert!(
            shown.ends_with(&format!(" …(this line goes on for {} more bytes)\n", 5_000 - PREVIEW_BYTES)),
            "{shown}"
        );
        assert_eq!(preview("a\nb\n"), "a\nb\n");
    }

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
            asked_at: None,
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

        let content = all_content(&read);
        let blocks = content.iter().filter(|content| matches!(content, Content::File(_))).count();
        assert_eq!(blocks, 3, "3 × 3.5 MB fit under {MAX_BLOCK_BYTES} B; the fourth would not");
        let notes = serde_json::to_string(&content).unwrap();
        assert!(
            notes.contains("(File 4 of 5: 3.png, shared by <@U061F7AUR> in the message you are answering (new); not read: with the files before it")
                && notes.contains("File 5 of 5: 4.png"),
            "{notes}"
        );
        assert!(notes.contains("(File 1 of 5: 0.png, shared by <@U061F7AUR> in the message you are answering (new); the image follows.)"), "{notes}");
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
            asked_at: None,
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

        let first = read(&slack, &artifacts, &turn.id, &request, &history).await.unwrap();
        assert_eq!(first.text_files.len(), MAX_FILES);
        assert_eq!(first.not_read, 4, "0.log to 3.log");
        // Shown in the thread's order: the oldest read first, the question's last.
        let names: Vec<(usize, bool, &str)> =
            first.files.iter().map(|shown| (shown.number, shown.new, shown.message.as_str())).collect();
        assert_eq!(names[0], (1, false, "1763800004.000100"));
        assert_eq!(names[7], (8, true, "1763800100.000100"));
        let all = serde_json::to_string(&all_content(&first)).unwrap();
        assert!(
            all.starts_with(
                r#"[{"text":"(File 1 of 8: 4.log, shared by <@U2> in an earlier message: a text file of 6 B."#
            ),
            "{all}"
        );
        assert!(
            all.contains("(File 8 of 8: 11.log, shared by <@U061F7AUR> in the message you are answering (new): a text file of 6 B."),
            "{all}"
        );
        assert!(!all.contains("3.log"), "at most {MAX_FILES}: {all}");
        assert_eq!(slack.downloads().len(), MAX_FILES, "each once");

        // A second start of the same turn (a redelivery) downloads nothing.
        let again = read(&slack, &artifacts, &turn.id, &request, &history).await.unwrap();
        assert_eq!(again, first);
        assert_eq!(slack.downloads().len(), MAX_FILES);
    }
}
