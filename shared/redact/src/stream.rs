//! Redaction for text that arrives in pieces: a model's answer streamed
//! into Slack as it is written.
//!
//! Redacting each piece on its own would leak: a token split across two
//! deltas matches no rule in either half. So text is held back until the
//! redactor's decision about it cannot change, and only then redacted and
//! released. A cut is made only
//! - at whitespace or a line end, so a secret written as one run of
//!   characters (tokens, keys, URLs with a password) is always seen whole;
//! - at least [`MIN_HOLD`] characters (or the longest value the redactor
//!   remembers) before the end, for shapes that span several runs
//!   (`Authorization: Basic …`, remembered values with spaces);
//! - before any line, or the line after one, that names a secret
//!   (`password:`, `"client_secret":`, `Cookie:`): such lines go whole,
//!   so a value with spaces after its name is redacted as one;
//! - before a private key block whose END line has not come yet;
//! - where redacting the two sides apart gives what redacting them
//!   together gives (no rule's match crosses the cut).
//!
//! What was released is never taken back; [`StreamRedactor::finish`]
//! redacts the rest whole.

use crate::Redactor;

/// Characters always held back from the end.
pub const MIN_HOLD: usize = 64;

/// Words that make a line (and the next) go whole: the names values are
/// assigned to in the by-name rules, and the starts of header and block
/// shapes. Matched case-insensitively, anywhere in the line.
const NAMING_WORDS: &[&str] =
    &["pass", "pwd", "secret", "token", "key", "auth", "bearer", "cookie", "credential", "session", "-----begin"];

/// Cuts tried per release before giving up until more text comes.
const CUT_TRIES: usize = 4;

/// Holds a streamed text back until each part of it can be redacted for
/// good. Feed it with [`push`](Self::push), take what is ready with
/// [`release`](Self::release), and the rest with [`finish`](Self::finish).
pub struct StreamRedactor<'r> {
    redactor: &'r Redactor,
    /// Received and not yet released.
    pending: String,
}

impl<'r> StreamRedactor<'r> {
    pub fn new(redactor: &'r Redactor) -> Self {
        Self { redactor, pending: String::new() }
    }

    pub fn push(&mut self, delta: &str) {
        self.pending.push_str(delta);
    }

    /// How many received characters wait (bytes, for the caller's batching).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// The redacted text whose redaction can no longer change; empty when
    /// nothing is ready yet.
    pub fn release(&mut self) -> String {
        let hold = MIN_HOLD.max(self.redactor.longest_remembered() + 1);
        let mut limit = self.pending.len().saturating_sub(hold);
        if let Some(begin) = open_private_key(&self.pending) {
            limit = limit.min(begin);
        }
        for _ in 0..CUT_TRIES {
            let Some(cut) = self.cut_at_or_before(limit) else { return String::new() };
            let (head, tail) = self.pending.split_at(cut);
            let whole = self.redactor.redact(&self.pending);
            let (head_redacted, tail_redacted) = (self.redactor.redact(head), self.redactor.redact(tail));
            if whole.len() == head_redacted.len() + tail_redacted.len()
                && whole.starts_with(head_redacted.as_ref())
                && whole.ends_with(tail_redacted.as_ref())
            {
                let released = head_redacted.into_owned();
                self.pending.drain(..cut);
                return released;
            }
            // A match crosses the cut: try an earlier one.
            limit = cut.saturating_sub(1);
        }
        String::new()
    }

    /// Everything not yet released, redacted whole: the text is complete.
    pub fn finish(&mut self) -> String {
        let rest = self.redactor.redact(&self.pending).into_owned();
        self.pending.clear();
        rest
    }

    /// The latest cut at or before `limit` that the rules allow: at
    /// whitespace or a line's start, and not inside a line (or the line
    /// after one) that names a secret.
    fn cut_at_or_before(&self, mut limit: usize) -> Option<usize> {
        let text = self.pending.as_str();
        loop {
            let (cut, _) = text
                .char_indices()
                .take_while(|&(at, _)| at <= limit)
                .filter(|&(at, c)| at > 0 && c.is_whitespace())
                .last()?;
            // The line the cut is in (or ends), and the one before it: a
            // value may follow its name on the next line (`"password":\n "…"`).
            let line_start = text[..cut].rfind('\n').map_or(0, |at| at + 1);
            let previous_start = match line_start {
                0 => 0,
                start => text[..start - 1].rfind('\n').map_or(0, |at| at + 1),
            };
            let line_end = text[cut..].find('\n').map_or(text.len(), |at| cut + at);
            if !names_a_secret(&text[previous_start..line_end]) {
                return Some(cut);
            }
            // Try the end of the line before; the loop walks back past
            // every line that names a secret or holds a named value.
            limit = line_start.checked_sub(1)?;
        }
    }
}

fn names_a_secret(lines: &str) -> bool {
    let lower = lines.to_ascii_lowercase();
    NAMING_WORDS.iter().any(|word| lower.contains(word))
}

/// Where a private key block begins whose END line has not come.
fn open_private_key(text: &str) -> Option<usize> {
    let begin = text.rfind("-----BEGIN ")?;
    (!text[begin..].contains("-----END ")).then_some(begin)
}
