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

fn forget(route: Route) -> assistant_core::messages::Forget {
    match route {
        Route::Enqueue(WorkMessage::Forget(forget)) => forget,
        other => panic!("expected a forget, got {other:?}"),
    }
}

#[test]
fn the_organizations_uninstall_naming_no_workspace_forgets_the_whole_organization() {
    // Slack's shape for an organization's event: `team_id` null beside `enterprise_id`.
    let forgotten = forget(event(&org(), fixtures::APP_UNINSTALLED_ORG));
    assert_eq!((forgotten.team.as_str(), forgotten.organization), ("E0GRIDORG1", true));
    let message = WorkMessage::Forget(forgotten);
    assert_eq!(message.dedupe_id(), "forget:E0GRIDORG1:Ev0ORGUNINST", "Slack's retries are one message");
    assert_eq!(WorkMessage::decode(&message.encode()).unwrap(), message);
    // The same with `team_id` absent, or naming the organization itself.
    let absent = edited(fixtures::APP_UNINSTALLED_ORG, |v| {
        v.as_object_mut().unwrap().remove("team_id");
    });
    assert!(forget(event(&org(), &absent)).organization);
    let named = edited(fixtures::APP_UNINSTALLED_ORG, |v| v["team_id"] = "E0GRIDORG1".into());
    assert!(forget(event(&org(), &named)).organization);
    // The bot's token revoked for the organization: the same; people's
    // tokens: those people, in every workspace of it.
    let revoked = edited(fixtures::TOKENS_REVOKED, |v| {
        v["team_id"] = serde_json::Value::Null;
        v["enterprise_id"] = "E0GRIDORG1".into();
    });
    let forgotten = forget(event(&org(), &revoked));
    assert_eq!((forgotten.organization, forgotten.users.len()), (true, 0));
    let people = edited(&revoked, |v| v["event"]["tokens"]["bot"] = serde_json::json!([]));
    let forgotten = forget(event(&org(), &people));
    assert_eq!((forgotten.organization, forgotten.users.len()), (true, 1));
    // A workspace's uninstall under the org install stays the workspace's.
    let one = edited(fixtures::APP_UNINSTALLED_ORG, |v| v["team_id"] = "T0SISTER1".into());
    let forgotten = forget(event(&org(), &one));
    assert_eq!((forgotten.team.as_str(), forgotten.organization), ("T0SISTER1", false));
}

#[test]
fn an_uninstall_claiming_another_organization_or_no_workspace_forgets_nothing_here() {
    // Another organization's install, naming no workspace.
    let theirs = edited(fixtures::APP_UNINSTALLED_ORG, |v| v["enterprise_id"] = "E0OTHERORG".into());
    assert_eq!(event(&org(), &theirs), Route::Ignore(Ignored::OutsideOrganization));
    // Our organization's callback naming another organization as the team.
    let claimed = edited(fixtures::APP_UNINSTALLED_ORG, |v| v["team_id"] = "E0OTHERORG".into());
    assert_eq!(event(&org(), &claimed), Route::Ignore(Ignored::OutsideOrganization));
    // A workspace deployment cannot place an organization's uninstall.
    assert_eq!(event(&Home::Workspace, fixtures::APP_UNINSTALLED_ORG), Route::Ignore(Ignored::NoWorkspace));
    // An organization's other events (a workspace's access revoked) parse
    // and are acknowledged, nothing queued.
    assert_eq!(event(&org(), fixtures::TEAM_ACCESS_REVOKED), Route::Ignore(Ignored::UnknownEvent));
}

#[test]
fn a_person_leaving_the_organization_is_forgotten_in_all_of_it() {
    let left = edited(fixtures::USER_CHANGE_DELETED, |v| {
        v["team_id"] = serde_json::Value::Null;
        v["enterprise_id"] = "E0GRIDORG1".into();
        v["event"]["user"]["team_id"] = "T0SISTER1".into();
        v["event"]["user"]["enterprise_user"] = serde_json::json!({"enterprise_id": "E0GRIDORG1"});
    });
    let forgotten = forget(event(&org(), &left));
    assert_eq!((forgotten.team.as_str(), forgotten.organization, forgotten.users.len()), ("E0GRIDORG1", true, 1));
}

#[test]
fn an_event_with_a_null_team_is_keyed_by_the_workspace_slack_says_it_happened_in() {
    // `team_id` null: `context_team_id` names the workspace.
    let null = edited(fixtures::APP_MENTION_GRID, |v| v["team_id"] = serde_json::Value::Null);
    let request = started(event(&org(), &null));
    assert_eq!((request.thread.team.as_str(), request.membership), ("T0SISTER1", Membership::Home));
    // Nothing names a workspace (or only the organization): acknowledged, nothing queued.
    let nowhere = edited(&null, |v| {
        v["context_team_id"] = serde_json::Value::Null;
        v["team_id"] = "E0GRIDORG1".into();
    });
    assert_eq!(event(&org(), &nowhere), Route::Ignore(Ignored::NoWorkspace));
    // Another organization's null-team event is refused as ever.
    let theirs = edited(&null, |v| v["authorizations"][0]["enterprise_id"] = "E0OTHERORG".into());
    assert_eq!(event(&org(), &theirs), Route::Ignore(Ignored::OutsideOrganization));
}

#[test]
fn a_click_or_shortcut_with_a_null_team_uses_the_persons_workspace_and_counts_only_the_org_as_home() {
    // `"team": null` (an org-wide install): the clicker's own workspace
    // keys the thread, as Slack's Bolt frameworks read it.
    let null = edited(fixtures::BLOCK_ACTIONS_APPROVE_GRID, |v| v["team"] = serde_json::Value::Null);
    let Route::Enqueue(WorkMessage::Approval(click)) = form(&org(), &null) else { panic!("expected an approval") };
    assert_eq!(click.thread.team.as_str(), "T0SISTER1");
    // The installing workspace is not named: a workspace, even the
    // person's own, is not told from a Connect partner's (the safe side)...
    assert_eq!(click.membership, Membership::External);
    // A person whose team Slack names as the organization (home, see
    // `slack::membership`) names no workspace to key the thread by, nor
    // does a person with no team: the click keys nothing.
    let org_member = edited(&null, |v| v["user"]["team_id"] = "E0GRIDORG1".into());
    assert_eq!(form(&org(), &org_member), Route::Ignore(Ignored::NoWorkspace));
    let no_team = edited(&null, |v| {
        v["user"].as_object_mut().unwrap().remove("team_id");
    });
    assert_eq!(form(&org(), &no_team), Route::Ignore(Ignored::NoWorkspace));
    // Another organization's null-team click is refused.
    let theirs = edited(&null, |v| v["enterprise"]["id"] = "E0OTHERORG".into());
    assert_eq!(form(&org(), &theirs), Route::Ignore(Ignored::OutsideOrganization));

    // The message shortcut, the same way.
    let shortcut = edited(fixtures::MESSAGE_ACTION, |v| {
        v["team"] = serde_json::Value::Null;
        v["enterprise"] = serde_json::json!({"id": "E0GRIDORG1", "name": "Grid"});
        v["is_enterprise_install"] = true.into();
    });
    let Route::StartTurn { message: WorkMessage::InvestigateMessage(investigate), .. } = form(&org(), &shortcut) else {
        panic!("expected a shortcut's turn")
    };
    assert_eq!((investigate.thread.team.as_str(), investigate.membership), ("T061EG9R6", Membership::External));
    let nowhere = edited(&shortcut, |v| v["user"]["team_id"] = "E0GRIDORG1".into());
    assert_eq!(form(&org(), &nowhere), Route::Ignore(Ignored::NoWorkspace));
    let theirs = edited(&shortcut, |v| v["enterprise"]["id"] = "E0OTHERORG".into());
    assert_eq!(form(&org(), &theirs), Route::Ignore(Ignored::OutsideOrganization));
}

#[test]
fn a_slash_command_naming_no_workspace_is_answered_and_nothing_is_queued() {
    use crate::commands::{CommandRoute, route_slash_command};
    let ours = format!("{}&enterprise_id=E0GRIDORG1&enterprise_name=Grid", fixtures::SLASH_COMMAND);
    for team in ["team_id=", "team_id=E0GRIDORG1"] {
        let body = ours.replace("team_id=T061EG9R6", team);
        assert_ne!(body, ours);
        let parsed = slack::request::parse(Some("application/x-www-form-urlencoded"), body.as_bytes());
        let Route::Command(command) = route_at(&org(), parsed.expect("parsed, not a 400")) else {
            panic!("expected a command")
        };
        assert!(
            matches!(
                route_slash_command(&command, 1_763_800_001),
                CommandRoute::Answer { reason: "no_workspace_named", .. }
            ),
            "{team}"
        );
    }
    // Without the field at all.
    let body: Vec<&str> = ours.split('&').filter(|pair| !pair.starts_with("team_id=")).collect();
    let parsed = slack::request::parse(Some("application/x-www-form-urlencoded"), body.join("&").as_bytes());
    let Route::Command(command) = route_at(&org(), parsed.expect("parsed, not a 400")) else { panic!() };
    assert!(matches!(route_slash_command(&command, 1_763_800_001), CommandRoute::Answer { .. }));
}
