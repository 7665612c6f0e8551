//! A message as a person reads it in Slack, as plain text: its `text`, its
//! layout blocks (<https://docs.slack.dev/reference/block-kit/blocks>) and
//! its legacy attachments
//! (<https://docs.slack.dev/messaging/formatting-message-text#attachments>).
//!
//! Other apps (alerting tools, deploy bots) put what matters in blocks and
//! attachments: labels, values and links that the message's `text` (often
//! only the notification fallback) lacks. [`message_text`] renders them:
//! - text objects as written (mrkdwn keeps Slack's `<url|label>` links and
//!   `<@U…>` mentions), fields as `Label: value` lines, buttons and titles
//!   with links as `<url|label>`;
//! - Slack's mass mentions (`<!channel>`, `<!here>`, `<!subteam^…>`) as the
//!   words Slack shows (`@channel`), so that no input hands the model a
//!   ping to repeat;
//! - `text` once: left out when the blocks and attachments already say it
//!   (it is then only their fallback), kept when it says something they do
//!   not; a person's own message (`rich_text` blocks that say what `text`
//!   says) is its `text`.
//!
//! The input is whatever Slack returned, read leniently: a piece that is not
//! what the reference describes (a block without a type, a field that is a
//! number) is skipped and counted, never an error. Block types it does not
//! know (`input`, `call`, new ones) are left out and named in a note.
//! Nesting deeper than [`MAX_DEPTH`] is left out and said, and the rendering
//! stops storing at [`RENDERED_BYTES`] (it says how long the whole was), so
//! a hostile message with thousands of elements costs a bounded amount.
//! Colours, icons and images' bytes are not read.

use serde_json::Value;
use std::collections::BTreeMap;

/// The most of one message's rendering kept. Slack bounds a message (50
/// blocks, 100 attachments, 40,000 characters of text), so this is a guard
/// against hostile input rather than a cut people meet; the worker cuts
/// each message shorter still, and says so.
pub const RENDERED_BYTES: usize = 64 * 1024;

/// How deep rich text (lists in quotes in lists…) and nested elements are
/// read. Slack's composer indents lists at most 8 levels.
pub const MAX_DEPTH: usize = 16;

/// `text`, `blocks` and `attachments` of a Slack message (as the Web API's
/// `conversations.replies` and `conversations.history` return them) as one
/// readable text. Never fails: what cannot be read is left out and said.
pub fn message_text(text: &str, blocks: &Value, attachments: &Value) -> String {
    let mut out = Out::default();
    render_blocks(blocks, &mut out, 0);
    let blocks_text = std::mem::take(&mut out.text);
    let mut rendered_attachments = Vec::new();
    if let Some(list) = attachments.as_array() {
        for attachment in list {
            let mut part = Out { skipped: std::mem::take(&mut out.skipped), ..Out::default() };
            render_attachment(attachment, &mut part);
            out.skipped = part.skipped;
            out.dropped += part.dropped;
            if !part.text.trim().is_empty() {
                rendered_attachments.push(part.text);
            }
        }
    } else if !attachments.is_null() {
        out.skipped.malformed += 1;
    }

    // What the blocks and attachments say, and whether `text` adds to it.
    let text = unpinged(text.trim());
    let blocks_text = blocks_text.trim().to_owned();
    let only_rich_text = blocks.as_array().is_some_and(|blocks| {
        !blocks.is_empty() && blocks.iter().all(|block| block.get("type").and_then(Value::as_str) == Some("rich_text"))
    });
    let mut parts: Vec<String> = Vec::new();
    if only_rich_text && !text.is_empty() && letters(&text) == letters(&blocks_text) {
        // A person's message: `text` is what they typed, in mrkdwn.
        parts.push(text);
    } else {
        let rest: String = [blocks_text.as_str()]
            .into_iter()
            .chain(rendered_attachments.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        if !text.is_empty() && !letters(&rest).contains(&letters(&text)) {
            parts.push(text);
        }
        if !blocks_text.is_empty() {
            parts.push(blocks_text);
        }
    }
    parts.extend(rendered_attachments.into_iter().map(|part| part.trim().to_owned()));
    if let Some(note) = out.skipped.note() {
        parts.push(note);
    }
    let whole = parts.join("\n\n");
    let dropped = out.dropped;
    if dropped == 0 && whole.len() <= RENDERED_BYTES {
        return whole;
    }
    let total = whole.len() + dropped;
    let mut end = whole.len().min(RENDERED_BYTES);
    while !whole.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "(This message is {total} bytes as text; the first {end} follow, the other {} bytes were left out.)\n{}",
        total - end,
        &whole[..end]
    )
}

/// What could not be read, for the note.
#[derive(Debug, Default)]
struct Skipped {
    /// Block (or element) types not read, and how many of each.
    unknown: BTreeMap<String, usize>,
    /// Pieces that are not what Slack's reference describes.
    malformed: usize,
    /// Pieces nested deeper than [`MAX_DEPTH`].
    too_deep: usize,
}

impl Skipped {
    fn note(&self) -> Option<String> {
        let mut said = Vec::new();
        let unknown: usize = self.unknown.values().sum();
        if unknown > 0 {
            let kinds: Vec<String> = self
                .unknown
                .iter()
                .take(8)
                .map(|(kind, n)| if *n == 1 { kind.clone() } else { format!("{kind} ×{n}") })
                .collect();
            let more = if self.unknown.len() > 8 { ", …" } else { "" };
            said.push(format!(
                "{unknown} {} of a type the bot does not read ({}{more})",
                plural(unknown, "block", "blocks"),
                kinds.join(", ")
            ));
        }
        if self.malformed > 0 {
            said.push(format!("{} malformed {}", self.malformed, plural(self.malformed, "part", "parts")));
        }
        if self.too_deep > 0 {
            said.push(format!(
                "{} {} nested deeper than {MAX_DEPTH} levels",
                self.too_deep,
                plural(self.too_deep, "part", "parts")
            ));
        }
        (!said.is_empty()).then(|| format!("(Left out of this message: {}.)", said.join("; ")))
    }
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// The rendering so far: stored up to [`RENDERED_BYTES`], counted beyond.
#[derive(Debug, Default)]
struct Out {
    text: String,
    /// Bytes rendered but not stored.
    dropped: usize,
    skipped: Skipped,
}

impl Out {
    fn push(&mut self, piece: &str) {
        let room = RENDERED_BYTES.saturating_sub(self.text.len());
        if piece.len() <= room && self.dropped == 0 {
            self.text.push_str(piece);
            return;
        }
        let mut end = room.min(piece.len());
        while !piece.is_char_boundary(end) {
            end -= 1;
        }
        if self.dropped == 0 {
            self.text.push_str(&piece[..end]);
            self.dropped += piece.len() - end;
        } else {
            self.dropped += piece.len();
        }
    }

    /// Starts a new line unless at the start of one.
    fn line(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.push("\n");
        }
    }

    fn unknown(&mut self, kind: &str) {
        // Slack's type names are short; a hostile one is not kept whole.
        let kind: String = kind.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(40).collect();
        *self.skipped.unknown.entry(kind).or_default() += 1;
    }
}

fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

/// A text object's words (`{"type": "mrkdwn"|"plain_text", "text": …}`).
fn text_object(value: &Value) -> Option<String> {
    match value {
        Value::Object(_) => str_at(value, "text").map(unpinged),
        _ => None,
    }
}

/// `<url|label>` when there is a link, else the label.
fn linked(label: Option<String>, url: Option<&str>) -> Option<String> {
    match (label, url) {
        (Some(label), Some(url)) => Some(format!("<{url}|{label}>")),
        (Some(label), None) => Some(label),
        (None, Some(url)) => Some(format!("<{url}>")),
        (None, None) => None,
    }
}

fn render_blocks(blocks: &Value, out: &mut Out, depth: usize) {
    match blocks {
        Value::Null => {}
        Value::Array(blocks) => {
            for block in blocks {
                render_block(block, out, depth);
            }
        }
        _ => out.skipped.malformed += 1,
    }
}

fn render_block(block: &Value, out: &mut Out, depth: usize) {
    let Some(kind) = block.get("type").and_then(Value::as_str) else {
        out.skipped.malformed += 1;
        return;
    };
    match kind {
        "section" => {
            if let Some(text) = block.get("text").and_then(text_object) {
                out.line();
                out.push(&text);
            }
            if let Some(fields) = block.get("fields").and_then(Value::as_array) {
                for field in fields {
                    match text_object(field) {
                        // "*Status:*\nFiring" reads as "*Status:* Firing".
                        Some(text) => {
                            out.line();
                            out.push(&fold_lines(&text));
                        }
                        None if !field.is_object() => out.skipped.malformed += 1,
                        None => {}
                    }
                }
            }
            if let Some(accessory) = block.get("accessory") {
                element(accessory, out);
            }
        }
        "header" => {
            if let Some(text) = block.get("text").and_then(text_object) {
                out.line();
                out.push(&text);
            }
        }
        "context" => {
            let parts: Vec<String> = block
                .get("elements")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|element| match element.get("type").and_then(Value::as_str) {
                    Some("image") => str_at(element, "alt_text").map(|alt| format!("[{}]", unpinged(alt))),
                    _ => text_object(element),
                })
                .collect();
            if !parts.is_empty() {
                out.line();
                out.push(&parts.join(" · "));
            }
        }
        "actions" => {
            let mut links = Out::default();
            for item in block.get("elements").and_then(Value::as_array).into_iter().flatten() {
                element(item, &mut links);
            }
            merge_counts(out, &links);
            if !links.text.trim().is_empty() {
                out.line();
                out.push(links.text.trim());
            }
        }
        "divider" => {
            out.line();
            out.push("---");
        }
        "image" => {
            let label = block.get("title").and_then(text_object).or_else(|| str_at(block, "alt_text").map(unpinged));
            if let Some(image) = linked(label.map(|label| format!("image: {label}")), str_at(block, "image_url")) {
                out.line();
                out.push(&image);
            }
        }
        "video" => {
            let title = block.get("title").and_then(text_object);
            if let Some(video) = linked(title.map(|title| format!("video: {title}")), str_at(block, "title_url")) {
                out.line();
                out.push(&video);
            }
        }
        "markdown" => {
            if let Some(text) = str_at(block, "text") {
                out.line();
                out.push(&unpinged(text));
            }
        }
        "rich_text" => {
            out.line();
            rich_elements(block.get("elements"), out, depth + 1);
        }
        "table" => {
            for row in block.get("rows").and_then(Value::as_array).into_iter().flatten() {
                let cells: Vec<String> = row
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|cell| match cell.get("type").and_then(Value::as_str) {
                        Some("rich_text") => {
                            let mut inner = Out::default();
                            rich_elements(cell.get("elements"), &mut inner, depth + 1);
                            out.skipped.malformed += inner.skipped.malformed;
                            out.skipped.too_deep += inner.skipped.too_deep;
                            fold_lines(inner.text.trim())
                        }
                        _ => str_at(cell, "text").map(unpinged).unwrap_or_default(),
                    })
                    .collect();
                out.line();
                out.push(&format!("| {} |", cells.join(" | ")));
            }
        }
        other => out.unknown(other),
    }
}

/// An interactive element, where it says something: a button's link, an
/// image's description. Selects, date pickers and the like are controls.
fn element(element: &Value, out: &mut Out) {
    match element.get("type").and_then(Value::as_str) {
        Some("button") => {
            if let Some(url) = str_at(element, "url") {
                let label = element.get("text").and_then(text_object);
                if let Some(link) = linked(label, Some(url)) {
                    if !out.text.is_empty() && !out.text.ends_with('\n') {
                        out.push(" · ");
                    }
                    out.push(&link);
                }
            }
        }
        Some("image") => {
            if let Some(alt) = str_at(element, "alt_text") {
                out.push(&format!(" [image: {}]", unpinged(alt)));
            }
        }
        Some(_) => {}
        None => out.skipped.malformed += 1,
    }
}

/// Rich text's elements: sections, lists, code, quotes, each on its lines.
fn rich_elements(elements: Option<&Value>, out: &mut Out, depth: usize) {
    let Some(elements) = elements else { return };
    let Some(elements) = elements.as_array() else {
        out.skipped.malformed += 1;
        return;
    };
    for element in elements {
        rich_element(element, out, depth);
    }
}

fn rich_element(element: &Value, out: &mut Out, depth: usize) {
    if depth > MAX_DEPTH {
        out.skipped.too_deep += 1;
        return;
    }
    match element.get("type").and_then(Value::as_str) {
        Some("rich_text_section") => {
            out.line();
            inline(element.get("elements"), out);
        }
        Some("rich_text_preformatted") => {
            out.line();
            out.push("```\n");
            inline(element.get("elements"), out);
            out.push("\n```");
        }
        Some("rich_text_quote") => {
            let mut quoted = Out::default();
            inline(element.get("elements"), &mut quoted);
            merge_counts(out, &quoted);
            for line in quoted.text.lines() {
                out.line();
                out.push("> ");
                out.push(line);
            }
        }
        Some("rich_text_list") => {
            let indent = element.get("indent").and_then(Value::as_u64).unwrap_or(0).min(MAX_DEPTH as u64) as usize;
            let ordered = element.get("style").and_then(Value::as_str) == Some("ordered");
            let items = element.get("elements").and_then(Value::as_array);
            for (n, item) in items.into_iter().flatten().enumerate() {
                out.line();
                out.push(&"  ".repeat(indent));
                out.push(&if ordered { format!("{}. ", n + 1) } else { "• ".to_owned() });
                match item.get("type").and_then(Value::as_str) {
                    Some("rich_text_section") => inline(item.get("elements"), out),
                    // A list inside a list (not what Slack sends, but read).
                    Some(_) => rich_element(item, out, depth + 1),
                    None => out.skipped.malformed += 1,
                }
            }
        }
        Some(other) => out.unknown(other),
        None => out.skipped.malformed += 1,
    }
}

fn merge_counts(out: &mut Out, inner: &Out) {
    out.skipped.malformed += inner.skipped.malformed;
    out.skipped.too_deep += inner.skipped.too_deep;
    out.dropped += inner.dropped;
}

/// Rich text's inline elements, as Slack's mrkdwn would write them.
fn inline(elements: Option<&Value>, out: &mut Out) {
    let Some(elements) = elements.and_then(Value::as_array) else {
        if elements.is_some_and(|e| !e.is_null()) {
            out.skipped.malformed += 1;
        }
        return;
    };
    for element in elements {
        let piece = match element.get("type").and_then(Value::as_str) {
            Some("text") => element.get("text").and_then(Value::as_str).map(|text| styled(text, element)),
            Some("link") => {
                let label = str_at(element, "text").map(unpinged);
                linked(label, str_at(element, "url"))
            }
            Some("user") => str_at(element, "user_id").map(|user| format!("<@{user}>")),
            Some("channel") => str_at(element, "channel_id").map(|channel| format!("<#{channel}>")),
            Some("usergroup") => str_at(element, "usergroup_id").map(|group| format!("@{group}")),
            Some("broadcast") => str_at(element, "range").map(|range| format!("@{range}")),
            Some("emoji") => str_at(element, "name").map(|name| format!(":{name}:")),
            Some("date") => str_at(element, "fallback")
                .map(str::to_owned)
                .or_else(|| element.get("timestamp").map(|ts| format!("<date {ts}>"))),
            Some("team") => str_at(element, "team_id").map(str::to_owned),
            Some("color") => str_at(element, "value").map(str::to_owned),
            Some(_) => str_at(element, "text").map(unpinged),
            None => {
                out.skipped.malformed += 1;
                None
            }
        };
        if let Some(piece) = piece {
            out.push(&piece);
        }
    }
}

/// A rich text run with its style as mrkdwn marks (`*bold*`, `` `code` ``).
fn styled(text: &str, element: &Value) -> String {
    let text = unpinged(text);
    let style = element.get("style");
    let on = |name: &str| style.and_then(|style| style.get(name)).and_then(Value::as_bool).unwrap_or(false);
    if text.trim().is_empty() {
        return text;
    }
    let mut text = text;
    for (name, mark) in [("code", "`"), ("bold", "*"), ("italic", "_"), ("strike", "~")] {
        if on(name) {
            text = format!("{mark}{text}{mark}");
        }
    }
    text
}

/// A legacy attachment: pretext, author, title (linked), text, fields,
/// footer; its own blocks; its fallback only when it has nothing else.
fn render_attachment(attachment: &Value, out: &mut Out) {
    if !attachment.is_object() {
        out.skipped.malformed += 1;
        return;
    }
    let said = |key: &str| str_at(attachment, key).map(unpinged);
    if let Some(pretext) = said("pretext") {
        out.line();
        out.push(&pretext);
    }
    if let Some(author) = linked(said("author_name"), str_at(attachment, "author_link")) {
        out.line();
        out.push(&author);
    }
    if let Some(title) = linked(said("title"), str_at(attachment, "title_link")) {
        out.line();
        out.push(&title);
    }
    if let Some(text) = said("text") {
        out.line();
        out.push(&text);
    }
    match attachment.get("fields") {
        Some(Value::Array(fields)) => {
            for field in fields {
                if !field.is_object() {
                    out.skipped.malformed += 1;
                    continue;
                }
                let value = str_at(field, "value").map(unpinged);
                let line = match (str_at(field, "title").map(unpinged), value) {
                    (Some(title), Some(value)) => format!("{title}: {}", fold_lines(&value)),
                    (Some(title), None) => title,
                    (None, Some(value)) => fold_lines(&value),
                    (None, None) => continue,
                };
                out.line();
                out.push(&line);
            }
        }
        None | Some(Value::Null) => {}
        Some(_) => out.skipped.malformed += 1,
    }
    render_blocks(attachment.get("blocks").unwrap_or(&Value::Null), out, 0);
    let buttons: Vec<String> = attachment
        .get("actions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|action| linked(action.get("text").and_then(Value::as_str).map(unpinged), str_at(action, "url")))
        .filter(|link| link.starts_with('<'))
        .collect();
    if !buttons.is_empty() {
        out.line();
        out.push(&buttons.join(" · "));
    }
    if let Some(from) = str_at(attachment, "from_url").filter(|url| Some(*url) != str_at(attachment, "title_link")) {
        out.line();
        out.push(&format!("(from <{from}>)"));
    }
    if let Some(footer) = said("footer") {
        out.line();
        out.push(&footer);
    }
    if out.text.trim().is_empty()
        && let Some(fallback) = said("fallback")
    {
        out.push(&fallback);
    }
}

/// A field's lines as one (`*Status:*\nFiring` → `*Status:* Firing`).
fn fold_lines(text: &str) -> String {
    text.lines().map(str::trim).filter(|line| !line.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Slack's mass mentions as the words Slack shows for them: `<!channel>`
/// → `@channel`, `<!subteam^S1|@oncall>` → `@oncall`, a date → its
/// fallback. Person and channel mentions and links stay as they are.
pub fn unpinged(text: &str) -> String {
    if !text.contains("<!") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('>') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (command, label) = match inner.split_once('|') {
            Some((command, label)) => (command, Some(label)),
            None => (inner, None),
        };
        let name = command.split('^').next().unwrap_or_default();
        let shown = match (name, label) {
            ("here" | "channel" | "everyone", _) => format!("@{name}"),
            ("group", _) => "@channel".to_owned(),
            ("subteam", Some(label)) if !label.is_empty() => {
                format!("@{}", label.trim_start_matches('@'))
            }
            ("subteam", _) => "@usergroup".to_owned(),
            (_, Some(label)) => label.to_owned(),
            (name, None) => name.to_owned(),
        };
        out.push_str(&shown);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The letters and digits of `text`, lower case, Slack's entities read:
/// what two renderings of the same words have in common.
fn letters(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(message: &Value) -> String {
        message_text(
            message["text"].as_str().unwrap_or_default(),
            message.get("blocks").unwrap_or(&Value::Null),
            message.get("attachments").unwrap_or(&Value::Null),
        )
    }

    /// The messages of the captured alerting thread, by who posted them.
    fn thread() -> Vec<Value> {
        let replies: Value = serde_json::from_str(testkit::fixtures::messages::CONVERSATIONS_REPLIES_ALERTS).unwrap();
        replies["messages"].as_array().unwrap().clone()
    }

    fn by(username: &str) -> Value {
        thread().into_iter().find(|m| m["username"] == username || m["user"] == username).unwrap()
    }

    #[test]
    fn grafanas_attachment_reaches_the_model_with_its_title_link_text_and_footer() {
        let grafana = render(&by("Grafana"));
        assert_eq!(
            grafana,
            "<https://grafana.example.com/alerting/grafana/cdx93ak2/view|[FIRING:1] HighErrorRate checkout-api (prod)>\n\
             **Firing**\n\nValue: B=0.083\nLabels:\n - alertname = HighErrorRate\n - service = checkout-api\n - env = prod\n\
             Annotations:\n - summary = 5xx ratio above 5% for 5m\n - runbook_url = https://runbooks.example.com/checkout-5xx\n\
             Source: https://grafana.example.com/alerting/grafana/cdx93ak2/view\n\
             Silence: https://grafana.example.com/alerting/silence/new?alertmanager=grafana&amp;matcher=alertname%3DHighErrorRate\n\
             Grafana v11.3.0"
        );
    }

    #[test]
    fn attachment_fields_read_as_label_and_value() {
        let alarm = render(&by("aws-notify"));
        assert!(
            alarm.starts_with("AWS CloudWatch notification - checkout-api-5xx\nAlarm Name: `checkout-api-5xx`"),
            "{alarm}"
        );
        assert!(alarm.contains("\nAlarm reason: `Threshold Crossed: 3 out of the last 3 datapoints"), "{alarm}");
        assert!(alarm.contains("\nOld State: `OK`\nCurrent State: `ALARM`\n"), "{alarm}");
        assert!(alarm.contains("Link to Alarm: https://console.aws.amazon.com/cloudwatch/home?region=eu-west-1#alarm:alarmFilter=ANY;name=checkout-api-5xx"), "{alarm}");
        assert!(
            !alarm.contains("Alarm checkout-api-5xx triggered"),
            "the fallback is not read when there is more: {alarm}"
        );
    }

    #[test]
    fn blocks_keep_header_fields_context_and_button_links_and_text_is_not_doubled() {
        let datadog = render(&by("incident-bot"));
        assert_eq!(
            datadog,
            "Triggered: [P1] checkout-api p99 latency above 2s\n\
             *Monitor:* <https://app.datadoghq.eu/monitors/81234567|checkout-api p99 latency>\n\
             *Service:* checkout-api\n*Env:* prod\n*Value:* 2.84 s\n*Threshold:* 2 s\n\
             ---\n\
             Notified @oncall-checkout · Tags: team:payments, env:prod\n\
             <https://app.datadoghq.eu/monitors/81234567|View monitor> · <https://app.datadoghq.eu/apm/services/checkout-api|Open APM>",
            "the fallback text (the header's words) is left out"
        );
    }

    #[test]
    fn a_persons_rich_text_message_is_its_text_once() {
        let person = by("U061F7AUR");
        assert_eq!(render(&person), person["text"].as_str().unwrap());
    }

    #[test]
    fn a_text_that_says_more_than_its_blocks_is_kept_before_them() {
        let message = json!({
            "text": "Deploy 42 of checkout-api failed in prod",
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "See <https://ci.example.com/run/42|run 42>"}}]
        });
        assert_eq!(
            render(&message),
            "Deploy 42 of checkout-api failed in prod\n\nSee <https://ci.example.com/run/42|run 42>"
        );
    }

    #[test]
    fn rich_text_lists_quotes_code_and_inline_elements_are_read() {
        let message = json!({"text": "", "blocks": [{"type": "rich_text", "elements": [
            {"type": "rich_text_section", "elements": [
                {"type": "text", "text": "Steps for "},
                {"type": "user", "user_id": "U2"},
                {"type": "text", "text": " in "},
                {"type": "channel", "channel_id": "C1"},
                {"type": "text", "text": " ("},
                {"type": "link", "url": "https://runbooks.example.com/5xx", "text": "runbook"},
                {"type": "text", "text": ") "},
                {"type": "emoji", "name": "fire", "unicode": "1f525"},
                {"type": "date", "timestamp": 1763800000, "format": "{date_short}", "fallback": "Nov 22"}
            ]},
            {"type": "rich_text_list", "style": "ordered", "indent": 0, "elements": [
                {"type": "rich_text_section", "elements": [{"type": "text", "text": "roll back", "style": {"bold": true}}]},
                {"type": "rich_text_section", "elements": [{"type": "text", "text": "watch p99"}]}
            ]},
            {"type": "rich_text_list", "style": "bullet", "indent": 1, "elements": [
                {"type": "rich_text_section", "elements": [{"type": "text", "text": "in Grafana"}]}
            ]},
            {"type": "rich_text_preformatted", "elements": [{"type": "text", "text": "kubectl rollout undo deploy/checkout"}]},
            {"type": "rich_text_quote", "elements": [{"type": "text", "text": "it was the pool\nagain"}]}
        ]}]});
        assert_eq!(
            render(&message),
            "Steps for <@U2> in <#C1> (<https://runbooks.example.com/5xx|runbook>) :fire:Nov 22\n\
             1. *roll back*\n2. watch p99\n  • in Grafana\n\
             ```\nkubectl rollout undo deploy/checkout\n```\n\
             > it was the pool\n> again"
        );
    }

    #[test]
    fn mass_mentions_in_an_attachment_cannot_ping_and_read_as_slack_shows_them() {
        let message = json!({"text": "", "attachments": [{"fields": [
            {"title": "Escalate", "value": "<!channel> and <!subteam^S0ONCALL|@oncall-payments>, <!here>", "short": false}
        ], "pretext": "<!everyone> <!date^1763800000^{date}|Nov 22, 2025>"}]});
        let text = render(&message);
        assert_eq!(text, "@everyone Nov 22, 2025\nEscalate: @channel and @oncall-payments, @here");
        assert!(!text.contains("<!"), "{text}");
        let broadcast = json!({"blocks": [{"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [
            {"type": "broadcast", "range": "channel"}, {"type": "usergroup", "usergroup_id": "S1"}
        ]}]}]});
        assert_eq!(render(&broadcast), "@channel@S1");
    }

    #[test]
    fn unknown_block_types_are_left_out_and_counted() {
        let message = json!({"text": "Standup call started", "blocks": [
            {"type": "call", "call_id": "R1"},
            {"type": "call", "call_id": "R2"},
            {"type": "input", "element": {"type": "plain_text_input"}},
            {"type": "section", "text": {"type": "plain_text", "text": "Join from the button"}}
        ]});
        assert_eq!(
            render(&message),
            "Standup call started\n\nJoin from the button\n\n\
             (Left out of this message: 3 blocks of a type the bot does not read (call ×2, input).)"
        );
    }

    #[test]
    fn malformed_pieces_are_skipped_and_counted_never_an_error() {
        let message = json!({"text": "alert", "blocks": [
            "not a block",
            {"no": "type"},
            {"type": 7},
            {"type": "section", "text": "not an object", "fields": [3, {"type": "mrkdwn", "text": "*Env:*\nprod"}]},
            {"type": "rich_text", "elements": {"not": "a list"}},
            {"type": "context", "elements": "nope"},
            {"type": "actions", "elements": [{"url": 5}]},
            {"type": "table", "rows": "nope"}
        ], "attachments": [7, {"fields": "nope", "title": 3, "text": "kept"}]});
        assert_eq!(render(&message), "alert\n\n*Env:* prod\n\nkept\n\n(Left out of this message: 8 malformed parts.)");
        assert_eq!(
            message_text("hi", &json!("blocks"), &json!({"a": 1})),
            "hi\n\n(Left out of this message: 2 malformed parts.)"
        );
    }

    #[test]
    fn a_block_with_ten_thousand_elements_is_cut_and_says_by_how_much() {
        let elements: Vec<Value> =
            (0..10_000).map(|n| json!({"type": "text", "text": format!("element {n:05} ")})).collect();
        let message = json!({"text": "", "blocks": [{"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": elements}]}]});
        let text = render(&message);
        let total = 10_000 * "element 00000 ".len();
        assert!(text.starts_with(&format!("(This message is {total} bytes as text; the first {RENDERED_BYTES} follow, the other {} bytes were left out.)\nelement 00000 ", total - RENDERED_BYTES)), "{}", &text[..200]);
        assert!(text.len() < RENDERED_BYTES + 200, "{}", text.len());
        assert!(!text.contains("element 09999"));

        let fields: Vec<Value> = (0..10_000).map(|n| json!({"title": format!("f{n}"), "value": "v"})).collect();
        let text = render(&json!({"attachments": [{"fields": fields}]}));
        assert!(text.starts_with("(This message is ") && text.len() < RENDERED_BYTES + 200, "{}", &text[..200]);
    }

    #[test]
    fn deeply_nested_rich_text_is_read_to_a_depth_and_the_rest_said() {
        let mut list = json!({"type": "rich_text_section", "elements": [{"type": "text", "text": "bottom"}]});
        for level in 0..100 {
            list = json!({"type": "rich_text_list", "style": "bullet", "indent": level, "elements": [list]});
        }
        let message = json!({"text": "", "blocks": [{"type": "rich_text", "elements": [list]}]});
        let text = render(&message);
        assert!(!text.contains("bottom"), "{text}");
        assert!(text.ends_with("(Left out of this message: 1 part nested deeper than 16 levels.)"), "{text}");
        assert!(text.len() < 2_000, "{text}");
    }

    #[test]
    fn a_table_block_reads_row_by_row() {
        let message = json!({"text": "", "blocks": [{"type": "table", "rows": [
            [{"type": "raw_text", "text": "service"}, {"type": "raw_text", "text": "errors"}],
            [{"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [
                {"type": "link", "url": "https://grafana.example.com/d/checkout", "text": "checkout"}]}]},
             {"type": "raw_text", "text": "412"}]
        ]}]});
        assert_eq!(
            render(&message),
            "| service | errors |\n| <https://grafana.example.com/d/checkout|checkout> | 412 |"
        );
    }

    #[test]
    fn an_attachment_with_nothing_but_a_fallback_reads_as_its_fallback() {
        let message = json!({"text": "", "attachments": [{"fallback": "Build #42 failed", "color": "danger"}]});
        assert_eq!(render(&message), "Build #42 failed");
    }
}
