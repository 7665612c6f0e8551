//! `${env:NAME}` and `${secret:NAME}` in configuration values (HTTP tools'
//! and MCP servers' headers), resolved once at start-up. Which variables
//! may be read (`allowed_env`) and where secrets come from is the
//! assembly's decision; this only parses.

use std::fmt;

/// What a configuration value names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reference {
    /// An environment variable of the worker.
    Env(String),
    /// A secret in the deployment's secret store (Secrets Manager).
    Secret(String),
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reference::Env(name) => write!(f, "${{env:{name}}}"),
            Reference::Secret(name) => write!(f, "${{secret:{name}}}"),
        }
    }
}

/// How a reference begins, and what it names.
type Kind = (&'static str, fn(String) -> Reference);
const KINDS: [Kind; 2] = [("${env:", Reference::Env), ("${secret:", Reference::Secret)];

/// Why a value cannot be resolved: the reference that has no value, or
/// the unclosed rest of the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    Missing(Reference),
    Unclosed(String),
}

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unresolved::Missing(reference) => write!(f, "{reference} has no value"),
            Unresolved::Unclosed(rest) => write!(f, "{rest:?} is not closed with }}"),
        }
    }
}

/// `Bearer ${env:TOKEN}` with the references' values. Other `${…}` text
/// stays as it is.
pub fn resolve(template: &str, lookup: &impl Fn(&Reference) -> Option<String>) -> Result<String, Unresolved> {
    let mut resolved = String::new();
    let mut rest = template;
    while let Some((start, prefix, kind)) =
        KINDS.iter().filter_map(|(prefix, kind)| Some((rest.find(prefix)?, prefix, kind))).min_by_key(|found| found.0)
    {
        let end = rest[start..]
            .find('}')
            .map(|end| start + end)
            .ok_or_else(|| Unresolved::Unclosed(rest[start..].to_owned()))?;
        let reference = kind(rest[start + prefix.len()..end].to_owned());
        resolved.push_str(&rest[..start]);
        resolved.push_str(&lookup(&reference).ok_or(Unresolved::Missing(reference))?);
        rest = &rest[end + 1..];
    }
    resolved.push_str(rest);
    Ok(resolved)
}

/// The references these values make, each once, in order.
pub fn named<'a>(values: impl IntoIterator<Item = &'a String>) -> Vec<Reference> {
    let found = std::cell::RefCell::new(Vec::new());
    let record = |reference: &Reference| {
        let mut found = found.borrow_mut();
        if !found.contains(reference) {
            found.push(reference.clone());
        }
        Some(String::new())
    };
    for value in values {
        // The same parser that resolves them; an unclosed one is reported
        // when the value is resolved.
        let _ = resolve(value, &record);
    }
    found.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(reference: &Reference) -> Option<String> {
        match reference {
            Reference::Env(name) if name == "TOKEN" => Some("t0k".into()),
            Reference::Secret(name) if name == "status/api-key" => Some("s3cr3t".into()),
            _ => None,
        }
    }

    #[test]
    fn references_are_resolved_and_listed() {
        assert_eq!(resolve("Bearer ${env:TOKEN}", &lookup), Ok("Bearer t0k".into()));
        assert_eq!(resolve("${secret:status/api-key}:${env:TOKEN}", &lookup), Ok("s3cr3t:t0k".into()));
        assert_eq!(resolve("${HOME} stays", &lookup), Ok("${HOME} stays".into()));
        assert_eq!(resolve("${env:MISSING}", &lookup), Err(Unresolved::Missing(Reference::Env("MISSING".into()))));
        assert_eq!(
            resolve("${secret:TOKEN}", &lookup),
            Err(Unresolved::Missing(Reference::Secret("TOKEN".into()))),
            "a secret is not an environment variable of the same name"
        );
        assert_eq!(resolve("x ${env:TOKEN", &lookup), Err(Unresolved::Unclosed("${env:TOKEN".into())));
        let values = ["a ${env:ONE} b ${secret:two} ${env:ONE}".to_owned(), "plain".to_owned()];
        assert_eq!(named(&values), [Reference::Env("ONE".into()), Reference::Secret("two".into())]);
        assert_eq!(Reference::Secret("two".into()).to_string(), "${secret:two}");
    }
}
