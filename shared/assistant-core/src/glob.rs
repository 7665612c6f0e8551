//! Globs over names (channels, tools): the one matcher every rule uses.

/// `*` matches any run of characters (also none), `?` exactly one.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let (pattern, text): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                backtrack = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match backtrack {
                Some((star, matched)) => {
                    p = star + 1;
                    t = matched + 1;
                    backtrack = Some((star, matched + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_match_any_run_and_question_marks_one_character() {
        assert!(glob_matches("C0INC*", "C0INC123"));
        assert!(glob_matches("*", ""));
        assert!(glob_matches("deploys__*", "deploys__rollback"));
        assert!(glob_matches("C?1", "CX1"));
        assert!(!glob_matches("C?1", "C1"));
        assert!(!glob_matches("C0INC*", "C0OPS1"));
        assert!(glob_matches("*delete*", "issue_delete_all"));
    }
}
