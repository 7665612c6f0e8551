//! Slack's mrkdwn, where Slack still needs it (approval prompts, notices,
//! alerts: text the bot writes itself, escaped), and what every message
//! shares: which special mentions may ping, and the host a link names.
//! Answers are Slack's own Markdown instead (see [`crate::markdown`]).

/// Which special mentions may ping: the same setting as the Web API
/// client's output guard ([`slack::mentions`]).
pub use slack::mentions::SpecialMentions;

/// The host a URL-like text names: `https://host/…`, `host.tld/…` or
/// `host.tld`; `None` for ordinary words.
pub(crate) fn host_of(text: &str) -> Option<&str> {
    let rest = text.split_once("://").map_or(text, |(_, rest)| rest);
    let host = rest.split(['/', '?', '#']).next()?.rsplit('@').next()?;
    let host = host.split(':').next()?;
    let looks_like_host = host.contains('.')
        && !host.starts_with('.')
        && !host.ends_with('.')
        && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    looks_like_host.then_some(host)
}

pub use slack::text::escape;

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn hosts_are_read_from_urls_and_url_like_labels_only() {
        assert_eq!(host_of("https://bank.example.com/login"), Some("bank.example.com"));
        assert_eq!(host_of("bank.example.com"), Some("bank.example.com"));
        assert_eq!(host_of("https://user@evil.example:8443/x"), Some("evil.example"));
        assert_eq!(host_of("the runbook"), None);
    }
}
