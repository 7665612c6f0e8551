//! Who may decide on a call that changes things.
//!
//! The approvers are the tool's own or the configured default: the
//! requester (who asked), named users, and the members of user groups (read
//! from Slack, kept for a few minutes). With `allow_self_approval: false`
//! the requester may not decide on their own request, whoever else they are.
//! A group that cannot be read counts as having no members: a click is
//! refused rather than let through. Approvers belong to the installing
//! team: a person of another organization (in a channel shared with it)
//! never decides, whatever the configuration names, not even on their own
//! request.
//!
//! A prompt says who asked for what ([`call_origin`]): the question, and
//! the tools whose results (and the files) the model had read before it
//! proposed the call.

use assistant_core::approval::{Approver, CallOrigin};
use assistant_core::config_checks::ConfigError;
use assistant_core::ports::SlackReader;
use assistant_core::turn::{ToolUse, Turn};
use serde::Deserialize;
use slack::{Membership, UserId};
use std::collections::HashMap;
use std::sync::Mutex;
use tools_registry::ApprovalRule;
use tracing::warn;

/// The most of a question a prompt request carries (the prompt fits it to
/// Slack's limits again, once escaped).
pub const PROMPT_QUESTION_CHARS: usize = 300;

/// Who asked for `call` in `turn`, for its prompt: the question on one
/// line, redacted, then shortened (no cut leaves part of a secret), and
/// what the model had read before proposing the call.
pub fn call_origin(turn: &Turn, call: &ToolUse) -> CallOrigin {
    let question = turn.question();
    let redacted = redact::redact(&question);
    let line = redacted.split_whitespace().collect::<Vec<_>>().join(" ");
    let shown = if line.chars().count() > PROMPT_QUESTION_CHARS {
        line.chars().take(PROMPT_QUESTION_CHARS - 1).collect::<String>() + "…"
    } else {
        line
    };
    CallOrigin::of(turn, &call.id, shown)
}

/// How long a user group's members are trusted before they are read again.
pub const GROUP_CACHE_SECS: i64 = 300;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    May,
    /// `own_request`: the requester, where the team wants a second person.
    MayNot {
        own_request: bool,
    },
    /// A person of another organization: never an approver.
    External,
}

pub struct Approvals {
    pub config: ApprovalsConfig,
    /// group → (read at, members)
    groups: Mutex<HashMap<String, (i64, Vec<UserId>)>>,
}

impl Approvals {
    pub fn new(config: ApprovalsConfig) -> Self {
        Self { config, groups: Mutex::default() }
    }

    /// Who may approve a call of a tool with this rule.
    pub fn approvers_for<'a>(&'a self, rule: Option<ApprovalRule<'a>>) -> &'a [Approver] {
        rule.and_then(|rule| rule.approvers).unwrap_or(&self.config.approvers)
    }

    /// Seconds a call may wait for a decision.
    pub fn expires_after_secs(&self) -> i64 {
        i64::try_from(self.config.expires_after_secs).unwrap_or(i64::MAX)
    }

    /// Whether `clicker` (of `membership`) may decide on a call that
    /// `requester` asked for.
    pub async fn verdict(
        &self,
        slack: &dyn SlackReader,
        requester: &UserId,
        (clicker, membership): (&UserId, Membership),
        approvers: &[Approver],
        now_unix: i64,
    ) -> Verdict {
        if membership.is_external() {
            return Verdict::External;
        }
        let own = clicker == requester;
        if own && !self.config.allow_self_approval {
            return Verdict::MayNot { own_request: true };
        }
        if (own && approvers.contains(&Approver::Requester)) || self.names(slack, clicker, approvers, now_unix).await {
            return Verdict::May;
        }
        Verdict::MayNot { own_request: false }
    }

    /// Whether `approvers` name `user` themselves or a group they are in
    /// ("requester" names nobody here).
    pub async fn names(&self, slack: &dyn SlackReader, user: &UserId, approvers: &[Approver], now_unix: i64) -> bool {
        for approver in approvers {
            let named = match approver {
                Approver::Requester => false,
                Approver::User(named) => named == user,
                Approver::Group(group) => self.members(slack, group, now_unix).await.contains(user),
            };
            if named {
                return true;
            }
        }
        false
    }

    /// A user group's members, read through Slack and cached a few minutes
    /// (approvers, and tool policies that name groups).
    pub async fn members(&self, slack: &dyn SlackReader, group: &str, now_unix: i64) -> Vec<UserId> {
        if let Some((read_at, members)) = self.groups.lock().expect("groups lock").get(group)
            && now_unix - read_at < GROUP_CACHE_SECS
        {
            return members.clone();
        }
        match slack.usergroup_members(group).await {
            Ok(members) => {
                self.groups.lock().expect("groups lock").insert(group.to_owned(), (now_unix, members.clone()));
                members
            }
            Err(err) => {
                warn!(group, error = %err, "user group not readable: its members cannot approve until it is");
                Vec::new()
            }
        }
    }
}

/// Approvals of tool calls that change things.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawApprovals")]
pub struct ApprovalsConfig {
    /// Who may approve (a tool may name its own): `"requester"` (who asked),
    /// Slack user ids, user group ids. Default: the requester.
    pub approvers: Vec<Approver>,
    /// Unanswered calls expire after this (seconds): the model is told they
    /// were not approved in time. Default one hour.
    pub expires_after_secs: u64,
    /// `false`: "four eyes", the requester may not approve their own request.
    pub allow_self_approval: bool,
    /// Offer "Approve for this thread" on calls that do not delete or
    /// overwrite. Default `true`.
    pub thread_grants: bool,
    /// How long such a grant lasts. Default 60 minutes.
    pub grant_minutes: u32,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        Self {
            approvers: Approver::requester_only(),
            expires_after_secs: 3_600,
            allow_self_approval: true,
            thread_grants: true,
            grant_minutes: 60,
        }
    }
}

/// Expiry outside this range is a mistake: shorter than a person needs to
/// read a prompt, or longer than a turn is worth keeping open.
const EXPIRY_RANGE_SECS: std::ops::RangeInclusive<u64> = 60..=7 * 24 * 3600;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApprovals {
    approvers: Option<Vec<Approver>>,
    expires_after_secs: Option<u64>,
    allow_self_approval: Option<bool>,
    thread_grants: Option<bool>,
    grant_minutes: Option<u32>,
}

impl TryFrom<RawApprovals> for ApprovalsConfig {
    type Error = ConfigError;

    fn try_from(raw: RawApprovals) -> Result<Self, ConfigError> {
        let defaults = Self::default();
        let config = Self {
            approvers: raw.approvers.unwrap_or(defaults.approvers),
            expires_after_secs: raw.expires_after_secs.unwrap_or(defaults.expires_after_secs),
            allow_self_approval: raw.allow_self_approval.unwrap_or(defaults.allow_self_approval),
            thread_grants: raw.thread_grants.unwrap_or(defaults.thread_grants),
            grant_minutes: raw.grant_minutes.unwrap_or(defaults.grant_minutes),
        };
        if config.approvers.is_empty() {
            return Err(ConfigError::that("approvals.approvers", "is empty: nobody could approve anything"));
        }
        if !EXPIRY_RANGE_SECS.contains(&config.expires_after_secs) {
            return Err(ConfigError::must(
                "approvals.expires_after_secs",
                format_args!("be from {} to {} seconds", EXPIRY_RANGE_SECS.start(), EXPIRY_RANGE_SECS.end()),
            ));
        }
        let most = assistant_core::grants::MAX_GRANT_MINUTES;
        if !(1..=most).contains(&config.grant_minutes) {
            return Err(ConfigError::must("approvals.grant_minutes", format_args!("be from 1 to {most} minutes")));
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::memory::MemorySlack;

    fn user(id: &str) -> UserId {
        UserId::new(id)
    }

    fn approvals(approvers: &[&str], allow_self_approval: bool) -> Approvals {
        let approvers = approvers.iter().map(|a| Approver::try_from(a.to_string()).unwrap()).collect();
        Approvals::new(ApprovalsConfig { approvers, allow_self_approval, ..ApprovalsConfig::default() })
    }

    /// The verdict on `clicker` (of the installing team) for a request by
    /// U0ASKER, with the default approvers.
    async fn verdict(approvals: &Approvals, slack: &MemorySlack, clicker: &str) -> Verdict {
        let approvers = approvals.approvers_for(None).to_vec();
        approvals.verdict(slack, &user("U0ASKER"), (&user(clicker), Membership::Home), &approvers, 1_000).await
    }

    #[test]
    fn a_prompts_question_is_one_redacted_line_no_longer_than_a_prompt_carries() {
        use assistant_core::messages::TurnRequest;
        use assistant_core::turn::{Content, Message, Role};
        let token = format!("xox{}-123456789012-{}", "b", "a1B2c3D4e5F6g7H8i9J0k1L2");
        let said = format!("<@UBOT> restart   checkout-api\n\nwith {token} <!channel> `now` {}", "x".repeat(5_000));
        let request: TurnRequest = serde_json::from_value(serde_json::json!({
            "event_id": "Ev1", "thread": {"team": "T1", "channel": "C1", "thread_ts": "1.1"},
            "message_ts": "1.1", "user": "U1", "text": said
        }))
        .unwrap();
        let mut turn = Turn::start(&request, 0);
        let call = ToolUse { id: "r1".into(), name: "restart_service".into(), input: serde_json::json!({}) };
        turn.transcript = vec![
            Message { role: Role::User, content: vec![Content::Text(format!("<@U1>: {said}"))] },
            Message { role: Role::Assistant, content: vec![Content::ToolUse(call.clone())] },
        ];
        let origin = call_origin(&turn, &call);
        assert!(
            origin.question.starts_with("restart checkout-api with [redacted: slack bot token] <!channel> `now` xxx"),
            "one line, mentions of the bot left out, the secret gone (the prompt escapes the rest): {}",
            origin.question
        );
        assert!(!origin.question.contains(&token));
        assert_eq!(origin.question.chars().count(), PROMPT_QUESTION_CHARS);
        assert!(origin.question.ends_with('…'));
        assert!(!origin.read_content(), "proposed straight from the question");
    }

    #[tokio::test]
    async fn a_person_of_another_organization_never_approves_even_when_named_or_asking() {
        let slack = MemorySlack::default().with_group("S0ONCALL", &["U0VENDOR"]);
        let approvals = approvals(&["requester", "U0VENDOR", "S0ONCALL"], true);
        let approvers = approvals.approvers_for(None).to_vec();
        for (requester, clicker) in [("U0VENDOR", "U0VENDOR"), ("U0ASKER", "U0VENDOR")] {
            let outsider = (&user(clicker), Membership::External);
            let verdict = approvals.verdict(&slack, &user(requester), outsider, &approvers, 0).await;
            assert_eq!(verdict, Verdict::External, "{requester} asked, {clicker} clicked");
        }
        let insider = (&user("U0VENDOR"), Membership::Home);
        assert_eq!(approvals.verdict(&slack, &user("U0ASKER"), insider, &approvers, 0).await, Verdict::May);
    }

    #[tokio::test]
    async fn the_requester_named_users_and_group_members_may_approve_and_no_one_else() {
        let slack = MemorySlack::default().with_group("S0ONCALL", &["U0ONCALL1", "U0ONCALL2"]);
        let approvals = approvals(&["requester", "U0LEAD", "S0ONCALL"], true);
        assert_eq!(verdict(&approvals, &slack, "U0ASKER").await, Verdict::May);
        assert_eq!(verdict(&approvals, &slack, "U0LEAD").await, Verdict::May);
        assert_eq!(verdict(&approvals, &slack, "U0ONCALL2").await, Verdict::May);
        assert_eq!(verdict(&approvals, &slack, "U0BYSTANDER").await, Verdict::MayNot { own_request: false });
    }

    #[tokio::test]
    async fn by_default_only_the_requester_and_with_four_eyes_never_the_requester() {
        let slack = MemorySlack::default();
        let only_requester = approvals(&["requester"], true);
        assert_eq!(verdict(&only_requester, &slack, "U0ASKER").await, Verdict::May);
        assert_eq!(verdict(&only_requester, &slack, "U0OTHER").await, Verdict::MayNot { own_request: false });

        let four_eyes = approvals(&["requester", "U0ASKER", "U0LEAD"], false);
        assert_eq!(
            verdict(&four_eyes, &slack, "U0ASKER").await,
            Verdict::MayNot { own_request: true },
            "not even when named as a user"
        );
        assert_eq!(verdict(&four_eyes, &slack, "U0LEAD").await, Verdict::May);
    }

    #[tokio::test]
    async fn a_tools_own_approvers_replace_the_default() {
        let approvals = approvals(&["requester"], true);
        let own = [Approver::User(user("U0DBA"))];
        let rule = ApprovalRule { approvers: Some(&own), destructive: false, grant_scope: None };
        assert_eq!(approvals.approvers_for(Some(rule)), own);
        let slack = MemorySlack::default();
        let verdict = approvals.verdict(&slack, &user("U0ASKER"), (&user("U0ASKER"), Membership::Home), &own, 0).await;
        assert_eq!(verdict, Verdict::MayNot { own_request: false }, "the requester is not among the tool's approvers");
    }

    #[tokio::test]
    async fn groups_are_read_once_for_a_while_and_an_unreadable_group_lets_no_one_in() {
        let slack = MemorySlack::default().with_group("S0ONCALL", &["U0ONCALL1"]);
        let approvals = approvals(&["S0ONCALL", "S0MISSING"], true);
        let approvers = approvals.approvers_for(None).to_vec();
        for now in [0, 100, GROUP_CACHE_SECS - 1] {
            let oncall = (&user("U0ONCALL1"), Membership::Home);
            let verdict = approvals.verdict(&slack, &user("U0ASKER"), oncall, &approvers, now).await;
            assert_eq!(verdict, Verdict::May);
        }
        assert_eq!(slack.group_reads(), 1, "cached");
        let stranger = (&user("U0STRANGER"), Membership::Home);
        let stranger = approvals.verdict(&slack, &user("U0ASKER"), stranger, &approvers, 10).await;
        assert_eq!(stranger, Verdict::MayNot { own_request: false });
        let oncall = (&user("U0ONCALL1"), Membership::Home);
        approvals.verdict(&slack, &user("U0ASKER"), oncall, &approvers, GROUP_CACHE_SECS).await;
        assert!(slack.group_reads() >= 3, "read again once stale (and the missing group each time)");
    }
}
