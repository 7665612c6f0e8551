//! Secret redaction: the last line of defence between what tools and models
//! produce and what reaches the model, the stored turn, or Slack.
//!
//! Each rule recognises one kind of secret by its documented shape, or by
//! the name it is assigned to (`password=`, `aws_secret_access_key:`), and
//! replaces only the secret with `[redacted: <kind>]`, keeping the text
//! around it. Rules are tuned against over-eager matches too: git SHAs,
//! UUIDs, ARNs, Slack ids and timestamps, request ids, AWS's documented
//! example keys, public keys, URLs without credentials and model ids stay.
//!
//! The rules compile once per process ([`Redactor::global`]). Secrets the
//! process itself was configured with (tools' header values) are
//! [remembered](Redactor::remember) and removed wherever they appear,
//! whatever their shape.

pub mod stream;

pub use stream::StreamRedactor;

use regex::Regex;
use std::borrow::Cow;
use std::sync::{OnceLock, RwLock};

/// One kind of secret.
struct Rule {
    /// What the replacement says was removed.
    label: &'static str,
    pattern: Regex,
    /// The capture group that is the secret (0: the whole match).
    group: usize,
    /// The rule finds values by the name they are assigned to (`password=`),
    /// so placeholders, paths and names that only end like a secret's
    /// (`next_token`) are kept.
    by_name: bool,
    /// A match this says is no secret is kept.
    keep_if: fn(&str) -> bool,
    /// How much of the captured value is the secret (its length in
    /// bytes): a rule whose pattern runs past the secret (a password to
    /// the end of its line) cuts it here, and the text after the cut is
    /// searched again, by this rule too.
    secret_len: fn(&str) -> usize,
}

impl Rule {
    /// `text` with every secret this rule finds replaced; `None` when
    /// nothing was (a match that is kept, an example key, changes nothing).
    fn apply(&self, text: &str) -> Option<String> {
        let mut out = String::new();
        // What of `text` is in `out`, and where the next search starts.
        let (mut copied, mut from) = (0, 0);
        while from <= text.len() {
            let Some(caps) = self.pattern.captures_at(text, from) else { break };
            let whole = caps.get(0).expect("group 0 always matches");
            // Never search the same place twice (an empty match).
            let next = |end: usize| {
                if end > whole.start() {
                    end
                } else {
                    text[end..].chars().next().map_or(text.len() + 1, |c| end + c.len_utf8())
                }
            };
            let Some(secret) = caps.get(self.group) else {
                from = next(whole.end());
                continue;
            };
            let len = (self.secret_len)(secret.as_str()).min(secret.len());
            let value = &secret.as_str()[..len];
            // A value cut short: what follows it is searched again.
            let end = secret.start() + len;
            from = next(if len < secret.len() { end } else { whole.end() });
            let name = &text[whole.start()..secret.start()];
            if value.is_empty() || self.keeps(name, value) {
                continue;
            }
            out.push_str(&text[copied..secret.start()]);
            out.push_str(MARKER_PREFIX);
            out.push_str(self.label);
            out.push(']');
            copied = end;
        }
        (copied > 0).then(|| {
            out.push_str(&text[copied..]);
            out
        })
    }

    /// Whether `value`, assigned to `name` (empty for a rule by shape),
    /// is no secret after all.
    fn keeps(&self, name: &str, value: &str) -> bool {
        DOCUMENTED_EXAMPLES.contains(&value)
            || value.starts_with(MARKER_START)
            || (self.keep_if)(value)
            || (self.by_name
                && (PLACEHOLDERS.iter().any(|prefix| value.starts_with(prefix))
                    || is_placeholder_value(value)
                    || only_looks_like_a_secret_name(name)))
    }
}

/// How much of a password's value, read to the end of its line, is the
/// password: all of it (passwords may hold spaces, and no word of one may
/// get through), but for what follows the next assignment on the line
/// (`password=x and DB_USER=app`, `PASSWORD=x DB_HOST=db`,
/// `password: x or user: app`): the value stops before that assignment, and
/// before a conjunction (`and`, `or`, `&&`, `||`) joining it. The first
/// word is always the password's, whatever it looks like.
fn password_len(value: &str) -> usize {
    let words: Vec<(usize, &str)> = value
        .split([' ', '\t'])
        .scan(0, |at, word| {
            let start = *at;
            *at += word.len() + 1;
            Some((start, word))
        })
        .filter(|(_, word)| !word.is_empty())
        .collect();
    let assignment = (1..words.len()).find(|&i| {
        let (_, word) = words[i];
        is_assignment(word) || (is_name(word) && words.get(i + 1).is_some_and(|(_, next)| next.starts_with('=')))
    });
    let Some(mut at) = assignment else { return value.len() };
    if at >= 2 && ["and", "or", "&&", "||"].iter().any(|joint| words[at - 1].1.eq_ignore_ascii_case(joint)) {
        at -= 1;
    }
    let (start, word) = words[at - 1];
    start + word.len()
}

/// A name as env files, YAML and properties write them: `DB_USER`,
/// `spring.datasource.url`, `log-level`.
fn is_name(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && word.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// `NAME=value`, `NAME=` or `NAME:value`, `NAME:` (not a URL's `https://`).
fn is_assignment(word: &str) -> bool {
    let Some(at) = word.find(['=', ':']) else { return false };
    let (name, rest) = word.split_at(at);
    is_name(name) && !rest.starts_with("://")
}

/// Documented example credentials, found in docs and tests everywhere:
/// never secrets, whichever rule sees them.
const DOCUMENTED_EXAMPLES: &[&str] = &["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"];

/// Values that name or stand for a secret without being one.
const PLACEHOLDERS: &[&str] = &["arn:", "${", "{{", "<", "$(", "%(", "***", "[redacted"];

/// Names whose value is a secret in `name = value` assignments.
const SECRET_NAMES: &str = r"(?:password|passwd|pwd|passphrase|_pass|secret|secret[_-]?key|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|private[_-]?key|client[_-]?secret|credentials?)";

/// A value that stands for a secret in docs and examples, or a path
/// (`pwd: /home/app`), not one.
fn is_placeholder_value(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    value.starts_with('/')
        || value.starts_with("~/")
        || lower.split(|c: char| !c.is_ascii_alphanumeric()).any(|word| word == "your")
        || lower.ends_with("-here")
        || lower.ends_with("_here")
        || lower.contains("replace-me")
        || lower.contains("replace_me")
        || ["changeme", "example", "placeholder", "dummy", "xxxx"].iter().any(|word| lower.contains(word))
}

/// `8080/builds` in `http://host:8080/builds@latest`: what the userinfo
/// pattern takes for a password when a URL has no credentials, a port and
/// an `@` in its path.
fn is_port_and_path(value: &str) -> bool {
    value.split_once('/').is_some_and(|(port, _)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
}

/// `pattern` (whose secret is a fixed number of characters from
/// `alphabet`) where no further character of the alphabet follows. A
/// trailing `\b` would not do: after a key ending in `-`, `/` or `+` there
/// is no word boundary before a space, and the key would survive whole.
fn ends(pattern: &str, alphabet: &str) -> String {
    format!("{pattern}(?:[^{alphabet}]|$)")
}

fn rules() -> Vec<Rule> {
    let rule = |label, pattern: &str, group| Rule {
        label,
        pattern: Regex::new(pattern).expect("redaction patterns are valid"),
        group,
        by_name: false,
        keep_if: |_| false,
        secret_len: str::len,
    };
    vec![
        // Blocks first: their insides must not be matched piecemeal.
        rule(
            "private key",
            // To its END line, or to the end of the text when a size cap cut it off.
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\z)",
            0,
        ),
        // Slack.
        rule("slack webhook url", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{10,}", 0),
        rule("slack refresh token", r"\bxoxe\.xox[bp]-\d-[A-Za-z0-9-]{20,}", 0),
        rule("slack configuration token", r"\bxoxe-\d-[A-Za-z0-9-]{20,}", 0),
        rule("slack app token", r"\bxapp-\d-[A-Za-z0-9-]{20,}", 0),
        rule("slack bot token", r"\bxoxb-[0-9]{6,}-[A-Za-z0-9-]{10,}", 0),
        rule("slack user token", r"\bxox[pas]-[0-9]{6,}-[A-Za-z0-9-]{10,}", 0),
        // Source hosting.
        rule("github token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})\b", 0),
        rule("gitlab token", r"\bgl(?:pat|dt|rt|ptt|cbt|oas|ft|soat|imt|agent|wt|ffct)-[A-Za-z0-9_-]{20,}", 0),
        rule("npm token", r"\bnpm_[A-Za-z0-9]{36}\b", 0),
        // Model and API vendors. Anthropic's prefix also matches OpenAI's
        // pattern, so it comes first.
        rule("anthropic api key", r"\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{20,}", 0),
        rule("openai api key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}", 0),
        rule("openai api key", r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}", 0),
        rule("bedrock api key", r"\b(?:ABSK[A-Za-z0-9+/]{40,}={0,2}|bedrock-api-key-[A-Za-z0-9+/]{40,}={0,2})", 0),
        rule("google api key", &ends(r"\b(AIza[0-9A-Za-z_-]{35})", "0-9A-Za-z_-"), 1),
        rule("stripe key", r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}\b", 0),
        rule("stripe webhook secret", r"\bwhsec_[A-Za-z0-9]{24,}\b", 0),
        rule("sendgrid api key", &ends(r"\b(SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})", "A-Za-z0-9_-"), 1),
        rule("google oauth client secret", &ends(r"\b(GOCSPX-[A-Za-z0-9_-]{28})", "A-Za-z0-9_-"), 1),
        rule("azure storage key", r"(?i)\bAccountKey=([A-Za-z0-9+/]{86}==)", 1),
        rule("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0),
        // AWS: key ids by shape, secrets and session tokens by their name.
        rule("aws access key id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", 0),
        rule(
            "aws session token",
            r#"(?i)(?:aws_session_token|aws_security_token|sessiontoken|x-amz-security-token)["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40,})"#,
            1,
        ),
        rule(
            "aws secret access key",
            &ends(
                r#"(?i)(?:aws_secret_access_key|aws_secret_key|secret_access_key|secretaccesskey)["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})"#,
                "A-Za-z0-9/+=",
            ),
            1,
        ),
        // Credentials in transit.
        // `scheme://user:password@host`: the password runs to the last `@`
        // that a host follows, so one holding `@` or `/` goes whole.
        Rule {
            keep_if: is_port_and_path,
            ..rule(
                "password",
                r#"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:(\S+)@[A-Za-z0-9.\[\]-]+(?::\d+)?(?:[/?#\s"'<>),]|$)"#,
                1,
            )
        },
        rule(
            "authorization credential",
            r#"(?i)\b(?:authorization|proxy-authorization)["']?\s*[:=]\s*["']?(?:bearer|basic|token|digest)\s+([A-Za-z0-9._~+/=-]{8,})"#,
            1,
        ),
        rule("bearer token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{20,}=*)", 1),
        // Session cookies: the whole header value, wherever the header is
        // on its line (`> Cookie:` in `curl -v`, a header quoted in a log).
        rule("cookie", r"(?i)\b(?:set-)?cookie\s*:\s*(\S[^\r\n]*)", 1),
        // A password to the end of its line (or of its field in a `k: v, k: v`
        // list), since passwords may hold spaces; but not past the next
        // assignment on the line (`password=x and DB_USER=app`).
        Rule {
            by_name: true,
            secret_len: password_len,
            ..rule(
                "secret",
                r"(?im)\b[A-Za-z0-9_.-]*(?:password|passwd|passphrase)\s*[:=]\s*([^\s\x22'][^\r\n,;]*?)\s*(?:[,;]|$)",
                1,
            )
        },
        // Anything assigned to a secret-sounding name, in env files, YAML,
        // JSON, TOML, INI, query strings and code: quoted values whole,
        // bare values up to the next separator.
        Rule {
            by_name: true,
            ..rule("secret", &format!(r#"(?i)\b[A-Za-z0-9_.-]*{SECRET_NAMES}"?\s*(?::|=|=>)\s*"([^"\n]{{4,}})""#), 1)
        },
        Rule {
            by_name: true,
            ..rule("secret", &format!(r#"(?i)\b[A-Za-z0-9_.-]*{SECRET_NAMES}'?\s*(?::|=|=>)\s*'([^'\n]{{4,}})'"#), 1)
        },
        Rule {
            by_name: true,
            ..rule(
                "secret",
                &format!(r#"(?i)\b[A-Za-z0-9_.-]*{SECRET_NAMES}["']?\s*(?::|=|=>)\s*([^\s"',;&]{{4,}})"#),
                1,
            )
        },
    ]
}

pub struct Redactor {
    rules: Vec<Rule>,
    /// Values this process knows are secrets.
    known: RwLock<Vec<String>>,
}

impl Default for Redactor {
    fn default() -> Self {
        Self { rules: rules(), known: RwLock::default() }
    }
}

/// Shorter remembered values are not looked for: they would match ordinary
/// words and numbers everywhere.
pub const MIN_REMEMBERED_LEN: usize = 8;

const MARKER_PREFIX: &str = "[redacted: ";
/// How a value already redacted by an earlier rule begins.
const MARKER_START: &str = "[redacted";

impl Redactor {
    /// The rules, compiled once per process.
    pub fn global() -> &'static Redactor {
        static GLOBAL: OnceLock<Redactor> = OnceLock::new();
        GLOBAL.get_or_init(Redactor::default)
    }

    /// `text` with every secret replaced by `[redacted: <kind>]`; borrowed
    /// when there was nothing to remove.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for value in self.known.read().unwrap_or_else(|poisoned| poisoned.into_inner()).iter() {
            if text.contains(value.as_str()) {
                text = Cow::Owned(text.replace(value.as_str(), &format!("{MARKER_PREFIX}configured secret]")));
            }
        }
        for rule in &self.rules {
            if let Some(replaced) = rule.apply(&text) {
                text = Cow::Owned(replaced);
            }
        }
        text
    }

    /// Treats `value` as a secret from now on, whatever its shape: a secret
    /// this process was configured with (an API key a tool sends). Values
    /// shorter than [`MIN_REMEMBERED_LEN`] are ignored.
    pub fn remember(&self, value: &str) {
        let value = value.trim();
        if value.len() < MIN_REMEMBERED_LEN {
            return;
        }
        let mut known = self.known.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !known.iter().any(|known| known == value) {
            known.push(value.to_owned());
            // The longest first, so a secret that contains another is
            // replaced whole.
            known.sort_by_key(|known| std::cmp::Reverse(known.len()));
        }
    }

    /// The length of the longest value [remembered](Self::remember) (0
    /// when none): how much streamed text must be held back to see one whole.
    pub fn longest_remembered(&self) -> usize {
        self.known.read().unwrap_or_else(|poisoned| poisoned.into_inner()).first().map_or(0, String::len)
    }

    /// Redacts a JSON value in place: every string by the rules, and every
    /// value under a key that names a secret (`password`, `SecretAccessKey`,
    /// `api_token`, `credentials`, … in any case or separator style)
    /// whatever its shape. Keys stay.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(text) => {
                if let Cow::Owned(redacted) = self.redact(text) {
                    *text = redacted;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|item| self.redact_json(item)),
            serde_json::Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    if names_a_secret(key) {
                        redact_everything_under(key, item);
                    } else {
                        self.redact_json(item);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Key endings that name a secret, compared on the key lower-cased with
/// everything but letters and digits removed (`DB_PASSWORD`, `db-password`
/// and `dbPassword` are one).
const SECRET_KEY_ENDINGS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "secretkey",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "credential",
    "credentials",
    "authorization",
    "cookie",
    "connectionstring",
    "connstring",
];

/// Keys that end like a secret's name and name something else: counts,
/// kinds, pagination cursors, where to get a token.
const NOT_SECRET_KEYS: &[&str] = &[
    "nexttoken",
    "pagetoken",
    "nextpagetoken",
    "paginationtoken",
    "continuationtoken",
    "cursortoken",
    "tokentype",
    "idtokenhint",
];

/// Whether a JSON key names a secret.
/// A name lower-cased with everything but letters and digits removed.
fn normalized(name: &str) -> String {
    name.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// The name part of a `name = value` match names a pagination cursor or a
/// kind (`next_token=`, `nextPageToken:`), not a secret.
fn only_looks_like_a_secret_name(name: &str) -> bool {
    let name = normalized(name);
    NOT_SECRET_KEYS.iter().any(|key| name.contains(key))
}

pub fn names_a_secret(key: &str) -> bool {
    let normalized = normalized(key);
    if NOT_SECRET_KEYS.contains(&normalized.as_str()) {
        return false;
    }
    SECRET_KEY_ENDINGS.iter().any(|ending| normalized.ends_with(ending)) || ends_with_pass_word(key)
}

/// `pass` as a word of its own at the key's end (`DB_PASS`, `db-pass`,
/// `dbPass`, `pass`), not inside one (`bypass`, `compass`).
fn ends_with_pass_word(key: &str) -> bool {
    let bytes = key.as_bytes();
    let Some(start) = bytes.len().checked_sub(4) else { return false };
    key.get(start..).is_some_and(|end| end.eq_ignore_ascii_case("pass"))
        && (start == 0 || !bytes[start - 1].is_ascii_alphanumeric() || bytes[start] == b'P')
}

/// Every string and number under a secret's key, at any depth, becomes a
/// marker; placeholders, empty values and (for `pwd`) paths are kept.
fn redact_everything_under(key: &str, value: &mut serde_json::Value) {
    let marker = || serde_json::Value::String(format!("{MARKER_PREFIX}value of {key:?}]"));
    match value {
        serde_json::Value::String(text) => {
            let kept = text.trim().is_empty()
                || text.starts_with(MARKER_START)
                || PLACEHOLDERS.iter().any(|prefix| text.starts_with(prefix))
                || (key.eq_ignore_ascii_case("pwd") && text.starts_with('/'));
            if !kept {
                *value = marker();
            }
        }
        serde_json::Value::Number(_) => *value = marker(),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|item| redact_everything_under(key, item)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|item| redact_everything_under(key, item)),
        serde_json::Value::Bool(_) | serde_json::Value::Null => {}
    }
}

/// [`Redactor::redact`] with the process-wide rules.
pub fn redact(text: &str) -> Cow<'_, str> {
    Redactor::global().redact(text)
}

#[cfg(test)]
mod tests;
