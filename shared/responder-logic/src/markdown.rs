//! Answers in Slack's own Markdown: the text in `markdown` blocks, which
//! Slack renders itself (standard Markdown, up to 12,000 characters a
//! message; no tables), and each table in a `table` block (at most 100 rows,
//! the header's included, 20 columns, 10,000 characters of cells a message;
//! one table a message here). Nested lists, code with backticks and links with
//! parentheses reach Slack as the model wrote them, with a plain `text`
//! fallback for notifications. A table's cells keep their links, emphasis
//! and code as the table block's `rich_text` cells (plain ones stay
//! `raw_text`); only web and mail addresses become links. A table the block
//! cannot hold is aligned code, each link's address written after its label.
//!
//! With charts on (the assistant configuration's `charts`, the default), a
//! table of numbers also gets a chart beside it ([`crate::charts`]), and a
//! table over the table block's rows becomes Slack's data table block
//! (<https://docs.slack.dev/reference/block-kit/blocks/data-table-block>:
//! sorting and pagination, a header and at most 100 rows, 20 columns, 10,000
//! characters of cells a table and a message): one a message, cut into as
//! many as it takes up to [`DATA_TABLES`], numbers as `raw_number` cells so
//! they sort as numbers. Larger, it is aligned code as before. Charts off,
//! tables render as they did before charts existed.
//!
//! The Markdown is read with a parser (pulldown-cmark), never with regular
//! expressions: a table is what a parser takes for one (never pipes inside
//! code), and the text is changed only where it must be: a link whose label
//! names another host than its target shows the real address, and Slack's
//! special mentions (`<!channel>`, `<!here>`, `<!subteam^…>`) cannot ping
//! unless the deployment allows them. Redaction happens before.

use crate::mrkdwn::{SpecialMentions, host_of};
use pulldown_cmark::{Alignment, Event, LinkType, Options, Parser, Tag, TagEnd};
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
/// Slack's data table block: rows besides its header ("a maximum of 101
/// rows (100 regular rows plus the header)"); its columns and characters
/// are the table block's ([`TABLE_COLUMNS`], [`TABLE_CHARS`]).
pub const DATA_TABLE_ROWS: usize = 100;
/// Rows a data table shows a page (Slack's default is 5).
pub const DATA_TABLE_PAGE: usize = 20;
/// Data tables one table is cut into at most, a message each: an answer
/// of more messages is sent as a file anyway ([`crate::render::MAX_ANSWER_MESSAGES`]).
pub const DATA_TABLES: usize = crate::render::MAX_ANSWER_MESSAGES;

/// How an answer's tables are shown: which special mentions may ping, and
/// whether tables of numbers get charts and long tables data tables (the
/// assistant configuration's `charts`; on by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rendering {
    pub mentions: SpecialMentions,
    pub charts: bool,
}

impl Default for Rendering {
    fn default() -> Self {
        Self { mentions: SpecialMentions::default(), charts: true }
    }
}

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
    /// A table over the table block's rows, as data tables (charts on).
    DataTables(Vec<DataTable>),
}

/// One data table block of a table, and its rows as text for the
/// notification fallback.
#[derive(Debug)]
struct DataTable {
    block: Value,
    plain: String,
}

#[derive(Debug, Default)]
struct Table {
    /// The header first.
    rows: Vec<Vec<Cell>>,
    align: Vec<Alignment>,
}

/// The emphasis a piece of a cell is written in: what Slack's rich text
/// styles (`bold`, `italic`, `strike`, `code`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Style {
    bold: bool,
    italic: bool,
    strike: bool,
    code: bool,
}

impl Style {
    /// As a rich text element's `style`; `None` for plain text.
    fn json(self) -> Option<Value> {
        let mut style = serde_json::Map::new();
        for (name, on) in [("bold", self.bold), ("italic", self.italic), ("strike", self.strike), ("code", self.code)] {
            if on {
                style.insert(name.to_owned(), Value::Bool(true));
            }
        }
        (!style.is_empty()).then_some(Value::Object(style))
    }
}

/// A piece of a cell: text, or a link Slack may open.
#[derive(Debug, Clone, PartialEq)]
enum Run {
    Text { text: String, style: Style },
    Link { url: String, text: String, style: Style },
}

/// One cell of a table as the model wrote it: its text, emphasis, code and
/// links, read from the parser's events.
#[derive(Debug, Default)]
struct Cell {
    runs: Vec<Run>,
    /// Emphasis open at this point of the cell (they nest: counted).
    bold: u32,
    italic: u32,
    strike: u32,
    /// The link being read: where it goes, its label so far, its style.
    link: Option<(String, String, Style)>,
}

impl Cell {
    fn style(&self, code: bool) -> Style {
        Style { bold: self.bold > 0, italic: self.italic > 0, strike: self.strike > 0, code }
    }

    fn push(&mut self, text: &str, code: bool) {
        let style = self.style(code);
        if let Some((_, label, link_style)) = self.link.as_mut() {
            // A link has one style: any emphasis within its label is the link's.
            label.push_str(text);
            link_style.bold |= style.bold;
            link_style.italic |= style.italic;
            link_style.strike |= style.strike;
            link_style.code |= style.code;
            return;
        }
        self.push_text(text, style);
    }

    /// Text in `style`, joined to the run before when that has the same.
    fn push_text(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        match self.runs.last_mut() {
            Some(Run::Text { text: last, style: last_style }) if *last_style == style => last.push_str(text),
            _ => self.runs.push(Run::Text { text: text.to_owned(), style }),
        }
    }

    fn open_link(&mut self, url: String) {
        self.close_link();
        self.link = Some((url, String::new(), self.style(false)));
    }

    /// The link read so far, as a link when Slack may open it: an `http`,
    /// `https` or `mailto` address, its label the real address when the
    /// label names another host. Anything else (`javascript:`, a relative
    /// path, an anchor) stays text: its label, and where it pointed.
    fn close_link(&mut self) {
        let Some((url, label, style)) = self.link.take() else { return };
        let label = label.trim();
        if linkable(&url) {
            let text = match disguised(label, &url) {
                Some(real) => real,
                None if label.is_empty() => url.clone(),
                None => label.to_owned(),
            };
            self.runs.push(Run::Link { url, text, style });
        } else if label.is_empty() || label == url {
            self.push_text(&url, style);
        } else {
            self.push_text(&format!("{label} ({url})"), style);
        }
    }

    /// Whether the cell is text alone, with no emphasis, code or link.
    fn is_plain(&self) -> bool {
        self.runs.iter().all(|run| matches!(run, Run::Text { style, .. } if *style == Style::default()))
    }

    /// The cell as a person reads it, a link's address after its label
    /// (`payments (https://…)`): for the aligned code and the notification,
    /// where nothing is a link.
    fn written(&self) -> String {
        let text: String = self
            .runs
            .iter()
            .map(|run| match run {
                Run::Text { text, .. } => text.clone(),
                Run::Link { url, text, .. } if text == url => url.clone(),
                Run::Link { url, text, .. } => format!("{text} ({url})"),
            })
            .collect();
        text.trim().to_owned()
    }

    /// What the cell counts toward the table block's characters: its text
    /// and its links' addresses.
    fn chars(&self) -> usize {
        self.runs
            .iter()
            .map(|run| match run {
                Run::Text { text, .. } => text.chars().count(),
                Run::Link { url, text, .. } => text.chars().count() + url.chars().count(),
            })
            .sum()
    }

    /// As a table block's cell: `raw_text` when the cell is plain, else
    /// `rich_text` keeping its emphasis, code and links. Special mentions
    /// that may not ping lose their `<`, and links written in Slack's own
    /// syntax show their real address, as in the answer's text.
    fn block(&self, mentions: SpecialMentions) -> Value {
        let safe = |text: &str| unpinged(&honest_written_links(text), mentions);
        let empty = || json!({"type": "raw_text", "text": "–"});
        if self.is_plain() {
            let text = self.written();
            return if text.is_empty() { empty() } else { json!({"type": "raw_text", "text": safe(&text)}) };
        }
        let last = self.runs.len().saturating_sub(1);
        let mut elements = Vec::new();
        for (index, run) in self.runs.iter().enumerate() {
            let (mut element, style) = match run {
                Run::Text { text, style } => {
                    let mut text = text.as_str();
                    if index == 0 {
                        text = text.trim_start();
                    }
                    if index == last {
                        text = text.trim_end();
                    }
                    if text.is_empty() {
                        continue;
                    }
                    (json!({"type": "text", "text": safe(text)}), style)
                }
                Run::Link { url, text, style } => (json!({"type": "link", "url": url, "text": safe(text)}), style),
            };
            if let Some(style) = style.json() {
                element["style"] = style;
            }
            elements.push(element);
        }
        if elements.is_empty() {
            return empty();
        }
        json!({"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": elements}]})
    }
}

/// Whether a cell's link target may become a link: only web and mail
/// addresses (never `javascript:`, `data:`, `slack:` or a relative path),
/// with nothing that could end it early.
fn linkable(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let rest = ["https://", "http://", "mailto:"].iter().find_map(|scheme| lower.strip_prefix(scheme));
    rest.is_some_and(|rest| !rest.is_empty()) && !url.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// A body cell of a data table: a plain number as `raw_number` (its value
/// sorts, its text shows as written), other plain text as `raw_text`, the
/// rest as the table block's cell; an empty or missing cell a dash.
fn data_cell(cell: Option<&Cell>, mentions: SpecialMentions) -> Value {
    let Some(cell) = cell else { return json!({"type": "raw_text", "text": "–"}) };
    if cell.is_plain() {
        let text = cell.written();
        if let Some((value, _)) = crate::charts::number(&text) {
            let text = unpinged(&honest_written_links(&text), mentions);
            return json!({"type": "raw_number", "value": crate::charts::json_number(value), "text": text});
        }
    }
    cell.block(mentions)
}

/// The characters of a data table's cells as Slack counts them: every
/// text and address in them.
fn cell_chars(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.iter().map(cell_chars).sum(),
        Value::Object(fields) => fields
            .iter()
            .map(|(key, value)| match value {
                Value::String(text) if key == "text" || key == "url" => text.chars().count(),
                other => cell_chars(other),
            })
            .sum(),
        _ => 0,
    }
}

impl Table {
    fn chars(&self) -> usize {
        self.rows.iter().flatten().map(Cell::chars).sum()
    }

    fn fits(&self) -> bool {
        self.rows.len() <= TABLE_ROWS
            && self.rows.iter().all(|row| row.len() <= TABLE_COLUMNS)
            && self.chars() <= TABLE_CHARS
    }

    /// As Slack's `table` block: every row as long as the widest.
    fn block(&self, mentions: SpecialMentions) -> Value {
        let width = self.rows.iter().map(Vec::len).max().unwrap_or(1).max(1);
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|row| {
                let cells: Vec<Value> = (0..width)
                    .map(|column| match row.get(column) {
                        Some(cell) => cell.block(mentions),
                        None => json!({"type": "raw_text", "text": "–"}),
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

    /// Each cell as [`Cell::written`].
    fn written(&self) -> Vec<Vec<String>> {
        self.rows.iter().map(|row| row.iter().map(Cell::written).collect()).collect()
    }

    /// A table Slack's block cannot hold, as aligned monospace instead.
    /// Nothing in a code block renders (no link, no emphasis), so a link's
    /// address is written after its label, where a reader can copy it.
    fn as_code(&self) -> String {
        let rows = self.written();
        let width = rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..width)
            .map(|column| rows.iter().filter_map(|row| row.get(column)).map(|c| c.chars().count()).max().unwrap_or(0))
            .collect();
        let mut lines = vec!["```".to_owned()];
        for row in &rows {
            let cells: Vec<String> =
                (0..width).map(|c| format!("{:w$}", row.get(c).map_or("", |s| s.as_str()), w = widths[c])).collect();
            lines.push(cells.join(" | ").trim_end().replace("```", "ˋˋˋ"));
        }
        lines.push("```".to_owned());
        lines.join("\n")
    }

    /// The table as text for the notification fallback.
    fn plain(&self) -> String {
        self.written().iter().map(|row| row.join(" | ")).collect::<Vec<_>>().join("\n")
    }

    /// The chart of the table ([`crate::charts`]), when it has one: plain
    /// cells as written, the others as not numbers.
    fn chart(&self) -> Option<Value> {
        let (header, body) = self.rows.split_first()?;
        let header: Vec<String> = header.iter().map(Cell::written).collect();
        let body: Vec<Vec<Option<String>>> =
            body.iter().map(|row| row.iter().map(|cell| cell.is_plain().then(|| cell.written())).collect()).collect();
        crate::charts::chart(&header, &body)
    }

    /// The table as data table blocks, at most [`DATA_TABLE_ROWS`] rows
    /// each under the header; `None` when it takes more than
    /// [`DATA_TABLES`], has more than [`TABLE_COLUMNS`] columns, or a piece
    /// holds more than [`TABLE_CHARS`] characters of cells.
    fn data_tables(&self, mentions: SpecialMentions) -> Option<Vec<DataTable>> {
        let (header, body) = self.rows.split_first()?;
        let width = self.rows.iter().map(Vec::len).max().unwrap_or(1).max(1);
        let pieces = body.len().div_ceil(DATA_TABLE_ROWS);
        if width > TABLE_COLUMNS || body.is_empty() || pieces > DATA_TABLES {
            return None;
        }
        let dash = || json!({"type": "raw_text", "text": "–"});
        // The header: text only (Slack takes no rich_text there).
        let header_cells: Vec<Value> = (0..width)
            .map(|column| match header.get(column).map(Cell::written) {
                Some(text) if !text.is_empty() => {
                    json!({"type": "raw_text", "text": unpinged(&honest_written_links(&text), mentions)})
                }
                _ => dash(),
            })
            .collect();
        let names: Vec<String> = header.iter().map(Cell::written).filter(|name| !name.is_empty()).collect();
        let names = if names.is_empty() { "Table".to_owned() } else { names.join(", ") };
        let mut tables = Vec::with_capacity(pieces);
        for (index, rows) in body.chunks(DATA_TABLE_ROWS).enumerate() {
            let mut cells = vec![Value::Array(header_cells.clone())];
            for row in rows {
                cells.push(Value::Array((0..width).map(|column| data_cell(row.get(column), mentions)).collect()));
            }
            if cells.iter().map(cell_chars).sum::<usize>() > TABLE_CHARS {
                return None;
            }
            let first = index * DATA_TABLE_ROWS + 1;
            let caption = if pieces == 1 {
                names.clone()
            } else {
                format!("{names} (rows {first}–{} of {})", first + rows.len() - 1, body.len())
            };
            let plain: Vec<String> = std::iter::once(header)
                .chain(rows)
                .map(|row| row.iter().map(Cell::written).collect::<Vec<_>>().join(" | "))
                .collect();
            tables.push(DataTable {
                block: json!({
                    "type": "data_table",
                    "caption": unpinged(&caption, mentions),
                    "page_size": DATA_TABLE_PAGE,
                    "rows": cells,
                }),
                plain: plain.join("\n"),
            });
        }
        Some(tables)
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
fn parts(markdown: &str, rendering: Rendering) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    // Replacements of source ranges in the text (deceptive links).
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let mut cursor = 0;
    let mut table: Option<(Table, Range<usize>)> = None;
    let mut cell: Option<Cell> = None;
    // Open links in the text (a cell reads its own): their source, where they go, their label.
    let mut links: Vec<(Range<usize>, String, String)> = Vec::new();
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
                cell = Some(Cell::default());
                depth += 1;
            }
            Event::End(TagEnd::TableCell) => {
                if let (Some((table, _)), Some(mut done)) = (table.as_mut(), cell.take())
                    && let Some(row) = table.rows.last_mut()
                {
                    done.close_link();
                    row.push(done);
                }
                depth -= 1;
            }
            Event::End(TagEnd::Table) if depth == 1 => {
                depth -= 1;
                if let Some((table, range)) = table.take() {
                    cursor = range.end;
                    let data_tables = || rendering.charts.then(|| table.data_tables(rendering.mentions)).flatten();
                    if table.fits() {
                        parts.push(Part::Table(table));
                    } else if let Some(tables) = data_tables() {
                        parts.push(Part::DataTables(tables));
                    } else {
                        let code = table.as_code();
                        match parts.last_mut() {
                            Some(Part::Text(previous)) => previous.push_str(&code),
                            _ => parts.push(Part::Text(code)),
                        }
                    }
                }
            }
            Event::Start(Tag::Link { link_type, dest_url, .. }) => {
                depth += 1;
                match cell.as_mut() {
                    // `<ops@example.com>`: the parser gives the address alone.
                    Some(cell) if link_type == LinkType::Email => cell.open_link(format!("mailto:{dest_url}")),
                    Some(cell) => cell.open_link(dest_url.into_string()),
                    None => links.push((range, dest_url.into_string(), String::new())),
                }
            }
            Event::End(TagEnd::Link) => {
                depth -= 1;
                match cell.as_mut() {
                    Some(cell) => cell.close_link(),
                    None => {
                        if let Some((range, url, label)) = links.pop()
                            && let Some(real) = disguised(&label, &url)
                        {
                            edits.push((range, real));
                        }
                    }
                }
            }
            // An image in a cell: its alt text, linked to the image.
            Event::Start(Tag::Image { dest_url, .. }) if cell.is_some() => {
                depth += 1;
                if let Some(cell) = cell.as_mut() {
                    cell.open_link(dest_url.into_string());
                }
            }
            Event::End(TagEnd::Image) if cell.is_some() => {
                depth -= 1;
                if let Some(cell) = cell.as_mut() {
                    cell.close_link();
                }
            }
            Event::Start(tag @ (Tag::Strong | Tag::Emphasis | Tag::Strikethrough)) => {
                depth += 1;
                if let Some(cell) = cell.as_mut() {
                    match tag {
                        Tag::Strong => cell.bold += 1,
                        Tag::Emphasis => cell.italic += 1,
                        _ => cell.strike += 1,
                    }
                }
            }
            Event::End(tag @ (TagEnd::Strong | TagEnd::Emphasis | TagEnd::Strikethrough)) => {
                depth -= 1;
                if let Some(cell) = cell.as_mut() {
                    let open = match tag {
                        TagEnd::Strong => &mut cell.bold,
                        TagEnd::Emphasis => &mut cell.italic,
                        _ => &mut cell.strike,
                    };
                    *open = open.saturating_sub(1);
                }
            }
            Event::Start(_) => depth += 1,
            Event::End(_) => depth -= 1,
            Event::Text(text) | Event::Code(text) if cell.is_none() => {
                if let Some((_, _, label)) = links.last_mut() {
                    label.push_str(&text);
                }
            }
            Event::Text(text) => {
                if let Some(cell) = cell.as_mut() {
                    cell.push(&text, false);
                }
            }
            Event::Code(text) => {
                if let Some(cell) = cell.as_mut() {
                    cell.push(&text, true);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(cell) = cell.as_mut() {
                    cell.push(" ", false);
                }
            }
            Event::InlineHtml(html) | Event::Html(html) => {
                if let Some(cell) = cell.as_mut() {
                    cell.push(&html, false);
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
pub fn messages(markdown: &str, rendering: Rendering, max_blocks: usize) -> Vec<Message> {
    let mentions = rendering.mentions;
    let mut messages: Vec<Message> = Vec::new();
    let mut current = Message { blocks: Vec::new(), text: String::new() };
    let (mut text_used, mut has_table) = (0usize, false);
    let close = |current: &mut Message, messages: &mut Vec<Message>, text_used: &mut usize, has_table: &mut bool| {
        if !current.blocks.is_empty() {
            messages.push(std::mem::replace(current, Message { blocks: Vec::new(), text: String::new() }));
        }
        (*text_used, *has_table) = (0, false);
    };
    for part in parts(markdown, rendering) {
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
                let chart = if rendering.charts { table.chart() } else { None };
                let needs = 1 + usize::from(chart.is_some());
                if has_table || current.blocks.len() + needs > max_blocks {
                    close(&mut current, &mut messages, &mut text_used, &mut has_table);
                }
                has_table = true;
                current.text.push_str(&format!("\n{}\n", slack::text::escape(&table.plain())));
                current.blocks.push(table.block(mentions));
                // Beside its table, which is its text fallback.
                let charted = current.blocks.iter().filter(|b| b["type"] == "data_visualization").count();
                let room = current.blocks.len() < max_blocks && charted < crate::charts::CHARTS_PER_MESSAGE;
                if let Some(chart) = chart.filter(|_| room) {
                    current.blocks.push(chart);
                }
            }
            Part::DataTables(tables) => {
                for table in tables {
                    if has_table || current.blocks.len() + 1 > max_blocks {
                        close(&mut current, &mut messages, &mut text_used, &mut has_table);
                    }
                    has_table = true;
                    current.text.push_str(&format!("\n{}\n", slack::text::escape(&table.plain)));
                    current.blocks.push(table.block);
                }
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
        one_as(markdown, Rendering::default())
    }

    fn one_as(markdown: &str, rendering: Rendering) -> Message {
        let mut all = messages(markdown, rendering, 45);
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    /// The deployment's `charts: false`: tables as before charts existed.
    const CHARTS_OFF: Rendering = Rendering {
        mentions: SpecialMentions { here: false, channel: false, everyone: false, subteam: false },
        charts: false,
    };

    fn raw(text: &str) -> Value {
        json!({"type": "raw_text", "text": text})
    }

    fn kinds(message: &Message) -> Vec<&str> {
        message.blocks.iter().map(|b| b["type"].as_str().unwrap()).collect()
    }

    /// A `rich_text` table cell of one section holding `elements`.
    fn rich(elements: Value) -> Value {
        json!({"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": elements}]})
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
        let raw = |text: &str| json!({"type": "raw_text", "text": text});
        assert_eq!(table["rows"][0], json!([raw("service"), raw("5xx"), raw("p99")]), "plain cells stay raw text");
        assert_eq!(
            table["rows"][1][0],
            rich(json!([{"type": "text", "text": "checkout-api", "style": {"code": true}}]))
        );
        assert_eq!(table["rows"][1][1], rich(json!([{"type": "text", "text": "4.1%", "style": {"bold": true}}])));
        assert_eq!(table["rows"][2], json!([raw("auth"), raw("–"), raw("90 ms")]), "an empty cell shows a dash");
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
        let text =
            markdown_of(&messages("<!here> deploy is out", Rendering { mentions: allowed, charts: true }, 45)[0]);
        assert!(text.starts_with("<!here>"), "{text}");
        // In a table cell too: the label names the real host.
        let table = one("| link |\n|---|\n| [bank.example.com](https://evil.example/x) |");
        let link = json!({"type": "link", "url": "https://evil.example/x", "text": "https://evil.example/x"});
        assert_eq!(table.blocks[0]["rows"][1][0], rich(json!([link])));
    }

    #[test]
    fn cells_keep_their_links_emphasis_and_code_as_rich_text() {
        let answer = "| service | state | owner |\n|---|---|---|\n\
                      | [payments](https://wiki.example.com/payments) | **down** since `14:02`, ~~fixed~~ _maybe_ | <ops@example.com> |\n\
                      | *[**auth**](https://wiki.example.com/auth)* | ok | [ticket](https://wiki.example.com/Checkout_(service)) |";
        let table = &one(answer).blocks[0];
        assert_eq!(table["type"], "table");
        let row = &table["rows"][1];
        assert_eq!(
            row[0],
            rich(json!([{"type": "link", "url": "https://wiki.example.com/payments", "text": "payments"}])),
            "the link keeps its target"
        );
        assert_eq!(
            row[1],
            rich(json!([
                {"type": "text", "text": "down", "style": {"bold": true}},
                {"type": "text", "text": " since "},
                {"type": "text", "text": "14:02", "style": {"code": true}},
                {"type": "text", "text": ", "},
                {"type": "text", "text": "fixed", "style": {"strike": true}},
                {"type": "text", "text": " "},
                {"type": "text", "text": "maybe", "style": {"italic": true}},
            ]))
        );
        assert_eq!(row[2], rich(json!([{"type": "link", "url": "mailto:ops@example.com", "text": "ops@example.com"}])));
        // Emphasis around a link, or within its label, is the link's style.
        assert_eq!(
            table["rows"][2][0],
            rich(json!([{
                "type": "link", "url": "https://wiki.example.com/auth", "text": "auth",
                "style": {"bold": true, "italic": true}
            }]))
        );
        assert_eq!(table["rows"][2][1], json!({"type": "raw_text", "text": "ok"}), "a plain cell stays raw text");
        assert_eq!(
            table["rows"][2][2]["elements"][0]["elements"][0]["url"], "https://wiki.example.com/Checkout_(service)",
            "parentheses in an address: {table}"
        );
    }

    #[test]
    fn hostile_cells_open_no_unsafe_link_and_ping_no_one() {
        let answer = "| what | where |\n|---|---|\n\
                      | [click](javascript:alert(1)) | [doc](data:text/html;base64,PHNjcmlwdD4=) |\n\
                      | <!channel> and <!subteam^S0OPS> | **<!here>** now |\n\
                      | [<!everyone>](https://status.example.com) | <https://evil.example/y\\|bank.example.com> |\n\
                      | [bank.example.com](https://evil.example/login) | [runbook](/runbooks/checkout) and [top](#top) |\n\
                      | `<!channel>` | [x](slack://open?team=T1) |";
        let table = one(answer).blocks[0].clone();
        assert_eq!(table["type"], "table");
        let json = table.to_string();
        // Every link Slack will open is a web or mail address.
        let mut links = Vec::new();
        collect_links(&table, &mut links);
        assert!(!links.is_empty());
        for url in &links {
            assert!(url.starts_with("https://") || url.starts_with("mailto:"), "{url} became a link: {json}");
        }
        // What is not one stays text, saying where it pointed.
        let cell = |row: usize, column: usize| table["rows"][row][column].clone();
        assert_eq!(cell(1, 0), json!({"type": "raw_text", "text": "click (javascript:alert(1))"}));
        assert_eq!(cell(4, 1), json!({"type": "raw_text", "text": "runbook (/runbooks/checkout) and top (#top)"}));
        assert_eq!(cell(5, 1), json!({"type": "raw_text", "text": "x (slack://open?team=T1)"}));
        // No special mention can ping, in plain, bold, code or a link's label.
        for mention in ["<!channel>", "<!here>", "<!everyone>", "<!subteam"] {
            assert!(!json.contains(mention), "{mention} in {json}");
        }
        assert_eq!(cell(2, 0)["text"], "&lt;!channel> and &lt;!subteam^S0OPS>");
        assert_eq!(
            cell(2, 1),
            rich(json!([
                {"type": "text", "text": "&lt;!here>", "style": {"bold": true}},
                {"type": "text", "text": " now"},
            ]))
        );
        assert_eq!(
            cell(3, 0),
            rich(json!([{"type": "link", "url": "https://status.example.com", "text": "&lt;!everyone>"}]))
        );
        // A label naming another host shows the real one, written in Slack's syntax or as a Markdown link.
        assert!(!json.contains("|bank.example.com>"), "{json}");
        let written = &cell(3, 1)["elements"][0]["elements"][0];
        assert!(written["url"].as_str().unwrap().starts_with("https://evil.example/y"), "{written}");
        assert_eq!(written["text"], written["url"], "its label is its whole address: {written}");
        assert_eq!(
            cell(4, 0),
            rich(json!([{"type": "link", "url": "https://evil.example/login", "text": "https://evil.example/login"}]))
        );
        // A deployment that lets `<!here>` ping lets it in a cell too.
        let allowed = SpecialMentions { here: true, ..SpecialMentions::default() };
        let here = messages("| a |\n|---|\n| <!here> look |", Rendering { mentions: allowed, charts: true }, 45);
        assert_eq!(here[0].blocks[0]["rows"][1][0]["text"], "<!here> look");
    }

    /// Every `url` of a link element in `value`.
    fn collect_links(value: &Value, links: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if map.get("type").and_then(Value::as_str) == Some("link") {
                    links.push(map["url"].as_str().unwrap_or_default().to_owned());
                }
                map.values().for_each(|value| collect_links(value, links));
            }
            Value::Array(items) => items.iter().for_each(|value| collect_links(value, links)),
            _ => {}
        }
    }

    #[test]
    fn a_table_over_the_blocks_rows_keeps_its_links_as_addresses_in_aligned_code() {
        let body: String = (0..TABLE_ROWS)
            .map(|row| {
                format!("| [svc-{row}](https://wiki.example.com/svc/{row}) | **{row}** | [x](javascript:void(0)) |\n")
            })
            .collect();
        let message = one_as(&format!("| service | n | js |\n|---|--:|---|\n{body}"), CHARTS_OFF);
        assert!(message.blocks.iter().all(|b| b["type"] == "markdown"), "no table block of 101 rows");
        let code = markdown_of(&message);
        assert!(code.starts_with("```\nservice "), "{code}");
        assert!(code.contains("svc-7 (https://wiki.example.com/svc/7)"), "the address is kept: {code}");
        assert!(code.contains("x (javascript:void(0))"), "in code, nothing is a link: {code}");
        assert!(!code.contains("**"), "emphasis markers are not written into code: {code}");
        assert!(message.text.contains("svc-7 (https://wiki.example.com/svc/7)"), "{}", message.text);
        let lines: Vec<&str> = code.lines().collect();
        let bar = lines[1].find(" | ").unwrap();
        assert!(lines[2..lines.len() - 1].iter().all(|line| line[bar..].starts_with(" | ")), "aligned: {code}");
    }

    /// The Slack requests `infra/vendor-models/check.py` validates against
    /// slack_sdk's own models without an end-to-end test sending them.
    const VENDOR_FIXTURES: &str = include_str!("../../../infra/vendor-models/fixtures/pass/slack-1.jsonl");

    #[test]
    fn the_rich_table_the_vendor_model_check_validates_is_the_one_rendered() {
        let answer = "Error rates:\n\n| service | 5xx | runbook |\n|:--|--:|---|\n\
                      | `checkout-api` | **4.1%** | [checkout](https://wiki.example.com/runbooks/checkout) |\n\
                      | ~~auth~~ _(retired)_ | 0.0% | <!channel> [x](javascript:alert(1)) |\n\
                      | payments | | <ops@example.com> |\n\nCheckout is the one to look at.";
        let rendered = Value::Array(one(answer).blocks);
        let recorded = VENDOR_FIXTURES
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter_map(|record| serde_json::from_str::<Value>(record["body"].as_str()?).ok())
            .find(|body| body["text"] == "Error rates: rich table cells")
            .expect("the fixture's line");
        assert_eq!(recorded["blocks"], rendered, "fixtures/pass/slack-1.jsonl holds other blocks: {rendered}");
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
        let all = messages(&answer, Rendering::default(), 45);
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
        let two = messages("| a |\n|---|\n| 1 |\n\nand\n\n| b |\n|---|\n| 2 |", Rendering::default(), 45);
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
        let too_long = one_as(&table(TABLE_ROWS), CHARTS_OFF);
        assert!(too_long.blocks.iter().all(|b| b["type"] == "markdown"), "no table block of 101 rows");
        assert!(markdown_of(&too_long).starts_with("```"), "{}", markdown_of(&too_long));
    }

    #[test]
    fn charts_on_a_table_over_the_blocks_rows_is_a_data_table_whose_numbers_sort_as_numbers() {
        // GIVEN a table of a header and 100 rows: one more than a table block holds
        let body: String = (0..DATA_TABLE_ROWS)
            .map(|row| format!("| [svc-{row}](https://wiki.example.com/svc/{row}) | {row},000 ms | <!channel> ok |\n"))
            .collect();
        let answer = format!("| service | p99 | note |\n|---|--:|---|\n{body}");
        // WHEN it is rendered with charts on
        let message = one(&answer);
        // THEN it is one data table, its header text, its numbers raw_number, its links rich text
        assert_eq!(kinds(&message), ["data_table"]);
        let table = &message.blocks[0];
        let rows = table["rows"].as_array().unwrap();
        assert_eq!(rows.len(), DATA_TABLE_ROWS + 1, "the header and 100 rows");
        assert_eq!(rows[0], json!([raw("service"), raw("p99"), raw("note")]));
        assert_eq!(rows[8][1], json!({"type": "raw_number", "value": 7000, "text": "7,000 ms"}));
        assert_eq!(rows[8][0]["elements"][0]["elements"][0]["url"], "https://wiki.example.com/svc/7");
        assert_eq!(rows[8][2], raw("&lt;!channel> ok"), "a cell cannot ping");
        assert_eq!(table["caption"], "service, p99, note");
        assert_eq!(table["page_size"], DATA_TABLE_PAGE);
        assert!(table.get("column_settings").is_none(), "no such field in a data table");
        // AND the notification text holds the rows, the addresses after their labels
        assert!(message.text.contains("svc-7 (https://wiki.example.com/svc/7) | 7,000 ms"), "{}", message.text);
        // AND with charts off it is aligned code, as before
        assert!(one_as(&answer, CHARTS_OFF).blocks.iter().all(|b| b["type"] == "markdown"));
    }

    #[test]
    fn a_longer_table_is_data_tables_a_message_each_and_one_too_long_for_them_is_code() {
        let table = |rows: usize, cell: &str| {
            let body: String = (0..rows).map(|row| format!("| {row} | {cell} |\n")).collect();
            format!("Requests:\n\n| n | what |\n|---|---|\n{body}\nThat is all.")
        };
        // 250 rows: three data tables, one a message, each saying which rows it holds.
        let all = messages(&table(250, "ok"), Rendering::default(), 45);
        let data: Vec<&Value> = all.iter().flat_map(|m| &m.blocks).filter(|b| b["type"] == "data_table").collect();
        assert_eq!(data.len(), 3);
        assert!(all.iter().all(|m| kinds(m).iter().filter(|k| **k == "data_table").count() <= 1), "one a message");
        let captions: Vec<&str> = data.iter().map(|b| b["caption"].as_str().unwrap()).collect();
        assert_eq!(
            captions,
            ["n, what (rows 1–100 of 250)", "n, what (rows 101–200 of 250)", "n, what (rows 201–250 of 250)"]
        );
        assert_eq!(data[2]["rows"].as_array().unwrap().len(), 51, "the header in each");
        assert_eq!(data[1]["rows"][1][0], json!({"type": "raw_number", "value": 100, "text": "100"}));
        // More than DATA_TABLES of them, or over Slack's 10,000 characters a table: aligned code.
        for too_much in
            [table(DATA_TABLES * DATA_TABLE_ROWS + 1, "ok"), table(100, &"x".repeat(120)), table(10_000, "ok")]
        {
            let all = messages(&too_much, Rendering::default(), 45);
            assert!(all.iter().flat_map(|m| &m.blocks).all(|b| b["type"] == "markdown"), "code, no data table");
            assert!(markdown_of(&all[0]).contains("```"));
        }
    }

    #[test]
    fn a_table_of_numbers_has_its_chart_beside_it_and_none_with_charts_off() {
        let answer = "Latency:\n\n| minute | p99 | p50 |\n|---|--:|--:|\n| 10:00 | 120 ms | 40 ms |\n\
                      | 10:05 | 4,200 ms | 41 ms |\n| 10:10 | 130 ms | 40 ms |\n\nThe spike was at 10:05.";
        let message = one(answer);
        assert_eq!(kinds(&message), ["markdown", "table", "data_visualization", "markdown"]);
        let chart = &message.blocks[2];
        assert_eq!(chart["title"], "p99, p50 by minute");
        assert_eq!(chart["chart"]["type"], "line");
        assert_eq!(chart["chart"]["series"][0]["data"][1], json!({"label": "10:05", "value": 4200}));
        assert!(message.text.contains("10:05 | 4,200 ms | 41 ms"), "the table is the chart's text: {}", message.text);
        assert_eq!(kinds(&one_as(answer, CHARTS_OFF)), ["markdown", "table", "markdown"]);
        // Mixed cells: the table alone.
        let mixed = one("| service | errors |\n|---|---|\n| checkout | 12 |\n| auth | none |");
        assert_eq!(kinds(&mixed), ["table"]);
    }

    #[test]
    fn more_tables_of_numbers_than_charts_a_message_holds_never_put_more_in_one() {
        let table = |name: &str| format!("| day | {name} |\n|---|--:|\n| 2026-11-26 | 3 |\n| 2026-11-27 | 5 |\n");
        let answer = ["deploys", "rollbacks", "pages", "incidents"].map(table).join("\nand\n\n");
        let all = messages(&answer, Rendering::default(), 45);
        let charts: usize = all.iter().map(|m| kinds(m).iter().filter(|k| **k == "data_visualization").count()).sum();
        assert_eq!(charts, 4, "each table its chart");
        for message in &all {
            let kinds = kinds(message);
            assert!(kinds.iter().filter(|k| **k == "data_visualization").count() <= crate::charts::CHARTS_PER_MESSAGE);
            for (at, kind) in kinds.iter().enumerate() {
                if *kind == "data_visualization" {
                    assert_eq!(kinds[at - 1], "table", "beside its table: {kinds:?}");
                }
            }
        }
        // No room for the chart beside the table: the table alone in a message of its own.
        let tight = messages(&table("deploys"), Rendering::default(), 1);
        assert_eq!(tight.iter().map(kinds).collect::<Vec<_>>(), [vec!["table"]]);
    }

    #[test]
    fn the_chart_and_data_table_the_vendor_model_check_validates_are_the_ones_rendered() {
        let recorded = |text: &str| -> Value {
            VENDOR_FIXTURES
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter_map(|record| serde_json::from_str::<Value>(record["body"].as_str()?).ok())
                .find(|body| body["text"] == text)
                .unwrap_or_else(|| panic!("the fixture's line {text:?}"))["blocks"]
                .clone()
        };
        let rendered = Value::Array(one(VENDOR_CHART).blocks);
        assert_eq!(
            recorded("Latency: a chart"),
            rendered,
            "fixtures/pass/slack-1.jsonl holds other blocks: {rendered}"
        );
        let rendered = Value::Array(one(&vendor_data_table()).blocks);
        assert_eq!(
            recorded("Requests: a data table"),
            rendered,
            "fixtures/pass/slack-1.jsonl holds other blocks: {rendered}"
        );
    }

    const VENDOR_CHART: &str =
        "| minute | p99 | p50 |\n|---|--:|--:|\n| 10:00 | 120 ms | 40 ms |\n| 10:05 | 4,200 ms | 41 ms |";

    fn vendor_data_table() -> String {
        let body: String = (0..DATA_TABLE_ROWS)
            .map(|row| format!("| [svc-{row}](https://wiki.example.com/svc/{row}) | {row} | *ok* |\n"))
            .collect();
        format!("| service | requests | state |\n|---|--:|---|\n{body}")
    }
}
