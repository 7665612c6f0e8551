//! What tests (and the local runner, which is no Lambda binary) use in
//! place of the outside world. Functions never depend on this crate.
//!
//! - [`memory`]: in-memory doubles of the core's ports, keeping the
//!   semantics of the real adapters (claims expire and are atomic, records
//!   are versioned and serialized as a real store keeps them).
//! - [`mcp_memory`]: MCP servers in memory (serving, refusing, hanging).
//! - [`slack_memory`]: Slack as the responder sees it, in memory, with
//!   scripted failures.
//! - [`agent_memory`]: Slack's agent surface (prompts, titles, streams) as
//!   the worker sees it, in memory, refusing what Slack refuses.
//! - [`store_contract`]: what every turn store and delivery log must do,
//!   run against memory here and against DynamoDB in `tests/`.
//! - [`signed`]: a request signed as Slack signs it; [`sigv4_check`]: an
//!   AWS SigV4 signature recomputed from the request received.
//! - [`signals_memory`]: CloudWatch, Logs Insights and knowledge bases in
//!   memory.
//! - [`fixtures`]: captured-shape Slack payloads.
//! - The one of each double the tests share: [`model`] (scripted and
//!   paced models), [`deadline`] (an invocation's time), [`clock`] (a
//!   clock that moves when told); [`serve`], a fake's router served on
//!   loopback.

pub mod agent_memory;
pub mod clock;
pub mod deadline;
pub mod fixtures;
pub mod mcp_memory;
pub mod memory;
pub mod model;
pub mod sign_in;
pub mod signals_memory;
pub mod signed;
pub mod sigv4_check;
pub mod slack_memory;
pub mod store_contract;

/// Serves `app` (a fake AWS or vendor API) on a free loopback port for the
/// rest of the test; its base URL, `http://127.0.0.1:port`.
pub async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a free loopback port");
    let url = format!("http://{}", listener.local_addr().expect("a bound address"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("the fake serves") });
    url
}
