//! A server's resources (`"resources": true`): one more tool,
//! `{server}__read_resource`, that reads a resource by its URI with that
//! server's own `resources/read`, and resource links in the server's tool
//! results named with that tool, so the model can follow them.
//!
//! The URI is the model's, so it may come from anything the model read:
//! it goes to the server the tool names and nowhere else, and nothing in
//! the worker fetches it (a `file://` or `http://169.254.169.254/…` URI is
//! the server's to refuse or serve, like any other of its resources; a
//! server that serves such URIs is trusted with them by its
//! configuration). Refused before any server sees it: a URI without a
//! scheme, one longer than [`MAX_URI_CHARS`], or with control characters.
//!
//! A resource's text is the result, as a tool result's text is: the
//! registry redacts it, and the worker's reading budget bounds what the
//! model reads of it (the rest kept in the artifact store, readable with
//! `read_result`); the adapter refuses an answer past its size limit.
//! Binary parts are named and sized, never pasted. A server's error is an
//! error result the model reads. Reading is read-only, so the tool runs at
//! once, unless the server's `requires_approval` is `true`.

use super::{McpServerConfig, RequiresApproval, ServerSession, call_error, size, timeout};
use assistant_core::mcp::McpResourcePart;
use assistant_core::model::ToolSpec;
use assistant_core::turn::ToolOutput;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tools_registry::{CallContext, Effect, RunTool, Tool, ToolFuture};

/// The tool's name after `{server}__`.
pub(super) const READ_RESOURCE: &str = "read_resource";
/// The longest URI passed on (characters).
pub const MAX_URI_CHARS: usize = 2_048;

/// The server's `read_resource` tool, named `name`.
pub(super) fn read_resource_tool(config: &McpServerConfig, name: String, session: Arc<ServerSession>) -> Tool {
    let spec = ToolSpec {
        name,
        description: format!(
            "Reads a resource of the MCP server {} by its URI (one its tools' results link to or name). Only that \
             server is asked.",
            config.name
        ),
        input_schema: json!({
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "The resource's URI, as the server gave it.",
                                   "maxLength": MAX_URI_CHARS}},
            "required": ["uri"],
            "additionalProperties": false
        }),
    };
    let effect = match config.requires_approval {
        RequiresApproval::Always => Effect::ChangesThings,
        RequiresApproval::Auto | RequiresApproval::Never => Effect::ReadOnly,
    };
    let runner = ReadResource { session, timeout: timeout(config) };
    Tool::new(spec, effect, timeout(config), runner)
        .expect("the read_resource schema compiles")
        .with_approvers(config.approvers.clone())
        .grantable_as((config.thread_grants != Some(false)).then(|| format!("{}__*", config.name)))
}

struct ReadResource {
    session: Arc<ServerSession>,
    timeout: Duration,
}

impl RunTool for ReadResource {
    fn run(&self, input: Value, _context: CallContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let uri = input.get("uri").and_then(Value::as_str).unwrap_or_default();
            checked_uri(uri)?;
            let session = self.session.for_call().await?;
            let server = &self.session.endpoint.name;
            let parts = session.read_resource(uri, self.timeout).await.map_err(|err| call_error(server, err, false))?;
            Ok(ToolOutput::Text(shown(uri, &parts)))
        })
    }
}

/// `Err` with why when `uri` is not passed on.
fn checked_uri(uri: &str) -> Result<(), String> {
    if uri.chars().count() > MAX_URI_CHARS {
        return Err(format!("The URI is longer than {MAX_URI_CHARS} characters."));
    }
    if uri.chars().any(char::is_control) {
        return Err("The URI has control characters.".into());
    }
    match url::Url::parse(uri) {
        Ok(_) => Ok(()),
        Err(_) => Err("That is not a URI (scheme:rest, as the server's resource links give it).".into()),
    }
}

/// What the model reads of a resource: one text part as it is; several
/// each under its URI; binary parts named and sized.
fn shown(asked: &str, parts: &[McpResourcePart]) -> String {
    match parts {
        [] => format!("The resource {asked} is empty."),
        [McpResourcePart::Text { text, .. }] => text.clone(),
        parts => parts
            .iter()
            .map(|part| match part {
                McpResourcePart::Text { uri, mime_type, text } => {
                    format!(
                        "--- {uri}{} ---\n{text}",
                        mime_type.as_deref().map(|m| format!(" ({m})")).unwrap_or_default()
                    )
                }
                McpResourcePart::Blob { uri, mime_type, bytes } => format!(
                    "[binary: {uri}, {}{} (not shown)]",
                    mime_type.as_deref().map(|m| format!("{m}, ")).unwrap_or_default(),
                    size(*bytes)
                ),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}
