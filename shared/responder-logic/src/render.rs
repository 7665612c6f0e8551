//! Everything the bot shows, as Slack messages: the answer (redacted, as
//! mrkdwn, split under Slack's limits), the approval prompt, the
//! placeholder shown while tools run, and the apology for a turn that
//! failed. Redaction happens here, before rendering, so what Slack gets
//! never held a secret and each marker reads cleanly.

pub use crate::markdown::Rendering;
use crate::mrkdwn;
use assistant_core::approval::Approver;
use assistant_core::delivery::{MessageKey, Outgoing};
use assistant_core::feedback::answer_footer;
use assistant_core::grants::{RevokeButton, ThreadGrant};
use assistant_core::messages::{ApprovalButton, CallOrigin, Decision};
use assistant_core::ports::FileUpload;
use assistant_core::turn::SignInReason;
use assistant_core::turn::{ToolUse, TurnId};
use redact::Redactor;
use serde_json::{Value, json};
use slack::UserId;
use slack::interaction::{
    APPROVE_ACTION_ID, APPROVE_FOR_THREAD_ACTION_ID, CONNECT_ACTION_ID, DENY_ACTION_ID, REVOKE_GRANT_ACTION_ID,
};

/// Slack's limit on a section's text, counted after escaping.
const SECTION_CHARS: usize = 3_000;
/// Slack's limit on a confirmation dialog's text and title.
const CONFIRM_TEXT_CHARS: usize = 300;
const CONFIRM_TITLE_CHARS: usize = 100;
/// Slack's limit on a button's text.
const BUTTON_TEXT_CHARS: usize = 75;
/// Approvers named in a prompt before "and N more".
const NAMED_APPROVERS: usize = 10;

fn section(text: &str) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": text}})
}

/// The answer as one message, or several when Slack's limits require:
/// keyed `answer 1/n` … `answer n/n`, in Slack's own Markdown (see
/// [`crate::markdown`]). Only the special mentions `rendering` allows can
/// ping; with its charts on, tables of numbers are charted and long tables
/// are data tables.
pub fn answer(markdown: &str, rendering: Rendering, turn: &TurnId) -> Vec<Outgoing> {
    let redacted = Redactor::global().redact(markdown);
    let footer = answer_footer(turn);
    let messages = crate::markdown::messages(&redacted, rendering, MAX_BLOCKS - footer.len());
    let count = messages.len();
    messages
        .into_iter()
        .enumerate()
        .map(|(index, message)| {
            let mut blocks = message.blocks;
            // The AI line and the feedback buttons end the answer.
            if index + 1 == count {
                blocks.extend(footer.iter().cloned());
            }
            Outgoing {
                key: MessageKey::Answer { part: index as u32 + 1, of: count as u32 },
                text: message.text,
                blocks,
            }
        })
        .collect()
}

/// Slack's limit on a message's blocks.
const MAX_BLOCKS: usize = 50;

/// An answer that would take more messages than this is posted as its
/// lead and attached in full as a file ([`long_answer`]).
pub const MAX_ANSWER_MESSAGES: usize = 3;
/// About how much of a long answer its lead shows.
const LEAD_CHARS: usize = 2_500;
/// What a long answer's file holds, as the record names it.
pub const ANSWER_UPLOAD: &str = "answer";

/// An answer too long for [`MAX_ANSWER_MESSAGES`] messages: one message
/// with its lead (whole paragraphs, a code block closed if cut) saying the
/// rest is attached, and the file holding all of it, redacted.
pub fn long_answer(markdown: &str, rendering: Rendering, turn: &TurnId) -> (Vec<Outgoing>, FileUpload) {
    let redacted = Redactor::global().redact(markdown);
    let filename = format!("answer-{}.md", turn.reference());
    let mut lead = String::new();
    for paragraph in redacted.split("\n\n") {
        if !lead.is_empty() && lead.chars().count() + paragraph.chars().count() > LEAD_CHARS {
            break;
        }
        if !lead.is_empty() {
            lead.push_str("\n\n");
        }
        lead.push_str(paragraph);
    }
    if lead.chars().count() > LEAD_CHARS {
        lead = lead.chars().take(LEAD_CHARS).collect::<String>() + "…";
    }
    if lead.matches("```").count() % 2 == 1 {
        lead.push_str("\n```");
    }
    lead.push_str(&format!("\n\n_The answer goes on: all of it is in the attached file, {filename}._"));
    let mut messages = answer(&lead, rendering, turn);
    messages.truncate(1);
    if let Some(only) = messages.first_mut() {
        only.key = MessageKey::Answer { part: 1, of: 1 };
    }
    let file = FileUpload { filename, title: "The whole answer".into(), body: redacted.into_owned().into_bytes() };
    (messages, file)
}

/// The key of the approval prompt for one tool call.
pub fn approval_key(tool_use: &ToolUse) -> MessageKey {
    MessageKey::Approval { tool_use_id: tool_use.id.clone() }
}

/// What an approval prompt says besides the call itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ask<'a> {
    /// Who asked; unknown for prompts requested by an older build.
    pub requester: Option<&'a UserId>,
    pub approvers: &'a [Approver],
    /// When the buttons stop working (Unix seconds).
    pub expires_at: Option<i64>,
    /// Deletes or overwrites: the confirmation is red.
    pub destructive: bool,
    /// Offer "Approve for this thread": what it grants, for how many minutes.
    pub grant: Option<(&'a str, u32)>,
    /// Who asked for what: the question, and what the model had read
    /// before proposing the call; unknown for prompts requested by an
    /// older build.
    pub origin: Option<&'a CallOrigin>,
}

/// The most of the question a prompt quotes, escaped.
const QUOTED_QUESTION_CHARS: usize = 500;
/// Tools named in "after reading the results of …" before "and N more".
const NAMED_TOOLS_READ: usize = 5;

/// The prompt's first line: who asked for what. The person's question is
/// quoted, and the call is the model's proposal: made straight from the
/// question, or after reading tool results or files, which may have
/// steered it (then nobody asked for it directly). Without an origin (a
/// request from an older build) the line says only whom the call answers.
fn headline(tool_use: &ToolUse, ask: &Ask<'_>) -> String {
    let name = mrkdwn::escape(&tool_use.name);
    let asker = ask.requester.map(|requester| format!("<@{requester}>"));
    let Some(origin) = ask.origin else {
        return match asker {
            Some(asker) => format!("To answer {asker}, I want to run `{name}`, which changes things."),
            None => format!("I want to run `{name}`, which changes things."),
        };
    };
    let proposal = if origin.read_content() {
        format!(
            "after reading {}, I propose running `{name}`, which changes things. Nobody asked for this call directly.",
            what_was_read(origin)
        )
    } else {
        format!("I propose running `{name}`, which changes things.")
    };
    let asker = asker.unwrap_or_else(|| "Someone".to_owned());
    // The question as the person wrote it, on one line: redacted again,
    // escaped (no mention pings, no link is made), its backticks made
    // look-alikes so it cannot open a code span that runs into the words
    // after it; cut to what the section holds beside the rest.
    let question = Redactor::global().redact(&origin.question).split_whitespace().collect::<Vec<_>>().join(" ");
    if question.is_empty() {
        return format!("{asker} asked — {proposal}");
    }
    let question = question.replace('`', "ˋ");
    let rest = format!("{asker} asked: “…” — {proposal}").chars().count();
    let room = SECTION_CHARS.saturating_sub(rest).min(QUOTED_QUESTION_CHARS);
    let (quoted, cut) = fit_escaped(&question, room);
    format!("{asker} asked: “{quoted}{}” — {proposal}", if cut { "…" } else { "" })
}

/// "the results of `logs_query` and `read_doc` and 2 files shared in the
/// thread": what the model read before proposing a call.
fn what_was_read(origin: &CallOrigin) -> String {
    let mut tools: Vec<String> = origin
        .read
        .iter()
        .take(NAMED_TOOLS_READ)
        .map(|name| format!("`{}`", fit_escaped(&name.replace('`', "ˋ"), 64).0))
        .collect();
    if origin.read.len() > NAMED_TOOLS_READ {
        tools.push(format!("{} more tools", origin.read.len() - NAMED_TOOLS_READ));
    }
    let mut parts = Vec::new();
    if !tools.is_empty() {
        parts.push(format!("the results of {}", in_words(&tools)));
    }
    match origin.files {
        0 => {}
        1 => parts.push("a file shared in the thread".to_owned()),
        files => parts.push(format!("{files} files shared in the thread")),
    }
    parts.join(", and ")
}

/// `a`, `a and b`, `a, b and c`.
fn in_words(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

/// `text` escaped for mrkdwn and cut to at most `max` characters of
/// escaped text, never inside an entity (`&amp;`); whether it was cut.
fn fit_escaped(text: &str, max: usize) -> (String, bool) {
    let mut fitted = String::new();
    let mut count = 0;
    for c in text.chars() {
        let piece = mrkdwn::escape(c.encode_utf8(&mut [0; 4]));
        let width = piece.chars().count();
        if count + width > max {
            return (fitted, true);
        }
        fitted.push_str(&piece);
        count += width;
    }
    (fitted, false)
}

/// Plain text cut to `max` characters, with an ellipsis when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    text.chars().take(max.saturating_sub(1)).collect::<String>() + "…"
}

/// Who may approve, as the prompt names them. Groups are named, never
/// mentioned: a prompt must not ping a whole group.
fn who_may_approve(requester: Option<&UserId>, approvers: &[Approver]) -> String {
    let mut named: Vec<String> = approvers
        .iter()
        .take(NAMED_APPROVERS)
        .map(|approver| match (approver, requester) {
            (Approver::Requester, Some(requester)) => format!("<@{requester}> (who asked)"),
            (Approver::Requester, None) => "the person who asked".to_owned(),
            (Approver::User(user), _) => format!("<@{user}>"),
            (Approver::Group(group), _) => format!("members of user group `{}`", mrkdwn::escape(group)),
        })
        .collect();
    if approvers.len() > NAMED_APPROVERS {
        named.push(format!("{} more", approvers.len() - NAMED_APPROVERS));
    }
    named.join(", ")
}

/// The call's input as a short line for the confirmation dialog: its
/// top-level fields, redacted, each shortened.
fn key_inputs(input: &Value) -> String {
    let line = match input {
        Value::Object(fields) => fields
            .iter()
            .map(|(name, value)| {
                let value = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                format!("{name}: {}", shorten(&value, 60))
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => shorten(&other.to_string(), 120),
    };
    Redactor::global().redact(&line).into_owned()
}

/// Approve / Deny buttons for a tool call that changes things: who asked,
/// what will run (input redacted, shortened so every block stays under
/// Slack's limits after escaping, with a note when it was), who may
/// approve and until when. Approve opens a confirmation dialog naming the
/// tool and its key inputs (red for destructive tools).
pub fn approval(turn: &TurnId, tool_use: &ToolUse, ask: &Ask<'_>) -> Outgoing {
    let headline = headline(tool_use, ask);
    // As text, so secrets assigned to secret-sounding keys are found too.
    let input = serde_json::to_string_pretty(&tool_use.input).expect("JSON values serialize");
    let input = Redactor::global().redact(&input).into_owned();
    const FENCES: usize = "```\n\n```".len();
    const NOTE_ROOM: usize = 80;
    let (shown, cut) = fit_escaped(&input, SECTION_CHARS - FENCES - NOTE_ROOM);
    let mut input_block = format!("```\n{shown}\n```");
    if cut {
        input_block.push_str(&format!(
            "\n_(Input shortened for Slack: the first {} of {} characters.)_",
            shown.chars().count(),
            input.chars().count()
        ));
    }
    let mut who = format!("Who may approve: {}.", who_may_approve(ask.requester, ask.approvers));
    if let Some(expires_at) = ask.expires_at {
        who.push_str(&format!(" The buttons expire <!date^{expires_at}^{{date_short_pretty}} at {{time}}|soon>."));
    }
    // `who` holds only ids (checked when the configuration was read) and at
    // most NAMED_APPROVERS of them: far under the section limit.
    let value = ApprovalButton::for_call(turn, tool_use).encode();
    let (short_name, _) = fit_escaped(&tool_use.name, 80);
    let prefix = format!("`{short_name}` with ");
    let (inputs, cut) =
        fit_escaped(&key_inputs(&tool_use.input), CONFIRM_TEXT_CHARS.saturating_sub(prefix.chars().count() + 1));
    let confirm_text = format!("{prefix}{inputs}{}", if cut { "…" } else { "" });
    let confirm = json!({
        "title": {"type": "plain_text", "text": shorten(&format!("Run {}?", tool_use.name), CONFIRM_TITLE_CHARS)},
        "text": {"type": "mrkdwn", "text": confirm_text},
        "confirm": {"type": "plain_text", "text": "Approve"},
        "deny": {"type": "plain_text", "text": "Cancel"},
        "style": if ask.destructive { "danger" } else { "primary" },
    });
    let mut approve = json!({
        "type": "button",
        "text": {"type": "plain_text", "text": "Approve"},
        "action_id": APPROVE_ACTION_ID,
        "value": value,
        "style": "primary",
    });
    approve["confirm"] = confirm;
    let deny = json!({
        "type": "button",
        "text": {"type": "plain_text", "text": "Deny"},
        "action_id": DENY_ACTION_ID,
        "value": value,
        "style": "danger",
    });
    let mut buttons = vec![approve];
    // Never for destructive calls, whatever the worker asked.
    if let Some((scope, minutes)) = ask.grant.filter(|_| !ask.destructive) {
        let label = scope_label(scope);
        let (scope_text, _) = fit_escaped(&scope_in_words(scope), 80);
        buttons.push(json!({
            "type": "button",
            "text": {"type": "plain_text", "text": shorten(&format!("Approve {label} for this thread ({minutes} min)"), BUTTON_TEXT_CHARS)},
            "action_id": APPROVE_FOR_THREAD_ACTION_ID,
            "value": value,
            "confirm": {
                "title": {"type": "plain_text", "text": shorten(&format!("Approve {label} for this thread?"), CONFIRM_TITLE_CHARS)},
                "text": {"type": "mrkdwn", "text": format!(
                    "This call runs now, and for {minutes} minutes later calls of {scope_text} in this thread run \
                     without asking when {} asks (no one else's; the thread is told each time, and anyone who may \
                     approve can revoke it).",
                    ask.requester.map_or("the same person".to_owned(), |requester| format!("<@{requester}>"))
                )},
                "confirm": {"type": "plain_text", "text": "Approve for thread"},
                "deny": {"type": "plain_text", "text": "Cancel"},
            },
        }));
    }
    buttons.push(deny);
    Outgoing {
        key: approval_key(tool_use),
        blocks: vec![
            section(&headline),
            section(&input_block),
            json!({"type": "context", "elements": [{"type": "mrkdwn", "text": who}]}),
            json!({"type": "actions", "elements": buttons}),
        ],
        text: format!("{headline} Approve?"),
    }
}

/// The prompt of a call nobody decided on in time: no buttons.
pub fn approval_expired(tool_use: &ToolUse) -> Outgoing {
    let text = format!("⌛ Nobody approved running `{}` in time: it did not run.", mrkdwn::escape(&tool_use.name));
    Outgoing { key: approval_key(tool_use), blocks: vec![section(&text)], text }
}

/// What someone who may not approve is told, and only they.
pub fn approval_refused(
    tool_name: &str,
    requester: &UserId,
    approvers: &[Approver],
    own_request: bool,
    clicker: slack::Membership,
) -> String {
    let name = mrkdwn::escape(tool_name);
    let who = who_may_approve(Some(requester), approvers);
    if clicker.is_external() {
        format!(
            "Only members of the workspace this app is installed in may approve running `{name}`: you are in this \
             channel from another organization. Nothing ran."
        )
    } else if own_request {
        format!(
            "This team wants a second person to approve: you can't approve your own request to run `{name}`. \
             Who may approve: {who}. Nothing ran."
        )
    } else {
        format!("Only {who} may approve running `{name}` here. Nothing ran.")
    }
}

/// What someone who clicks a prompt whose call was already decided is
/// told, and only they: nothing more runs from it, and who approved it
/// when someone did.
pub fn approval_answered(tool_name: &str, approved_by: Option<&UserId>) -> String {
    let name = mrkdwn::escape(tool_name);
    match approved_by {
        Some(user) => format!(
            "This prompt was already answered: <@{user}> approved running `{name}`. Nothing more runs from its \
             buttons."
        ),
        None => format!("This prompt was already answered: `{name}` was decided. Nothing more runs from its buttons."),
    }
}

/// A decided prompt whose approved call was started and never recorded as
/// done (the worker stopped while it ran): it says so, so nobody takes the
/// call for done, nor runs it again blindly.
pub fn outcome_unknown(mut decided: Outgoing) -> Outgoing {
    decided.text.push_str(
        " It was started, but whether it completed is unknown (I stopped before recording its result): check its \
         effect before running it again.",
    );
    if let Some(first) = decided.blocks.first_mut() {
        *first = section(&decided.text);
    }
    decided
}

/// The approval prompt once decided: who decided what, and no buttons
/// but a grant's Revoke.
pub fn approval_decided(
    turn: &TurnId,
    tool_use: &ToolUse,
    decision: Decision,
    user: &UserId,
    grant: Option<&ThreadGrant>,
) -> Outgoing {
    let name = mrkdwn::escape(&tool_use.name);
    let text = match (decision, grant) {
        (Decision::ApproveForThread, Some(grant)) => format!(
            "✅ <@{user}> approved running `{name}`, and {} in this thread without asking until {}, {}.",
            scope_runs(&grant.scope),
            slack_time(grant.until),
            grant_covers(grant)
        ),
        (Decision::Approve | Decision::ApproveForThread, _) => format!("✅ <@{user}> approved running `{name}`."),
        (Decision::Deny, _) => format!("🚫 <@{user}> denied running `{name}`."),
    };
    let mut blocks = vec![section(&text)];
    if let Some(grant) = grant {
        blocks.push(revoke_button(turn, grant));
    }
    Outgoing { key: approval_key(tool_use), blocks, text }
}

/// A call that ran without a prompt, under the thread's grant: said in the
/// thread, with what ran and a Revoke button.
pub fn ran_under_grant(turn: &TurnId, tool_use: &ToolUse, grant: &ThreadGrant) -> Outgoing {
    let (inputs, _) = fit_escaped(&key_inputs(&tool_use.input), 300);
    let text = format!(
        "▶️ Ran `{}` without asking ({inputs}): <@{}> approved {} for this thread until {}, {}.",
        mrkdwn::escape(&tool_use.name),
        grant.granted_by,
        scope_in_words(&grant.scope),
        slack_time(grant.until),
        grant_covers(grant)
    );
    Outgoing { key: approval_key(tool_use), blocks: vec![section(&text), revoke_button(turn, grant)], text }
}

/// The thread told a grant ended early.
pub fn grant_revoked(grant: &ThreadGrant, user: &UserId) -> Outgoing {
    let at = grant.revoked.as_ref().map_or(0, |revoked| revoked.at);
    let text = format!(
        "🔒 <@{user}> revoked this thread's approval of {} ({}): its calls ask again.",
        scope_in_words(&grant.scope),
        grant_covers(grant)
    );
    let key = MessageKey::Notice { id: format!("revoked:{}:{at}", grant.scope) };
    Outgoing { key, blocks: vec![section(&text)], text }
}

/// What someone who may not revoke a grant is told, and only they.
pub fn revoke_refused(scope: &str) -> String {
    format!(
        "Only the person who approved {} for this thread, or someone who may approve it, can revoke that. \
         It stands until it ends.",
        scope_in_words(scope)
    )
}

/// The private ask to connect a provider: why, and a Connect button to
/// the provider's sign-in page (its text and its blocks). The provider's
/// name comes from the configuration; it is escaped all the same.
pub fn connect_prompt(name: &str, url: &str, state: &str, reason: SignInReason) -> (String, Vec<Value>) {
    let provider = mrkdwn::escape(name);
    let why = match reason {
        SignInReason::NotConnected => format!(
            "To answer this I need to act as you in *{provider}*, and you have not connected it yet. \
             Connect it, and I'll carry on here."
        ),
        SignInReason::Expired => {
            format!("Your *{provider}* sign-in has expired or was revoked. Connect it again, and I'll carry on here.")
        }
        SignInReason::Failed => {
            format!("Signing in to *{provider}* did not complete. Try once more, and I'll carry on here.")
        }
    };
    let text = format!("{why} (Only you can see this; the link works once, for 10 minutes.)");
    let blocks = vec![
        section(&text),
        json!({"type": "actions", "elements": [{
            "type": "button",
            "style": "primary",
            "text": {"type": "plain_text", "text": shorten(&format!("Connect {name}"), 75)},
            "url": url,
            "action_id": CONNECT_ACTION_ID,
            "value": state,
        }]}),
    ];
    (text, blocks)
}

/// The link an MCP server asks the person to open, shown to them alone:
/// the server's message as plain text (it pings and links nothing), cut,
/// and a button to the link.
pub fn open_link(server: &str, message: &str, url: &str) -> (String, Vec<Value>) {
    let said = shorten(&redact::Redactor::global().redact(message), 1_000);
    let text = format!(
        "*{}* asks you to open a link to go on with your question: {} (Only you can see this.)",
        mrkdwn::escape(server),
        mrkdwn::escape(&said)
    );
    let blocks = vec![
        section(&text),
        json!({"type": "actions", "elements": [{
            "type": "button",
            "text": {"type": "plain_text", "text": shorten(&format!("Open {server}'s link"), 75)},
            "url": url,
            "action_id": slack::interaction::OPEN_LINK_ACTION_ID,
        }]}),
    ];
    (text, blocks)
}

/// A form an MCP server asks the person to fill in, shown to them alone:
/// the server's message as plain text, until when, and Answer (opens the
/// form) and Decline, each naming the form.
pub fn form_prompt(server: &str, message: &str, form_id: &str, expires_at: i64) -> (String, Vec<Value>) {
    let said = shorten(&redact::Redactor::global().redact(message), 1_000);
    let text = format!(
        "*{}* asks you to fill in a form to go on with your question: {} Answer by <!date^{expires_at}^{{time_secs}}|{}>. \
         (Only you can see this.)",
        mrkdwn::escape(server),
        mrkdwn::escape(&said),
        assistant_core::clock::iso8601_utc(expires_at),
    );
    let button = |label: &str, action_id: &str, style: Option<&str>| {
        let mut button = json!({"type": "button", "text": {"type": "plain_text", "text": label},
                                "action_id": action_id, "value": form_id});
        if let Some(style) = style {
            button["style"] = json!(style);
        }
        button
    };
    let blocks = vec![
        section(&text),
        json!({"type": "actions", "elements": [
            button("Answer", slack::interaction::FORM_ANSWER_ACTION_ID, Some("primary")),
            button("Decline", slack::interaction::FORM_DECLINE_ACTION_ID, None),
        ]}),
    ];
    (text, blocks)
}

/// What someone who clicked another person's Connect button is told.
pub fn connect_refused(owner: &UserId, provider: &str) -> String {
    format!(
        "That Connect button was for <@{owner}>: it signs in as them, so it no longer works. \
         Ask me yourself to connect your own {} account.",
        mrkdwn::escape(provider)
    )
}

fn revoke_button(turn: &TurnId, grant: &ThreadGrant) -> Value {
    let value =
        RevokeButton { scope: grant.scope.clone(), for_user: grant.for_user.clone(), turn_id: turn.clone() }.encode();
    json!({"type": "actions", "elements": [{
        "type": "button",
        "text": {"type": "plain_text", "text": "Revoke"},
        "action_id": REVOKE_GRANT_ACTION_ID,
        "value": value,
        "confirm": {
            "title": {"type": "plain_text", "text": "Revoke this thread's approval?"},
            "text": {"type": "mrkdwn", "text": format!("Later calls of {} in this thread will ask again.", scope_in_words(&grant.scope))},
            "confirm": {"type": "plain_text", "text": "Revoke"},
            "deny": {"type": "plain_text", "text": "Keep"},
            "style": "danger",
        },
    }]})
}

/// A grant's scope on a button: the tool, or the MCP server's tools.
fn scope_label(scope: &str) -> String {
    match scope.strip_suffix("__*") {
        Some(server) => format!("{server} tools"),
        None => scope.to_owned(),
    }
}

/// A grant's scope in mrkdwn: `` `tool` `` or "the tools of `server`".
fn scope_in_words(scope: &str) -> String {
    match scope.strip_suffix("__*") {
        Some(server) => format!("the tools of `{}`", mrkdwn::escape(server)),
        None => format!("`{}`", mrkdwn::escape(scope)),
    }
}

/// Whose calls a grant lets run, as its notices say it.
fn grant_covers(grant: &ThreadGrant) -> String {
    match &grant.for_user {
        Some(user) => format!("only when <@{user}> asks"),
        None => "for no one's calls".to_owned(),
    }
}

fn scope_runs(scope: &str) -> String {
    match scope.strip_suffix("__*") {
        Some(server) => format!("the other tools of `{}` run", mrkdwn::escape(server)),
        None => format!("`{}` runs", mrkdwn::escape(scope)),
    }
}

/// A time shown in each reader's own zone.
fn slack_time(unix: i64) -> String {
    format!("<!date^{unix}^{{time}}|{unix}>")
}

/// The message that stands in for the answer while tools run.
pub fn placeholder(status: &str) -> Outgoing {
    let status = mrkdwn::escape(&Redactor::global().redact(status));
    Outgoing { key: MessageKey::Placeholder, text: format!("_Working on it: {status}_"), blocks: Vec::new() }
}

/// What the thread is told when a turn's work ended in a dead-letter queue.
pub fn apology_text(turn: &TurnId) -> String {
    format!(
        "Sorry, something went wrong and I couldn't finish answering this. Please try again in a moment; \
         if it keeps happening, give your admin this reference: `{}`.",
        turn.reference()
    )
}

pub fn apology(turn: &TurnId) -> Outgoing {
    Outgoing { key: MessageKey::Apology, text: mrkdwn::escape(&apology_text(turn)), blocks: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_answer_is_one_redacted_markdown_message() {
        let token = format!("xoxb-{}-{}", "1234567890", "abcdefghijklmnopqrstuvwx");
        let turn = TurnId::new("T1-Ev1");
        let messages = answer(&format!("**Fixed.** The token was `{token}` & it leaked."), Default::default(), &turn);
        assert_eq!(messages.len(), 1);
        let message = &messages[0];
        assert_eq!(message.key, MessageKey::Answer { part: 1, of: 1 });
        let said = "**Fixed.** The token was `[redacted: slack bot token]` & it leaked.";
        assert_eq!(message.text, "**Fixed.** The token was `[redacted: slack bot token]` &amp; it leaked.");
        let mut blocks = vec![json!({"type": "markdown", "text": said})];
        blocks.extend(answer_footer(&turn));
        assert_eq!(message.blocks, blocks, "the answer, then the AI line and the feedback buttons");
        assert!(!serde_json::to_string(&message.blocks).unwrap().contains(&token));
    }

    #[test]
    fn a_long_answer_becomes_numbered_messages_within_limits() {
        let paragraph = format!("{}\n\n", "word ".repeat(500));
        let messages = answer(&paragraph.repeat(40), Default::default(), &TurnId::new("T1-Ev1"));
        assert!(messages.len() > 1);
        let count = messages.len();
        for (index, message) in messages.iter().enumerate() {
            assert_eq!(message.key, MessageKey::Answer { part: index as u32 + 1, of: count as u32 });
            assert!(message.blocks.len() <= 50);
            assert!(message.text.chars().count() <= 40_000);
            let last = index + 1 == count;
            let footer = message.blocks.iter().filter(|block| block["type"] == "context_actions").count();
            assert_eq!(footer, usize::from(last), "the feedback buttons end the last part only");
            for block in message.blocks.iter().filter(|block| block["type"] == "section") {
                assert!(block["text"]["text"].as_str().unwrap().chars().count() <= 3_000);
            }
        }
    }

    #[test]
    fn the_approval_prompt_carries_the_turn_and_call_and_no_secret() {
        let password = ["hunter", "2-", "correct-horse"].concat();
        let call = ToolUse {
            id: "tooluse_1".into(),
            name: "restart_service".into(),
            input: json!({"service": "checkout-api", "password": password}),
        };
        let requester = UserId::new("U0ASKER");
        let approvers =
            [Approver::Requester, Approver::User(UserId::new("U0LEAD")), Approver::Group("S0ONCALL".into())];
        let ask = Ask {
            requester: Some(&requester),
            approvers: &approvers,
            expires_at: Some(1_763_803_600),
            destructive: false,
            grant: None,
            // Requested by an older build: it says whom the call answers.
            origin: None,
        };
        let prompt = approval(&TurnId::new("T1-Ev1"), &call, &ask);
        assert_eq!(prompt.key, MessageKey::Approval { tool_use_id: "tooluse_1".into() });
        let json = serde_json::to_string(&prompt.blocks).unwrap();
        assert!(!json.contains(&password), "{json}");
        assert!(json.contains("checkout-api"));
        assert_eq!(
            prompt.blocks[0]["text"]["text"],
            "To answer <@U0ASKER>, I want to run `restart_service`, which changes things."
        );
        let who = prompt.blocks[2]["elements"][0]["text"].as_str().unwrap();
        assert!(
            who.starts_with("Who may approve: <@U0ASKER> (who asked), <@U0LEAD>, members of user group `S0ONCALL`."),
            "{who}"
        );
        assert!(who.contains("<!date^1763803600^"), "{who}");
        assert!(!who.contains("subteam"), "a prompt never pings a group: {who}");
        let buttons = &prompt.blocks[3]["elements"];
        assert_eq!(buttons[0]["action_id"], APPROVE_ACTION_ID);
        assert_eq!(buttons[1]["action_id"], DENY_ACTION_ID);
        let value = ApprovalButton::decode(buttons[0]["value"].as_str().unwrap()).unwrap();
        assert!(value.names(&call), "the button names this exact call");
        let confirm = &buttons[0]["confirm"];
        assert_eq!(confirm["title"]["text"], "Run restart_service?");
        assert_eq!(confirm["style"], "primary");
        let confirm_text = confirm["text"]["text"].as_str().unwrap();
        assert!(confirm_text.starts_with("`restart_service` with ") && confirm_text.contains("service: checkout-api"));
        assert!(!confirm_text.contains(&password), "{confirm_text}");
        let destructive = approval(&TurnId::new("T1-Ev1"), &call, &Ask { destructive: true, ..ask });
        assert_eq!(destructive.blocks[3]["elements"][0]["confirm"]["style"], "danger");
    }

    /// The first line of the prompt for `call` asked by U1 with `origin`.
    fn headline_of(call: &ToolUse, origin: &CallOrigin) -> String {
        let requester = UserId::new("U1");
        let ask = Ask { requester: Some(&requester), origin: Some(origin), ..Ask::default() };
        let prompt = approval(&TurnId::new("T1-Ev1"), call, &ask);
        assert_eq!(prompt.text, format!("{} Approve?", prompt.blocks[0]["text"]["text"].as_str().unwrap()));
        prompt.blocks[0]["text"]["text"].as_str().unwrap().to_owned()
    }

    fn restart() -> ToolUse {
        ToolUse { id: "tooluse_1".into(), name: "restart_service".into(), input: json!({"service": "checkout-api"}) }
    }

    #[test]
    fn the_prompt_says_what_the_person_asked_and_that_the_call_is_the_models_proposal() {
        // Straight from the question.
        let direct = CallOrigin { question: "restart checkout-api".into(), ..CallOrigin::default() };
        assert_eq!(
            headline_of(&restart(), &direct),
            "<@U1> asked: “restart checkout-api” — I propose running `restart_service`, which changes things."
        );
        // After reading what tools returned, and a file: content that may have steered it.
        let read = CallOrigin {
            question: "why is checkout failing?".into(),
            read: vec!["logs_query".into(), "read_doc".into()],
            files: 0,
        };
        assert_eq!(
            headline_of(&restart(), &read),
            "<@U1> asked: “why is checkout failing?” — after reading the results of `logs_query` and `read_doc`, \
             I propose running `restart_service`, which changes things. Nobody asked for this call directly."
        );
        let with_files = CallOrigin { files: 2, ..read.clone() };
        assert!(
            headline_of(&restart(), &with_files).contains(
                "after reading the results of `logs_query` and `read_doc`, and 2 files shared in the thread, I propose"
            ),
            "{}",
            headline_of(&restart(), &with_files)
        );
        let file_only = CallOrigin { question: "restart it".into(), read: Vec::new(), files: 1 };
        assert!(headline_of(&restart(), &file_only).contains("— after reading a file shared in the thread, I propose"));
        let many = CallOrigin { read: (1..=8).map(|n| format!("tool_{n}")).collect(), ..read };
        assert!(
            headline_of(&restart(), &many).contains(
                "the results of `tool_1`, `tool_2`, `tool_3`, `tool_4`, `tool_5` and 3 more tools, I propose"
            ),
            "{}",
            headline_of(&restart(), &many)
        );
        // A question without words.
        let wordless = CallOrigin::default();
        assert_eq!(
            headline_of(&restart(), &wordless),
            "<@U1> asked — I propose running `restart_service`, which changes things."
        );
    }

    #[test]
    fn a_hostile_question_is_quoted_inert_redacted_and_cut_to_fit() {
        let token = format!("xox{}-123456789012-{}", "b", "a1B2c3D4e5F6g7H8i9J0k1L2");
        let question = format!(
            "<!channel> *bold* `restart` ```x``` <https://evil.example|bank.example.com> & {token} {}",
            "&<>".repeat(1_700)
        );
        assert!(question.chars().count() > 5_000);
        let origin = CallOrigin { question, read: vec!["read_doc".into()], files: 0 };
        let headline = headline_of(&restart(), &origin);
        assert!(headline.chars().count() <= SECTION_CHARS, "{} characters", headline.chars().count());
        assert!(headline.starts_with("<@U1> asked: “&lt;!channel&gt; *bold* ˋrestartˋ ˋˋˋxˋˋˋ &lt;https://evil.example|bank.example.com&gt; &amp; [redacted: slack bot token] &amp;&lt;&gt;"), "{headline}");
        assert!(
            !headline.contains("<!channel>") && !headline.contains("<https://evil"),
            "nothing pings or links: {headline}"
        );
        assert!(!headline.contains(&token), "{headline}");
        assert_eq!(headline.matches('`').count(), 4, "only the prompt's own code spans: {headline}");
        assert!(
            headline.contains("…” — after reading the results of `read_doc`, I propose running `restart_service`"),
            "cut, and the prompt's own words whole after it: {headline}"
        );
        assert!(!headline.contains("&am…") && !headline.contains("&l…"), "never cut inside an entity: {headline}");
    }

    #[test]
    fn a_huge_input_that_grows_when_escaped_still_fits_every_block() {
        // `&`, `<` and `>` grow five-, four- and four-fold when escaped.
        let hostile = "&<>".repeat(4_000);
        let call = ToolUse {
            id: "tooluse_2".into(),
            name: "post_<b>&</b>".repeat(20),
            input: json!({"body": hostile, "to": "x".repeat(500)}),
        };
        let prompt = approval(&TurnId::new("T1-Ev1"), &call, &Ask::default());
        for block in &prompt.blocks {
            for text in [&block["text"]["text"], &block["elements"][0]["text"]] {
                if let Some(text) = text.as_str() {
                    assert!(text.chars().count() <= SECTION_CHARS, "{} characters", text.chars().count());
                }
            }
        }
        let input = prompt.blocks[1]["text"]["text"].as_str().unwrap();
        assert!(input.contains("(Input shortened for Slack: the first "), "{input}");
        assert!(!input.contains("&am\n") && !input.ends_with('&'), "never cut inside an entity");
        let confirm = &prompt.blocks[3]["elements"][0]["confirm"];
        assert!(confirm["text"]["text"].as_str().unwrap().chars().count() <= CONFIRM_TEXT_CHARS);
        assert!(confirm["title"]["text"].as_str().unwrap().chars().count() <= CONFIRM_TITLE_CHARS);
        assert!(ApprovalButton::decode(prompt.blocks[3]["elements"][0]["value"].as_str().unwrap()).is_some());
    }

    #[test]
    fn an_expired_prompt_and_a_refusal_say_what_happened() {
        let call = ToolUse { id: "tooluse_1".into(), name: "restart_service".into(), input: json!({}) };
        let expired = approval_expired(&call);
        assert_eq!(expired.key, approval_key(&call), "it replaces the prompt");
        assert_eq!(expired.text, "⌛ Nobody approved running `restart_service` in time: it did not run.");
        let approvers = [Approver::Requester];
        let (home, external) = (slack::Membership::Home, slack::Membership::External);
        let refused = approval_refused("restart_service", &UserId::new("U0ASKER"), &approvers, false, home);
        assert_eq!(refused, "Only <@U0ASKER> (who asked) may approve running `restart_service` here. Nothing ran.");
        let groups = [Approver::Group("S0SRE".into())];
        let own = approval_refused("restart_service", &UserId::new("U0ASKER"), &groups, true, home);
        assert!(
            own.contains("can't approve your own request") && own.contains("members of user group `S0SRE`"),
            "{own}"
        );
        let outsider = approval_refused("restart_service", &UserId::new("U0ASKER"), &approvers, true, external);
        assert!(outsider.starts_with("Only members of the workspace this app is installed in"), "{outsider}");
        assert!(outsider.contains("from another organization"), "{outsider}");
    }

    #[test]
    fn a_decided_prompt_says_who_decided_and_has_no_buttons() {
        let call = ToolUse { id: "tooluse_1".into(), name: "restart_service".into(), input: json!({}) };
        let decided = approval_decided(&TurnId::new("T1-Ev1"), &call, Decision::Deny, &UserId::new("U2"), None);
        assert_eq!(decided.key, approval_key(&call), "it replaces the prompt");
        assert_eq!(decided.text, "🚫 <@U2> denied running `restart_service`.");
        assert!(decided.blocks.iter().all(|block| block["type"] != "actions"));
    }

    #[test]
    fn the_apology_quotes_the_event_id_as_reference() {
        let turn = TurnId::new("T061EG9R6-Ev0LAN670R");
        assert_eq!(turn.reference(), "Ev0LAN670R");
        assert!(apology(&turn).text.contains("`Ev0LAN670R`"));
    }
}
