//! Whether a person belongs to the workspace the app is installed in, or
//! comes from another organization through a channel shared with it
//! (Slack Connect).
//!
//! Slack says it in each payload: an event's message carries the author's
//! team (`user_team`, else `team`) and the callback the installing one
//! (`authorizations[0].team_id`; the outer `team_id` may be the other
//! side's in a shared channel); a `block_actions` payload carries the
//! clicker's (`user.team_id`) and the team whose app posted the buttons
//! (`team.id`). Under Enterprise Grid `user.team_id` may name the
//! organization (`E…`), which counts as home when it is the installing
//! team's. An org-wide install is not told apart from its other
//! workspaces: their people count as another team's (they cannot approve;
//! the safe side).

use crate::ids::TeamId;
use serde::{Deserialize, Serialize};

/// A person's standing with the installing team: what tool policy and
/// approvals decide by. `Home` is what a message written before the field
/// existed means (the behaviour then).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Membership {
    /// A member of the installing workspace (or its Enterprise Grid org).
    #[default]
    Home,
    /// A member of another organization, in a channel shared with it.
    External,
}

impl Membership {
    /// `person`: the team Slack names for the person; `home` and
    /// `home_enterprise`: the installing workspace and its organization;
    /// `unknown`: what a payload naming no team for the person means.
    pub fn of(person: Option<&TeamId>, home: &TeamId, home_enterprise: Option<&str>, unknown: Self) -> Self {
        match person {
            None => unknown,
            Some(team) if team == home => Self::Home,
            Some(team) if home_enterprise.is_some_and(|org| team.as_str() == org) => Self::Home,
            Some(_) => Self::External,
        }
    }

    pub fn is_home(&self) -> bool {
        *self == Self::Home
    }

    pub fn is_external(&self) -> bool {
        *self == Self::External
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Membership::{External, Home};

    #[test]
    fn the_installing_team_or_its_organization_is_home_and_any_other_team_is_external() {
        let home = TeamId::new("T0HOME");
        let of = |person: Option<&str>, org: Option<&str>, unknown| {
            Membership::of(person.map(TeamId::new).as_ref(), &home, org, unknown)
        };
        assert_eq!(of(Some("T0HOME"), None, External), Home);
        assert_eq!(of(Some("T0VENDOR"), None, Home), External);
        assert_eq!(of(Some("E0ORG"), Some("E0ORG"), External), Home, "Grid names the organization");
        assert_eq!(of(Some("E0OTHERORG"), Some("E0ORG"), Home), External);
        assert_eq!(of(None, None, External), External, "unknown: as the caller says");
        assert_eq!(of(None, None, Home), Home);
        assert_eq!(serde_json::to_string(&External).unwrap(), r#""external""#);
        assert_eq!(Membership::default(), Home, "what a message written before the field existed means");
    }
}
