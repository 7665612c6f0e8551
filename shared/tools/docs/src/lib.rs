//! The team's documents (runbooks, READMEs, postmortems) as tools: list,
//! read and search the files under one prefix of the artifact store.
//!
//! Paths are relative to that prefix and may not leave it: the model picks
//! names from `list_docs` results, never arbitrary keys. Reads and searches
//! are bounded in files and bytes.

use assistant_core::model::ToolSpec;
use assistant_core::ports::ArtifactStore;
use assistant_core::turn::ToolOutput;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tools_registry::{Effect, Tool, ToolDefinitionError, ToolError};

/// Files listed or searched at most.
pub const MAX_FILES: usize = 200;
/// Bytes read of one file at most.
pub const MAX_FILE_BYTES: usize = 512 * 1024;
/// Matching lines a search returns at most, and unless asked otherwise.
pub const MAX_MATCHES: usize = 40;
pub const DEFAULT_MATCHES: usize = 10;

const TIMEOUT: Duration = Duration::from_secs(20);

/// `list_docs`, `read_doc` and `search_docs` over `prefix` (e.g. `docs/`).
pub fn docs_tools(store: Arc<dyn ArtifactStore>, prefix: &str) -> Result<Vec<Tool>, ToolDefinitionError> {
    let prefix = Arc::<str>::from(prefix);
    let spec = |name: &str, description: &str, schema: Value| ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: schema,
    };
    let list = {
        let (store, prefix) = (store.clone(), prefix.clone());
        Tool::new(
            spec(
                "list_docs",
                "List the team's documents (runbooks, READMEs, postmortems), optionally under a folder.",
                json!({"type": "object", "properties": {"folder": {"type": "string", "description": "e.g. runbooks/"}}, "additionalProperties": false}),
            ),
            Effect::ReadOnly,
            TIMEOUT,
            move |input: Value| {
                let (store, prefix) = (store.clone(), prefix.clone());
                async move {
                    let folder = input["folder"].as_str().unwrap_or_default().to_owned();
                    let key = scoped(&prefix, &folder)?;
                    let files = store.list(&key, MAX_FILES).await.map_err(|err| err.to_string())?;
                    let files: Vec<Value> = files
                        .into_iter()
                        .map(|(key, bytes)| json!({"path": key[prefix.len()..], "bytes": bytes}))
                        .collect();
                    Ok(ToolOutput::Json(json!({ "files": files })))
                }
            },
        )?
    };
    let read = {
        let (store, prefix) = (store.clone(), prefix.clone());
        Tool::new(
            spec(
                "read_doc",
                "Read one document by the path list_docs gave.",
                json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false}),
            ),
            Effect::ReadOnly,
            TIMEOUT,
            move |input: Value| {
                let (store, prefix) = (store.clone(), prefix.clone());
                async move {
                    let path = input["path"].as_str().unwrap_or_default().to_owned();
                    let key = scoped(&prefix, &path)?;
                    match store.get(&key).await.map_err(|err| err.to_string())? {
                        Some(bytes) => Ok(ToolOutput::Text(text_of(&bytes))),
                        None => Err(format!("There is no document {path:?}; use list_docs to see what exists.").into()),
                    }
                }
            },
        )?
    };
    let search = {
        let (store, prefix) = (store, prefix);
        Tool::new(
            spec(
                "search_docs",
                "Search the team's documents. Returns the lines that best match the words (a word in the file's path counts too), best first.",
                json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "minLength": 2},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_MATCHES}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
            ),
            Effect::ReadOnly,
            TIMEOUT,
            move |input: Value| {
                let (store, prefix) = (store.clone(), prefix.clone());
                async move {
                    let query = input["query"].as_str().unwrap_or_default().to_lowercase();
                    let limit = input["limit"].as_u64().map_or(DEFAULT_MATCHES, |n| n as usize).min(MAX_MATCHES);
                    let words: Vec<&str> = query.split_whitespace().collect();
                    let files = store.list(&prefix, MAX_FILES).await.map_err(|err| err.to_string())?;
                    let mut scored = Vec::new();
                    for (key, _) in files {
                        let Some(bytes) = store.get(&key).await.map_err(|err| err.to_string())? else { continue };
                        let path = &key[prefix.len()..];
                        let path_lower = path.to_lowercase();
                        for (number, line) in text_of(&bytes).lines().enumerate() {
                            let lower = line.to_lowercase();
                            let in_line = words.iter().filter(|word| lower.contains(*word)).count();
                            let in_path = words.iter().filter(|word| path_lower.contains(*word)).count();
                            if in_line > 0 {
                                scored.push((in_line + in_path, path.to_owned(), number + 1, line.trim().to_owned()));
                            }
                        }
                    }
                    // Best first; ties in document order.
                    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| (&a.1, a.2).cmp(&(&b.1, b.2))));
                    let matches: Vec<Value> = scored
                        .into_iter()
                        .take(limit)
                        .map(|(_, path, line, text)| json!({"path": path, "line": line, "text": text}))
                        .collect();
                    Ok(ToolOutput::Json(json!({ "query": query, "matches": matches })))
                }
            },
        )?
    };
    Ok(vec![list, read, search])
}

/// The key for a path under `prefix`, refusing paths that would leave it.
fn scoped(prefix: &str, path: &str) -> Result<String, ToolError> {
    let path = path.trim_start_matches("./");
    if path.starts_with('/') || path.split('/').any(|part| part == "..") || path.contains('\\') {
        return Err(format!("{path:?} is not a document path; use a path from list_docs.").into());
    }
    Ok(format!("{prefix}{path}"))
}

fn text_of(bytes: &[u8]) -> String {
    let end = bytes.len().min(MAX_FILE_BYTES);
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use assistant_core::turn::{ToolStatus, ToolUse};
    use testkit::memory::MemoryArtifacts;
    use tools_registry::{ToolPolicy, ToolRegistry};

    const RUNBOOK: &str = "# Checkout\nIf the Pool is exhausted, restart the pods.\nCall #payments.";
    const POSTMORTEM: &str = "The pool was exhausted after deploy 37.";

    async fn registry() -> ToolRegistry {
        let store = Arc::new(MemoryArtifacts::default());
        store.put("docs/runbooks/checkout.md", RUNBOOK.into(), "text/markdown").await.unwrap();
        store.put("docs/postmortems/2025-10.md", POSTMORTEM.into(), "text/markdown").await.unwrap();
        store.put("turns/T1-Ev1/t1", b"not a document: pool exhausted".to_vec(), "text/plain").await.unwrap();
        ToolRegistry::new(docs_tools(store, "docs/").unwrap(), ToolPolicy::allow_all()).unwrap()
    }

    async fn run(registry: &ToolRegistry, name: &str, input: Value) -> (ToolStatus, ToolOutput) {
        let call = ToolUse { id: "t".into(), name: name.into(), input };
        let result = registry.run(&call, &slack::ChannelId::new("C1")).await;
        (result.status, result.output)
    }

    #[tokio::test]
    async fn lists_only_documents_with_paths_relative_to_the_prefix() {
        let registry = registry().await;
        let (status, output) = run(&registry, "list_docs", json!({})).await;
        assert_eq!(status, ToolStatus::Success);
        assert_eq!(
            output,
            ToolOutput::Json(json!({"files": [
                {"path": "postmortems/2025-10.md", "bytes": POSTMORTEM.len()},
                {"path": "runbooks/checkout.md", "bytes": RUNBOOK.len()}
            ]}))
        );
        let (_, output) = run(&registry, "list_docs", json!({"folder": "runbooks/"})).await;
        assert_eq!(
            output,
            ToolOutput::Json(json!({"files": [{"path": "runbooks/checkout.md", "bytes": RUNBOOK.len()}]}))
        );
    }

    #[tokio::test]
    async fn reads_a_document_and_refuses_paths_outside_the_prefix() {
        let registry = registry().await;
        let (status, output) = run(&registry, "read_doc", json!({"path": "runbooks/checkout.md"})).await;
        assert_eq!(status, ToolStatus::Success);
        assert!(matches!(output, ToolOutput::Text(ref t) if t.starts_with("# Checkout")));
        for escape in ["../turns/T1-Ev1/t1", "/etc/passwd", "runbooks/../../turns/T1-Ev1/t1"] {
            let (status, _) = run(&registry, "read_doc", json!({"path": escape})).await;
            assert_eq!(status, ToolStatus::Error, "{escape}");
        }
        let (status, output) = run(&registry, "read_doc", json!({"path": "nope.md"})).await;
        assert_eq!(status, ToolStatus::Error);
        assert!(matches!(output, ToolOutput::Text(ref t) if t.contains("list_docs")));
    }

    #[tokio::test]
    async fn search_finds_lines_with_every_word_in_documents_only() {
        let registry = registry().await;
        let (_, output) = run(&registry, "search_docs", json!({"query": "pool EXHAUSTED"})).await;
        let ToolOutput::Json(found) = output else { panic!("json") };
        let paths: Vec<&str> =
            found["matches"].as_array().unwrap().iter().map(|m| m["path"].as_str().unwrap()).collect();
        assert_eq!(paths, ["postmortems/2025-10.md", "runbooks/checkout.md"], "not the turn artifact");
        assert_eq!(found["matches"][1]["line"], 2);
    }
}
