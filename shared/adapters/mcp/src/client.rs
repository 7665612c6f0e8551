//! What this client offers a server at `initialize`, and what it does with
//! the server's own requests while a call runs.
//!
//! **Links (elicitation in URL mode).** Offered only to a server whose
//! configuration says `elicitation: true`. A request to open a link goes to
//! the person whose call is running on the session
//! ([`assistant_core::mcp::Elicitor`]): shown to them alone it is
//! `accept`ed (they open it or not; the server learns the outcome out of
//! band), a link that may not be shown is `decline`d. A session shared by
//! calls of two people at once cannot tell whose call asked: then the
//! request is declined, never shown to the wrong person. A form request is
//! declined (forms are not offered).

use assistant_core::mcp::{Elicitor, LinkRequest};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    Implementation, UrlElicitationCapability,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, RoleClient};
use std::sync::{Arc, Mutex};

/// A session's client side.
pub(crate) struct Client {
    info: ClientConfig,
    /// The configuration's name for the server, as people see it.
    server: String,
    /// Where the links of the calls running now go, one entry per call.
    asking: Mutex<Vec<Arc<dyn Elicitor>>>,
}

impl Client {
    pub(crate) fn new(server: &str, elicitation: bool) -> Self {
        let mut capabilities = ClientCapabilities::default();
        if elicitation {
            capabilities.elicitation = Some(ElicitationCapability::new().with_url(UrlElicitationCapability::new()));
        }
        let info = ClientConfig::new(capabilities, Implementation::new("slack-assistant", env!("CARGO_PKG_VERSION")));
        Self { info, server: server.to_owned(), asking: Mutex::default() }
    }

    /// `elicitor` hears the server's requests while the returned guard lives
    /// (the call runs).
    pub(crate) fn asking(&self, elicitor: Arc<dyn Elicitor>) -> Asking<'_> {
        self.asking.lock().expect("asking lock").push(elicitor.clone());
        Asking { client: self, elicitor }
    }

    /// The one person whose calls run now, if there is exactly one.
    fn only_asker(&self) -> Option<Arc<dyn Elicitor>> {
        let asking = self.asking.lock().expect("asking lock");
        let first = asking.first()?;
        asking.iter().all(|other| Arc::ptr_eq(other, first)).then(|| first.clone())
    }
}

/// A call's hold on the session's requests; dropped when the call ends.
pub(crate) struct Asking<'a> {
    client: &'a Client,
    elicitor: Arc<dyn Elicitor>,
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        let mut asking = self.client.asking.lock().expect("asking lock");
        if let Some(at) = asking.iter().position(|held| Arc::ptr_eq(held, &self.elicitor)) {
            asking.remove(at);
        }
    }
}

fn answer(action: ElicitationAction) -> Result<ElicitResult, rmcp::ErrorData> {
    Ok(ElicitResult::new(action))
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let ElicitRequestParams::UrlElicitationParams { message, url, elicitation_id, .. } = request else {
            tracing::info!(server = %self.server, "a form elicitation declined: forms are not offered");
            return answer(ElicitationAction::Decline);
        };
        let Some(elicitor) = self.only_asker() else {
            tracing::warn!(server = %self.server, "a link asked for with no single call running: declined");
            return answer(ElicitationAction::Decline);
        };
        let shown = elicitor.show_link(&self.server, &LinkRequest { url, message, elicitation_id }).await;
        answer(if shown { ElicitationAction::Accept } else { ElicitationAction::Decline })
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
    fn links_are_offered_only_where_configured() {
        assert!(Client::new("a", true).info.capabilities.elicitation.as_ref().is_some_and(|e| e.url.is_some()));
        assert!(Client::new("a", true).info.capabilities.elicitation.as_ref().is_some_and(|e| e.form.is_none()));
        assert!(Client::new("a", false).info.capabilities.elicitation.is_none());
    }

    #[test]
    fn a_link_goes_to_the_one_person_whose_call_runs_and_to_nobody_when_two_run() {
        let client = Client::new("a", true);
        assert!(client.only_asker().is_none(), "no call: nobody");
        let (alice, bob): (Arc<dyn Elicitor>, Arc<dyn Elicitor>) = (Arc::new(Shows(true)), Arc::new(Shows(true)));
        let first = client.asking(alice.clone());
        assert!(client.only_asker().is_some_and(|asker| Arc::ptr_eq(&asker, &alice)));
        {
            let _same = client.asking(alice.clone());
            assert!(client.only_asker().is_some(), "two calls of one person: still theirs");
            let _other = client.asking(bob);
            assert!(client.only_asker().is_none(), "two people: nobody can be told apart");
        }
        assert!(client.only_asker().is_some_and(|asker| Arc::ptr_eq(&asker, &alice)), "the others ended");
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
