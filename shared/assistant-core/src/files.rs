//! Files people paste into a thread, and how each reaches the model.
//!
//! A [`FileRef`] is what Slack says about a file (in the event that asked,
//! or in the thread's history); [`FileRef::plan`] decides what the bot does
//! with it, from that alone and before a byte is downloaded:
//! - images Bedrock reads (png, jpeg, gif, webp) go to the model as image
//!   blocks, PDFs and office documents as document blocks, each within
//!   Bedrock's per-block limits ([`IMAGE_BYTES`], [`DOCUMENT_BYTES`]);
//! - text (logs, stack traces, snippets, CSV, JSON…) is redacted, capped at
//!   [`TEXT_BYTES`] and kept in the artifact bucket, where the model reads
//!   it through the `read_attachment` tool (line ranges, grep) instead of
//!   having it pasted whole into every step;
//! - anything else, a file too large, a link to another service or a file
//!   shared from another organization gets a note saying why it was not
//!   read, never a failed turn.
//!
//! Only bucket keys enter the turn's item ([`FileBlock`]); the bytes are
//! read back for each model call.

use serde::{Deserialize, Serialize};
use slack::events::SlackFile;

/// The most files one turn reads (the question's first, then the thread's
/// newest).
pub const MAX_FILES: usize = 8;
/// Bedrock Converse: an image block at most 3.75 MB.
pub const IMAGE_BYTES: u64 = 3_750_000;
/// Bedrock Converse: a document block at most 4.5 MB.
pub const DOCUMENT_BYTES: u64 = 4_500_000;
/// Bedrock Converse: at most 5 documents in one request.
pub const MAX_DOCUMENTS: usize = 5;
/// The most image and document bytes one turn sends the model: every
/// request carries them (base64, a third more), and Anthropic's models on
/// Bedrock take requests up to 32 MB.
pub const MAX_BLOCK_BYTES: u64 = 12_000_000;
/// The most of a text file kept (from its start); the rest is said, not read.
pub const TEXT_BYTES: u64 = 4 * 1024 * 1024;

/// A file in the thread, as the work message and the turn carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mimetype: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub filetype: String,
    #[serde(default)]
    pub size: u64,
    /// `url_private_download`; none when Slack gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Access::is_readable")]
    pub access: Access,
}

/// Whether the bot can read the file at all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    #[default]
    Readable,
    /// A link to a file kept elsewhere (Google Drive, Dropbox…).
    External,
    /// Shared from another organization over Slack Connect.
    OtherOrganization,
    /// Deleted since it was shared.
    Deleted,
}

impl Access {
    fn is_readable(&self) -> bool {
        *self == Access::Readable
    }
}

/// Image formats Bedrock reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageFormat {
    Png,
    Jpeg,
    Gif,
    Webp,
}

/// Document formats Bedrock reads as documents (text formats are read as
/// text instead, so they can be redacted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentFormat {
    Pdf,
    Doc,
    Docx,
    Xls,
    Xlsx,
}

impl ImageFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpeg",
            ImageFormat::Gif => "gif",
            ImageFormat::Webp => "webp",
        }
    }

    /// Whether `bytes` start as this format's files do: what Slack served
    /// must be what it said, or Bedrock refuses the whole request.
    pub fn matches(self, bytes: &[u8]) -> bool {
        match self {
            ImageFormat::Png => bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            ImageFormat::Jpeg => bytes.starts_with(&[0xff, 0xd8, 0xff]),
            ImageFormat::Gif => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
            ImageFormat::Webp => bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP",
        }
    }
}

impl DocumentFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentFormat::Pdf => "pdf",
            DocumentFormat::Doc => "doc",
            DocumentFormat::Docx => "docx",
            DocumentFormat::Xls => "xls",
            DocumentFormat::Xlsx => "xlsx",
        }
    }

    /// Whether `bytes` start as this format's files do (PDF; the office
    /// formats are OLE or ZIP containers).
    pub fn matches(self, bytes: &[u8]) -> bool {
        match self {
            DocumentFormat::Pdf => bytes.starts_with(b"%PDF-"),
            DocumentFormat::Doc | DocumentFormat::Xls => bytes.starts_with(&[0xd0, 0xcf, 0x11, 0xe0]),
            DocumentFormat::Docx | DocumentFormat::Xlsx => bytes.starts_with(b"PK\x03\x04"),
        }
    }
}

/// What the bot does with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    Image(ImageFormat),
    Document(DocumentFormat),
    Text,
    /// Not read; the note says why.
    Skip(Skipped),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    External,
    OtherOrganization,
    Deleted,
    NoUrl,
    Unsupported,
    TooLarge { limit: u64 },
}

/// Slack `filetype`s that are text whatever their MIME type says.
const TEXT_FILETYPES: &[&str] = &[
    "text",
    "log",
    "csv",
    "tsv",
    "json",
    "yaml",
    "xml",
    "markdown",
    "md",
    "javascript",
    "typescript",
    "python",
    "rust",
    "go",
    "java",
    "kotlin",
    "shell",
    "sql",
    "diff",
    "html",
    "css",
    "toml",
    "ini",
    "dockerfile",
    "terraform",
    "c",
    "cpp",
    "csharp",
    "php",
    "ruby",
    "swift",
    "scala",
    "post",
    "space",
];

impl FileRef {
    /// From Slack's file object: what can be known without downloading.
    pub fn from_slack(file: &SlackFile) -> Self {
        let access = if file.mode.as_deref() == Some("tombstone") {
            Access::Deleted
        } else if file.is_external || file.mode.as_deref() == Some("external") {
            Access::External
        } else if file.file_access.as_deref() == Some("check_file_info") {
            Access::OtherOrganization
        } else {
            Access::Readable
        };
        let name = file.name.clone().or_else(|| file.title.clone()).unwrap_or_else(|| file.id.clone());
        Self {
            id: file.id.clone(),
            name,
            mimetype: file.mimetype.clone().unwrap_or_default(),
            filetype: file.filetype.clone().unwrap_or_default(),
            size: file.size.unwrap_or(0),
            url: file.url_private_download.clone(),
            access,
        }
    }

    /// Whether the id has Slack's shape ([`is_file_id`]).
    pub fn has_well_formed_id(&self) -> bool {
        is_file_id(&self.id)
    }

    pub fn plan(&self) -> Plan {
        match self.access {
            Access::External => return Plan::Skip(Skipped::External),
            Access::OtherOrganization => return Plan::Skip(Skipped::OtherOrganization),
            Access::Deleted => return Plan::Skip(Skipped::Deleted),
            Access::Readable => {}
        }
        if self.url.is_none() || !self.has_well_formed_id() {
            return Plan::Skip(Skipped::NoUrl);
        }
        let plan = self.kind();
        let limit = match plan {
            Plan::Image(_) => IMAGE_BYTES,
            Plan::Document(_) => DOCUMENT_BYTES,
            _ => return plan,
        };
        if self.size > limit {
            return Plan::Skip(Skipped::TooLarge { limit });
        }
        plan
    }

    fn kind(&self) -> Plan {
        let mime = self.mimetype.to_ascii_lowercase();
        let filetype = self.filetype.to_ascii_lowercase();
        let image = match (mime.as_str(), filetype.as_str()) {
            ("image/png", _) | (_, "png") => Some(ImageFormat::Png),
            ("image/jpeg" | "image/jpg", _) | (_, "jpg" | "jpeg") => Some(ImageFormat::Jpeg),
            ("image/gif", _) | (_, "gif") => Some(ImageFormat::Gif),
            ("image/webp", _) | (_, "webp") => Some(ImageFormat::Webp),
            _ => None,
        };
        if let Some(format) = image {
            return Plan::Image(format);
        }
        let document = match filetype.as_str() {
            "pdf" => Some(DocumentFormat::Pdf),
            "doc" => Some(DocumentFormat::Doc),
            "docx" => Some(DocumentFormat::Docx),
            "xls" => Some(DocumentFormat::Xls),
            "xlsx" => Some(DocumentFormat::Xlsx),
            _ if mime == "application/pdf" => Some(DocumentFormat::Pdf),
            _ => None,
        };
        if let Some(format) = document {
            return Plan::Document(format);
        }
        let texty_mime = mime.starts_with("text/")
            || ["application/json", "application/xml", "application/x-yaml", "application/yaml"]
                .contains(&mime.as_str());
        if texty_mime || TEXT_FILETYPES.contains(&filetype.as_str()) {
            return Plan::Text;
        }
        Plan::Skip(Skipped::Unsupported)
    }

    /// The bucket key of the file's stored copy for `turn` (images and
    /// documents as served, text redacted).
    pub fn key(&self, turn: &crate::TurnId) -> String {
        file_key(turn, &self.id)
    }
}

/// Whether `id` has a Slack file id's shape (`F` and capital letters and
/// digits), as it must to become part of a bucket key.
pub fn is_file_id(id: &str) -> bool {
    (2..=32).contains(&id.len())
        && id.starts_with('F')
        && id.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// The bucket key of file `id`'s copy kept for `turn`.
pub fn file_key(turn: &crate::TurnId, id: &str) -> String {
    format!("{}{id}", files_prefix(turn))
}

/// Where a turn's files are kept: under the turn, so a tool reading them
/// can only ever read the asking turn's own.
pub fn files_prefix(turn: &crate::TurnId) -> String {
    format!("turns/{turn}/files/")
}

impl Skipped {
    /// Why the bot did not read `file`, as the model is told (and repeats).
    pub fn note(self, file: &FileRef) -> String {
        let name = &file.name;
        match self {
            Skipped::External => format!("{name} is a link to a file kept outside Slack; the bot cannot open it."),
            Skipped::OtherOrganization => format!(
                "{name} was shared from another organization (Slack Connect); the bot cannot read files shared that way."
            ),
            Skipped::Deleted => format!("{name} was deleted."),
            Skipped::NoUrl => format!("Slack gave no download link for {name}; the bot cannot read it."),
            Skipped::Unsupported => format!(
                "{name} ({}) is not a kind of file the bot reads: images (png, jpeg, gif, webp), PDF and office documents, and text files.",
                if file.filetype.is_empty() { &file.mimetype } else { &file.filetype }
            ),
            Skipped::TooLarge { limit } => format!(
                "{name} is {} and the model reads files of this kind up to {}: ask for a smaller one (a cropped screenshot, fewer pages).",
                human_bytes(file.size),
                human_bytes(limit)
            ),
        }
    }
}

/// `3.8 MB`, `512 KB`, `120 B`.
pub fn human_bytes(bytes: u64) -> String {
    match bytes {
        0..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{} KB", bytes / 1_000),
        _ => format!("{:.1} MB", bytes as f64 / 1_000_000.0),
    }
}

/// An image or document in the transcript: the model reads it from the
/// bucket key on every call; the item holds only the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileBlock {
    pub file_id: String,
    pub name: String,
    pub key: String,
    pub kind: FileKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    Image(ImageFormat),
    Document(DocumentFormat),
}

/// A document's name as Bedrock accepts it: letters, digits, single
/// spaces, hyphens, parentheses and square brackets (anything else is a
/// validation error, and the name is model input too). `tag` (the file
/// id) keeps two files with one name apart.
pub fn document_name(name: &str, tag: &str) -> String {
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    let mut clean = String::new();
    for c in stem.chars().take(80) {
        let c = if c.is_ascii_alphanumeric() || "-()[]".contains(c) { c } else { ' ' };
        if !(c == ' ' && (clean.is_empty() || clean.ends_with(' '))) {
            clean.push(c);
        }
    }
    let clean = clean.trim_end();
    let tag: String = tag.chars().filter(char::is_ascii_alphanumeric).collect();
    if clean.is_empty() { format!("document {tag}") } else { format!("{clean} {tag}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, mimetype: &str, filetype: &str, size: u64) -> FileRef {
        FileRef {
            id: "F0ABC123".into(),
            name: name.into(),
            mimetype: mimetype.into(),
            filetype: filetype.into(),
            size,
            url: Some("https://files.slack.com/files-pri/T1-F0ABC123/download/x".into()),
            access: Access::Readable,
        }
    }

    #[test]
    fn images_documents_and_text_are_told_apart_by_what_slack_says() {
        assert_eq!(file("a.png", "image/png", "png", 10).plan(), Plan::Image(ImageFormat::Png));
        assert_eq!(file("a.jpg", "image/jpeg", "jpg", 10).plan(), Plan::Image(ImageFormat::Jpeg));
        assert_eq!(file("a.pdf", "application/pdf", "pdf", 10).plan(), Plan::Document(DocumentFormat::Pdf));
        assert_eq!(file("a.xlsx", "application/vnd.ms-excel", "xlsx", 10).plan(), Plan::Document(DocumentFormat::Xlsx));
        assert_eq!(file("app.log", "text/plain", "text", 50_000_000).plan(), Plan::Text, "text of any size, capped");
        assert_eq!(file("trace", "application/octet-stream", "javascript", 10).plan(), Plan::Text);
        assert_eq!(file("a.zip", "application/zip", "zip", 10).plan(), Plan::Skip(Skipped::Unsupported));
        assert_eq!(file("a.heic", "image/heic", "heic", 10).plan(), Plan::Skip(Skipped::Unsupported));
    }

    #[test]
    fn a_file_over_bedrocks_block_limit_is_refused_before_download_with_a_note() {
        let big = file("dashboard.png", "image/png", "png", 5_200_000);
        assert_eq!(big.plan(), Plan::Skip(Skipped::TooLarge { limit: IMAGE_BYTES }));
        let note = Skipped::TooLarge { limit: IMAGE_BYTES }.note(&big);
        assert!(note.contains("dashboard.png is 5.2 MB") && note.contains("up to 3.8 MB"), "{note}");
        assert_eq!(file("a.pdf", "", "pdf", 4_600_000).plan(), Plan::Skip(Skipped::TooLarge { limit: DOCUMENT_BYTES }));
    }

    #[test]
    fn unreadable_files_are_skipped_with_a_reason() {
        let slack = |json: serde_json::Value| FileRef::from_slack(&serde_json::from_value(json).unwrap());
        let connect = slack(serde_json::json!({"id": "F0CONNECT1", "file_access": "check_file_info"}));
        assert_eq!(connect.plan(), Plan::Skip(Skipped::OtherOrganization));
        assert!(Skipped::OtherOrganization.note(&connect).contains("Slack Connect"));
        let drive =
            slack(serde_json::json!({"id": "F0DRIVE1", "name": "plan", "is_external": true, "mode": "external"}));
        assert_eq!(drive.plan(), Plan::Skip(Skipped::External));
        let gone = slack(serde_json::json!({"id": "F0GONE1", "mode": "tombstone"}));
        assert_eq!(gone.plan(), Plan::Skip(Skipped::Deleted));
        let no_url = slack(serde_json::json!({"id": "F0NOURL1", "name": "a.png", "filetype": "png"}));
        assert_eq!(no_url.plan(), Plan::Skip(Skipped::NoUrl));
        // A hostile id never becomes part of a bucket key.
        let mut traversal = file("a.log", "text/plain", "text", 10);
        traversal.id = "F../../other-turn".into();
        assert_eq!(traversal.plan(), Plan::Skip(Skipped::NoUrl));
    }

    #[test]
    fn content_must_match_the_format_slack_named() {
        assert!(ImageFormat::Png.matches(b"\x89PNG\r\n\x1a\nrest"));
        assert!(!ImageFormat::Png.matches(b"<!DOCTYPE html>"));
        assert!(ImageFormat::Webp.matches(b"RIFF\0\0\0\0WEBPVP8 "));
        assert!(DocumentFormat::Pdf.matches(b"%PDF-1.7"));
        assert!(!DocumentFormat::Pdf.matches(b"<html>login</html>"));
    }

    #[test]
    fn document_names_keep_to_what_bedrock_accepts() {
        assert_eq!(document_name("Q3 report (final).pdf", "F1"), "Q3 report (final) F1");
        assert_eq!(document_name("ignore_all__instructions!!.pdf", "F2"), "ignore all instructions F2");
        assert_eq!(document_name("...", "F3"), "document F3");
        assert_eq!(document_name("日本語.pdf", "F4/../x"), "document F4x");
    }
}
