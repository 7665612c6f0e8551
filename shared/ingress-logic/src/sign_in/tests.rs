use super::*;
use assistant_core::oauth::{OAuthProvider, SignInOutcome};
use assistant_core::turn::TurnId;
use slack::{ChannelId, SigningSecret, TeamId, Ts, UserId};
use testkit::clock::ManualClock;
use testkit::memory::{LostAnswer, MemoryQueue, MemoryRecords};
use url::Url;

const NOW: i64 = 1_700_000_000;
const ISSUER: &str = "https://id.example.com";

fn thread() -> assistant_core::ThreadRef {
    assistant_core::ThreadRef {
        team: TeamId::new("T1"),
        channel: ChannelId::new("C1"),
        thread_ts: Ts::new("1700000000.000100"),
    }
}

fn provider(name: &str, sends_iss: bool) -> OAuthProvider {
    OAuthProvider {
        name: name.into(),
        authorization_endpoint: Url::parse(&format!("{ISSUER}/authorize")).unwrap(),
        token_endpoint: Url::parse(&format!("{ISSUER}/token")).unwrap(),
        revocation_endpoint: None,
        client_id: "bot".into(),
        client_secret: None,
        scopes: vec!["openid".into()],
        redirect_uri: Url::parse(&format!("https://bot.example/oauth/callback/{name}")).unwrap(),
        resource: None,
        issuer: Some(Url::parse(ISSUER).unwrap()),
        issuer_sends_iss: sends_iss,
    }
}

struct Given {
    records: Arc<MemoryRecords>,
    states: ConnectStates,
    queue: Arc<MemoryQueue>,
    pages: SignInPages,
}

fn key() -> BrowserKey {
    BrowserKey::new(&SigningSecret::new("8f742231b10e8888abcd99yyyzzz85a5").unwrap())
}

fn given(at: i64) -> Given {
    let records = Arc::new(MemoryRecords::default());
    let states = ConnectStates::new(records.clone());
    let queue = Arc::new(MemoryQueue::default());
    let pages = SignInPages::new(states.clone(), queue.clone(), Arc::new(ManualClock::at(at)), key());
    Given { records, states, queue, pages }
}

impl Given {
    /// The same sign-ins, with the pages' clock at `at`.
    fn later(&self, at: i64) -> Given {
        let pages = SignInPages::new(self.states.clone(), self.queue.clone(), Arc::new(ManualClock::at(at)), key());
        Given { records: self.records.clone(), states: self.states.clone(), queue: self.queue.clone(), pages }
    }

    /// A sign-in whose person clicked their Connect button in Slack.
    async fn open(&self, provider: &OAuthProvider) -> String {
        let state = self.open_unclicked(provider).await;
        assert!(self.states.arm(&state, NOW).await.unwrap());
        state
    }

    async fn open_unclicked(&self, provider: &OAuthProvider) -> String {
        let turn = TurnId::new("T1-Ev1");
        self.states.open(&thread(), &UserId::new("U1"), &turn, provider, NOW).await.unwrap().0
    }

    async fn get(&self, path: &str, query: &str, cookies: &[String]) -> Answer {
        self.pages.handle(BrowserRequest { path, query: Some(query), cookies }).await
    }

    /// Opens the start page as a browser holding `cookies`; the cookie it
    /// holds afterwards.
    async fn start(&self, state: &str, cookies: &[String]) -> (Answer, Vec<String>) {
        let answer = self.get(START_PATH, &format!("state={state}"), cookies).await;
        let jar = answer
            .set_cookie
            .as_deref()
            .map(|set| vec![set.split(';').next().unwrap().to_owned()])
            .unwrap_or_else(|| cookies.to_vec());
        (answer, jar)
    }
}

#[tokio::test]
async fn the_first_browser_to_open_the_link_is_the_only_one_that_can_finish_it() {
    let g = given(NOW + 5);
    let state = g.open(&provider("tracker", true)).await;

    // GIVEN the person opens the Connect link: a binding cookie, then on to the provider
    let (started, alice) = g.start(&state, &[]).await;
    assert_eq!(started.page.status, 302, "{started:?}");
    let location = started.location.as_deref().expect("on to the provider");
    assert!(location.starts_with(&format!("{ISSUER}/authorize?")), "{location}");
    assert!(location.contains(&format!("state={state}")) && location.contains("code_challenge="), "{location}");
    let set = started.set_cookie.as_deref().unwrap();
    let name = format!("__Host-sign-in-{}=", &state[..16]);
    for attribute in [name.as_str(), "Path=/", "Secure", "HttpOnly", "SameSite=Lax", "Max-Age=600"] {
        assert!(set.contains(attribute), "{attribute} in {set}");
    }
    // A reload in the same browser goes on again, with the same cookie.
    let (again, same) = g.start(&state, &alice).await;
    assert_eq!((again.page.status, &same), (302, &alice));

    // WHEN another browser opens the same link (forwarded, pasted in a channel)
    let (elsewhere, _) = g.start(&state, &[]).await;
    // THEN it is refused and sent nowhere
    assert_eq!((elsewhere.page.status, &elsewhere.location), (403, &None), "{elsewhere:?}");

    // WHEN a browser that signed in at the provider comes back without the person's cookie
    let back = format!("code=c0de&state={state}&iss={ISSUER}");
    let path = "/oauth/callback/tracker";
    let reads = g.records.gets();
    for cookies in [
        vec![],
        vec![format!("{COOKIE_PREFIX}{}=made-up.value", &state[..16])],
        vec![format!("{COOKIE_PREFIX}{}={}.{NOW}.AAAAAAAAAAAAAAAAAAAAAA", &state[..16], "a".repeat(43))],
    ] {
        let answer = g.get(path, &back, &cookies).await;
        // THEN it is refused without a read of the table, and nothing is taken
        assert_eq!(answer.page.status, 403, "{cookies:?}: {answer:?}");
    }
    assert_eq!(g.records.gets(), reads, "refused unread");
    // A real cookie of another browser (it opened some other sign-in) is refused too.
    let other_state = g.open(&provider("tracker", true)).await;
    let (_, bob) = g.start(&other_state, &[]).await;
    assert_eq!(g.get(path, &back, &bob).await.page.status, 403);
    assert!(g.queue.messages().is_empty());

    // WHEN the person's own browser comes back
    let answer = g.get(path, &back, &alice).await;
    // THEN the sign-in is taken and passed on (the state, never the code); the page says
    // it is finishing, not "Connected", and reloads itself
    assert_eq!((answer.page.status, answer.page.title), (202, "Finishing your sign-in"), "{answer:?}");
    let reload = answer.page.reload.clone().expect("reloads");
    assert_eq!(reload, format!("?state={state}&check=1"));
    assert!(answer.page.html().contains("http-equiv=\"refresh\""));
    let sent = g.queue.messages();
    let [WorkMessage::SignedIn(signed_in)] = &sent[..] else { panic!("{sent:?}") };
    assert_eq!(signed_in.state, state);
    assert!(!sent[0].encode().contains("c0de"), "the code never travels on the queue");

    // WHEN the page reloads before the worker is done, and after
    let check = format!("state={state}&check=1");
    assert_eq!(g.get(path, &check, &alice).await.page.status, 202);
    assert_eq!(g.get(path, &check, &bob).await.page.status, 403, "only the person's browser is told");
    let outcome = SignInOutcome::Connected { account: Some("alice@example.com".into()) };
    g.states.record_outcome(&state, &outcome, NOW + 600).await.unwrap();
    let done = g.get(path, &check, &alice).await;
    // THEN it says connected, and as whom
    assert_eq!((done.page.status, done.page.title), (200, "Connected"), "{done:?}");
    assert!(done.page.text.contains("signed in to tracker as alice@example.com"), "{done:?}");
    assert_eq!(done.page.reload, None);
}

#[tokio::test]
async fn a_link_opened_before_the_persons_own_click_waits_and_that_browser_is_never_bound() {
    let g = given(NOW + 5);
    let state = g.open_unclicked(&provider("tracker", true)).await;
    // GIVEN a Connect link opened with no click of the person's reaching the bot (forwarded,
    // pasted in a channel)
    let (waiting, early) = g.start(&state, &[]).await;
    // THEN the page waits and reloads itself; nothing is bound, nobody is sent to the provider
    assert_eq!((waiting.page.status, waiting.page.title), (202, "Waiting for your click"), "{waiting:?}");
    assert_eq!(waiting.location, None);
    assert_eq!(waiting.page.reload.as_deref(), Some(format!("?state={state}&tries=1").as_str()));
    assert_eq!(g.states.load(&state).await.unwrap().unwrap().browser, None);
    // AND it stops looking after a while (about 45 s)
    let last = g.get(START_PATH, &format!("state={state}&tries=22"), &early).await;
    assert_eq!((last.page.status, &last.page.reload, &last.location), (403, &None, &None), "{last:?}");

    // WHEN the person clicks (Slack stamps it 15 s after that browser came), and both it
    // and the browser the click opened look again
    assert!(g.states.arm(&state, NOW + 20).await.unwrap());
    assert!(g.states.arm(&state, NOW + 20).await.unwrap(), "a redelivered click");
    let now = g.later(NOW + 22);
    // THEN the browser that held the link before the click is refused, for good
    let (refused, _) = now.start(&state, &early).await;
    assert_eq!((refused.page.status, refused.page.title), (403, "Sign-in not started"), "{refused:?}");
    assert_eq!(refused.location, None);
    // AND the browser the click opened goes on to the provider
    let (opened, person) = now.start(&state, &[]).await;
    assert_eq!(opened.page.status, 302, "{opened:?}");
    assert_eq!(now.start(&state, &early).await.0.page.status, 403, "and the early one still not");
    assert_eq!(now.start(&state, &person).await.0.page.status, 302, "its reload");

    // AND a link opened more than a minute after the click finds the window shut until
    // the person clicks again
    let late = given(NOW + 5);
    let state = late.open_unclicked(&provider("tracker", true)).await;
    assert!(late.states.arm(&state, NOW - assistant_core::oauth::ARMED_FOR_SECS).await.unwrap());
    assert_eq!(late.start(&state, &[]).await.0.page.status, 202, "waits for a new click");
    assert!(late.states.arm(&state, NOW + 4).await.unwrap(), "clicked again");
    assert_eq!(late.start(&state, &[]).await.0.page.status, 302);
}

#[tokio::test]
async fn a_refused_exchange_is_told_and_a_binding_whose_answer_was_lost_is_still_the_browsers() {
    let g = given(NOW + 5);
    let state = g.open(&provider("tracker", false)).await;
    // The binding is applied but its answer lost, then the retry is refused: still ours.
    g.records.lose_answers([LostAnswer::RetryRefused]);
    let (started, alice) = g.start(&state, &[]).await;
    assert_eq!(started.page.status, 302, "{started:?}");
    assert_eq!(g.start(&state, &[]).await.0.page.status, 403, "and no one else's");

    let back = g.get("/oauth/callback/tracker", &format!("code=c&state={state}"), &alice).await;
    assert_eq!(back.page.status, 202, "no iss from a provider that does not promise it: {back:?}");
    let refused = SignInOutcome::Refused { reason: "the provider refused: invalid_grant".into() };
    g.states.record_outcome(&state, &refused, NOW + 600).await.unwrap();
    // A second outcome (a redelivery's) does not replace the first.
    let late = SignInOutcome::Connected { account: None };
    g.states.record_outcome(&state, &late, NOW + 600).await.unwrap();
    let done = g.get("/oauth/callback/tracker", &format!("state={state}&check=1"), &alice).await;
    assert_eq!((done.page.status, done.page.title), (400, "Sign-in not completed"), "{done:?}");
    assert!(done.page.text.contains("tracker did not accept this sign-in"), "{done:?}");
    assert!(!done.page.text.contains("invalid_grant"), "the provider's words stay out of the page");
}

#[tokio::test]
async fn a_callback_from_another_provider_or_issuer_is_a_mix_up_and_takes_nothing() {
    let g = given(NOW + 5);
    // The sign-in was started with a (hostile) server's provider...
    let state = g.open(&provider("hostile", true)).await;
    let (_, browser) = g.start(&state, &[]).await;
    for (path, query, why) in [
        // ...which sent the person on to the honest provider, who sends them back to its own address
        ("/oauth/callback/tracker", format!("code=c&state={state}&iss={ISSUER}"), "another provider's address"),
        // ...or to this one, naming another issuer
        ("/oauth/callback/hostile", format!("code=c&state={state}&iss=https://other.example.com"), "another issuer"),
        // ...or naming none, though this issuer always does
        ("/oauth/callback/hostile", format!("code=c&state={state}"), "no issuer"),
        // an address that names no provider at all
        ("/oauth/callback", format!("code=c&state={state}"), "no provider"),
        ("/oauth/callback/..%2Ftracker", format!("code=c&state={state}"), "not a provider name"),
    ] {
        let answer = g.get(path, &query, &browser).await;
        assert!(answer.page.status >= 400, "{why}: {answer:?}");
    }
    assert!(g.queue.messages().is_empty(), "nothing passed on");
    let kept = g.states.load(&state).await.unwrap().unwrap();
    assert!(!kept.taken && kept.code.is_none(), "nothing taken: {kept:?}");
    // The issuer's own answer, to its own address, from the same browser, is taken.
    let query = format!("code=c&state={state}&iss={ISSUER}/");
    assert_eq!(g.get("/oauth/callback/hostile", &query, &browser).await.page.status, 202);
}

#[tokio::test]
async fn forged_late_declined_replayed_and_malformed_requests_change_nothing() {
    let g = given(NOW + 5);
    let state = g.open(&provider("p", false)).await;
    let (_, browser) = g.start(&state, &[]).await;
    let path = "/oauth/callback/p";

    let late = given(NOW + 601);
    let late_state = late.open(&provider("p", false)).await;
    assert_eq!(late.start(&late_state, &[]).await.0.page.status, 410);
    // A sign-in bound in time whose browser comes back too late: the take itself refuses it.
    let slow = g.open(&provider("p", false)).await;
    let (_, slow_browser) = g.start(&slow, &[]).await;
    let back = g.later(NOW + 601).get(path, &format!("code=c&state={slow}"), &slow_browser).await;
    assert_eq!(back.page.status, 410, "{back:?}");

    let forged = assistant_core::oauth::random_token(32);
    for (path, query) in [
        (path, format!("code=c&state={forged}")),
        (path, "code=c&state=%3Cscript%3E".to_owned()),
        (path, format!("state={state}")),
        (path, format!("code=a&code=b&state={state}")),
        (path, format!("code={}&state={state}", "x".repeat(3_000))),
        (path, String::new()),
        (START_PATH, format!("state={forged}")),
        (START_PATH, String::new()),
    ] {
        let answer = g.get(path, &query, &browser).await;
        assert!(answer.page.status >= 400 && answer.location.is_none(), "{path}?{query}: {answer:?}");
    }
    let declined = g.get(path, &format!("error=access_denied%3Cb%3E&state={state}"), &[]).await;
    assert_eq!(declined.page.status, 400);
    assert!(declined.page.text.contains("(access_deniedb)") && !declined.page.html().contains("<b>"), "{declined:?}");
    assert!(g.queue.messages().is_empty(), "nothing started");

    // The state survived all of it: the person can still finish, once; a reload passes it
    // on again (the worker handles it once), also after the queue failed; another code is a
    // replay.
    let query = format!("code=c&state={state}");
    assert_eq!(g.get(path, &query, &browser).await.page.status, 202);
    g.queue.set_failing(true);
    assert_eq!(g.get(path, &query, &browser).await.page.status, 503);
    g.queue.set_failing(false);
    assert_eq!(g.get(path, &query, &browser).await.page.status, 202);
    assert_eq!(g.get(path, &format!("code=other&state={state}"), &browser).await.page.status, 409);
    assert_eq!(g.queue.messages().len(), 2);
    assert_eq!(g.start(&state, &browser).await.0.page.status, 409, "a taken sign-in does not start again");
}

/// Records where the worker arms the sign-in again (a second click)
/// between the start page's read and its write, once.
struct ArmedMeanwhile {
    inner: Arc<MemoryRecords>,
    once: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl assistant_core::ports::VersionedRecords for ArmedMeanwhile {
    async fn get(
        &self,
        key: &assistant_core::ports::RecordKey,
    ) -> Result<Option<assistant_core::ports::StoredRecord>, assistant_core::ports::PortError> {
        self.inner.get(key).await
    }
    async fn put(
        &self,
        key: &assistant_core::ports::RecordKey,
        write: &assistant_core::ports::RecordWrite,
    ) -> Result<assistant_core::ports::Put, assistant_core::ports::PortError> {
        if write.expected > 0 && self.once.swap(false, std::sync::atomic::Ordering::SeqCst) {
            let state = key.partition.trim_start_matches("OAUTH_STATE#");
            assert!(ConnectStates::new(self.inner.clone()).arm(state, NOW + 3).await.unwrap());
        }
        self.inner.put(key, write).await
    }
    async fn put_part(
        &self,
        partition: &str,
        sort_key: &str,
        state: String,
        expires_at: i64,
    ) -> Result<(), assistant_core::ports::PortError> {
        self.inner.put_part(partition, sort_key, state, expires_at).await
    }
    async fn delete_part(&self, partition: &str, sort_key: &str) -> Result<(), assistant_core::ports::PortError> {
        self.inner.delete_part(partition, sort_key).await
    }
    async fn parts(
        &self,
        partition: &str,
        prefix: &str,
    ) -> Result<Vec<(String, String)>, assistant_core::ports::PortError> {
        self.inner.parts(partition, prefix).await
    }
}

#[tokio::test]
async fn a_second_click_arming_the_sign_in_while_the_browser_is_bound_is_not_another_browser() {
    // GIVEN a clicked sign-in whose state the worker writes again (a second click) between
    // the start page's read and its write
    let inner = Arc::new(MemoryRecords::default());
    let states = ConnectStates::new(inner.clone());
    let turn = TurnId::new("T1-Ev1");
    let (state, _) = states.open(&thread(), &UserId::new("U1"), &turn, &provider("tracker", true), NOW).await.unwrap();
    assert!(states.arm(&state, NOW).await.unwrap());
    let racing = Arc::new(ArmedMeanwhile { inner, once: std::sync::atomic::AtomicBool::new(true) });
    let pages = SignInPages::new(
        ConnectStates::new(racing),
        Arc::new(MemoryQueue::default()),
        Arc::new(ManualClock::at(NOW + 5)),
        key(),
    );
    // WHEN the person's browser opens the link
    let request = BrowserRequest { path: START_PATH, query: Some(&format!("state={state}")), cookies: &[] };
    let answer = pages.handle(request).await;
    // THEN it is bound and sent on, not told the sign-in belongs to another browser
    assert_eq!(answer.page.status, 302, "{answer:?}");
    assert!(states.load(&state).await.unwrap().unwrap().browser.is_some());
}
