//! What this client offers a server at `initialize`, what it does with the
//! server's own requests while a call runs, and the notices it counts
//! (`notifications/tools/list_changed`).
//!
//! **Elicitation** (links and forms) is offered only to a server whose
//! configuration says `elicitation: true`. A request goes to the person
//! whose call is running on the session ([`assistant_core::mcp::Elicitor`]):
//!
//! - a link, shown to them alone, is `accept`ed (they open it or not; the
//!   server learns the outcome out of band); a link that may not be shown
//!   is `decline`d;
//! - a form is put to them and waited for until the call's time is nearly
//!   out (a few seconds are kept for the server's answer): their answer is
//!   `accept` with its content, their refusal `decline`, no answer in time
//!   `cancel`.
//!
//! A session shared by calls of two people at once cannot tell whose call
//! asked: then the request is declined, never put to the wrong person.

use assistant_core::mcp::{Elicitor, FormAnswer, LinkRequest};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, Implementation, UrlElicitationCapability,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Kept of a call's time for the server to answer after a form is
/// answered (or given up on).
const SERVERS_TURN: Duration = Duration::from_secs(3);

/// A call running on the session: its number, where its requests go, and
/// when it is cut off.
type Running = (u64, Arc<dyn Elicitor>, Instant);

/// A session's client side.
pub(crate) struct Client {
    info: ClientConfig,
    /// The configuration's name for the server, as people see it.
    server: String,
    /// The calls running now (each by a number of its own): where their
    /// requests go, and when each call is cut off.
    asking: Mutex<Vec<Running>>,
    /// The number the next call gets.
    calls: AtomicU64,
    /// How many times the server said its tools changed
    /// (`notifications/tools/list_changed`).
    tool_list_changes: AtomicU64,
}

impl Client {
    pub(crate) fn new(server: &str, elicitation: bool) -> Self {
        let mut capabilities = ClientCapabilities::default();
        if elicitation {
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_url(UrlElicitationCapability::new())
                    .with_form(FormElicitationCapability::new()),
            );
        }
        let info = ClientConfig::new(capabilities, Implementation::new("slack-assistant", env!("CARGO_PKG_VERSION")));
        Self {
            info,
            server: server.to_owned(),
            asking: Mutex::default(),
            calls: AtomicU64::default(),
            tool_list_changes: AtomicU64::default(),
        }
    }

    /// `elicitor` hears the server's requests while the returned guard lives
    /// (the call runs, until `cut_off`).
    pub(crate) fn asking(&self, elicitor: Arc<dyn Elicitor>, cut_off: Instant) -> Asking<'_> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        self.asking.lock().expect("asking lock").push((call, elicitor, cut_off));
        Asking { client: self, call }
    }

    /// How many times the server said its tools changed, so far.
    pub(crate) fn tool_list_changes(&self) -> u64 {
        self.tool_list_changes.load(Ordering::SeqCst)
    }

    /// The one person whose calls run now, if there is exactly one, and
    /// when the first of their calls is cut off.
    fn only_asker(&self) -> Option<(Arc<dyn Elicitor>, Instant)> {
        let asking = self.asking.lock().expect("asking lock");
        let (_, first, _) = asking.first()?;
        if !asking.iter().all(|(_, other, _)| Arc::ptr_eq(other, first)) {
            return None;
        }
        let cut_off = asking.iter().map(|(_, _, cut_off)| *cut_off).min()?;
        Some((first.clone(), cut_off))
    }
}

/// A call's hold on the session's requests; dropped when the call ends.
pub(crate) struct Asking<'a> {
    client: &'a Client,
    call: u64,
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        self.client.asking.lock().expect("asking lock").retain(|(call, _, _)| *call != self.call);
    }
}

fn answer(action: ElicitationAction) -> Result<ElicitResult, rmcp::ErrorData> {
    Ok(ElicitResult::new(action))
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tool_list_changes.fetch_add(1, Ordering::SeqCst);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let Some((elicitor, cut_off)) = self.only_asker() else {
            tracing::warn!(server = %self.server, "a server asked with no single person's call running: declined");
            return answer(ElicitationAction::Decline);
        };
        match request {
            ElicitRequestParams::UrlElicitationParams { message, url, elicitation_id, .. } => {
                let shown = elicitor.show_link(&self.server, &LinkRequest { url, message, elicitation_id }).await;
                answer(if shown { ElicitationAction::Accept } else { ElicitationAction::Decline })
            }
            ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
                let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
                let wait = cut_off.saturating_duration_since(Instant::now()).saturating_sub(SERVERS_TURN);
                match elicitor.ask_form(&self.server, &message, &schema, wait).await {
                    FormAnswer::Accepted(content) => {
                        Ok(ElicitResult::new(ElicitationAction::Accept)
                            .with_content(serde_json::Value::Object(content)))
                    }
                    FormAnswer::Declined => answer(ElicitationAction::Decline),
                    FormAnswer::Cancelled => answer(ElicitationAction::Cancel),
                }
            }
            // A mode newer than this client: not put to anyone.
            _ => answer(ElicitationAction::Decline),
        }
    }
}

/// The links a `URLElicitationRequiredError` (JSON-RPC -32042) names, from
/// its `data.elicitations`.
pub(crate) fn links_required(error: &rmcp::ErrorData) -> Option<Vec<LinkRequest>> {
    const URL_ELICITATION_REQUIRED: i32 = -32042;
    if error.code.0 != URL_ELICITATION_REQUIRED {
        return None;
    }
    let listed = error.data.as_ref()?.get("elicitations")?.as_array()?;
    let text = |value: &serde_json::Value, key: &str| value.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let links: Vec<LinkRequest> = listed
        .iter()
        .filter(|request| request.get("mode").and_then(|mode| mode.as_str()) == Some("url"))
        .filter_map(|request| {
            Some(LinkRequest {
                url: text(request, "url")?,
                message: text(request, "message").unwrap_or_default(),
                elicitation_id: text(request, "elicitationId").unwrap_or_default(),
            })
        })
        .collect();
    (!links.is_empty()).then_some(links)
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use serde_json::json;

    struct Shows(bool);

    #[async_trait]
    impl Elicitor for Shows {
        async fn show_link(&self, _server: &str, _request: &LinkRequest) -> bool {
            self.0
        }
    }

    #[test]
    fn links_and_forms_are_offered_only_where_configured() {
        let offered = Client::new("a", true).info.capabilities.elicitation.unwrap();
        assert!(offered.url.is_some() && offered.form.is_some());
        assert!(Client::new("a", false).info.capabilities.elicitation.is_none());
    }

    #[test]
    fn a_link_goes_to_the_one_person_whose_call_runs_and_to_nobody_when_two_run() {
        let client = Client::new("a", true);
        assert!(client.only_asker().is_none(), "no call: nobody");
        let (alice, bob): (Arc<dyn Elicitor>, Arc<dyn Elicitor>) = (Arc::new(Shows(true)), Arc::new(Shows(true)));
        let (soon, later) = (Instant::now() + Duration::from_secs(10), Instant::now() + Duration::from_secs(60));
        let first = client.asking(alice.clone(), later);
        assert!(client.only_asker().is_some_and(|(asker, _)| Arc::ptr_eq(&asker, &alice)));
        {
            let _same = client.asking(alice.clone(), soon);
            let (_, cut_off) = client.only_asker().expect("two calls of one person: still theirs");
            assert_eq!(cut_off, soon, "the first of their calls to be cut off");
            let _other = client.asking(bob, later);
            assert!(client.only_asker().is_none(), "two people: nobody can be told apart");
        }
        assert!(client.only_asker().is_some_and(|(asker, cut)| Arc::ptr_eq(&asker, &alice) && cut == later));
        drop(first);
        assert!(client.only_asker().is_none());
    }

    #[test]
    fn a_url_elicitation_required_error_names_its_links_and_other_errors_none() {
        let error = rmcp::ErrorData::new(
            rmcp::model::ErrorCode(-32042),
            "This request requires more information.",
            Some(json!({"elicitations": [
                {"mode": "url", "url": "https://modelcontextprotocol.io", "message": "Sign in", "elicitationId": "e1"},
                {"mode": "form", "message": "ignored"}
            ]})),
        );
        let links = links_required(&error).unwrap();
        assert_eq!(
            links,
            [LinkRequest {
                url: "https://modelcontextprotocol.io".into(),
                message: "Sign in".into(),
                elicitation_id: "e1".into()
            }]
        );
        let other = rmcp::ErrorData::new(rmcp::model::ErrorCode(-32603), "boom", None);
        assert!(links_required(&other).is_none());
        let empty = rmcp::ErrorData::new(rmcp::model::ErrorCode(-32042), "x", Some(json!({"elicitations": []})));
        assert!(links_required(&empty).is_none());
    }
}
