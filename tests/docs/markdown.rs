//! Reading our Markdown the way the checks need it: sections by heading,
//! tables as rows of cells (each with its line number, for the failure
//! message), code spans, links, GitHub's heading anchors, and numbers
//! stated in running text.

use std::path::{Path, PathBuf};

/// One Markdown file of the repository.
pub struct Doc {
    /// Relative to the repository root, as a failure names it.
    pub path: String,
    pub text: String,
}

impl Doc {
    pub fn read(root: &Path, path: &str) -> Self {
        let text = std::fs::read_to_string(root.join(path)).unwrap_or_else(|err| panic!("{path}: {err}"));
        Self { path: path.to_owned(), text }
    }

    pub fn lines(&self) -> impl Iterator<Item = (usize, &str)> {
        self.text.lines().enumerate().map(|(i, line)| (i + 1, line))
    }

    /// The lines outside code fences (the fences' own lines left out too).
    pub fn prose_lines(&self) -> impl Iterator<Item = (usize, &str)> {
        let mut fenced = false;
        self.lines().filter(move |(_, line)| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
    }

    /// `path:line`, for a failure message.
    pub fn at(&self, line: usize) -> String {
        format!("{}:{line}", self.path)
    }

    /// The headings outside code fences: (line, level, text).
    pub fn headings(&self) -> Vec<(usize, usize, String)> {
        let mut headings = Vec::new();
        for (number, line) in self.prose_lines() {
            let level = line.chars().take_while(|c| *c == '#').count();
            if (1..=6).contains(&level) && line[level..].starts_with(' ') {
                headings.push((number, level, line[level..].trim().to_owned()));
            }
        }
        headings
    }

    /// The lines (first, last) of the section under the heading whose
    /// text is `title`, up to the next heading of the same or a higher level.
    pub fn section(&self, title: &str) -> (usize, usize) {
        let headings = self.headings();
        let (index, &(first, level, _)) = headings
            .iter()
            .enumerate()
            .find(|(_, (_, _, text))| text == title)
            .unwrap_or_else(|| panic!("{} has no heading {title:?}: the check reads it", self.path));
        let last = headings[index + 1..]
            .iter()
            .find(|(_, other, _)| *other <= level)
            .map_or(self.text.lines().count(), |(line, _, _)| line - 1);
        (first, last)
    }

    /// The tables between `lines` (inclusive), in order.
    pub fn tables_in(&self, (first, last): (usize, usize)) -> Vec<Table> {
        let mut tables = Vec::new();
        let mut current: Option<Table> = None;
        for (number, line) in self.lines().filter(|(n, _)| (first..=last).contains(n)) {
            let trimmed = line.trim();
            if !trimmed.starts_with('|') {
                tables.extend(current.take());
                continue;
            }
            let cells = cells(trimmed);
            match &mut current {
                None => current = Some(Table { header: cells, rows: Vec::new() }),
                Some(_) if cells.iter().all(|cell| cell.chars().all(|c| matches!(c, '-' | ':'))) => {}
                Some(table) => table.rows.push(Row { line: number, cells }),
            }
        }
        tables.extend(current);
        tables
    }

    /// The one table under `title` whose header starts with `first_column`.
    pub fn table(&self, title: &str, first_column: &str) -> Table {
        let mut found: Vec<Table> = self
            .tables_in(self.section(title))
            .into_iter()
            .filter(|table| table.header.first().is_some_and(|name| names(name, first_column)))
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{} under {title:?}: expected one table whose first column is {first_column:?}",
            self.path
        );
        found.remove(0)
    }

    /// Every link target outside code: (line, target).
    pub fn links(&self) -> Vec<(usize, String)> {
        let mut links = Vec::new();
        for (number, line) in self.prose_lines() {
            let prose = outside_code(line);
            let mut rest = prose.as_str();
            while let Some(start) = rest.find("](") {
                let after = &rest[start + 2..];
                let end = after.find(')').unwrap_or(after.len());
                links.push((number, after[..end].trim().to_owned()));
                rest = &after[end..];
            }
        }
        links
    }

    /// GitHub's anchors for this file's headings.
    pub fn anchors(&self) -> Vec<String> {
        self.headings().iter().map(|(_, _, text)| anchor(text)).collect()
    }

    /// Every match of `template` in the text, `{}` standing for a number
    /// (digits with `,` and `.`, or a word from one to twelve): the line it
    /// starts on and its numbers. Whitespace in the text (line breaks
    /// included) matches one space of the template.
    pub fn numbers(&self, template: &str) -> Vec<(usize, Vec<f64>)> {
        let (flat, lines) = flatten(&self.text);
        let parts: Vec<&str> = template.split("{}").collect();
        assert!(parts.len() >= 2, "template {template:?} has no {{}}");
        let mut found = Vec::new();
        let mut from = 0;
        while let Some(offset) = flat.get(from..).and_then(|rest| rest.find(parts[0])) {
            let start = from + offset;
            from = start + parts[0].len().max(flat[start..].chars().next().map_or(1, char::len_utf8));
            let mut at = start + parts[0].len();
            let mut values = Vec::new();
            for part in &parts[1..] {
                let Some((value, length)) = number_at(&flat[at..]) else { break };
                if !flat[at + length..].starts_with(part) {
                    break;
                }
                values.push(value);
                at += length + part.len();
            }
            if values.len() == parts.len() - 1 {
                found.push((lines[start], values));
            }
        }
        found
    }
}

/// A Markdown table: its header cells and its rows.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Row>,
}

impl Table {
    pub fn column(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|cell| names(cell, name))
            .unwrap_or_else(|| panic!("no column {name:?} in a table with {:?}", self.header))
    }
}

pub struct Row {
    pub line: usize,
    pub cells: Vec<String>,
}

/// Whether a header cell is `name`, maybe with an aside: `TTL (DynamoDB's …)`.
fn names(cell: &str, name: &str) -> bool {
    cell == name || cell.strip_prefix(name).is_some_and(|rest| rest.starts_with(" ("))
}

/// A table row's cells: split on `|` outside code spans, `\|` kept as `|`.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut in_code = false;
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => cells.last_mut().unwrap().push(chars.next().unwrap()),
            '`' => {
                in_code = !in_code;
                cells.last_mut().unwrap().push(c);
            }
            '|' if !in_code => cells.push(String::new()),
            _ => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|cell| cell.trim().to_owned()).collect()
}

/// The code spans of `text`, in order.
pub fn code_spans(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// `text` without what is in parentheses (nested), code spans kept
/// whole: what a cell says before its asides.
pub fn without_asides(text: &str) -> String {
    let mut kept = String::new();
    let (mut depth, mut in_code) = (0usize, false);
    for c in text.chars() {
        match c {
            '`' => in_code = !in_code,
            '(' if !in_code => {
                depth += 1;
                continue;
            }
            ')' if !in_code && depth > 0 => {
                depth -= 1;
                continue;
            }
            _ => {}
        }
        if depth == 0 {
            kept.push(c);
        }
    }
    kept
}

/// `line` with its code spans blanked.
fn outside_code(line: &str) -> String {
    let mut in_code = false;
    line.chars()
        .map(|c| {
            if c == '`' {
                in_code = !in_code;
                ' '
            } else if in_code {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// GitHub's anchor for a heading: lower case, code marks and punctuation
/// dropped, spaces as hyphens.
pub fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// `text` with every run of whitespace as one space, and the line each
/// byte of the result came from.
fn flatten(text: &str) -> (String, Vec<usize>) {
    let (mut flat, mut lines) = (String::new(), Vec::new());
    let (mut line, mut space) = (1, false);
    for c in text.chars() {
        if c.is_whitespace() {
            if !space && !flat.is_empty() {
                flat.push(' ');
                lines.push(line);
            }
            space = true;
        } else {
            flat.push(c);
            lines.extend(std::iter::repeat_n(line, c.len_utf8()));
            space = false;
        }
        if c == '\n' {
            line += 1;
        }
    }
    (flat, lines)
}

const WORDS: [&str; 12] =
    ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];

/// The number `text` starts with, and its length.
fn number_at(text: &str) -> Option<(f64, usize)> {
    for (value, word) in WORDS.iter().enumerate() {
        let ends_there = || text[word.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        if text.starts_with(word) && ends_there() {
            return Some((value as f64 + 1.0, word.len()));
        }
    }
    let length =
        text.char_indices().take_while(|(i, c)| c.is_ascii_digit() || (i > &0 && matches!(c, ',' | '.'))).count();
    // A trailing `,` or `.` ends the sentence, not the number.
    let digits = text[..length].trim_end_matches([',', '.']);
    if digits.is_empty() {
        return None;
    }
    digits.replace(',', "").parse().ok().map(|value| (value, digits.len()))
}

/// Where a relative link from `doc` (a path relative to `root`) points.
pub fn resolve(root: &Path, doc: &str, target: &str) -> PathBuf {
    let base = Path::new(doc).parent().unwrap_or(Path::new(""));
    root.join(base).join(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_across_line_breaks_and_as_words() {
        let doc = Doc { path: "x.md".into(), text: "at most five a\nminute, each under 12,000 characters.".into() };
        assert_eq!(doc.numbers("at most {} a minute"), vec![(1, vec![5.0])]);
        assert_eq!(doc.numbers("{} a minute, each under {} characters"), vec![(1, vec![5.0, 12000.0])]);
    }

    #[test]
    fn anchors_follow_github() {
        assert_eq!(
            anchor("The assistant configuration (no deploy needed)"),
            "the-assistant-configuration-no-deploy-needed"
        );
        assert_eq!(anchor("Approvals: what a channel sees"), "approvals-what-a-channel-sees");
    }

    #[test]
    fn cells_keep_escaped_pipes_and_code() {
        assert_eq!(cells("| `a|b` | c \\| d |"), vec!["`a|b`", "c | d"]);
    }
}
