//! Slack's message text: the three characters its markup gives meaning to.

/// `&`, `<` and `>` as Slack's entities: the text can then neither link,
/// mention nor ping, whatever it says.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            other => escaped.push(other),
        }
    }
    escaped
}
