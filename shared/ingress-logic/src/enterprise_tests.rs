//! An org-wide install (Enterprise Grid) through the router, with Slack's
//! payload shapes: what it admits, whom it counts as home, and what it
//! refuses (`crate::route::route_at`, `slack::Home`).

use crate::lifecycle::Skipped;
use crate::route::{Ignored, Route, route, route_at};
use assistant_core::WorkMessage;
use assistant_core::messages::TurnRequest;
use slack::{EnterpriseId, Home, Membership};
use testkit::fixtures;

fn org() -> Home {
    Home::Organization(EnterpriseId::new("E0GRIDORG1"))
}

fn event(home: &Home, payload: &str) -> Route {
    route_at(home, slack::request::parse(Some("application/json"), payload.as_bytes()).unwrap())
}

fn form(home: &Home, payload: &str) -> Route {
    let body = fixtures::interaction_form(payload);
    route_at(home, slack::request::parse(Some("application/x-www-form-urlencoded"), body.as_bytes()).unwrap())
}

fn started(route: Route) -> TurnRequest {
    match route {
        Route::StartTurn { message: WorkMessage::StartTurn(request), .. } => request,
        other => panic!("expected a turn to start, got {other:?}"),
    }
}

/// `payload` with `edit` applied to its JSON.
fn edited(payload: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut value: serde_json::Value = serde_json::from_str(payload).unwrap();
    edit(&mut value);
    value.to_string()
}

#[test]
fn a_mention_from_a_second_workspace_of_the_org_starts_a_turn_keyed_by_that_workspace() {
    let request = started(event(&org(), fixtures::APP_MENTION_GRID));
    assert_eq!(request.membership, Membership::Home);
    assert_eq!((request.thread.team.as_str(), request.user.as_str()), ("T0SISTER1", "W0SISTER01"));
    let message = WorkMessage::StartTurn(request);
    assert_eq!(message.queue_group(), "C0SISTER01:1763800000.000100", "threads stay per workspace");
}

#[test]
fn another_organizations_install_and_a_standalone_workspace_are_refused_whatever_the_event() {
    assert_eq!(event(&org(), fixtures::APP_MENTION_OTHER_ORG), Route::Ignore(Ignored::OutsideOrganization));
    // A workspace outside any organization: no enterprise anywhere.
    for standalone in [fixtures::APP_MENTION, fixtures::MESSAGE_IM, fixtures::APP_UNINSTALLED, fixtures::TOKENS_REVOKED]
    {
        assert_eq!(event(&org(), standalone), Route::Ignore(Ignored::OutsideOrganization), "{standalone}");
    }
    // The outer `enterprise_id` says ours, the installation another org's: the installation decides.
    let claimed = edited(fixtures::APP_MENTION_OTHER_ORG, |v| v["enterprise_id"] = "E0GRIDORG1".into());
    assert_eq!(event(&org(), &claimed), Route::Ignore(Ignored::OutsideOrganization));
    // Clicks and shortcuts of another organization's install.
    let click = edited(fixtures::BLOCK_ACTIONS_APPROVE_GRID, |v| v["enterprise"]["id"] = "E0OTHERORG".into());
    assert_eq!(form(&org(), &click), Route::Ignore(Ignored::OutsideOrganization));
    assert_eq!(form(&org(), fixtures::BLOCK_ACTIONS_APPROVE), Route::Ignore(Ignored::OutsideOrganization));
    assert_eq!(form(&org(), fixtures::MESSAGE_ACTION), Route::Ignore(Ignored::OutsideOrganization));
    // A workspace deployment takes each payload's word, as before.
    assert!(matches!(
        route(slack::request::parse(Some("application/json"), fixtures::APP_MENTION_OTHER_ORG.as_bytes()).unwrap()),
        Route::StartTurn { .. }
    ));
}

#[test]
fn a_connect_partner_of_another_org_is_external_though_every_field_of_where_names_ours() {
    // GIVEN a partner's message in a shared channel: outer team and
    // enterprise, context team and enterprise, and the installation are ours
    let request = started(event(&org(), fixtures::APP_MENTION_GRID_CONNECT));
    assert_eq!(request.membership, Membership::External);
    // The message's own `team` claiming our workspace or our org does not
    // override who wrote it (`user_team`).
    for claim in ["T0SISTER1", "E0GRIDORG1"] {
        let claimed = edited(fixtures::APP_MENTION_GRID_CONNECT, |v| v["event"]["team"] = claim.into());
        assert_eq!(started(event(&org(), &claimed)).membership, Membership::External, "{claim}");
    }
    // Naming no team for its author in a shared channel: external.
    let unnamed = edited(fixtures::APP_MENTION_GRID_CONNECT, |v| {
        for field in ["user_team", "team", "source_team"] {
            v["event"].as_object_mut().unwrap().remove(field);
        }
    });
    assert_eq!(started(event(&org(), &unnamed)).membership, Membership::External);
    // A member whose team Slack names as the organization itself: home, even in a shared channel.
    let grid = edited(fixtures::APP_MENTION_GRID_CONNECT, |v| v["event"]["user_team"] = "E0GRIDORG1".into());
    assert_eq!(started(event(&org(), &grid)).membership, Membership::Home);
}

#[test]
fn a_click_is_judged_against_the_configured_org_not_the_payloads() {
    // An org member of the second workspace approves: home.
    let Route::Enqueue(WorkMessage::Approval(click)) = form(&org(), fixtures::BLOCK_ACTIONS_APPROVE_GRID) else {
        panic!("expected an approval")
    };
    assert_eq!((click.user.as_str(), click.membership), ("W0SISTER01", Membership::Home));
    assert_eq!(click.thread.team.as_str(), "T0SISTER1");
    // A Connect partner clicking our buttons: their own team.
    let partner = edited(fixtures::BLOCK_ACTIONS_APPROVE_GRID, |v| v["user"]["team_id"] = "T0PARTNER1".into());
    let Route::Enqueue(WorkMessage::Approval(click)) = form(&org(), &partner) else { panic!("expected an approval") };
    assert_eq!(click.membership, Membership::External);
    // A Grid partner whose team is their organization: theirs is not ours.
    let grid_partner = edited(fixtures::BLOCK_ACTIONS_APPROVE_GRID, |v| v["user"]["team_id"] = "E0PARTNER1".into());
    let Route::Enqueue(WorkMessage::Approval(click)) = form(&org(), &grid_partner) else { panic!() };
    assert_eq!(click.membership, Membership::External);
}

#[test]
fn lifecycle_events_of_the_org_forget_its_workspaces_and_of_another_org_nothing() {
    // An uninstall from a workspace of the org, as an org install's callback names it.
    let uninstall = edited(fixtures::APP_UNINSTALLED, |v| {
        v["team_id"] = "T0SISTER1".into();
        v["enterprise_id"] = "E0GRIDORG1".into();
    });
    let Route::Enqueue(WorkMessage::Forget(forget)) = event(&org(), &uninstall) else { panic!("expected a forget") };
    assert_eq!((forget.team.as_str(), forget.users.len()), ("T0SISTER1", 0));
    let revoked = edited(fixtures::TOKENS_REVOKED, |v| {
        v["team_id"] = "T0SISTER1".into();
        v["enterprise_id"] = "E0GRIDORG1".into();
    });
    assert!(matches!(event(&org(), &revoked), Route::Enqueue(WorkMessage::Forget(_))));
    // The same from another organization, or a standalone workspace: nothing forgotten.
    let theirs = edited(&uninstall, |v| v["enterprise_id"] = "E0OTHERORG".into());
    assert_eq!(event(&org(), &theirs), Route::Ignore(Ignored::OutsideOrganization));
    assert_eq!(event(&org(), fixtures::APP_UNINSTALLED), Route::Ignore(Ignored::OutsideOrganization));
    // A person of another workspace of the org leaving: forgotten; of another org (in our org's callback): not.
    let left = |person_org: &str| {
        edited(fixtures::USER_CHANGE_DELETED, |v| {
            v["enterprise_id"] = "E0GRIDORG1".into();
            v["event"]["user"]["team_id"] = "T0SISTER1".into();
            v["event"]["user"]["enterprise_user"] = serde_json::json!({"enterprise_id": person_org});
        })
    };
    assert!(matches!(event(&org(), &left("E0GRIDORG1")), Route::Enqueue(WorkMessage::Forget(_))));
    assert_eq!(event(&org(), &left("E0PARTNER1")), Route::Ignore(Ignored::Lifecycle(Skipped::OtherTeamsPerson)));
}

#[test]
fn a_slash_command_from_another_organization_or_a_standalone_workspace_is_refused() {
    let command = |home: &Home, body: &str| {
        route_at(home, slack::request::parse(Some("application/x-www-form-urlencoded"), body.as_bytes()).unwrap())
    };
    // A standalone workspace's command (no enterprise_id) under an org install.
    assert_eq!(command(&org(), fixtures::SLASH_COMMAND), Route::Ignore(Ignored::OutsideOrganization));
    // Another organization's.
    let theirs = format!("{}&enterprise_id=E0OTHERORG&enterprise_name=Other", fixtures::SLASH_COMMAND);
    assert_eq!(command(&org(), &theirs), Route::Ignore(Ignored::OutsideOrganization));
    // Ours, from any of its workspaces.
    let ours = format!("{}&enterprise_id=E0GRIDORG1&enterprise_name=Grid", fixtures::SLASH_COMMAND);
    assert!(matches!(command(&org(), &ours), Route::Command(_)), "{:?}", command(&org(), &ours));
    // A workspace deployment takes the command as before.
    assert!(matches!(command(&Home::Workspace, fixtures::SLASH_COMMAND), Route::Command(_)));
}
