//! "Approve for this thread": an approver lets one tool (or one MCP
//! server's tools) run in one thread without a prompt, for a while, for
//! the person whose call they approved. Anyone else who asks in the
//! thread (a bystander) gets the prompt as before: a grant is the
//! approver's trust in one person's use of a tool, not in the thread's.
//!
//! A grant is an item beside the thread, `GRANTS#{team}#{channel}#{thread_ts}`
//! / `GRANT#{scope}#{user}`, written by the worker only (a thread's work reaches it
//! in order: the thread is the FIFO group). Granting and revoking each write
//! the whole item, with values taken from the click that caused them, so a
//! write retried after its answer was lost writes the same bytes again. A
//! revoked grant stays as a record (who revoked it, when) until it expires
//! from the table, a month after it ended: the audit trail of what ran under
//! it is in the turns, each call naming its grant.
//!
//! A grant never covers a destructive call: the worker offers none for one
//! and checks again when it would use one.

use crate::keys;
use crate::messages::{ThreadRef, decode_envelope_at, encode_envelope_at};
use crate::ports::{PortError, VersionedRecords};
use crate::turn::TurnId;
use serde::{Deserialize, Serialize};
use slack::UserId;
use std::sync::Arc;

pub use crate::keys::GRANT_RECORD_SECS;
/// The longest grant the configuration may ask for.
pub const MAX_GRANT_MINUTES: u32 = 24 * 60;

/// One grant: what it covers, for whom, who gave it and until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadGrant {
    /// A tool's name, or `{server}__*` for every tool of an MCP server.
    pub scope: String,
    /// Whose calls it lets run: the person whose call was approved. `None`
    /// (a grant stored before grants named a person) covers nobody.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_user: Option<UserId>,
    pub granted_by: UserId,
    /// The turn whose prompt offered it.
    pub turn_id: TurnId,
    /// Unix seconds.
    pub granted_at: i64,
    pub until: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<Revoked>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revoked {
    pub by: UserId,
    pub at: i64,
}

impl ThreadGrant {
    /// Whether it lets `user`'s call of `tool` run at `now_unix`.
    pub fn covers(&self, tool: &str, user: &UserId, now_unix: i64) -> bool {
        self.revoked.is_none()
            && now_unix < self.until
            && scope_covers(&self.scope, tool)
            && self.for_user.as_ref() == Some(user)
    }

    /// Whether a revoke by `by` at `at` applies to it: it is in force, or
    /// that very revoke already ended it (a retry whose first write landed
    /// with its answer lost, which must still tell the thread).
    pub fn revocable_by(&self, by: &UserId, at: i64) -> bool {
        match &self.revoked {
            None => at < self.until,
            Some(revoked) => revoked.by == *by && revoked.at == at,
        }
    }
}

/// Whether a grant's scope names the tool: its exact name, or its MCP
/// server's `{server}__*`.
pub fn scope_covers(scope: &str, tool: &str) -> bool {
    match scope.strip_suffix('*') {
        Some(server) => server.ends_with("__") && tool.starts_with(server) && tool.len() > server.len(),
        None => scope == tool,
    }
}

/// What a grant's Revoke button carries: the scope in the thread it was
/// clicked in (the thread comes from Slack's payload, never the value),
/// versioned like every button.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokeButton {
    pub scope: String,
    /// The person the grant is for (none on buttons made before grants
    /// named one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_user: Option<UserId>,
    /// The turn whose notice carried the button.
    pub turn_id: TurnId,
}

const REVOKE_BUTTON_VERSION: u32 = 1;

impl RevokeButton {
    pub fn encode(&self) -> String {
        encode_envelope_at(REVOKE_BUTTON_VERSION, self)
    }

    /// `None` for a value this build did not write.
    pub fn decode(value: &str) -> Option<Self> {
        let button: Self = decode_envelope_at(REVOKE_BUTTON_VERSION, value).ok()?;
        let scope_ok = !button.scope.is_empty() && button.scope.len() <= 128;
        (scope_ok && TurnId::is_well_formed(button.turn_id.as_str())).then_some(button)
    }
}

/// The grants of threads, on any [`VersionedRecords`] (items beside the
/// thread's partition, written whole).
#[derive(Clone)]
pub struct ThreadGrants(Arc<dyn VersionedRecords>, Option<slack::EnterpriseId>);

impl ThreadGrants {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self(records, None)
    }

    /// The same, for an org-wide deployment in `organization`: each
    /// thread's grants are listed for its uninstall too
    /// (`crate::departures::note`).
    #[must_use]
    pub fn in_organization(self, organization: Option<slack::EnterpriseId>) -> Self {
        Self(self.0, organization)
    }

    /// Every grant the thread has had (revoked and ended ones too), read
    /// consistently.
    pub async fn all(&self, thread: &ThreadRef) -> Result<Vec<ThreadGrant>, PortError> {
        let items = self.0.parts(&keys::grants_partition(thread), keys::GRANT_SORT_PREFIX).await?;
        items
            .into_iter()
            .map(|(_, state)| {
                serde_json::from_str(&state)
                    .map_err(|err| PortError::new("read thread grants", format!("stored grant does not parse: {err}")))
            })
            .collect()
    }

    /// The grant that lets `user`'s call of `tool` run in the thread now,
    /// if any.
    pub async fn covering(
        &self,
        thread: &ThreadRef,
        tool: &str,
        user: &UserId,
        now_unix: i64,
    ) -> Result<Option<ThreadGrant>, PortError> {
        Ok(self.all(thread).await?.into_iter().find(|grant| grant.covers(tool, user, now_unix)))
    }

    /// Stores `grant` in place of any earlier one of the same scope for
    /// the same person.
    pub async fn put(&self, thread: &ThreadRef, grant: &ThreadGrant) -> Result<(), PortError> {
        let state = serde_json::to_string(grant).expect("grants are strings and numbers");
        let sort_key = keys::grant(&grant.scope, grant.for_user.as_ref());
        let (partition, expires_at) = (keys::grants_partition(thread), grant.until + GRANT_RECORD_SECS);
        crate::departures::note(
            self.0.as_ref(),
            self.1.as_ref(),
            &thread.team,
            &partition,
            keys::GRANT_SORT_PREFIX,
            expires_at,
        )
        .await?;
        self.0.put_part(&partition, &sort_key, state, expires_at).await
    }

    /// The thread's grant of `scope` for `for_user` that a revoke by `by`
    /// at `now_unix` applies to: one in force, or one that very revoke
    /// already ended (so a repeated revoke finds it and tells the thread
    /// again); `None` when there is none (never given, ended, or revoked by
    /// another click).
    pub async fn revocable(
        &self,
        thread: &ThreadRef,
        scope: &str,
        for_user: Option<&UserId>,
        by: &UserId,
        now_unix: i64,
    ) -> Result<Option<ThreadGrant>, PortError> {
        Ok(self
            .all(thread)
            .await?
            .into_iter()
            .find(|g| g.scope == scope && g.for_user.as_ref() == for_user && g.revocable_by(by, now_unix)))
    }

    /// Marks `grant` (found by [`Self::revocable`]) revoked by `by` at `now_unix`.
    pub async fn revoke(
        &self,
        thread: &ThreadRef,
        mut grant: ThreadGrant,
        by: &UserId,
        now_unix: i64,
    ) -> Result<ThreadGrant, PortError> {
        grant.revoked = Some(Revoked { by: by.clone(), at: now_unix });
        self.put(thread, &grant).await?;
        Ok(grant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_covers_its_tool_or_its_servers_tools_and_nothing_else() {
        assert!(scope_covers("restart_service", "restart_service"));
        assert!(!scope_covers("restart_service", "restart_service_now"));
        assert!(scope_covers("deploys__*", "deploys__rollback"));
        assert!(!scope_covers("deploys__*", "deploys__"), "no tool name");
        assert!(!scope_covers("deploys__*", "deploysx__rollback"));
        assert!(!scope_covers("*", "restart_service"), "a bare star is no scope");
        assert!(!scope_covers("deploy*", "deploy_prod"), "only whole servers");
    }

    #[test]
    fn a_grant_covers_its_persons_calls_until_it_ends_or_is_revoked() {
        let asker = UserId::new("U0ASKER");
        let grant = ThreadGrant {
            scope: "restart_service".into(),
            for_user: Some(asker.clone()),
            granted_by: UserId::new("U0LEAD"),
            turn_id: TurnId::new("T1-Ev1"),
            granted_at: 1_000,
            until: 4_600,
            revoked: None,
        };
        assert!(grant.covers("restart_service", &asker, 4_599));
        assert!(!grant.covers("restart_service", &UserId::new("U0BYSTANDER"), 2_000), "a bystander");
        assert!(!grant.covers("restart_service", &UserId::new("U0LEAD"), 2_000), "not even the approver");
        assert!(!grant.covers("restart_service", &asker, 4_600), "ended");
        assert!(!grant.covers("scale_service", &asker, 2_000), "another tool");
        let revoked = ThreadGrant { revoked: Some(Revoked { by: UserId::new("U0LEAD"), at: 2_000 }), ..grant.clone() };
        assert!(!revoked.covers("restart_service", &asker, 2_001));
        let stored_before: ThreadGrant = serde_json::from_str(
            r#"{"scope":"restart_service","granted_by":"U0LEAD","turn_id":"T1-Ev1","granted_at":1000,"until":4600}"#,
        )
        .unwrap();
        assert!(!stored_before.covers("restart_service", &asker, 2_000), "a grant naming no one covers no one");
    }

    #[test]
    fn revoke_buttons_round_trip_and_foreign_values_are_refused() {
        let button = RevokeButton {
            scope: "deploys__*".into(),
            for_user: Some(UserId::new("U0ASKER")),
            turn_id: TurnId::new("T1-Ev1"),
        };
        assert_eq!(RevokeButton::decode(&button.encode()), Some(button));
        let older = r#"{"v":1,"scope":"deploys__*","turn_id":"T1-Ev1"}"#;
        assert_eq!(RevokeButton::decode(older).map(|b| b.for_user), Some(None), "an older button still reads");
        for foreign in [
            "",
            "revoke",
            r#"{"v":2,"scope":"x","turn_id":"T1-Ev1"}"#,
            r#"{"v":1,"scope":"","turn_id":"T1-Ev1"}"#,
            r#"{"v":1,"scope":"x","turn_id":"../etc"}"#,
        ] {
            assert_eq!(RevokeButton::decode(foreign), None, "{foreign}");
        }
    }
}
