//! Answers in Slack's own Markdown: the text in `markdown` blocks, which
//! Slack renders itself (standard Markdown, up to 12,000 characters a
//! message; no tables), and each table in a `table` block (at most 100 rows,
//! the header's included, 20 columns, 10,000 characters of cells a message;
//! one table a message here). Nested lists, code with backticks and links with
//! parentheses reach Slack as the model wrote them, with a plain `text`
//! fallback for notifications.
//!
//! The Markdown is read with a parser (pulldown-cmark), never with regular
//! expressions: a table is what a parser takes for one (never pipes inside
//! code), and the text is changed only where it must be: a link whose label
//! names another host than its target shows the real address, and Slack's
//! special mentions (`<!channel>`, `<!here>`, `<!subteam^…>`) cannot ping
//! unless the deployment allows them. Redaction happens before.

use crate::mrkdwn::{SpecialMentions, host_of};
use pulldown_cmark::{Alignment, Event, Options, Parser, Tag, TagEnd};
use serde_json::{Value, json};
use std::ops::Range;

/// What the parser reads besides CommonMark: GitHub's tables and strikethrough.
const OPTIONS: Options = Options::ENABLE_TABLES.union(Options::ENABLE_STRIKETHROUGH);

/// Slack's limit on the markdown blocks of one message, with room to spare.
pub const TEXT_BUDGET: usize = 11_000;
/// Slack's table block: rows (the header is the first), columns, characters
/// of cells. Unlike the data table block (a header and 100 rows), a table
/// block's `rows` hold at most 100 in all (slack_sdk's `TableBlock`).
pub const TABLE_ROWS: usize = 100;
pub const TABLE_COLUMNS: usize = 20;
pub const TABLE_CHARS: usize = 10_000;

/// One message of an answer: its blocks, and the plain text Slack shows in
/// notifications (escaped: it neither links nor pings).
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub blocks: Vec<Value>,
    pub text: String,
}

#[derive(Debug)]
enum Part {
    Text(String),
    Table(Table),
}

#[derive(Debug, Default)]
struct Table {
    /// The header first.
    rows: Vec<Vec<String>>,
    align: Vec<Alignment>,
}

impl Table {
    fn chars(&self) -> usize {
        self.rows.iter().flatten().map(|cell| cell.chars().count()).sum()
    }

    fn fits(&self) -> bool {
        self.rows.len() <= TABLE_ROWS
            && self.rows.iter().all(|row| row.len() <= TABLE_COLUMNS)
            && self.chars() <= TABLE_CHARS
    }

    /// As Slack's `table` block: every row as long as the widest.
    fn block(&self) -> Value {
        let width = self.rows.iter().map(Vec::len).max().unwrap_or(1).max(1);
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|row| {
                let cells: Vec<Value> = (0..width)
                    .map(|column| {
                        let text = row.get(column).map(|cell| cell.trim()).filter(|cell| !cell.is_empty());
                        json!({"type": "raw_text", "text": text.unwrap_or("–")})
                    })
                    .collect();
                Value::Array(cells)
            })
            .collect();
        let mut block = json!({"type": "table", "rows": rows});
        if self.align.iter().any(|align| matches!(align, Alignment::Center | Alignment::Right)) {
            let settings: Vec<Value> = (0..width)
                .map(|column| match self.align.get(column) {
                    Some(Alignment::Center) => json!({"align": "center"}),
                    Some(Alignment::Right) => json!({"align": "right"}),
                    _ => json!({"align": "left"}),
                })
                .collect();
            block["column_settings"] = Value::Array(settings);
        }
        block
    }

    /// A table Slack's block cannot hold, as aligned monospace instead.
    fn as_code(&self) -> String {
        let width = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..width)
            .map(|column| {
                self.rows.iter().filter_map(|row| row.get(column)).map(|c| c.chars().count()).max().unwrap_or(0)
            })
            .collect();
        let mut lines = vec!["```".to_owned()];
        for row in &self.rows {
            let cells: Vec<String> =
                (0..width).map(|c| format!("{:w$}", row.get(c).map_or("", |s| s.as_str()), w = widths[c])).collect();
            lines.push(cells.join(" | ").trim_end().replace("```", "ˋˋˋ"));
        }
        lines.push("```".to_owned());
        lines.join("\n")
    }

    /// The table as text for the notification fallback.
    fn plain(&self) -> String {
        self.rows.iter().map(|row| row.join(" | ")).collect::<Vec<_>>().join("\n")
    }
}

/// `text` with the special mentions `mentions` allows kept as they are,
/// the others made unable to ping (their `<` as `&lt;`), and the text
/// around them as `plain` makes it.
fn with_mentions(text: &str, mentions: SpecialMentions, plain: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("<!") {
        out.push_str(&plain(&rest[..at]));
        let token = &rest[at..];
        match token.find('>') {
            Some(end) if mentions.allow(&token[..=end]) => {
                out.push_str(&token[..=end]);
                rest = &token[end + 1..];
            }
            _ => {
                out.push_str("&lt;!");
                rest = &token[2..];
            }
        }
    }
    out.push_str(&plain(rest));
    out
}

/// The text Slack receives for `text`: special mentions that may not
/// ping lose their `<`.
fn unpinged(text: &str, mentions: SpecialMentions) -> String {
    with_mentions(text, mentions, str::to_owned)
}

/// Slack's own link syntax written out in the text (`<url|label>`): a
/// label naming another host than the link's shows the real address.
fn honest_written_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("<http") {
        out.push_str(&rest[..at]);
        let token = &rest[at..];
        let Some(end) = token.find('>') else {
            out.push_str(token);
            return out;
        };
        let inner = &token[1..end];
        match inner.split_once('|').and_then(|(url, label)| disguised(label, url).map(|real| format!("<{real}>"))) {
            Some(fixed) => out.push_str(&fixed),
            None => out.push_str(&token[..=end]),
        }
        rest = &token[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The plain `text` of a message, for notifications: escaped so it neither
/// links nor pings, but for the special mentions `mentions` allows.
fn fallback(text: &str, mentions: SpecialMentions) -> String {
    with_mentions(text, mentions, slack::text::escape)
}

/// The real address, for a link whose label names another host than its
/// target; `None` for an honest one.
fn disguised(label: &str, url: &str) -> Option<String> {
    let (shown, real) = (host_of(label.trim())?, host_of(url)?);
    (!shown.eq_ignore_ascii_case(real)).then(|| url.to_owned())
}

/// Whether a streamed answer, as the model wrote it, must give way to the
/// rendering: it has a table (the stream shows its pipes, the rendering a
/// table block) or a link whose label names another host than its target.
pub fn streams_badly(markdown: &str) -> bool {
    if honest_written_links(markdown) != markdown {
        return true;
    }
    let mut open: Vec<(String, String)> = Vec::new();
    for event in Parser::new_ext(markdown, OPTIONS) {
        match event {
            Event::Start(Tag::Table(_)) => return true,
            Event::Start(Tag::Link { dest_url, .. }) => open.push((dest_url.into_string(), String::new())),
            Event::Text(text) | Event::Code(text) => {
                if let Some((_, label)) = open.last_mut() {
                    label.push_str(&text);
                }
            }
            Event::End(TagEnd::Link) => {
                if let Some((url, label)) = open.pop()
                    && disguised(&label, &url).is_some()
                {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// The answer's parts in order: text (links made honest) and tables.
fn parts(markdown: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    // Replacements of source ranges in the text (deceptive links).
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let mut cursor = 0;
    let mut table: Option<(Table, Range<usize>)> = None;
    let mut cell: Option<String> = None;
    // Open links: where their label starts (in the cell, or the source), and where they go.
    let mut links: Vec<(usize, Range<usize>, String, String)> = Vec::new();
    let flush = |parts: &mut Vec<Part>, edits: &mut Vec<(Range<usize>, String)>, from: usize, to: usize| {
        if from >= to {
            return;
        }
        let mut text = String::new();
        let mut at = from;
        for (range, replacement) in edits.drain(..).filter(|(range, _)| range.start >= from && range.end <= to) {
            if range.start < at {
                continue;
            }
            text.push_str(&markdown[at..range.start]);
            text.push_str(&replacement);
            at = range.end;
        }
        text.push_str(&markdown[at..to]);
        match parts.last_mut() {
            Some(Part::Text(previous)) => previous.push_str(&text),
            _ => parts.push(Part::Text(text)),
        }
    };
    for (event, range) in Parser::new_ext(markdown, OPTIONS).into_offset_iter() {
        match event {
            Event::Start(Tag::Table(align)) if depth == 0 => {
                flush(&mut parts, &mut edits, cursor, range.start);
                table = Some((Table { rows: Vec::new(), align }, range));
                depth += 1;
            }
            Event::Start(Tag::TableHead | Tag::TableRow) => {
                if let Some((table, _)) = table.as_mut() {
                    table.rows.push(Vec::new());
                }
                depth += 1;
            }
            Event::Start(Tag::TableCell) => {
                cell = Some(String::new());
                depth += 1;
            }
            Event::End(TagEnd::TableCell) => {
                if let (Some((table, _)), Some(text)) = (table.as_mut(), cell.take())
                    && let Some(row) = table.rows.last_mut()
                {
                    row.push(text);
                }
                depth -= 1;
            }
            Event::End(TagEnd::Table) if depth == 1 => {
                depth -= 1;
                if let Some((table, range)) = table.take() {
                    cursor = range.end;
                    if table.fits() {
                        parts.push(Part::Table(table));
                    } else {
                        let code = table.as_code();
                        match parts.last_mut() {
                            Some(Part::Text(previous)) => previous.push_str(&code),
                            _ => parts.push(Part::Text(code)),
                        }
                    }
                }
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                let label_at = cell.as_ref().map_or(range.start, String::len);
                links.push((label_at, range, dest_url.into_string(), String::new()));
                depth += 1;
            }
            Event::End(TagEnd::Link) => {
                depth -= 1;
                if let Some((label_at, range, url, label)) = links.pop()
                    && let Some(real) = disguised(&label, &url)
                {
                    match cell.as_mut() {
                        Some(cell) => cell.replace_range(label_at.min(cell.len()).., &real),
                        None => edits.push((range, real)),
                    }
                }
            }
            Event::Start(_) => depth += 1,
            Event::End(_) => depth -= 1,
            Event::Text(text) | Event::Code(text) => {
                if let Some(cell) = cell.as_mut() {
                    cell.push_str(&text);
                }
                if let Some((_, _, _, label)) = links.last_mut() {
                    label.push_str(&text);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(cell) = cell.as_mut() {
                    cell.push(' ');
                }
            }
            Event::InlineHtml(html) | Event::Html(html) => {
                if let Some(cell) = cell.as_mut() {
                    cell.push_str(&html);
                }
            }
            _ => {}
        }
    }
    flush(&mut parts, &mut edits, cursor, markdown.len());
    parts
}

/// `text` cut into pieces of at most `budget` characters, at line ends (a
/// longer line is cut within); a fenced code block cut in two is closed and
/// opened again, so each piece renders alone.
fn chunks(text: &str, budget: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut fence: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let mut line = line.to_owned();
        while line.chars().count() > budget / 2 {
            let cut: String = line.chars().take(budget / 2).collect();
            line = line[cut.len()..].to_owned();
            push_line(&mut pieces, &mut current, &fence, &format!("{cut}\n"), budget);
        }
        push_line(&mut pieces, &mut current, &fence, &line, budget);
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) {
                fence = None;
            }
        } else if let Some(marker) = ["```", "~~~"].into_iter().find(|marker| trimmed.starts_with(marker)) {
            fence = Some(marker.to_owned());
        }
    }
    if !current.trim().is_empty() {
        pieces.push(current);
    }
    pieces
}

fn push_line(pieces: &mut Vec<String>, current: &mut String, fence: &Option<String>, line: &str, budget: usize) {
    let closing = fence.as_ref().map_or(0, |marker| marker.len() + 1);
    if current.chars().count() + line.chars().count() + closing > budget && !current.trim().is_empty() {
        let mut piece = std::mem::take(current);
        if let Some(marker) = fence {
            if !piece.ends_with('\n') {
                piece.push('\n');
            }
            piece.push_str(marker);
            current.push_str(marker);
            current.push('\n');
        }
        pieces.push(piece);
    }
    current.push_str(line);
}

/// The answer as messages, each at most `max_blocks` blocks.
pub fn messages(markdown: &str, mentions: SpecialMentions, max_blocks: usize) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::new();
    let mut current = Message { blocks: Vec::new(), text: String::new() };
    let (mut text_used, mut has_table) = (0usize, false);
    let close = |current: &mut Message, messages: &mut Vec<Message>, text_used: &mut usize, has_table: &mut bool| {
        if !current.blocks.is_empty() {
            messages.push(std::mem::replace(current, Message { blocks: Vec::new(), text: String::new() }));
        }
        (*text_used, *has_table) = (0, false);
    };
    for part in parts(markdown) {
        match part {
            Part::Text(text) => {
                // Cut first (at line ends: no mention straddles a cut), then made unable to ping.
                for chunk in chunks(&honest_written_links(&text), TEXT_BUDGET) {
                    let plain = fallback(&chunk, mentions);
                    let chunk = unpinged(&chunk, mentions);
                    let size = chunk.chars().count();
                    if text_used + size > TEXT_BUDGET || current.blocks.len() + 1 > max_blocks {
                        close(&mut current, &mut messages, &mut text_used, &mut has_table);
                    }
                    text_used += size;
                    current.text.push_str(&plain);
                    current.blocks.push(json!({"type": "markdown", "text": chunk.trim_start_matches('\n').trim_end()}));
                }
            }
            Part::Table(table) => {
                if has_table || current.blocks.len() + 1 > max_blocks {
                    close(&mut current, &mut messages, &mut text_used, &mut has_table);
                }
                has_table = true;
                current.text.push_str(&format!("\n{}\n", slack::text::escape(&table.plain())));
                current.blocks.push(table.block());
            }
        }
    }
    close(&mut current, &mut messages, &mut text_used, &mut has_table);
    if messages.is_empty() {
        messages.push(Message { blocks: vec![json!({"type": "markdown", "text": "…"})], text: "…".into() });
    }
    for message in &mut messages {
        message.text = message.text.trim().to_owned();
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(markdown: &str) -> Message {
        let mut all = messages(markdown, SpecialMentions::default(), 45);
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    fn markdown_of(message: &Message) -> String {
        message.blocks.iter().filter(|b| b["type"] == "markdown").map(|b| b["text"].as_str().unwrap()).collect()
    }

    #[test]
    fn a_table_becomes_a_table_block_between_the_texts_around_it() {
        let answer = "Error rates:\n\n| service | 5xx | p99 |\n|:--|--:|:-:|\n| `checkout-api` | **4.1%** | 2.3 s |\n| auth | | 90 ms |\n\nCheckout is the one to look at.";
        let message = one(answer);
        let kinds: Vec<&str> = message.blocks.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["markdown", "table", "markdown"]);
        let table = &message.blocks[1];
        let cell = |row: usize, column: usize| table["rows"][row][column]["text"].as_str().unwrap().to_owned();
        assert_eq!(
            (cell(0, 0), cell(1, 0), cell(1, 1), cell(2, 1)),
            ("service".into(), "checkout-api".into(), "4.1%".into(), "–".into())
        );
        assert_eq!(table["column_settings"], json!([{"align": "left"}, {"align": "right"}, {"align": "center"}]));
        assert!(!markdown_of(&message).contains('|'), "no pipe table left as text");
        assert!(message.text.contains("checkout-api | 4.1% | 2.3 s"), "{}", message.text);
    }

    #[test]
    fn lists_code_and_links_with_parentheses_reach_slack_as_written() {
        let answer = "1. Check the pods\n   - `kubectl get pods -l app=checkout`\n   - restarts over 3?\n2. Read [the runbook (v2)](https://wiki.example.com/Checkout_(service))\n\n```sh\necho `date` | tee | grep '|'\n```";
        let message = one(answer);
        assert_eq!(markdown_of(&message), answer, "Slack renders it; nothing converted");
        assert!(message.blocks.iter().all(|b| b["type"] == "markdown"), "the pipes in code are no table");
    }

    #[test]
    fn special_mentions_cannot_ping_and_a_link_label_naming_another_host_shows_the_real_one() {
        let answer = "Ask <!channel> and <!subteam^S0OPS|@ops>, see [bank.example.com](https://evil.example/login) or [the docs](https://docs.example.com), <https://evil.example/y|bank.example.com>, and <@U061F7AUR>.";
        let text = markdown_of(&one(answer));
        assert!(!text.contains("<!channel>") && !text.contains("<!subteam"), "{text}");
        assert!(text.contains("&lt;!channel>"), "{text}");
        assert!(!text.contains("[bank.example.com]"), "{text}");
        assert!(text.contains("https://evil.example/login"), "{text}");
        assert!(text.contains("[the docs](https://docs.example.com)"), "an honest label stays: {text}");
        assert!(text.contains("<@U061F7AUR>"), "a person's mention stays");
        assert!(text.contains("<https://evil.example/y>") && !text.contains("|bank.example.com>"), "{text}");
        let allowed = SpecialMentions { here: true, ..SpecialMentions::default() };
        let text = markdown_of(&messages("<!here> deploy is out", allowed, 45)[0]);
        assert!(text.starts_with("<!here>"), "{text}");
        // In a table cell too: the label names the real host.
        let table = one("| link |\n|---|\n| [bank.example.com](https://evil.example/x) |");
        assert_eq!(table.blocks[0]["rows"][1][0]["text"], "https://evil.example/x");
    }

    #[test]
    fn a_stream_with_a_table_or_a_deceptive_link_gives_way_and_plain_answers_do_not() {
        assert!(streams_badly("see [bank.example.com](https://evil.example/x)"));
        assert!(streams_badly("see <https://evil.example/x|bank.example.com>"));
        assert!(streams_badly("| a | b |\n|---|---|\n| 1 | 2 |"));
        assert!(!streams_badly(
            "see [the docs](https://docs.example.com) and [docs.example.com](https://docs.example.com/a)"
        ));
        assert!(!streams_badly("```\n| a | b |\n|---|---|\n```"), "pipes in code are no table");
    }

    #[test]
    fn the_fallback_text_neither_links_nor_pings() {
        let message = one("See <https://x.example|here> and <!everyone>");
        assert!(!message.text.contains('<'), "{}", message.text);
    }

    #[test]
    fn long_answers_split_under_slacks_limits_and_code_cut_in_two_stays_code() {
        let paragraph = "word ".repeat(400);
        let code = format!("```\n{}```", "let x = 1;\n".repeat(1_500));
        let answer = format!("{paragraph}\n\n{code}\n\n{paragraph}");
        let all = messages(&answer, SpecialMentions::default(), 45);
        assert!(all.len() >= 2, "{}", all.len());
        for message in &all {
            let text = markdown_of(message);
            assert!(text.chars().count() <= TEXT_BUDGET, "{}", text.chars().count());
            assert_eq!(text.matches("```").count() % 2, 0, "every piece opens and closes its fences");
        }
        let joined: String = all.iter().map(markdown_of).collect();
        assert_eq!(joined.matches("let x = 1;").count(), 1_500, "nothing lost");
    }

    #[test]
    fn tables_slack_cannot_hold_are_aligned_code_and_each_table_has_a_message() {
        let mut wide = String::from("|");
        for column in 0..25 {
            wide.push_str(&format!(" c{column} |"));
        }
        wide.push_str("\n|");
        wide.push_str(&"---|".repeat(25));
        let message = one(&wide);
        assert_eq!(message.blocks[0]["type"], "markdown");
        assert!(markdown_of(&message).starts_with("```"), "{}", markdown_of(&message));
        let two = messages("| a |\n|---|\n| 1 |\n\nand\n\n| b |\n|---|\n| 2 |", SpecialMentions::default(), 45);
        assert_eq!(two.len(), 2, "one table a message");
    }

    #[test]
    fn a_table_block_holds_100_rows_with_its_header_and_a_longer_table_is_code() {
        let table = |body_rows: usize| {
            let body: String = (0..body_rows).map(|row| format!("| {row} |\n")).collect();
            format!("| n |\n|---|\n{body}")
        };
        let fits = one(&table(TABLE_ROWS - 1));
        assert_eq!(fits.blocks[0]["type"], "table");
        assert_eq!(fits.blocks[0]["rows"].as_array().unwrap().len(), TABLE_ROWS);
        let too_long = one(&table(TABLE_ROWS));
        assert!(too_long.blocks.iter().all(|b| b["type"] == "markdown"), "no table block of 101 rows");
        assert!(markdown_of(&too_long).starts_with("```"), "{}", markdown_of(&too_long));
    }
}
