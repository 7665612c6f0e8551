//! The app's lifecycle events, decided without I/O: the app uninstalled
//! (`app_uninstalled`), tokens revoked (`tokens_revoked`: the bot's, or
//! people's) and a person leaving (`user_change` with `user.deleted`).
//!
//! Each becomes one `forget` work message, enqueued without a claim (the
//! FIFO deduplication id drops Slack's retries within five minutes, and the
//! worker's forgetting is idempotent after that): the ingress acknowledges
//! at once and the worker stops the team's or the person's work and
//! deletes what the bot keeps for them.
//!
//! An org-wide install's uninstall (or its bot token revoked) comes once,
//! for the whole organization: its forget names the organization, and the
//! worker forgets every workspace of it the bot kept records for
//! ([`scope`]).
//!
//! A person is forgotten only as a member of the installing team: a
//! `user_change` naming another team (a Slack Connect partner's person, or
//! anyone whose team is not ours) forgets nothing, so nobody of this team
//! who shares an id with them loses anything.

use crate::route::{Ignored, Route};
use assistant_core::WorkMessage;
use assistant_core::messages::{Forget, ForgetReason};
use slack::events::{Event, Installation};
use slack::{EnterpriseId, EventId, Home, TeamId, UserId};

/// At most this many people in one `forget` (a queue message stays far
/// under SQS's 256 KiB); Slack lists more only when a whole team's tokens
/// go, which its `app_uninstalled` covers.
pub const MAX_PEOPLE: usize = 1000;

/// Why a lifecycle event forgets nothing, for the log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// A `user_change` of a person who did not leave.
    PersonStays,
    /// A person of another team or organization left: nothing of theirs is
    /// kept under this team's keys for the event to name.
    OtherTeamsPerson,
    /// A `tokens_revoked` listing nobody.
    NothingRevoked,
}

impl Skipped {
    pub fn as_str(self) -> &'static str {
        match self {
            Skipped::PersonStays => "user_change_not_deleted",
            Skipped::OtherTeamsPerson => "user_of_another_team",
            Skipped::NothingRevoked => "tokens_revoked_names_no_one",
        }
    }
}

/// What the callback around a lifecycle event says.
pub struct Callback<'a> {
    /// The deployment (the router admitted the callback as its own).
    pub home: &'a Home,
    pub installation: &'a Installation,
    /// The team the event is for (the callback's `team_id`): the bot's
    /// records are kept under it. None, or an organization's id, for an
    /// org-wide install's event about the whole organization.
    pub team: Option<&'a TeamId>,
    pub event_id: EventId,
    pub event_time: i64,
}

/// What a lifecycle event forgets: one workspace, or every workspace of
/// the deployment's organization.
enum Scope {
    Workspace(TeamId),
    Organization(EnterpriseId),
}

/// The scope of a callback's forget.
///
/// Slack sends an org-wide install's uninstall once, for the organization:
/// its Events API references for such organization-level events show the
/// callback with `"team_id": null` beside `"enterprise_id"`
/// (<https://docs.slack.dev/reference/events/team_access_revoked/>,
/// `team_access_granted`), and an organization's id where a team's would
/// be (`app_uninstalled_team`'s `team_id`: `E073D7H7BBE`,
/// <https://docs.slack.dev/reference/events/app_uninstalled_team/>);
/// `app_uninstalled` is sent "whenever a Slack app is completely
/// uninstalled" (<https://docs.slack.dev/reference/events/app_uninstalled/>).
/// So under an org-wide deployment a callback naming no workspace, or
/// naming the organization, forgets the organization; one naming a
/// workspace forgets that workspace, as before. A person leaving an
/// organization leaves all of it (Grid user ids are the organization's):
/// forgotten in every workspace. A callback naming another organization
/// forgets nothing; a workspace deployment cannot place one naming no
/// workspace, and forgets nothing.
fn scope(home: &Home, team: Option<&TeamId>, person: bool) -> Result<Scope, Ignored> {
    match (home.organization(), team) {
        (Some(org), _) if person => Ok(Scope::Organization(org.clone())),
        (Some(org), None) => Ok(Scope::Organization(org.clone())),
        (Some(org), Some(team)) if team.as_str() == org.as_str() => Ok(Scope::Organization(org.clone())),
        (_, Some(team)) if team.is_workspace() => Ok(Scope::Workspace(team.clone())),
        (Some(_), Some(_)) => Err(Ignored::OutsideOrganization),
        (None, _) => Err(Ignored::NoWorkspace),
    }
}

/// The route of a lifecycle event; `None` for any other event.
pub fn route(event: &Event, callback: Callback<'_>) -> Option<Route> {
    let forget = |reason, users: Vec<UserId>| {
        let person = reason == ForgetReason::UserDeleted;
        let (team, organization) = match scope(callback.home, callback.team, person) {
            Ok(Scope::Workspace(team)) => (team, false),
            Ok(Scope::Organization(org)) => (TeamId::new(org.as_str()), true),
            Err(ignored) => return Route::Ignore(ignored),
        };
        Route::Enqueue(WorkMessage::Forget(Forget {
            event_id: callback.event_id.clone(),
            team,
            organization,
            reason,
            users,
            at: callback.event_time,
        }))
    };
    let skipped = |why| Route::Ignore(Ignored::Lifecycle(why));
    Some(match event {
        Event::AppUninstalled => forget(ForgetReason::AppUninstalled, Vec::new()),
        // The bot's token gone: the team's work stops as on an uninstall.
        Event::TokensRevoked(revoked) if !revoked.tokens.bot.is_empty() => {
            forget(ForgetReason::TokensRevoked, Vec::new())
        }
        Event::TokensRevoked(revoked) if revoked.tokens.oauth.is_empty() => skipped(Skipped::NothingRevoked),
        Event::TokensRevoked(revoked) => {
            forget(ForgetReason::TokensRevoked, revoked.tokens.oauth.iter().take(MAX_PEOPLE).cloned().collect())
        }
        Event::UserChange(change) if !change.user.deleted => skipped(Skipped::PersonStays),
        Event::UserChange(change) => {
            let enterprise = change.user.enterprise_user.as_ref().and_then(|user| user.enterprise_id.as_deref());
            if !of_installing_team(callback.home, callback.installation, change.user.team_id.as_ref(), enterprise) {
                return Some(skipped(Skipped::OtherTeamsPerson));
            }
            forget(ForgetReason::UserDeleted, vec![change.user.id.clone()])
        }
        _ => return None,
    })
}

/// Whether a person of `team` (in organization `enterprise`) belongs to
/// the installing team: its workspace, or under an organization's install
/// any workspace of that organization (for an org-wide deployment, its
/// configured one). A person naming no team does not.
fn of_installing_team(
    home: &Home,
    installation: &Installation,
    team: Option<&TeamId>,
    enterprise: Option<&str>,
) -> bool {
    let Some(team) = team else { return false };
    if let Some(org) = home.organization() {
        return enterprise == Some(org.as_str()) || team.as_str() == org.as_str();
    }
    if installation.team.as_ref() == Some(team) {
        return true;
    }
    match (&installation.enterprise, enterprise) {
        (Some(org), Some(theirs)) => org == theirs || team.as_str() == org,
        (Some(org), None) => team.as_str() == org,
        (None, _) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::route as route_request;
    use testkit::fixtures;

    fn routed(payload: &str) -> Route {
        route_request(slack::request::parse(Some("application/json"), payload.as_bytes()).unwrap())
    }

    fn forgets(payload: &str) -> Forget {
        match routed(payload) {
            Route::Enqueue(WorkMessage::Forget(forget)) => forget,
            other => panic!("expected a forget, got {other:?}"),
        }
    }

    #[test]
    fn an_uninstall_forgets_the_team_from_when_slack_says_it_happened() {
        let forget = forgets(fixtures::APP_UNINSTALLED);
        assert_eq!(forget.reason, ForgetReason::AppUninstalled);
        assert_eq!((forget.team.as_str(), forget.users.len(), forget.at), ("T061EG9R6", 0, 1_763_800_500));
        let message = WorkMessage::Forget(forget);
        assert_eq!(message.dedupe_id(), "forget:T061EG9R6:Ev0UNINST01", "Slack's retries are one message");
        assert_eq!(message.queue_group(), "forget:T061EG9R6");
        assert_eq!(WorkMessage::decode(&message.encode()).unwrap(), message);
    }

    #[test]
    fn a_revoked_bot_token_forgets_the_team_and_revoked_user_tokens_their_people() {
        let forget = forgets(fixtures::TOKENS_REVOKED);
        assert_eq!((forget.reason, forget.users.len()), (ForgetReason::TokensRevoked, 0), "the bot's: the team");
        let people = fixtures::TOKENS_REVOKED.replace("\"U0LAN0Z89\"", "");
        let forget = forgets(&people);
        assert_eq!(forget.users, [UserId::new("U061F7AUR")]);
        let nobody = people.replace("\"U061F7AUR\"", "");
        assert_eq!(routed(&nobody), Route::Ignore(Ignored::Lifecycle(Skipped::NothingRevoked)));
        let many: Vec<String> = (0..MAX_PEOPLE + 5).map(|n| format!("\"U{n:08}\"")).collect();
        let crowd = people.replace("\"U061F7AUR\"", &many.join(","));
        assert_eq!(forgets(&crowd).users.len(), MAX_PEOPLE, "bounded, whatever Slack sent");
    }

    #[test]
    fn a_person_who_left_is_forgotten_and_one_who_changed_their_profile_is_not() {
        let forget = forgets(fixtures::USER_CHANGE_DELETED);
        assert_eq!((forget.reason, forget.team.as_str()), (ForgetReason::UserDeleted, "T061EG9R6"));
        assert_eq!(forget.users, [UserId::new("U061F7AUR")]);
        let stays = fixtures::USER_CHANGE_DELETED.replace("\"deleted\": true", "\"deleted\": false");
        assert_eq!(routed(&stays), Route::Ignore(Ignored::Lifecycle(Skipped::PersonStays)));
    }

    #[test]
    fn a_person_of_another_team_or_organization_leaving_forgets_nothing_here() {
        // GIVEN a person of another team, with the same user id as one of ours
        let person_team = |team: &str| {
            fixtures::USER_CHANGE_DELETED
                .replace("\"team_id\": \"T061EG9R6\",\n      \"name\"", &format!("{team}\n      \"name\""))
        };
        let other = person_team("\"team_id\": \"T0VENDOR01\",");
        assert_ne!(other, fixtures::USER_CHANGE_DELETED);
        // THEN nothing is forgotten (ours keeps their tokens and grants)
        assert_eq!(routed(&other), Route::Ignore(Ignored::Lifecycle(Skipped::OtherTeamsPerson)));
        let unnamed = person_team("");
        assert_eq!(routed(&unnamed), Route::Ignore(Ignored::Lifecycle(Skipped::OtherTeamsPerson)));
        // An organization's install: a person of another workspace of the
        // same organization is ours; of another organization, not.
        let org = |person_org: &str| {
            person_team("\"team_id\": \"T0SISTER1\",")
                .replace("\"enterprise_id\": null", "\"enterprise_id\": \"E0ORG0001\"")
                .replace(
                    "\"deleted\": true,",
                    &format!("\"deleted\": true, \"enterprise_user\": {{\"enterprise_id\": \"{person_org}\"}},"),
                )
        };
        assert_eq!(forgets(&org("E0ORG0001")).users, [UserId::new("U061F7AUR")]);
        assert_eq!(routed(&org("E0OTHER01")), Route::Ignore(Ignored::Lifecycle(Skipped::OtherTeamsPerson)));
    }
}
