//! Splitting a long mrkdwn text under Slack's limits: a section block holds
//! at most 3,000 characters, a message at most 50 blocks, and a message's
//! `text` at most 40,000 characters.
//!
//! Text is cut between paragraphs, and a code block is kept whole where it
//! fits. One that does not fit is cut between its lines, and every piece
//! is closed and reopened (```` ``` ````), so no section ever shows half a
//! code block. Only a single line longer than a section is cut inside,
//! between words where it has any, never inside an `&amp;` entity.

/// Slack's limits, in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub section_chars: usize,
    pub blocks_per_message: usize,
    pub message_chars: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { section_chars: 3_000, blocks_per_message: 50, message_chars: 40_000 }
    }
}

const FENCE: &str = "```";
/// Between the sections of a message's `text`.
pub const SECTION_SEPARATOR: &str = "\n\n";

/// `text` as messages, each a list of sections within `limits`.
pub fn split(text: &str, limits: &Limits) -> Vec<Vec<String>> {
    let mut pieces = Vec::new();
    for segment in segments(text) {
        if chars(&segment) <= limits.section_chars {
            pieces.push(segment);
        } else if segment.starts_with(FENCE) {
            pieces.extend(split_code(&segment, limits.section_chars));
        } else {
            pieces.extend(split_prose(&segment, limits.section_chars));
        }
    }
    let sections = pack(pieces, limits.section_chars, SECTION_SEPARATOR);
    let mut messages: Vec<Vec<String>> = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut current_chars = 0;
    for section in sections {
        if !current.is_empty()
            && (current.len() == limits.blocks_per_message
                || current_chars + SECTION_SEPARATOR.len() + chars(&section) > limits.message_chars)
        {
            messages.push(std::mem::take(&mut current));
            current_chars = 0;
        }
        if !current.is_empty() {
            current_chars += SECTION_SEPARATOR.len();
        }
        current_chars += chars(&section);
        current.push(section);
    }
    if !current.is_empty() {
        messages.push(current);
    }
    messages
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Paragraphs, and code blocks whole (blank lines inside them included).
fn segments(text: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        let is_fence = line.trim_start().starts_with(FENCE);
        if in_code {
            current.push(line);
            if is_fence {
                segments.push(current.join("\n"));
                current.clear();
                in_code = false;
            }
        } else if is_fence {
            if !current.is_empty() {
                segments.push(current.join("\n"));
                current.clear();
            }
            current.push(line);
            in_code = !line.trim_start()[FENCE.len()..].contains(FENCE);
            if !in_code {
                segments.push(current.join("\n"));
                current.clear();
            }
        } else if line.trim().is_empty() {
            if !current.is_empty() {
                segments.push(current.join("\n"));
                current.clear();
            }
        } else {
            current.push(line);
        }
    }
    if !current.is_empty() {
        let mut last = current.join("\n");
        if in_code {
            last.push('\n');
            last.push_str(FENCE);
        }
        segments.push(last);
    }
    segments
}

/// A code block too long for one section, as several closed code blocks.
fn split_code(block: &str, limit: usize) -> Vec<String> {
    let mut lines: Vec<&str> = block.lines().collect();
    // The fences come back around every piece.
    lines.remove(0);
    if lines.last().is_some_and(|line| line.trim_start().starts_with(FENCE)) {
        lines.pop();
    }
    let wrap_overhead = 2 * (FENCE.len() + 1);
    let inner_limit = limit.saturating_sub(wrap_overhead).max(1);
    let inner: Vec<String> = lines.iter().flat_map(|line| cut_line(line, inner_limit)).collect();
    pack(inner, inner_limit, "\n").into_iter().map(|piece| format!("{FENCE}\n{piece}\n{FENCE}")).collect()
}

/// A paragraph too long for one section, cut between lines (or inside the
/// lines that are too long themselves).
fn split_prose(paragraph: &str, limit: usize) -> Vec<String> {
    let lines: Vec<String> = paragraph.lines().flat_map(|line| cut_line(line, limit)).collect();
    pack(lines, limit, "\n")
}

/// One line as pieces of at most `limit` characters: cut after the last
/// space that fits, else at the limit, but never inside an entity.
fn cut_line(line: &str, limit: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut rest = line;
    while chars(rest) > limit {
        let hard = rest.char_indices().nth(limit).map_or(rest.len(), |(at, _)| at);
        let mut cut = match rest[..hard].rfind(' ') {
            Some(space) if space > 0 => space + 1,
            _ => hard,
        };
        // `&amp;` and friends stay whole.
        if let Some(amp) = rest[..cut].rfind('&')
            && !rest[amp..cut].contains(';')
            && rest[amp..].find(';').is_some_and(|end| end <= 6)
            && amp > 0
        {
            cut = amp;
        }
        pieces.push(rest[..cut].trim_end().to_owned());
        rest = &rest[cut..];
    }
    pieces.push(rest.to_owned());
    pieces
}

/// Joins consecutive pieces with `separator` while the result fits `limit`.
fn pack(pieces: Vec<String>, limit: usize, separator: &str) -> Vec<String> {
    let mut packed: Vec<String> = Vec::new();
    for piece in pieces {
        match packed.last_mut() {
            Some(last) if chars(last) + separator.len() + chars(&piece) <= limit => {
                last.push_str(separator);
                last.push_str(&piece);
            }
            _ => packed.push(piece),
        }
    }
    packed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Limits {
        Limits { section_chars: 40, blocks_per_message: 3, message_chars: 100 }
    }

    fn all_sections(messages: &[Vec<String>]) -> Vec<&String> {
        messages.iter().flatten().collect()
    }

    #[test]
    fn a_short_text_is_one_section() {
        assert_eq!(split("hello\n\nworld", &Limits::default()), vec![vec!["hello\n\nworld".to_owned()]]);
    }

    #[test]
    fn paragraphs_are_packed_and_cut_between() {
        let text = "first paragraph is here\n\nsecond one is here too\n\nthird";
        let messages = split(text, &small());
        let sections = all_sections(&messages);
        assert_eq!(sections, ["first paragraph is here", "second one is here too\n\nthird"]);
    }

    #[test]
    fn a_long_code_block_is_closed_and_reopened_in_every_section() {
        let code: Vec<String> = (0..20).map(|i| format!("line {i:02} of code")).collect();
        let text = format!("intro\n\n```\n{}\n```\n\nafter", code.join("\n"));
        let messages = split(&text, &Limits { message_chars: 10_000, blocks_per_message: 50, ..small() });
        let sections = all_sections(&messages);
        for section in &sections {
            assert!(section.chars().count() <= 40, "{section:?}");
            assert_eq!(section.matches("```").count() % 2, 0, "balanced fences: {section:?}");
        }
        let code_lines: Vec<&str> =
            sections.iter().flat_map(|s| s.lines()).filter(|l| l.starts_with("line ")).collect();
        assert_eq!(code_lines, code, "every code line once, in order");
        assert_eq!(sections.first().map(|s| s.as_str()), Some("intro"));
        assert_eq!(sections.last().map(|s| s.as_str()), Some("after"));
    }

    #[test]
    fn a_blank_line_inside_code_does_not_split_it() {
        let text = "```\na\n\nb\n```";
        assert_eq!(split(text, &Limits::default()), vec![vec![text.to_owned()]]);
    }

    #[test]
    fn an_unclosed_code_block_is_closed() {
        assert_eq!(split("```\ncode", &Limits::default()), vec![vec!["```\ncode\n```".to_owned()]]);
    }

    #[test]
    fn a_long_line_is_cut_between_words_and_never_inside_an_entity() {
        let line = format!("{} a &amp;&amp; b", "word ".repeat(9).trim_end());
        let pieces = cut_line(&line, 50);
        assert_eq!(pieces.concat().replace(' ', ""), line.replace(' ', ""));
        for piece in &pieces {
            assert!(piece.chars().count() <= 50);
            assert_eq!(piece.matches('&').count(), piece.matches(';').count(), "whole entities: {piece:?}");
        }
        let unbroken = "x".repeat(95);
        assert_eq!(cut_line(&unbroken, 40).iter().map(String::len).collect::<Vec<_>>(), [40, 40, 15]);
    }

    #[test]
    fn messages_hold_at_most_the_block_and_character_limits() {
        let text: Vec<String> = (0..10).map(|i| format!("paragraph number {i} {}", "z".repeat(20))).collect();
        let messages = split(&text.join("\n\n"), &small());
        assert!(messages.len() > 1);
        for message in &messages {
            assert!(message.len() <= 3);
            assert!(message.join(SECTION_SEPARATOR).chars().count() <= 100);
        }
        let joined: Vec<String> = messages.iter().flatten().cloned().collect();
        assert_eq!(joined.join("\n\n"), text.join("\n\n"), "nothing lost or reordered");
    }

    #[test]
    fn counts_characters_not_bytes() {
        let text = "é".repeat(60);
        let sections = all_sections(&split(&text, &small())).into_iter().cloned().collect::<Vec<_>>();
        assert_eq!(sections.iter().map(|s| s.chars().count()).collect::<Vec<_>>(), [40, 20]);
    }
}
