//! A slash command's `response_url` claims: each post at most once, at
//! most five, within the URL's thirty minutes, also when a claim's answer
//! was lost or two deliveries claim at once.

use assistant_core::TurnId;
use assistant_core::response_url::{Claim, LIFETIME_SECS, MARGIN_SECS, MAX_USES, ResponseUrls};
use std::sync::Arc;
use testkit::memory::{LostAnswer, MemoryRecords};

const ASKED: i64 = 1_763_800_000;

fn turn() -> TurnId {
    TurnId::new("T1-Sl0123456789abcdef")
}

#[tokio::test]
async fn each_post_is_claimed_once_and_at_most_five_within_the_urls_life() {
    let urls = ResponseUrls::new(Arc::new(MemoryRecords::default()));
    assert_eq!(urls.claim(&turn(), "dm-pointer", ASKED, ASKED + 5).await.unwrap(), Claim::Granted);
    assert_eq!(urls.claim(&turn(), "dm-pointer", ASKED, ASKED + 6).await.unwrap(), Claim::AlreadyClaimed);
    for n in 1..MAX_USES {
        assert_eq!(urls.claim(&turn(), &format!("post-{n}"), ASKED, ASKED + 7).await.unwrap(), Claim::Granted);
    }
    assert_eq!(urls.claim(&turn(), "sixth", ASKED, ASKED + 8).await.unwrap(), Claim::Exhausted);
    let other = TurnId::new("T1-Sl0000000000other");
    let late = ASKED + LIFETIME_SECS - MARGIN_SECS;
    assert_eq!(urls.claim(&other, "dm-pointer", ASKED, late - 1).await.unwrap(), Claim::Granted);
    assert_eq!(urls.claim(&other, "answer", ASKED, late).await.unwrap(), Claim::Expired);
}

#[tokio::test]
async fn a_claim_whose_answer_was_lost_is_granted_once_and_not_again() {
    let records = Arc::new(MemoryRecords::default());
    records.lose_answers([LostAnswer::Error]);
    let urls = ResponseUrls::new(records);
    assert_eq!(urls.claim(&turn(), "dm-pointer", ASKED, ASKED + 1).await.unwrap(), Claim::Granted);
    assert_eq!(urls.claim(&turn(), "dm-pointer", ASKED, ASKED + 2).await.unwrap(), Claim::AlreadyClaimed);
}

#[tokio::test]
async fn two_deliveries_claiming_at_once_post_once() {
    let (urls, turn) = (ResponseUrls::new(Arc::new(MemoryRecords::default())), turn());
    let (a, b) = tokio::join!(
        urls.claim(&turn, "dm-pointer", ASKED, ASKED + 1),
        urls.claim(&turn, "dm-pointer", ASKED, ASKED + 1)
    );
    let mut outcomes = [a.unwrap(), b.unwrap()];
    outcomes.sort_by_key(|claim| *claim as u8);
    assert_eq!(outcomes, [Claim::Granted, Claim::AlreadyClaimed]);
}
