//! Whether a person belongs to the installing team, or comes from another
//! organization through a channel shared with it (Slack Connect), and
//! which installation this deployment is ([`Home`]).
//!
//! Slack says it in each payload: an event's message carries the author's
//! team (`user_team`, else `team`) and the callback the installing one
//! (`authorizations[0].team_id`; the outer `team_id` may be the other
//! side's in a shared channel); a `block_actions` payload carries the
//! clicker's (`user.team_id`) and the team whose app posted the buttons
//! (`team.id`). Under Enterprise Grid `user.team_id` may name the
//! organization (`E…`).
//!
//! Which organization is ours is the deployment's own knowledge
//! (`SLACK_ENTERPRISE_ID`), never a payload's: a payload's `enterprise_id`,
//! `enterprise.id`, `context_enterprise_id` or outer `team_id` describe
//! where something happened, and in a Connect channel that may be the
//! other side. What a person's standing is read from is the field naming
//! the person's own team (`user_team` / `user.team_id`), compared with
//! what the deployment knows. For an org-wide install ([`Home::Organization`]):
//! a person whose team is the organization, or who writes in a channel
//! that is not shared outside it, is home; in a channel shared with
//! another organization, a person whose team is a workspace is home only
//! when it is the workspace the payload names for the installation (a
//! click's `team.id`); another workspace of the organization is not told
//! apart from a partner's there (external: the safe side).

use crate::ids::{EnterpriseId, TeamId};
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
    /// `home_enterprise`: the installing workspace (none: the payload does
    /// not say, as an org-wide install's `team: null`) and its
    /// organization; `unknown`: what a payload naming no team for the
    /// person means.
    pub fn of(person: Option<&TeamId>, home: Option<&TeamId>, home_enterprise: Option<&str>, unknown: Self) -> Self {
        match person {
            None => unknown,
            Some(team) if Some(team) == home => Self::Home,
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

/// The installation this deployment is: what "the installing team" means
/// for its checks (who may approve, who is external, which events are
/// ours at all).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Home {
    /// One workspace (or a workspace of an organization): each payload's
    /// installation names it (`authorizations[0]`, a click's `team`), as
    /// before org-wide installs were known.
    #[default]
    Workspace,
    /// An org-wide install in this Enterprise Grid organization: every
    /// workspace of it is home, and a payload of any other organization
    /// (or of a workspace outside any) is not ours.
    Organization(EnterpriseId),
}

impl Home {
    /// The organization of an org-wide install.
    pub fn organization(&self) -> Option<&EnterpriseId> {
        match self {
            Home::Workspace => None,
            Home::Organization(org) => Some(org),
        }
    }

    /// Whether a payload whose installation is in `enterprise` (none: a
    /// workspace outside any organization) is for this deployment. A
    /// workspace deployment cannot tell (it takes each payload's word).
    pub fn admits(&self, enterprise: Option<&str>) -> bool {
        match self {
            Home::Workspace => true,
            Home::Organization(org) => enterprise == Some(org.as_str()),
        }
    }

    /// The standing of the author of an event's message. `author`: the
    /// team the message names for its author (`user_team`, else `team`);
    /// `installed`: the installation's workspace and organization as the
    /// callback names them; `shared`: the channel is shared with another
    /// organization (`is_ext_shared_channel`). A message naming no team is
    /// external in a shared channel, home elsewhere.
    pub fn author(
        &self,
        author: Option<&TeamId>,
        installed: (Option<&TeamId>, Option<&str>),
        shared: bool,
    ) -> Membership {
        let unknown = if shared { Membership::External } else { Membership::Home };
        match self {
            Home::Workspace => Membership::of(author, installed.0, installed.1, unknown),
            Home::Organization(_) if author.is_none() => unknown,
            // Only the organization's people are in a channel not shared
            // outside it, whichever of its workspaces they belong to.
            Home::Organization(_) if !shared => Membership::Home,
            // Shared: the installation's workspace is not the callback's
            // to say for an org-wide install (`authorizations[0].team_id`
            // is null, the outer `team_id` may be the other side's), so
            // only the organization itself counts.
            Home::Organization(org) => {
                Membership::of(author, Some(&TeamId::new(org.as_str())), Some(org.as_str()), unknown)
            }
        }
    }

    /// The standing of the person who clicked or used a shortcut:
    /// `person`, their team (`user.team_id`); `workspace`, the team whose
    /// app posted what they clicked (`team.id`); `enterprise`, the
    /// payload's organization (`enterprise.id`), which counts only for a
    /// workspace deployment: an org-wide one counts its own. Naming no
    /// team for the person: external. An org-wide install's payload may
    /// name no `team` (`workspace` none): then only a person whose team is
    /// the organization itself is home, since the person's own workspace
    /// cannot be told from a Connect partner's (external: the safe side).
    pub fn clicker(&self, person: Option<&TeamId>, workspace: Option<&TeamId>, enterprise: Option<&str>) -> Membership {
        let org = match self {
            Home::Workspace => enterprise,
            Home::Organization(org) => Some(org.as_str()),
        };
        Membership::of(person, workspace, org, Membership::External)
    }
}

#[cfg(test)]
mod tests {
    use super::Home as Deployment;
    use super::*;
    use Membership::{External, Home};

    #[test]
    fn the_installing_team_or_its_organization_is_home_and_any_other_team_is_external() {
        let home = TeamId::new("T0HOME");
        let of = |person: Option<&str>, org: Option<&str>, unknown| {
            Membership::of(person.map(TeamId::new).as_ref(), Some(&home), org, unknown)
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

    #[test]
    fn an_org_install_admits_its_own_organization_only() {
        let org = Deployment::Organization(EnterpriseId::new("E0GRIDORG1"));
        assert!(org.admits(Some("E0GRIDORG1")));
        assert!(!org.admits(Some("E0OTHERORG")), "another organization's install");
        assert!(!org.admits(None), "a workspace outside any organization");
        assert!(Deployment::Workspace.admits(None) && Deployment::Workspace.admits(Some("E0OTHERORG")));
    }

    #[test]
    fn in_an_org_install_any_workspace_is_home_except_where_the_channel_is_shared_outside() {
        let org = Deployment::Organization(EnterpriseId::new("E0GRIDORG1"));
        let (sister, partner, grid) = (TeamId::new("T0SISTER1"), TeamId::new("T0PARTNER"), TeamId::new("E0GRIDORG1"));
        // The callback's outer team may be anyone's: it decides nothing.
        let installed = (Some(&partner), Some("E0GRIDORG1"));
        assert_eq!(org.author(Some(&sister), installed, false), Home, "a second workspace of the org");
        assert_eq!(org.author(Some(&grid), installed, true), Home, "the org named as the team");
        assert_eq!(org.author(Some(&partner), installed, true), External, "a Connect partner");
        assert_eq!(org.author(Some(&sister), installed, true), External, "shared: not told apart (safe side)");
        assert_eq!(org.author(None, installed, true), External);
        assert_eq!(org.author(None, installed, false), Home);
        // A workspace deployment: as before.
        let home = TeamId::new("T0HOME");
        assert_eq!(Deployment::Workspace.author(Some(&sister), (Some(&home), None), false), External);
        assert_eq!(Deployment::Workspace.author(Some(&home), (Some(&home), None), true), Home);
    }

    #[test]
    fn a_clickers_organization_is_the_deployments_not_the_payloads() {
        let org = Deployment::Organization(EnterpriseId::new("E0GRIDORG1"));
        let (posted_in, partner) = (TeamId::new("T0SISTER1"), TeamId::new("T0PARTNER"));
        let posted_in = &posted_in;
        let partner_org = TeamId::new("E0OTHERORG");
        assert_eq!(org.clicker(Some(posted_in), Some(posted_in), Some("E0GRIDORG1")), Home);
        assert_eq!(org.clicker(Some(&TeamId::new("E0GRIDORG1")), Some(posted_in), None), Home);
        assert_eq!(org.clicker(Some(&partner), Some(posted_in), Some("E0GRIDORG1")), External);
        // A Grid partner whose payload names their own org as the enterprise:
        // home for a workspace deployment that takes the payload's word, not for ours.
        assert_eq!(Deployment::Workspace.clicker(Some(&partner_org), Some(posted_in), Some("E0OTHERORG")), Home);
        assert_eq!(org.clicker(Some(&partner_org), Some(posted_in), Some("E0OTHERORG")), External);
        assert_eq!(org.clicker(None, Some(posted_in), Some("E0GRIDORG1")), External);
        // An org-wide install's click naming no workspace (`team: null`):
        // only the organization itself is home; a workspace, even one that
        // is the person's own, cannot be told from a partner's.
        assert_eq!(org.clicker(Some(&TeamId::new("E0GRIDORG1")), None, Some("E0GRIDORG1")), Home);
        assert_eq!(org.clicker(Some(posted_in), None, Some("E0GRIDORG1")), External);
        assert_eq!(org.clicker(Some(&partner), None, Some("E0GRIDORG1")), External);
    }
}
