//! The opening of a turn's transcript: the thread so far, then the question.
//!
//! This bot's earlier messages become assistant turns, so the model sees
//! its own answers as its own; people are named by their Slack mention
//! (`<@U…>`, which Slack renders as their name, and which the model can
//! use to address them); other bots are marked as bots. Consecutive
//! messages of one role are merged, because Converse wants roles to
//! alternate, starting and ending with the user.
//!
//! The opening is capped in bytes as well as in messages, so a thread of
//! pasted logs still starts a turn whose state fits a DynamoDB item: each
//! earlier message is cut at [`MESSAGE_BYTES`], the newest earlier messages
//! are kept up to [`HISTORY_BYTES`] (the model is told how many were left
//! out), and the question at [`QUESTION_BYTES`].

use assistant_core::files::FileRef;
use assistant_core::messages::TurnRequest;
use assistant_core::ports::{Author, ChannelInfo, ThreadMessage};
use assistant_core::turn::{Content, Message, Role};
use slack::{ChannelId, Ts};

/// How many earlier thread messages a turn starts with.
pub const HISTORY_LIMIT: usize = 30;
/// The most of one earlier message a turn starts with.
pub const MESSAGE_BYTES: usize = 8 * 1024;
/// The most of all earlier messages together.
pub const HISTORY_BYTES: usize = 64 * 1024;
/// The most of the question (Slack allows 40,000 characters, which may be
/// four bytes each).
pub const QUESTION_BYTES: usize = 48 * 1024;

/// `text` cut to at most `max` bytes at a character boundary, saying so.
fn capped(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} …(cut: {} more bytes)", &text[..end], text.len() - end)
}

/// For a message without words (a file shared with no text): the model
/// greets and says what it can do. (Opening the DM or an assistant thread
/// no longer starts a turn: it shows the suggested prompts.)
const GREETING_REQUEST: &str = "(The user opened a conversation with you without a question yet. Greet them briefly and say what you can help with.)";

/// For a message whose only content is files: the model looks at them.
const FILES_ONLY_REQUEST: &str = "(shared the files below without a question: say briefly what they show and what \
     stands out, as an on-call engineer would want to know.)";

/// `1763800000.000100` as (seconds, microseconds), for ordering.
fn order(ts: &Ts) -> (u64, u64) {
    let (secs, micros) = ts.as_str().split_once('.').unwrap_or((ts.as_str(), "0"));
    (secs.parse().unwrap_or(0), micros.parse().unwrap_or(0))
}

/// A message as the model reads it: secrets people pasted into the thread
/// (or the question) are redacted before the model or the stored turn see
/// them.
fn line(author: &Author, text: &str, files: &[FileRef]) -> (Role, String) {
    let redacted = redact::redact(text);
    let text = if files.is_empty() {
        redacted.into_owned()
    } else {
        let names: Vec<&str> = files.iter().map(|file| file.name.as_str()).collect();
        format!("{redacted} [shared: {}]", names.join(", ")).trim_start().to_owned()
    };
    let text: &str = &text;
    match author {
        Author::ThisBot => (Role::Assistant, text.to_owned()),
        Author::Person(user) => (Role::User, format!("<@{user}>: {text}")),
        Author::OtherBot(bot) => (Role::User, format!("(bot {bot}): {text}")),
    }
}

fn push_merged(messages: &mut Vec<Message>, role: Role, text: String) {
    match messages.last_mut() {
        Some(last) if last.role == role => last.content.push(Content::Text(text)),
        _ => messages.push(Message { role, content: vec![Content::Text(text)] }),
    }
}

/// A line for the system prompt saying where the conversation is.
pub fn channel_context(info: &ChannelInfo) -> String {
    let Some(name) = &info.name else {
        return "You are in a direct message with the user.".to_owned();
    };
    let mut line = format!("You are answering in the Slack channel #{name}.");
    for (what, value) in [("topic", &info.topic), ("purpose", &info.purpose)] {
        if !value.trim().is_empty() {
            line.push_str(&format!(" Its {what}: {}.", value.trim().trim_end_matches('.')));
        }
    }
    line
}

/// A line for the system prompt in a channel the configuration names as the
/// team's place for these questions (`home_channels`).
pub const HOME_CHANNEL: &str = "This channel is the team's place for these questions: answer here, and never send the person to another channel, team or support queue to ask instead.";

/// A line for the system prompt saying which channel the user had open in
/// the assistant panel when they asked (Slack's `context.channel_id`).
pub fn viewing_context(channel: &ChannelId) -> String {
    format!("The user has the channel <#{channel}> open beside this conversation; \"this channel\" means that one.")
}

/// A DM thread's title from its question: its first line, mentions
/// dropped, whitespace folded, at most [`TITLE_CHARS`] characters.
pub fn thread_title(question: &str) -> String {
    let line = question.lines().find(|line| !line.trim().is_empty()).unwrap_or_default();
    let words: Vec<&str> =
        line.split_whitespace().filter(|word| !(word.starts_with("<@") && word.ends_with('>'))).collect();
    let title = words.join(" ");
    if title.chars().count() <= TITLE_CHARS {
        return title;
    }
    let cut: String = title.chars().take(TITLE_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// The longest thread title set.
pub const TITLE_CHARS: usize = 60;

/// The messages a turn starts with.
pub fn opening(history: &[ThreadMessage], request: &TurnRequest) -> Vec<Message> {
    let asked_at = order(&request.message_ts);
    let earlier: Vec<(Role, String)> = history
        .iter()
        .filter(|m| order(&m.ts) < asked_at && !(m.text.trim().is_empty() && m.files.is_empty()))
        .map(|message| {
            let (role, text) = line(&message.author, &message.text, &message.files);
            (role, capped(text, MESSAGE_BYTES))
        })
        .collect();
    // The newest earlier messages that fit together.
    let (mut kept, mut used) = (0, 0);
    for (_, text) in earlier.iter().rev() {
        if used + text.len() > HISTORY_BYTES {
            break;
        }
        used += text.len();
        kept += 1;
    }
    let left_out = earlier.len() - kept;
    let mut messages = Vec::new();
    if left_out > 0 {
        push_merged(&mut messages, Role::User, format!("({left_out} earlier messages of this thread are left out.)"));
    }
    for (role, text) in earlier.into_iter().skip(left_out) {
        push_merged(&mut messages, role, text);
    }
    if messages.first().is_some_and(|first| first.role == Role::Assistant) {
        messages.insert(0, Message::user_text("(Earlier in this thread:)"));
    }
    let question = if !request.text.trim().is_empty() {
        capped(line(&Author::Person(request.user.clone()), &request.text, &[]).1, QUESTION_BYTES)
    } else if !request.files.is_empty() {
        format!("<@{}> {FILES_ONLY_REQUEST}", request.user)
    } else {
        GREETING_REQUEST.to_owned()
    };
    push_merged(&mut messages, Role::User, question);
    messages
}

/// Puts the files read for a turn ([`crate::thread_files::read`]) into its
/// last message, before the question: the model looks at them, then reads
/// what was asked about them.
pub fn attach_files(transcript: &mut [Message], files: Vec<Content>) {
    if let Some(last) = transcript.last_mut().filter(|message| message.role == Role::User) {
        let at = last.content.len().saturating_sub(1);
        last.content.splice(at..at, files);
    }
}

/// Said before a reply's question when its thread could not be read: Slack
/// limits `conversations.replies` for apps outside its Marketplace (one
/// read a minute), so the bot answers from the message it has.
pub const THREAD_UNREAD: &str = "(The earlier messages of this thread could not be read just now: Slack limited \
     the bot's reads. Answer from this message alone, and say in one short sentence that you could not see the rest \
     of the thread.)";

/// The messages a turn starts with when its thread's history could not be
/// read: the question, and, for a reply in a thread, a note saying so.
pub fn opening_unread(request: &TurnRequest) -> Vec<Message> {
    let mut messages = opening(&[], request);
    if request.message_ts != request.thread.thread_ts {
        messages[0].content.insert(0, Content::Text(THREAD_UNREAD.to_owned()));
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use slack::UserId;
    use testkit::store_contract;

    fn request(text: &str) -> TurnRequest {
        let turn = store_contract::new_turn("Ev1");
        TurnRequest {
            event_id: turn.event_id,
            thread: turn.thread,
            message_ts: Ts::new("1763800300.000300"),
            user: UserId::new("U2"),
            text: text.into(),
            context_channel: None,
            bot_user: Some(UserId::new("UBOT")),
            files: Vec::new(),
            membership: slack::Membership::Home,
        }
    }

    fn said(ts: &str, author: Author, text: &str) -> ThreadMessage {
        ThreadMessage { ts: Ts::new(ts), author, text: text.into(), files: Vec::new() }
    }

    fn texts(message: &Message) -> Vec<String> {
        message.content.iter().map(|c| if let Content::Text(t) = c { t.clone() } else { String::new() }).collect()
    }

    #[test]
    fn secrets_people_paste_are_redacted_before_the_model_sees_them() {
        let key = format!("AKIA{}", "Q7W3E5R8T2Y4U6I9");
        let history = [said("1763800000.000100", Author::Person(UserId::new("U1")), &format!("our key is {key}"))];
        let messages = opening(&history, &request(&format!("is {key} still valid?")));
        let all: String = messages.iter().flat_map(texts).collect();
        assert!(!all.contains(&key), "{all}");
        assert!(all.contains("[redacted: aws access key id]"), "{all}");
    }

    #[test]
    fn an_unread_thread_is_said_before_a_replys_question_and_not_before_a_new_one() {
        let reply = request("and in staging?");
        let messages = opening_unread(&reply);
        assert_eq!(messages.len(), 1);
        assert_eq!(
            messages[0].content,
            [Content::Text(THREAD_UNREAD.into()), Content::Text("<@U2>: and in staging?".into())]
        );
        let mut first = request("why is it failing?");
        first.message_ts = first.thread.thread_ts.clone();
        assert_eq!(opening_unread(&first), opening(&[], &first), "a new thread has nothing earlier to miss");
    }

    #[test]
    fn without_history_the_question_is_the_only_message() {
        let messages = opening(&[], &request("why is it failing?"));
        assert_eq!(messages, vec![Message::user_text("<@U2>: why is it failing?")]);
    }

    #[test]
    fn the_thread_alternates_with_the_bot_as_assistant_and_people_named() {
        let history = [
            said("1763800000.000100", Author::Person(UserId::new("U1")), "<@UBOT> why is checkout failing?"),
            said("1763800100.000100", Author::ThisBot, "The pool is exhausted."),
            said("1763800150.000100", Author::OtherBot("B0DEPLOY".into()), "deploy 42 finished"),
            said("1763800200.000100", Author::Person(UserId::new("U1")), "since when?"),
            said("1763800250.000100", Author::ThisBot, ""),
            // The question itself and anything after it are not history.
            said("1763800300.000300", Author::Person(UserId::new("U2")), "and in staging?"),
            said("1763800400.000100", Author::Person(UserId::new("U3")), "later"),
        ];
        let messages = opening(&history, &request("and in staging?"));
        let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
        assert_eq!(texts(&messages[0]), ["<@U1>: <@UBOT> why is checkout failing?"]);
        assert_eq!(texts(&messages[1]), ["The pool is exhausted."]);
        assert_eq!(
            texts(&messages[2]),
            ["(bot B0DEPLOY): deploy 42 finished", "<@U1>: since when?", "<@U2>: and in staging?"]
        );
    }

    #[test]
    fn a_thread_the_bot_started_still_opens_with_the_user() {
        let history = [said("1763800000.000100", Author::ThisBot, "Daily report: all green.")];
        let messages = opening(&history, &request("why green?"));
        assert_eq!(messages[0].role, Role::User);
        assert_eq!(messages[1].role, Role::Assistant);
        assert_eq!(messages.last().map(|m| m.role), Some(Role::User));
    }

    #[test]
    fn the_channel_is_described_for_the_system_prompt() {
        let info = ChannelInfo {
            name: Some("incidents".into()),
            topic: "SEV1 only.".into(),
            purpose: "Coordinating incident response".into(),
        };
        assert_eq!(
            channel_context(&info),
            "You are answering in the Slack channel #incidents. Its topic: SEV1 only. Its purpose: Coordinating incident response."
        );
        assert_eq!(channel_context(&ChannelInfo::default()), "You are in a direct message with the user.");
    }

    #[test]
    fn the_channel_open_in_the_assistant_panel_is_named() {
        assert_eq!(
            viewing_context(&ChannelId::new("C0LAN2Q65")),
            "The user has the channel <#C0LAN2Q65> open beside this conversation; \"this channel\" means that one."
        );
    }

    #[test]
    fn a_message_without_words_asks_for_a_greeting() {
        let messages = opening(&[], &request(""));
        assert!(texts(&messages[0])[0].contains("Greet them"));
    }

    #[test]
    fn a_thread_of_pasted_logs_is_capped_in_bytes_newest_first() {
        let log = |n: usize| format!("{n}: {}", "ERROR connection reset by peer ".repeat(1_000));
        let history: Vec<ThreadMessage> = (0..30)
            .map(|n| said(&format!("1763800{n:03}.000100"), Author::Person(UserId::new("U1")), &log(n)))
            .collect();
        let messages = opening(&history, &request(&"why? ".repeat(20_000)));
        let all: Vec<String> = messages.iter().flat_map(texts).collect();
        let bytes: usize = all.iter().map(String::len).sum();
        assert!(bytes <= HISTORY_BYTES + QUESTION_BYTES + 1_024, "{bytes} bytes");
        assert!(all[0].contains("earlier messages of this thread are left out"), "{}", all[0]);
        assert!(all.iter().any(|text| text.starts_with("<@U1>: 29: ERROR")), "the newest earlier message is kept");
        assert!(!all.iter().any(|text| text.starts_with("<@U1>: 0: ERROR")), "the oldest is left out");
        assert!(all.iter().all(|text| text.len() <= QUESTION_BYTES + 64), "every message is cut");
        assert!(all.last().unwrap().contains("…(cut: "), "the question is cut and says so");

        // Multi-byte text is cut on a character boundary.
        let cut = capped("é".repeat(10), 5);
        assert!(cut.starts_with("éé …(cut: "), "{cut}");
    }
}
