//! Must-redact and must-keep tables. The fake secrets are assembled here at
//! run time, so no real-looking credential sits in the repository for
//! scanners (or people) to trip over.

use super::*;
use crate::stream::MIN_HOLD;

/// A run of mixed characters of length `n`, shaped like key material.
fn material(n: usize) -> String {
    "Ab3De7Gh1Jk5Mn9Pq2St6Vw0Yz4".chars().cycle().take(n).collect()
}

/// (kind, text with the secret, the secret itself), with fixed material.
fn must_redact() -> Vec<(&'static str, String, String)> {
    must_redact_with(&mut material)
}

/// The same table, its key material from `material`.
fn must_redact_with(material: &mut dyn FnMut(usize) -> String) -> Vec<(&'static str, String, String)> {
    let cases: Vec<(&str, String)> = vec![
        ("aws access key id", format!("AKIA{}", "Z7Q2W5E8R1T4Y6U3")),
        ("aws access key id", format!("ASIA{}", "Q7Z2W5E8R1T4Y6U9")),
        ("slack bot token", format!("xox{}-123456789012-1234567890123-{}", "b", material(24))),
        ("slack user token", format!("xox{}-123456789012-1234567890123-1234567890123-{}", "p", material(32))),
        ("slack app token", format!("xa{}-1-A0123456789-1234567890123-{}", "pp", material(64))),
        ("slack refresh token", format!("xoxe.xox{}-1-{}", "p", material(90))),
        ("slack configuration token", format!("xox{}-1-{}", "e", material(90))),
        ("slack webhook url", format!("https://hooks.slack.com/services/T00000000/B00000000/{}", material(24))),
        ("github token", format!("gh{}_{}", "p", material(36))),
        ("github token", format!("github_{}_{}", "pat", material(82))),
        ("gitlab token", format!("gl{}-{}", "pat", material(20))),
        ("jwt", format!("eyJ{}.eyJ{}.{}", material(17), material(40), material(43))),
        ("google api key", format!("AI{}{}", "za", material(35))),
        ("stripe key", format!("sk_{}_{}", "live", material(24))),
        ("stripe key", format!("rk_{}_{}", "test", material(24))),
        ("openai api key", format!("sk-{}-{}", "proj", material(120))),
        ("openai api key", format!("sk-{}T3BlbkFJ{}", material(20), material(20))),
        ("anthropic api key", format!("sk-ant-{}03-{}", "api", material(93))),
        ("bedrock api key", format!("AB{}{}", "SK", material(120))),
        ("gitlab token", format!("gl{}-{}", "ft", material(24))),
        ("gitlab token", format!("gl{}-{}", "soat", material(24))),
        ("npm token", format!("np{}_{}", "m", material(36))),
        ("stripe webhook secret", format!("wh{}_{}", "sec", material(32))),
        ("sendgrid api key", format!("S{}.{}.{}", "G", material(22), material(43))),
        ("google oauth client secret", format!("GOC{}-{}", "SPX", material(28))),
    ];
    let mut table: Vec<(&str, String, String)> =
        cases.into_iter().map(|(kind, secret)| (kind, format!("found {secret} in the logs"), secret)).collect();

    let mut block = |kind: &str| {
        format!(
            "-----BEGIN {kind}PRIVATE KEY-----\n{}\n{}\n-----END {kind}PRIVATE KEY-----",
            material(64),
            material(40)
        )
    };
    for kind in ["RSA ", "OPENSSH ", "EC ", ""] {
        let key = block(kind);
        table.push(("private key", format!("config:\n{key}\nend"), key));
    }
    let aws_secret = material(40);
    table.push(("aws secret access key", format!("aws_secret_access_key = {aws_secret}"), aws_secret.clone()));
    table.push(("aws secret access key", format!(r#"{{"SecretAccessKey": "{aws_secret}"}}"#), aws_secret));
    let session = format!("IQoJb3JpZ2luX2Vj{}", material(200));
    table.push(("aws session token", format!("AWS_SESSION_TOKEN={session}"), session));

    for (url, password) in [
        ("postgres://app:{}@db.internal:5432/app", "s3cr3tP4ss"),
        ("redis://:{}@cache.internal:6379/0", "n0user-pass"),
        ("mongodb+srv://svc:{}@cluster0.example.net/db?retryWrites=true", "pa55w0rd!"),
        ("amqp://guest:{}@mq:5672/", "guest-secret"),
        ("postgres://app:{}@db.internal:5432/app", "p@ss/w0rd"),
        ("redis://:{}@cache.internal:6379/0", "sl/ash@and@at"),
        ("mysql://root:{}@10.0.3.7 is the primary", "a/b@c"),
    ] {
        table.push(("password", url.replace("{}", password), password.to_owned()));
    }
    let account_key = format!("{}==", material(86));
    table.push((
        "azure storage key",
        format!(
            "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={account_key};EndpointSuffix=core.windows.net"
        ),
        account_key,
    ));
    let cookie = format!("session={}; Path=/; HttpOnly", material(32));
    table.push(("cookie", format!("Set-Cookie: {cookie}\nContent-Type: text/html"), cookie.clone()));
    table.push(("cookie", format!("GET / HTTP/1.1\nCookie: {cookie}"), cookie));
    // A key whose END line a size cap cut off.
    let cut = format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n{}", material(64), material(30));
    table.push(("private key", format!("log excerpt:\n{cut}"), cut));
    let bearer = material(48);
    table.push(("authorization credential", format!("Authorization: Bearer {bearer}"), bearer.clone()));
    table.push(("authorization credential", "authorization: Basic dXNlcjpzM2NyM3Q=".into(), "dXNlcjpzM2NyM3Q=".into()));
    table.push(("bearer token", format!("curl -H 'X-Auth: bearer {bearer}'"), bearer));
    for (text, value) in [
        ("DB_PASSWORD=hunter2hunter2", "hunter2hunter2"),
        ("password: \"correct horse battery\"", "correct horse battery"),
        ("client_secret = 'f00b4r-b4z'", "f00b4r-b4z"),
        ("{\"apiKey\": \"k-12345678\"}", "k-12345678"),
        ("secret: topsecretvalue", "topsecretvalue"),
        ("https://api.example.com/v1?token=abc123def&page=2", "abc123def"),
        ("export GRAFANA_API_KEY=glsa_abcdef123456", "glsa_abcdef123456"),
        ("spring.datasource.password=Sup3rS3cret", "Sup3rS3cret"),
        ("DB_PASS=Zq8-d0nt-t3ll", "Zq8-d0nt-t3ll"),
        ("password: correct horse battery staple", "correct horse battery staple"),
        ("user: svc, password: two words, host: db", "two words"),
        // A password ends where the next assignment on its line begins.
        ("password=hunter2 and DB_USER=app", "hunter2"),
        ("DB_PASSWORD=s3cr3t-v4lue DB_HOST=db.internal", "s3cr3t-v4lue"),
        ("password: correct horse or user: app", "correct horse"),
        ("PGPASSWORD=two words && PGUSER=app psql", "two words"),
        ("spring.datasource.password = pa ss word and spring.datasource.username = app", "pa ss word"),
    ] {
        table.push(("secret", text.to_owned(), value.to_owned()));
    }
    table
}

#[test]
fn every_kind_of_secret_is_replaced_by_a_label_and_its_context_kept() {
    for (kind, text, secret) in must_redact() {
        let redacted = redact(&text);
        assert!(!redacted.contains(&secret), "{kind}: {secret:?} survived in {redacted:?}");
        assert!(redacted.contains(&format!("[redacted: {kind}]")), "{kind}: wrong or missing label in {redacted:?}");
        let (before, after) = text.split_once(&secret).unwrap();
        assert!(redacted.starts_with(before) && redacted.ends_with(after), "{kind}: context lost in {redacted:?}");
    }
}

#[test]
fn what_is_not_a_secret_is_left_alone() {
    for text in LOOK_ALIKES {
        assert_eq!(redact(text), *text, "over-eager redaction");
        assert!(matches!(redact(text), Cow::Borrowed(_)), "no copy when nothing changed");
    }
}

/// What looks like a secret and is not: SHAs, UUIDs, ARNs, Slack ids and
/// timestamps, request and trace ids, documented example keys, public keys,
/// URLs without credentials, model ids, token counts, placeholders, paths.
const LOOK_ALIKES: &[&str] = &[
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
    "request 6fa459ea-ee8a-3ca4-894e-db77e160355e failed",
    "x-amzn-RequestId: 7f3a2c1e-9b4d-4e8f-a1b2-c3d4e5f60718",
    "role arn:aws:iam::123456789012:role/slack-assistant-worker",
    "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0",
    "ask <@U061F7AUR> in <#C0LAN2Q65|incidents> (team T061EG9R6)",
    "thread 1763800000.000100, event Ev0LAN670R",
    "the docs use AKIAIOSFODNN7EXAMPLE as the example key id",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ops@bastion",
    "see https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference-call.html?tab=rust#example",
    "postgres://db.internal:5432/app and https://deploy@git.example.com/repo.git",
    "artifacts at http://build.internal:8080/builds@latest and https://cdn.example.com:443/pkg@2.1.0/index.js",
    "model anthropic.claude-3-5-sonnet-20240620-v1:0 via us.anthropic.claude-sonnet-4-20250514-v1:0",
    "max_tokens: 4096, input_tokens=1250, token_count: 3, tokens: 17",
    "passwordless: true and the bearer of this message",
    "password: ${DB_PASSWORD} and token: <your-token> and secret: arn:aws:secretsmanager:us-east-1:123456789012:secret:slack",
    "pk_live_ publishable keys and sk-learn are fine",
    "checkout-api 502 at 2025-11-22T08:26:40Z (trace 1-691f7440-2b3c4d5e6f7a8b9c0d1e2f3a)",
    "SLACK_BOT_TOKEN=xoxb-REPLACE-ME and api_key=your-api-key-here",
    "token: <token> and TOKEN=${TOKEN} and password: changeme-in-prod",
    "pwd: /home/app/releases/42 and cwd=/srv",
    "next_token=eyJwYWdlIjoyfQ and nextPageToken: CAEQAA and pagination_token=abc123def456",
    "bypass: true, compass=north",
    "Accept: text/html",
    "SLACK_BOT_TOKEN=xoxb-your-bot-token and SLACK_APP_TOKEN=xapp-your-app-token",
    "DB_USER=app and DB_HOST=db.internal and DB_NAME=app",
    "GITHUB_TOKEN=ghp_your_token_here and OPENAI_API_KEY=sk-your-key-here",
];

#[test]
fn a_secret_caught_by_its_shape_is_not_wrapped_twice_by_its_name() {
    let token = format!("xox{}-123456789012-1234567890123-{}", "b", material(24));
    assert_eq!(redact(&format!("SLACK_BOT_TOKEN={token}")), "SLACK_BOT_TOKEN=[redacted: slack bot token]");
}

#[test]
fn several_secrets_in_one_text_are_all_replaced() {
    let key_id = format!("AKIA{}", "Z7Q2W5E8R1T4Y6U3");
    let github = format!("gh{}_{}", "p", material(36));
    let text = format!("key {key_id} and {github} and url postgres://u:pw123456@h/db");
    assert_eq!(
        redact(&text),
        "key [redacted: aws access key id] and [redacted: github token] and url postgres://u:[redacted: password]@h/db"
    );
}

#[test]
fn json_strings_are_redacted_in_place_and_keys_kept() {
    let token = format!("gh{}_{}", "p", material(36));
    let mut value = serde_json::json!({
        "token": "",
        "results": [{"line": format!("cloned with {token}")}, 7, null],
        "note": "nothing here"
    });
    Redactor::global().redact_json(&mut value);
    assert_eq!(value["results"][0]["line"], "cloned with [redacted: github token]");
    assert_eq!(value["note"], "nothing here");
    assert!(value.get("token").is_some());
}

#[test]
fn a_value_under_a_key_that_names_a_secret_is_redacted_whatever_its_shape() {
    // Values made here, at test time, with no recognisable shape.
    let plain = format!("{}{}", "correct", "-horse-battery");
    let mut value = serde_json::json!({
        "status": "ok",
        "commit": "9fceb02d0ae598e95dc970b74767f19372d61af8",
        "request_id": "c6a3f5e2-5b4f-4d7e-9c1a-2f0e8d7b6a54",
        "db": {"host": "db.internal", "password": plain, "DB_PASS": plain, "port": 5432},
        "SecretAccessKey": plain,
        "api_token": plain,
        "clientSecret": plain,
        "Authorization": format!("Basic {plain}"),
        "set-cookie": [format!("session={plain}; HttpOnly")],
        "credentials": {"user": "svc", "key": plain, "pin": 4321},
        "connection_string": format!("postgres://svc:{plain}@db/app"),
    });
    Redactor::default().redact_json(&mut value);
    let json = value.to_string();
    assert!(!json.contains(&plain), "{json}");
    assert!(!json.contains("4321"), "numbers under a secret's key too: {json}");
    for kept in [
        "ok",
        "9fceb02d0ae598e95dc970b74767f19372d61af8",
        "c6a3f5e2-5b4f-4d7e-9c1a-2f0e8d7b6a54",
        "db.internal",
        "5432",
    ] {
        assert!(json.contains(kept), "{kept} kept: {json}");
    }
    assert_eq!(value["db"]["password"], "[redacted: value of \"password\"]", "the key stays, the value goes");
}

#[test]
fn keys_that_only_look_like_secret_names_and_placeholders_are_kept() {
    let mut value = serde_json::json!({
        "max_tokens": 4096,
        "input_tokens": 120,
        "next_token": "eyJwYWdlIjoyfQ",
        "NextPageToken": "CAEQAA",
        "token_type": "Bearer",
        "pwd": "/home/app/releases/42",
        "password": "${DB_PASSWORD}",
        "secret": "",
        "api_key": "<your-api-key>",
        "token": "[redacted: slack bot token]",
        "bypass": "cache",
        "compass": "north",
    });
    let before = value.clone();
    Redactor::default().redact_json(&mut value);
    assert_eq!(value, before);
}

/// A small deterministic generator (xorshift64*): the property tests are
/// random in what they try, and the same on every run.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Key material: letters and digits, as real keys are.
    fn material(&mut self, n: usize) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n).map(|_| *self.pick(ALPHABET) as char).collect()
    }

    /// Ordinary prose and log noise: no word names a secret.
    fn filler(&mut self) -> String {
        const WORDS: &[&str] = &[
            "deploy",
            "failed",
            "at",
            "14:02",
            "checkout-api",
            "retrying",
            "status=503",
            "see",
            "runbook",
            "the",
            "pool",
            "is",
            "exhausted",
            "(pid",
            "4242)",
            "->",
            "ok",
            "user",
            "U061F7AUR",
            "region",
            "us-east-1",
            "[WARN]",
            "latency",
            "812ms",
            "commit",
            "9fceb02",
        ];
        const SEPARATORS: &[&str] = &[" ", " ", " ", "\n", ", ", "; ", "\t", " | "];
        let mut text = String::new();
        for _ in 0..self.below(12) {
            text.push_str(self.pick::<&str>(WORDS));
            text.push_str(self.pick::<&str>(SEPARATORS));
        }
        text
    }
}

const SEEDS: std::ops::Range<u64> = 1..400;

#[test]
fn generated_secrets_of_every_kind_never_survive_in_random_text() {
    for seed in SEEDS {
        let mut random = Random(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let table = must_redact_with(&mut |n| Random(random.next() | 1).material(n));
        let (kind, context, secret) = random.pick(&table).clone();
        let (before, after) = (random.filler(), random.filler());
        let glue = |random: &mut Random| *random.pick(&["\n", " ", "\n\n", " -- "]);
        let text = format!("{before}{}{context}{}{after}", glue(&mut random), glue(&mut random));
        let redacted = redact(&text);
        assert!(!redacted.contains(&secret), "seed {seed}, {kind}: {secret:?} survived in {redacted:?}");
    }
}

#[test]
fn generated_secrets_never_survive_anywhere_in_random_json() {
    for seed in SEEDS {
        let mut random = Random(seed.wrapping_mul(0xD1B5_4A32_D192_ED03));
        let table = must_redact_with(&mut |n| Random(random.next() | 1).material(n));
        let (kind, context, secret) = random.pick(&table).clone();
        // The secret's text as a value at a random depth, under ordinary keys
        // and in arrays, beside ordinary values.
        let mut value = serde_json::Value::String(format!("{}{context}", random.filler()));
        for _ in 0..random.below(4) {
            let key = *random.pick(&["output", "detail", "items", "log", "result", "env_note"]);
            value = if random.below(2) == 0 {
                serde_json::json!({ key: value, "status": "degraded", "count": 3 })
            } else {
                serde_json::json!(["first", value, 42])
            };
        }
        Redactor::global().redact_json(&mut value);
        let json = value.to_string();
        let escaped = serde_json::to_string(&secret).unwrap();
        assert!(
            !json.contains(&secret) && !json.contains(escaped.trim_matches('"')),
            "seed {seed}, {kind}: {secret:?} survived in {json}"
        );
    }
}

/// What may stand at a position of a kind's key material, beyond letters
/// and digits (which every kind takes).
fn extra_classes(kind: &str) -> &'static [char] {
    match kind {
        "aws secret access key" | "azure storage key" | "aws session token" => &['/', '+'],
        "jwt"
        | "google api key"
        | "google oauth client secret"
        | "sendgrid api key"
        | "openai api key"
        | "anthropic api key" => &['-', '_'],
        "authorization credential" | "bearer token" => &['-', '_', '.', '~', '+', '/'],
        "cookie" => &['-', '_', '.'],
        _ => &[],
    }
}

/// What stands right after a secret in real text: a query's next
/// parameter, quotes, punctuation, brackets, the end of a line or of the
/// text.
const AFTER: &[&str] = &["", " ", "&page=2", "#top", "\"", "'", ".", ",", ";", ")", "]", ">", ":", "!", "?", "\n", "`"];
/// And right before it.
const BEFORE: &[&str] = &[" ", "=", ":", "\"", "'", "(", "[", "<", "`", "\n", "\t"];

#[test]
fn every_character_class_at_every_position_of_every_kind_of_secret_is_redacted() {
    // Where each kind's key material stands: the table built with a
    // sentinel for material.
    const SENTINEL: char = '\u{1}';
    let shapes = must_redact_with(&mut |n| std::iter::repeat_n(SENTINEL, n).collect());
    let mut random = Random(0x5EED_CAFE_F00D_0001);
    let mut tried = 0;
    for (kind, context, shape) in shapes {
        let positions: Vec<usize> = shape.chars().enumerate().filter(|(_, c)| *c == SENTINEL).map(|(i, _)| i).collect();
        let standalone = context == format!("found {shape} in the logs");
        let mut classes: Vec<fn(&mut Random) -> char> =
            vec![|r| (b'A' + r.below(26) as u8) as char, |r| (b'a' + r.below(26) as u8) as char, |r| {
                (b'0' + r.below(10) as u8) as char
            }];
        let extra = extra_classes(kind);
        for &position in &positions {
            let mut chosen: Vec<char> = classes.iter_mut().map(|class| class(&mut random)).collect();
            chosen.extend(extra.iter());
            for class_char in chosen {
                let secret: String = shape
                    .chars()
                    .enumerate()
                    .map(|(i, c)| match (c, i == position) {
                        (SENTINEL, true) => class_char,
                        (SENTINEL, false) => random.material(1).chars().next().expect("one character"),
                        (c, _) => c,
                    })
                    .collect();
                let text = if standalone {
                    let (before, after) = (*random.pick(BEFORE), *random.pick(AFTER));
                    format!("found{before}{secret}{after} in the logs")
                } else {
                    context.replace(&shape, &secret)
                };
                let redacted = redact(&text);
                tried += 1;
                assert!(
                    !redacted.contains(&secret),
                    "{kind}: {class_char:?} at {position} of {secret:?} survived in {redacted:?}"
                );
                let (head, tail) = text.split_once(&secret).expect("the secret is in its text");
                assert!(
                    redacted.starts_with(head) && redacted.ends_with(tail),
                    "{kind}: what stands around {secret:?} changed: {text:?} became {redacted:?}"
                );
            }
        }
    }
    assert!(tried > 5_000, "tried {tried}");
}

#[test]
fn look_alikes_survive_in_random_text() {
    for seed in SEEDS {
        let mut random = Random(seed.wrapping_mul(0xA076_1D64_78BD_642F));
        let look_alike = *random.pick(LOOK_ALIKES);
        let text = format!("{}{look_alike}\n{}", random.filler(), random.filler());
        assert_eq!(redact(&text), text, "seed {seed}: over-eager redaction");
    }
}

#[test]
fn a_remembered_secret_is_removed_whatever_its_shape_and_short_values_are_not_remembered() {
    // A per-test redactor: the global one is shared by every test.
    let redactor = Redactor::default();
    let secret = format!("plain{}words", material(12));
    let echoed = format!("GET /status echoed your header X-Team-Key: {secret} at 12:00");
    assert_eq!(redactor.redact(&echoed), echoed, "nothing about its shape says secret");

    redactor.remember(&format!("  {secret}\n"));
    redactor.remember("short");
    let redacted = redactor.redact(&echoed);
    assert!(!redacted.contains(&secret), "{redacted}");
    assert!(redacted.contains("X-Team-Key: [redacted: configured secret] at 12:00"), "{redacted}");
    let mut json = serde_json::json!({"headers": {"x-team-key": secret, "accept": "short"}});
    redactor.redact_json(&mut json);
    assert!(!json.to_string().contains(&secret), "{json}");
    assert_eq!(json["headers"]["accept"], "short", "a value under 8 characters is not looked for");

    // One remembered value inside another: the longer one goes whole.
    redactor.remember(&format!("{secret}-suffix"));
    assert_eq!(redactor.redact(&format!("[{secret}-suffix]")), "[[redacted: configured secret]]");
}

/// `text` streamed in `deltas`, releasing after each as a streaming caller
/// does: everything that left the redactor, in order.
fn streamed(redactor: &Redactor, deltas: &[&str]) -> String {
    let mut stream = StreamRedactor::new(redactor);
    let mut out = String::new();
    for delta in deltas {
        stream.push(delta);
        out.push_str(&stream.release());
    }
    out + &stream.finish()
}

/// An answer as a model writes it, with `text` in its middle.
fn answer_around(text: &str) -> String {
    format!(
        "Here is what I found in the service's logs and config.\n\n{text}\n\nThat explains the failures; \
         rotate it and redeploy the service, then watch the error rate for a while."
    )
}

#[test]
fn a_secret_split_across_deltas_at_any_offset_is_never_released() {
    let redactor = Redactor::default();
    for (kind, text, secret) in must_redact() {
        let answer = answer_around(&text);
        let expected = redactor.redact(&answer);
        assert!(!expected.contains(&secret), "{kind}");
        let offsets = answer.char_indices().map(|(at, _)| at).skip(1);
        for at in offsets {
            let out = streamed(&redactor, &[&answer[..at], &answer[at..]]);
            assert!(!out.contains(&secret), "{kind}: {secret:?} released when split at {at}: {out:?}");
            assert_eq!(out, expected, "{kind}: split at {at}");
        }
        // A character at a time, releasing after each.
        let chars: Vec<String> = answer.chars().map(String::from).collect();
        let deltas: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(streamed(&redactor, &deltas), expected, "{kind}: one character per delta");
    }
}

#[test]
fn a_remembered_value_with_spaces_is_held_back_until_seen_whole() {
    let redactor = Redactor::default();
    let value = "open sesame, says the gatekeeper, twice";
    redactor.remember(value);
    let answer = answer_around(&format!("the header was X-Team-Phrase {value} (as configured)"));
    for at in answer.char_indices().map(|(at, _)| at).skip(1) {
        let out = streamed(&redactor, &[&answer[..at], &answer[at..]]);
        assert!(!out.contains("sesame"), "split at {at}: {out:?}");
        assert_eq!(out, redactor.redact(&answer));
    }
}

#[test]
fn ordinary_prose_is_released_while_it_is_written() {
    let redactor = Redactor::default();
    let mut stream = StreamRedactor::new(&redactor);
    let prose = "The checkout service fails because its database pool is exhausted: every connection is held \
                 by a slow report query that started at noon. ";
    let mut released = String::new();
    for word in prose.split_inclusive(' ') {
        stream.push(word);
        released.push_str(&stream.release());
    }
    // All but the last few words are out before the model has finished.
    assert!(released.len() >= prose.len() - MIN_HOLD - 16, "{released:?}");
    assert!(prose.starts_with(&released));
    assert_eq!(released + &stream.finish(), prose);
}

#[test]
fn lines_naming_a_secret_and_open_key_blocks_wait_for_their_end() {
    let redactor = Redactor::default();
    let mut stream = StreamRedactor::new(&redactor);
    stream.push(&format!("Use these settings.\n\"password\": \"correct horse {}", "x ".repeat(60)));
    let released = stream.release();
    assert_eq!(released, "Use these settings.", "the naming line is held until it ends");
    let mut stream = StreamRedactor::new(&redactor);
    stream.push(&format!("Here it is:\n-----BEGIN RSA PRIVATE KEY-----\n{}\n", material(64).repeat(4)));
    assert_eq!(stream.release(), "Here it is:");
    assert_eq!(stream.release(), "", "nothing of the block until its END line");
}

/// A password's line as a generator writes it: `before`, the assignment
/// of a multi-word password, then (or not) another assignment joined to it.
struct PasswordLine {
    text: String,
    /// The password's words that are key material (the conjunctions and
    /// single letters a password may hold between them are ordinary words).
    words: Vec<String>,
    /// What must come out as it went in: the joint and the next assignment.
    kept: Option<String>,
    /// The whole redaction expected.
    expected: String,
}

impl Random {
    fn password_line(&mut self) -> PasswordLine {
        const NAMES: &[&str] = &["password", "DB_PASSWORD", "passphrase", "spring.datasource.password", "db.passwd"];
        const SEPARATORS: &[&str] = &["=", ": ", ":", " = ", "\t=\t"];
        // What joins the next assignment: spaces, and the conjunctions.
        const JOINTS: &[&str] = &[" ", "  ", "\t", " and ", " or ", " && ", " || ", " AND ", ", ", "; ", "  and  "];
        const NEXT_NAMES: &[&str] =
            &["DB_USER", "host", "region", "spring.datasource.url", "LOG_LEVEL", "_user", "x-id"];
        const NEXT_SEPARATORS: &[&str] = &["=", ": ", ":", " = "];
        const NEXT_VALUES: &[&str] = &["app", "db.internal", "us-east-1", "jdbc:postgresql://db:5432/app", "debug", ""];
        const SYMBOLS: &[&str] = &["", "", "!", "#", "-", "%", "@", ".", "*"];
        let (name, separator) = (*self.pick(NAMES), *self.pick(SEPARATORS));
        let count = 1 + self.below(5);
        let mut said = Vec::new();
        let mut words = Vec::new();
        for index in 0..count {
            // Conjunctions inside a password are its own words too.
            if index > 0 && self.below(4) == 0 {
                said.push((*self.pick(&["and", "or", "&&"])).to_owned());
            }
            let length = 5 + self.below(8);
            let word = format!("{}{}", self.material(length), self.pick(SYMBOLS));
            said.push(word.clone());
            words.push(word);
        }
        let password = said.join(" ");
        let before = self.filler().replace('\n', " ");
        let after = format!("\n{}", self.filler());
        let head = format!("{before}{name}{separator}");
        let (kept, tail) = match self.below(3) {
            0 => (None, String::new()),
            _ => {
                let next = format!("{}{}{}", self.pick(NEXT_NAMES), self.pick(NEXT_SEPARATORS), self.pick(NEXT_VALUES));
                let joined = format!("{}{next}", self.pick(JOINTS));
                (Some(joined.clone()), joined)
            }
        };
        PasswordLine {
            text: format!("{head}{password}{tail}{after}"),
            words,
            kept,
            expected: format!("{head}[redacted: secret]{tail}{after}"),
        }
    }
}

#[test]
fn a_password_ends_where_the_next_assignment_begins_and_no_word_of_it_survives() {
    let redactor = Redactor::default();
    for seed in SEEDS {
        let mut random = Random(seed.wrapping_mul(0x8CB9_2BA7_2F3D_8DD7));
        let line = random.password_line();
        let redacted = redactor.redact(&line.text);
        // No word of a multi-word password gets through…
        for word in &line.words {
            assert!(!redacted.contains(word.as_str()), "seed {seed}: {word:?} survived in {redacted:?}");
        }
        // …and the assignment after it (and what joins it) is kept whole.
        if let Some(kept) = &line.kept {
            assert!(redacted.contains(kept.as_str()), "seed {seed}: {kept:?} lost in {redacted:?}");
        }
        assert_eq!(redacted, line.expected, "seed {seed}");
        // Streamed, the same: cut anywhere, and a character at a time.
        let at = line.text.char_indices().map(|(at, _)| at).nth(random.below(line.text.chars().count())).unwrap_or(0);
        assert_eq!(streamed(&redactor, &[&line.text[..at], &line.text[at..]]), redacted, "seed {seed}: cut at {at}");
        if seed % 20 == 0 {
            let chars: Vec<String> = line.text.chars().map(String::from).collect();
            let deltas: Vec<&str> = chars.iter().map(String::as_str).collect();
            assert_eq!(streamed(&redactor, &deltas), redacted, "seed {seed}: one character per delta");
        }
    }
}

#[test]
fn the_first_word_of_a_password_is_always_the_passwords_whatever_it_looks_like() {
    // A value that itself looks like an assignment is still the password.
    assert_eq!(redact("password=user=admin and host=db"), "password=[redacted: secret] and host=db");
    // A conjunction that joins no assignment is the password's.
    assert_eq!(redact("password: cats and dogs"), "password: [redacted: secret]");
    // A URL after it is no assignment (`https:` is no name being set).
    assert_eq!(redact("password=open sesame https://db.internal"), "password=[redacted: secret]");
}
