//! Reading our own Rust source as text, enough to find what the docs
//! describe: the workspace's crates and what each depends on, string
//! literals outside comments and test code, the function each sits in,
//! and the calls that read an environment variable by name.
//!
//! Not a parser: a lexer that tells code from comments, strings and char
//! literals, so that braces match and a name in a comment is not a read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What a byte of a source file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Code,
    /// A comment, or an item under `#[cfg(test)]`.
    Ignored,
    /// Inside a string or char literal, quotes included.
    Literal,
}

/// One source file, lexed.
pub struct SourceFile {
    /// Relative to the repository root.
    pub path: String,
    pub text: String,
    class: Vec<Class>,
    /// Functions with a body: (name, first byte of the body, one past its end).
    functions: Vec<(String, usize, usize)>,
}

/// A string literal in code that is not test code.
pub struct Literal<'a> {
    pub file: &'a SourceFile,
    /// Byte offset of the opening quote.
    pub at: usize,
    pub value: String,
}

impl Literal<'_> {
    /// `path:line`, for a failure message.
    pub fn place(&self) -> String {
        format!("{}:{}", self.file.path, self.file.line_of(self.at))
    }

    /// The function whose body holds it, if any.
    pub fn function(&self) -> Option<&str> {
        self.file
            .functions
            .iter()
            .filter(|(_, start, end)| (*start..*end).contains(&self.at))
            .min_by_key(|(_, start, end)| end - start)
            .map(|(name, _, _)| name.as_str())
    }

    /// The code just before it, whitespace skipped (up to `n` bytes).
    fn before(&self, n: usize) -> &str {
        let text = self.file.text[..self.at].trim_end();
        &text[text.len().saturating_sub(n)..]
    }
}

impl SourceFile {
    pub fn read(root: &Path, path: &Path) -> Self {
        let text = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let relative = path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned();
        Self::new(relative, text)
    }

    pub fn new(path: String, text: String) -> Self {
        let mut file = Self { path, class: lex(&text), text, functions: Vec::new() };
        file.ignore_test_items();
        file.functions = file.find_functions();
        file
    }

    pub fn line_of(&self, at: usize) -> usize {
        self.text[..at].matches('\n').count() + 1
    }

    fn is_code(&self, at: usize) -> bool {
        self.class.get(at) == Some(&Class::Code)
    }

    /// The length of the literal starting at `at`.
    fn literal_len(&self, at: usize) -> usize {
        self.class[at..].iter().take_while(|class| **class == Class::Literal).count()
    }

    /// Every plain string literal (`"…"`, escapes not decoded) in code.
    pub fn literals(&self) -> Vec<Literal<'_>> {
        let bytes = self.text.as_bytes();
        let mut literals = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let starts = self.class[at] == Class::Literal && (at == 0 || self.class[at - 1] != Class::Literal);
            if starts && bytes[at] == b'"' {
                let len = self.literal_len(at);
                let value = self.text[at + 1..at + len - 1].to_owned();
                literals.push(Literal { file: self, at, value });
                at += len;
            } else {
                at += 1;
            }
        }
        literals
    }

    /// Whether `name(` is called (or named as a method) in this file's
    /// code, other than where it is defined.
    pub fn calls(&self, name: &str) -> bool {
        let pattern = format!("{name}(");
        self.text.match_indices(&pattern).any(|(at, _)| {
            let boundary = at == 0 || !is_ident(self.text.as_bytes()[at - 1]);
            let definition = self.text[..at].trim_end().ends_with("fn");
            boundary && !definition && self.is_code(at)
        })
    }

    /// Blanks every item under `#[cfg(test)]` (a test module, a test-only
    /// function or impl).
    fn ignore_test_items(&mut self) {
        let marker = "#[cfg(test)]";
        let starts: Vec<usize> =
            self.text.match_indices(marker).map(|(at, _)| at).filter(|at| self.is_code(*at)).collect();
        for start in starts {
            let end = self.item_end(start + marker.len());
            self.class[start..end].fill(Class::Ignored);
        }
    }

    /// One past the end of the item starting after `from`: its closing
    /// brace, or its `;` when it has no body.
    fn item_end(&self, from: usize) -> usize {
        let bytes = self.text.as_bytes();
        let mut at = from;
        let mut depth = 0usize;
        let mut opened = false;
        while at < bytes.len() {
            if self.is_code(at) {
                match bytes[at] {
                    b'{' => {
                        depth += 1;
                        opened = true;
                    }
                    b'}' => {
                        depth = depth.saturating_sub(1);
                        if opened && depth == 0 {
                            return at + 1;
                        }
                    }
                    b';' if !opened => return at + 1,
                    _ => {}
                }
            }
            at += 1;
        }
        bytes.len()
    }

    /// Every `fn name` with a body, and the body's extent.
    fn find_functions(&self) -> Vec<(String, usize, usize)> {
        let bytes = self.text.as_bytes();
        let mut functions = Vec::new();
        for (at, _) in self.text.match_indices("fn ") {
            let boundary = at == 0 || !is_ident(bytes[at - 1]);
            if !boundary || !self.is_code(at) {
                continue;
            }
            let name: String = self.text[at + 3..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if name.is_empty() {
                continue;
            }
            // The body opens at the first `{` in code, unless a `;` comes
            // first (a declaration in a trait).
            let mut open = at + 3;
            while open < bytes.len() && !(self.is_code(open) && matches!(bytes[open], b'{' | b';')) {
                open += 1;
            }
            if open < bytes.len() && bytes[open] == b'{' {
                functions.push((name, open, self.item_end(open)));
            }
        }
        functions
    }
}

fn is_ident(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Classes every byte of `text`.
fn lex(text: &str) -> Vec<Class> {
    let bytes = text.as_bytes();
    let mut class = vec![Class::Code; bytes.len()];
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let (kind, len) = if rest.starts_with(b"//") {
            (Class::Ignored, rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len()))
        } else if rest.starts_with(b"/*") {
            (Class::Ignored, block_comment_len(rest))
        } else if rest[0] == b'"' {
            (Class::Literal, string_len(rest))
        } else if rest[0] == b'r' && (at == 0 || !is_ident(bytes[at - 1])) && raw_string_len(rest).is_some() {
            (Class::Literal, raw_string_len(rest).unwrap())
        } else if rest[0] == b'\'' {
            match char_literal_len(&text[at..]) {
                Some(len) => (Class::Literal, len),
                None => (Class::Code, 1),
            }
        } else {
            (Class::Code, 1)
        };
        class[at..at + len].fill(kind);
        at += len.max(1);
    }
    class
}

fn block_comment_len(rest: &[u8]) -> usize {
    let (mut depth, mut at) = (0usize, 0);
    while at < rest.len() {
        if rest[at..].starts_with(b"/*") {
            depth += 1;
            at += 2;
        } else if rest[at..].starts_with(b"*/") {
            depth -= 1;
            at += 2;
            if depth == 0 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    rest.len()
}

fn string_len(rest: &[u8]) -> usize {
    let mut at = 1;
    while at < rest.len() {
        match rest[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    rest.len()
}

/// `r"…"`, `r#"…"#`: the length, if `rest` starts one.
fn raw_string_len(rest: &[u8]) -> Option<usize> {
    let hashes = rest[1..].iter().take_while(|b| **b == b'#').count();
    if rest.get(1 + hashes) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
    let body = 2 + hashes;
    let end = rest[body..].windows(close.len()).position(|window| window == close.as_slice())?;
    Some(body + end + close.len())
}

/// `'x'`, `'\n'`, `'\u{1F44D}'`: the length, if `rest` starts a char
/// literal rather than a lifetime or label.
fn char_literal_len(rest: &str) -> Option<usize> {
    let mut chars = rest.char_indices().skip(1);
    let (_, first) = chars.next()?;
    if first == '\\' {
        return rest[2..].find('\'').map(|end| end + 3);
    }
    let (at, second) = chars.next()?;
    (second == '\'').then_some(at + 1)
}

/// The workspace's crates: package name → folder, and each one's
/// (non-dev) dependencies among them.
pub struct Workspace {
    pub root: PathBuf,
    folders: BTreeMap<String, PathBuf>,
    dependencies: BTreeMap<String, BTreeSet<String>>,
}

impl Workspace {
    pub fn read(root: &Path) -> Self {
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("the workspace manifest");
        let mut folders = BTreeMap::new();
        // `name = { path = "shared/…" }` in [workspace.dependencies], and
        // the function crates, which no other crate names there.
        for line in manifest.lines() {
            if let (Some((name, _)), Some(path)) = (line.split_once(" = {"), quoted_after(line, "path = ")) {
                folders.insert(name.trim().to_owned(), root.join(path));
            }
        }
        for function in ["ingress", "worker", "responder"] {
            folders.insert(function.to_owned(), root.join("functions").join(function));
        }
        let mut dependencies = BTreeMap::new();
        for (name, folder) in &folders {
            let manifest = std::fs::read_to_string(folder.join("Cargo.toml"))
                .unwrap_or_else(|err| panic!("{}: {err}", folder.display()));
            let mut section = "";
            let mut names = BTreeSet::new();
            for line in manifest.lines() {
                let line = line.trim();
                if line.starts_with('[') {
                    section = line;
                    continue;
                }
                if section == "[dependencies]" {
                    let key = line.split(['=', '.', ' ']).next().unwrap_or_default();
                    if folders.contains_key(key) {
                        names.insert(key.to_owned());
                    }
                }
            }
            dependencies.insert(name.clone(), names);
        }
        Self { root: root.to_owned(), folders, dependencies }
    }

    /// `name` and every workspace crate it depends on, directly or not.
    pub fn closure(&self, name: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![name.to_owned()];
        while let Some(next) = todo.pop() {
            if seen.insert(next.clone()) {
                todo.extend(self.dependencies.get(&next).into_iter().flatten().cloned());
            }
        }
        seen
    }

    /// The crate's source files, test files (`tests.rs`, `tests/`) left out.
    pub fn sources(&self, name: &str) -> Vec<SourceFile> {
        let folder = self.folders.get(name).unwrap_or_else(|| panic!("no workspace crate {name}"));
        let mut files = Vec::new();
        let mut todo = vec![folder.join("src")];
        while let Some(dir) = todo.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                let file_name = entry.file_name().to_string_lossy().into_owned();
                if path.is_dir() && file_name != "tests" {
                    todo.push(path);
                } else if file_name.ends_with(".rs") && file_name != "tests.rs" {
                    files.push(SourceFile::read(&self.root, &path));
                }
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        files
    }
}

fn quoted_after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = &line[line.find(key)? + key.len()..];
    let rest = rest.strip_prefix('"')?;
    Some(&rest[..rest.find('"')?])
}

/// A read of an environment variable named by a literal, and where.
pub struct EnvRead {
    pub name: String,
    pub place: String,
    /// The function it is read in (none: at module level, e.g. a constant).
    pub function: Option<String>,
}

/// The calls that take an environment variable's name besides
/// `lambda_support::env`'s own functions: the standard library's
/// (`env::var`, `env::var_os`), and the closures over them the code names
/// `var`, `set`, `env`.
const READERS: [&str; 4] = ["var", "var_os", "set", "env"];

/// The functions of `lambda_support::env`, every one of which takes
/// variables' names (`required`, `optional`, `secret`, …).
pub fn env_helpers(workspace: &Workspace) -> BTreeSet<String> {
    workspace
        .sources("lambda-support")
        .iter()
        .filter(|file| file.path.ends_with("src/env.rs"))
        .flat_map(|file| file.functions.iter().map(|(name, _, _)| name.clone()))
        .collect()
}

/// Every literal read of an environment variable in `file`: a literal
/// argument of a call of `helpers` or [`READERS`], or a service's
/// `endpoint_variable`.
pub fn env_reads(file: &SourceFile, helpers: &BTreeSet<String>) -> Vec<EnvRead> {
    file.literals()
        .into_iter()
        .filter(|literal| looks_like_a_variable(&literal.value))
        .filter(|literal| {
            let callee = file.enclosing_call(literal.at);
            let called = callee.is_some_and(|callee| READERS.contains(&callee) || helpers.contains(callee));
            called || literal.before(40).ends_with("endpoint_variable:")
        })
        .map(|literal| EnvRead {
            name: literal.value.clone(),
            place: literal.place(),
            function: literal.function().map(str::to_owned),
        })
        .collect()
}

impl SourceFile {
    /// The function or method whose call's arguments hold `at`
    /// (`optional("X")`, `secret("X", "X_ID")`): none when a statement or
    /// a block begins first.
    fn enclosing_call(&self, at: usize) -> Option<&str> {
        let bytes = self.text.as_bytes();
        let mut depth = 0usize;
        let mut i = at;
        while i > 0 {
            i -= 1;
            if !self.is_code(i) {
                continue;
            }
            match bytes[i] {
                b')' | b']' => depth += 1,
                b'(' | b'[' if depth > 0 => depth -= 1,
                b'(' => {
                    let callee = self.text[..i].trim_end();
                    let start = callee.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |s| s + 1);
                    return Some(&callee[start..]);
                }
                b'[' | b';' | b'{' | b'}' => return None,
                _ => {}
            }
        }
        None
    }
}

/// `TURNS_TABLE`, `AWS_ENDPOINT_URL_S3`: upper case, digits and at least
/// one underscore.
fn looks_like_a_variable(value: &str) -> bool {
    value.contains('_')
        && value.starts_with(|c: char| c.is_ascii_uppercase())
        && value.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_strings_and_test_modules_are_told_from_code() {
        let file = SourceFile::new(
            "x.rs".into(),
            r##"
// required("IN_A_COMMENT")
fn start() { let url = "http://x/{"; let c = '{'; let t: &'static str = r#"a"b"#; required("TURNS_TABLE"); }
fn twin() { Invalid { name: "NOT_A_READ" }; format!("{}", "NOT_READ_EITHER"); secret("A_VALUE", "A_VALUE_ID"); }
const S: Service = Service { endpoint_variable: "AWS_ENDPOINT_URL_KMS" };
#[cfg(test)]
mod tests { fn t() { optional("TEST_ONLY"); } }
fn after() { optional("AFTER_TESTS"); }
"##
            .into(),
        );
        let helpers = BTreeSet::from(["required".to_owned(), "optional".to_owned(), "secret".to_owned()]);
        let reads: Vec<(String, Option<String>)> =
            env_reads(&file, &helpers).into_iter().map(|read| (read.name, read.function)).collect();
        assert_eq!(
            reads,
            vec![
                ("TURNS_TABLE".into(), Some("start".into())),
                ("A_VALUE".into(), Some("twin".into())),
                ("A_VALUE_ID".into(), Some("twin".into())),
                ("AWS_ENDPOINT_URL_KMS".into(), None),
                ("AFTER_TESTS".into(), Some("after".into())),
            ]
        );
        assert!(file.calls("required") && !file.calls("start"));
    }
}
