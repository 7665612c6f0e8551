//! Forms servers put to people: only the person asked answers, once,
//! before the form expires; an answer whose put lost its answer is taken
//! once; the waiting side gets the answer, the refusal, or `cancel` when
//! nobody answered in time, and a late answer is refused.

use assistant_core::elicitation::{Form, FormState, Forms, NotTaken, PendingForm};
use assistant_core::mcp::{AskingPerson, Elicitor, FormAnswer};
use assistant_core::messages::{ReplyMessage, ThreadRef};
use serde_json::{Map, Value, json};
use slack::{ChannelId, TeamId, Ts, UserId};
use std::sync::Arc;
use std::time::Duration;
use testkit::clock::ManualClock;
use testkit::memory::{LostAnswer, MemoryQueue, MemoryRecords};

const NOW: i64 = 1_795_901_400;

fn schema() -> Value {
    json!({"type": "object", "required": ["env"], "properties": {
        "env": {"type": "string", "enum": ["prod", "staging"]},
        "count": {"type": "integer", "minimum": 1}
    }})
}

fn pending(id: &str) -> PendingForm {
    PendingForm {
        id: id.into(),
        team: TeamId::new("T1"),
        user: UserId::new("U1"),
        server: "deploys".into(),
        message: "Which environment?".into(),
        form: Form::read(&schema()).unwrap(),
        expires_at: NOW + 60,
        state: FormState::Open,
    }
}

fn content(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test]
async fn only_the_person_asked_answers_once_before_it_expires() {
    let forms = Forms::new(Arc::new(MemoryRecords::default()));
    forms.open(&pending("f00d0000000000000001")).await.unwrap();
    let (id, team, user) = ("f00d0000000000000001", TeamId::new("T1"), UserId::new("U1"));
    let answered = FormState::Answered { content: content(json!({"env": "prod"})) };
    // Another person of the team, the same person id of another team: refused
    for (team, user) in [(&team, &UserId::new("U2")), (&TeamId::new("T2"), &user)] {
        assert_eq!(forms.settle(id, team, user, answered.clone(), NOW).await.unwrap(), Err(NotTaken::NotYours));
    }
    assert_eq!(
        forms.answerable("f00d0000000000000009", &team, &user, NOW).await.unwrap().err(),
        Some(NotTaken::Unknown)
    );
    // Too late: refused
    assert_eq!(forms.settle(id, &team, &user, answered.clone(), NOW + 60).await.unwrap(), Err(NotTaken::Expired));
    // The person, in time: taken once
    assert_eq!(forms.settle(id, &team, &user, answered.clone(), NOW + 5).await.unwrap(), Ok(()));
    assert_eq!(forms.settle(id, &team, &user, FormState::Declined, NOW + 6).await.unwrap(), Err(NotTaken::Settled));
    assert_eq!(forms.get(id).await.unwrap().unwrap().1.state, answered);
}

#[tokio::test]
async fn an_answer_whose_put_lost_its_answer_is_taken_once() {
    for lost in [LostAnswer::Error, LostAnswer::RetryRefused] {
        let records = Arc::new(MemoryRecords::default());
        let forms = Forms::new(records.clone());
        forms.open(&pending("f00d0000000000000002")).await.unwrap();
        records.lose_answers([lost]);
        let answered = FormState::Answered { content: content(json!({"env": "staging"})) };
        let (team, user) = (TeamId::new("T1"), UserId::new("U1"));
        assert_eq!(
            forms.settle("f00d0000000000000002", &team, &user, answered.clone(), NOW).await.unwrap(),
            Ok(()),
            "{lost:?}"
        );
        assert_eq!(forms.get("f00d0000000000000002").await.unwrap().unwrap().1.state, answered);
    }
}

fn person(
    records: Arc<MemoryRecords>,
    replies: Arc<MemoryQueue<ReplyMessage>>,
    clock: Arc<ManualClock>,
) -> AskingPerson {
    AskingPerson {
        replies,
        forms: Some(Forms::new(records)),
        clock,
        turn: assistant_core::TurnId::new("T1-Ev1"),
        thread: ThreadRef { team: TeamId::new("T1"), channel: ChannelId::new("C1"), thread_ts: Ts::new("1700.1") },
        user: UserId::new("U1"),
    }
}

/// The form the person was shown, from the reply the worker sent.
fn prompted(replies: &MemoryQueue<ReplyMessage>) -> Option<(String, UserId)> {
    replies.messages().into_iter().find_map(|reply| match reply {
        ReplyMessage::FormPrompt { form_id, user, .. } => Some((form_id, user)),
        _ => None,
    })
}

#[tokio::test(start_paused = true)]
async fn the_waiting_side_gets_the_answer_the_refusal_or_cancel_and_a_late_answer_is_refused() {
    for outcome in ["answer", "decline", "nobody"] {
        let (records, replies) = (Arc::new(MemoryRecords::default()), Arc::new(MemoryQueue::default()));
        let clock = Arc::new(ManualClock::at(NOW));
        let asking = person(records.clone(), replies.clone(), clock.clone());
        let forms = Forms::new(records.clone());
        let schema = schema();
        let asked = asking.ask_form("deploys", "Which environment?", &schema, Duration::from_secs(12));
        let person = async {
            let (id, user) = loop {
                if let Some(found) = prompted(&replies) {
                    break found;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            let (team, now) = (TeamId::new("T1"), NOW + 3);
            match outcome {
                "answer" => {
                    let answered = FormState::Answered { content: content(json!({"env": "prod", "count": 2})) };
                    forms.settle(&id, &team, &user, answered, now).await.unwrap().unwrap();
                }
                "decline" => forms.settle(&id, &team, &user, FormState::Declined, now).await.unwrap().unwrap(),
                // Nobody answers: the form's time passes.
                _ => clock.set(NOW + 13),
            }
            id
        };
        let (answer, id) = tokio::join!(asked, person);
        match outcome {
            "answer" => assert_eq!(answer, FormAnswer::Accepted(content(json!({"env": "prod", "count": 2})))),
            "decline" => assert_eq!(answer, FormAnswer::Declined),
            _ => {
                assert_eq!(answer, FormAnswer::Cancelled);
                // Closed: an answer after it is refused
                let late = FormState::Answered { content: content(json!({"env": "prod"})) };
                let now = NOW + 14;
                let refused = forms.settle(&id, &TeamId::new("T1"), &UserId::new("U1"), late, now).await.unwrap();
                assert!(matches!(refused, Err(NotTaken::Settled | NotTaken::Expired)), "{refused:?}");
            }
        }
    }
}

#[tokio::test]
async fn a_form_outside_the_specification_or_with_no_time_left_is_never_put_to_anyone() {
    let (records, replies) = (Arc::new(MemoryRecords::default()), Arc::new(MemoryQueue::default()));
    let asking = person(records, replies.clone(), Arc::new(ManualClock::at(NOW)));
    let nested = json!({"type": "object", "properties": {"x": {"type": "object"}}});
    assert_eq!(asking.ask_form("s", "m", &nested, Duration::from_secs(60)).await, FormAnswer::Declined);
    assert_eq!(asking.ask_form("s", "m", &schema(), Duration::from_secs(2)).await, FormAnswer::Cancelled);
    assert!(replies.messages().is_empty(), "nothing shown");
}
