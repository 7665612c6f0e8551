//! `GET /oauth/callback` on the ingress's function URL: where a provider
//! sends a person's browser back after they signed in (or declined).
//!
//! No Slack signature here: the `state` is the proof. It names a sign-in
//! the worker opened for one person's turn, and it is taken once (the code
//! stored beside it, for the worker's exchange); only then is the worker
//! told, by a message naming the state, never the code. The same callback
//! again (a reload, or a retry after the take's answer was lost) finds its
//! own take and passes it on again, which the worker handles once. A
//! forged, replayed, burned or late state changes nothing, and neither
//! does a provider's error (`?error=access_denied`): the state stays
//! usable, so the person can click Connect again.
//!
//! The answer is a small page with no script, no outside resource and no
//! referrer (the URL holds the code), never cached.

use assistant_core::messages::SignedIn;
use assistant_core::oauth::{ConnectStates, StateRefused};
use assistant_core::ports::WorkQueue;
use assistant_core::{Clock, WorkMessage};
use std::sync::Arc;
use tracing::{info, warn};

/// The path providers redirect to (the deployment's `OAUTH_REDIRECT_URI`).
pub const CALLBACK_PATH: &str = "/oauth/callback";

/// The longest code or error a callback may carry.
const MAX_PARAM: usize = 2_048;

/// The page the person's browser shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub status: u16,
    pub title: &'static str,
    pub text: String,
}

impl Page {
    fn new(status: u16, title: &'static str, text: impl Into<String>) -> Self {
        Self { status, title, text: text.into() }
    }

    /// The page as HTML, its text escaped.
    pub fn html(&self) -> String {
        format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
             content=\"width=device-width\"><title>{title}</title></head><body style=\"font-family: sans-serif; \
             max-width: 36em; margin: 4em auto\"><h1>{title}</h1><p>{text}</p></body></html>",
            title = escape(self.title),
            text = escape(&self.text),
        )
    }

    /// The headers the page goes with.
    pub fn headers() -> [(&'static str, &'static str); 5] {
        [
            ("content-type", "text/html; charset=utf-8"),
            ("cache-control", "no-store"),
            ("referrer-policy", "no-referrer"),
            ("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"),
            ("x-content-type-options", "nosniff"),
        ]
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

pub struct Callback {
    states: ConnectStates,
    queue: Arc<dyn WorkQueue>,
    clock: Arc<dyn Clock>,
}

impl Callback {
    pub fn new(states: ConnectStates, queue: Arc<dyn WorkQueue>, clock: Arc<dyn Clock>) -> Self {
        Self { states, queue, clock }
    }

    /// The callback's query string in, the page out.
    pub async fn handle(&self, query: Option<&str>) -> Page {
        let (mut state, mut code, mut error) = (None, None, None);
        for (name, value) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            let slot = match name.as_ref() {
                "state" => &mut state,
                "code" => &mut code,
                "error" => &mut error,
                _ => continue,
            };
            if slot.is_some() || value.len() > MAX_PARAM {
                warn!("a sign-in callback with a repeated or oversized parameter: refused");
                return Page::new(400, "Sign-in not completed", "This link is not one a sign-in sends back.");
            }
            *slot = Some(value.into_owned());
        }
        if let Some(error) = error {
            // A short code only: the provider's words stay out of the page and the logs.
            let error: String = error.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(64).collect();
            info!(error, "the provider sent the person back without a sign-in: nothing changed");
            return Page::new(
                400,
                "Sign-in not completed",
                format!(
                    "The sign-in was not completed ({error}). Nothing changed. Go back to Slack and click Connect \
                     again if you want to."
                ),
            );
        }
        let (Some(state), Some(code)) = (state, code) else {
            return Page::new(400, "Sign-in not completed", "This link is missing its sign-in details.");
        };
        let record = match self.states.take(&state, &code, self.clock.now_unix()).await {
            Ok(record) => record,
            Err(refused) => return refused_page(&refused),
        };
        let message =
            WorkMessage::SignedIn(SignedIn { state, turn_id: record.turn_id.clone(), thread: record.thread.clone() });
        if let Err(err) = self.queue.enqueue(&message).await {
            warn!(error = %err, "a sign-in was taken but not passed on: the person may reload");
            return Page::new(
                503,
                "Almost there",
                "Your sign-in arrived but could not be passed on just now. Reload this page in a moment.",
            );
        }
        info!(provider = %record.provider, user = %record.user, "sign-in came back: passed to the worker");
        Page::new(
            200,
            "Connected",
            format!(
                "You are signed in to {}. Go back to Slack: your question continues in its thread. You can close \
                 this page.",
                record.provider
            ),
        )
    }
}

fn refused_page(refused: &StateRefused) -> Page {
    warn!(reason = %refused, "a sign-in callback refused: nothing changed");
    match refused {
        StateRefused::Unknown => Page::new(400, "Sign-in not completed", "This sign-in link is not one this bot made."),
        StateRefused::Replayed => Page::new(
            409,
            "Sign-in not completed",
            "This sign-in link was already used, or it was meant for someone else. Ask again in Slack to get a new one.",
        ),
        StateRefused::Expired => Page::new(
            410,
            "Sign-in not completed",
            "This sign-in link expired (they last 10 minutes). Ask again in Slack to get a new one.",
        ),
        StateRefused::Store(_) => Page::new(
            503,
            "Sign-in not completed",
            "Your sign-in could not be checked just now. Reload this page in a moment.",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use assistant_core::FixedClock;
    use assistant_core::oauth::ConnectStates;
    use assistant_core::turn::TurnId;
    use slack::{ChannelId, TeamId, Ts, UserId};
    use testkit::memory::{MemoryQueue, MemoryRecords};

    const NOW: i64 = 1_700_000_000;

    fn thread() -> assistant_core::ThreadRef {
        assistant_core::ThreadRef {
            team: TeamId::new("T1"),
            channel: ChannelId::new("C1"),
            thread_ts: Ts::new("1700000000.000100"),
        }
    }

    #[tokio::test]
    async fn a_callback_takes_its_state_once_and_hands_on_only_the_state() {
        let records = Arc::new(MemoryRecords::default());
        let states = ConnectStates::new(records.clone());
        let queue = Arc::new(MemoryQueue::default());
        let callback = Callback::new(states.clone(), queue.clone(), Arc::new(FixedClock::at(NOW + 5)));
        let turn = TurnId::new("T1-Ev1");
        let (state, _) = states.open(&thread(), &UserId::new("U1"), &turn, "tracker", NOW).await.unwrap();

        let query = format!("code=the-code&state={state}");
        let page = callback.handle(Some(&query)).await;
        assert_eq!((page.status, page.title), (200, "Connected"), "{page:?}");
        let sent = queue.messages();
        assert_eq!(sent.len(), 1);
        let WorkMessage::SignedIn(signed_in) = &sent[0] else { panic!("{sent:?}") };
        assert_eq!((&signed_in.state, &signed_in.turn_id), (&state, &turn));
        assert!(!sent[0].encode().contains("the-code"), "the code never travels on the queue");

        // A reload passes it on again (the worker handles it once), also after the queue
        // failed; another code is a replay.
        queue.set_failing(true);
        assert_eq!(callback.handle(Some(&query)).await.status, 503);
        queue.set_failing(false);
        assert_eq!(callback.handle(Some(&query)).await.status, 200);
        assert_eq!(callback.handle(Some(&format!("code=other&state={state}"))).await.status, 409);
        assert_eq!(queue.messages().len(), 2);
    }

    #[tokio::test]
    async fn forged_late_declined_and_malformed_callbacks_change_nothing() {
        let records = Arc::new(MemoryRecords::default());
        let states = ConnectStates::new(records.clone());
        let queue = Arc::new(MemoryQueue::default());
        let late = Callback::new(states.clone(), queue.clone(), Arc::new(FixedClock::at(NOW + 601)));
        let (state, _) = states.open(&thread(), &UserId::new("U1"), &TurnId::new("T1-Ev1"), "p", NOW).await.unwrap();
        assert_eq!(late.handle(Some(&format!("code=c&state={state}"))).await.status, 410);

        let callback = Callback::new(states.clone(), queue.clone(), Arc::new(FixedClock::at(NOW)));
        let forged = assistant_core::oauth::random_token(32);
        for query in [
            format!("code=c&state={forged}"),
            "code=c&state=%3Cscript%3E".to_owned(),
            format!("state={state}"),
            format!("code=a&code=b&state={state}"),
            format!("code={}&state={state}", "x".repeat(3_000)),
            String::new(),
        ] {
            let page = callback.handle(Some(&query)).await;
            assert!(page.status >= 400, "{query}: {page:?}");
        }
        let declined = callback.handle(Some(&format!("error=access_denied%3Cb%3E&state={state}"))).await;
        assert_eq!(declined.status, 400);
        assert!(declined.text.contains("(access_deniedb)") && !declined.html().contains("<b>"), "{declined:?}");
        assert!(queue.messages().is_empty(), "nothing started");
        // The state survived all of it: the person can still finish.
        assert_eq!(callback.handle(Some(&format!("code=c&state={state}"))).await.status, 200);
    }
}
