//! What the model sees, inspectable (`local --tools`): for a channel, every
//! tool offered there with its JSON Schema exactly as the Converse request
//! carries it, whether it runs at once or waits for whom to approve it,
//! and every tool not offered, with why: the policy rule that leaves it
//! out, the `deny` glob that names it, its MCP server being down, or the
//! configuration not turning it on.

use crate::Worker;
use serde_json::json;
use slack::ChannelId;
use std::fmt::Write;
use tools_registry::{Asker, Effect, Verdict};

/// The report for `asker` (a channel, and the person when given), as text
/// for a terminal.
pub fn tools_report(worker: &Worker, asker: &Asker) -> String {
    let channel: &ChannelId = &asker.channel;
    let registry = &worker.tools;
    let policy = registry.policy();
    let mut out = String::new();
    let rule_name = |index: usize| {
        policy
            .rule(index)
            .map(|rule| format!("tool_policy[{index}] (channels {:?})", rule.channels))
            .unwrap_or_else(|| "the built-in rule".to_owned())
    };
    match &asker.user {
        Some(user) => {
            let _ = writeln!(out, "== tools in {channel} for {user} (groups: {}) ==", asker.groups.join(", "));
        }
        None => {
            let _ = writeln!(out, "== tools in {channel} ==");
        }
    }
    let mut offered = Vec::new();
    let mut refused = Vec::new();
    for tool in registry.all() {
        let name = &tool.spec().name;
        match policy.verdict(asker, name) {
            Verdict::Allowed { rule } => offered.push((tool, rule)),
            // Past the rules: "the built-in rule".
            Verdict::ThreadOwn => offered.push((tool, usize::MAX)),
            Verdict::NoRule => {
                refused.push((name.clone(), "no tool_policy rule matches this channel and person".to_owned()))
            }
            Verdict::NotListed { rule } => refused.push((name.clone(), format!("not in {}.tools", rule_name(rule)))),
            Verdict::Denied { rule, glob } => {
                refused.push((name.clone(), format!("denied by {}.deny {glob:?}", rule_name(rule))))
            }
        }
    }
    for (tool, rule) in &offered {
        let spec = tool.spec();
        let mode = match tool.effect() {
            Effect::ReadOnly => "runs at once (read-only)".to_owned(),
            Effect::ChangesThings => {
                let approvers = worker.approvals.approvers_for(registry.approval_rule(asker, &spec.name));
                let approvers: Vec<String> = approvers.iter().map(ToString::to_string).collect();
                let red = if tool.is_destructive() { ", destructive (red confirmation)" } else { "" };
                format!("waits for approval by {}{red}", approvers.join(", "))
            }
        };
        let _ = writeln!(out, "\n✓ {} ({}): {mode}", spec.name, rule_name(*rule));
        // The Converse `toolSpec` as the Bedrock adapter sends it.
        let sent = json!({"toolSpec": {"name": spec.name, "description": spec.description, "inputSchema": {"json": spec.input_schema}}});
        let pretty = serde_json::to_string_pretty(&sent).unwrap_or_default();
        for line in pretty.lines() {
            let _ = writeln!(out, "    {line}");
        }
    }
    if offered.is_empty() {
        let _ = writeln!(out, "\n(no tools are offered here: the model answers from the conversation alone)");
    }
    refused.extend(worker.unoffered.iter().map(|unoffered| (unoffered.name.clone(), unoffered.reason.clone())));
    if !refused.is_empty() {
        let _ = writeln!(out, "\nnot offered:");
        for (name, reason) in refused {
            let _ = writeln!(out, "✗ {name}: {reason}");
        }
    }
    out
}
