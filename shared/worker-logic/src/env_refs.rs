//! `${env:NAME}` in configuration values (HTTP tools' and MCP servers'
//! headers), resolved once at start-up. Which names may be read is the
//! assembly's decision (`allowed_env`); this only parses.

/// `Bearer ${env:TOKEN}` with the variable's value; the name when missing
/// (or the unclosed rest when a reference has no `}`).
pub fn resolve(template: &str, env: &impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut resolved = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("${env:") {
        let end = rest[start..].find('}').map(|end| start + end).ok_or_else(|| rest[start..].to_owned())?;
        let variable = &rest[start + 6..end];
        resolved.push_str(&rest[..start]);
        resolved.push_str(&env(variable).ok_or_else(|| variable.to_owned())?);
        rest = &rest[end + 1..];
    }
    resolved.push_str(rest);
    Ok(resolved)
}

/// The variables these values name.
pub fn names<'a>(values: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let names = std::cell::RefCell::new(Vec::new());
    let record = |name: &str| {
        names.borrow_mut().push(name.to_owned());
        Some(String::new())
    };
    for value in values {
        // The same parser that resolves them; an unclosed one is reported
        // when the value is resolved.
        let _ = resolve(value, &record);
    }
    names.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_resolved_and_listed() {
        let env = |name: &str| (name == "TOKEN").then(|| "t0k".to_owned());
        assert_eq!(resolve("Bearer ${env:TOKEN}", &env), Ok("Bearer t0k".into()));
        assert_eq!(resolve("${env:MISSING}", &env), Err("MISSING".into()));
        assert_eq!(resolve("x ${env:TOKEN", &env), Err("${env:TOKEN".into()));
        let values = ["a ${env:ONE} b ${env:TWO}".to_owned(), "plain".to_owned()];
        assert_eq!(names(&values), ["ONE", "TWO"]);
    }
}
