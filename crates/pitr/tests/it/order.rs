//! The refusal order as data.

use std::collections::BTreeSet;

use bloodraven_pitr::{Check, REFUSAL_ORDER, Refusal, Token, first_refusal, step_of};

#[test]
fn the_order_has_steps_one_to_ten_in_sequence() {
    let steps: Vec<u8> = REFUSAL_ORDER.iter().map(|row| row.step).collect();
    assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{steps:?}");
    assert_eq!(steps.first(), Some(&1));
    assert_eq!(steps.last(), Some(&10));
    let distinct: BTreeSet<u8> = steps.into_iter().collect();
    assert_eq!(distinct, (1..=10).collect());
    assert_eq!(step_of(Check::LineageDivergent), 7);
    assert_eq!(step_of(Check::SearchGap), 9);
}

#[test]
fn every_token_appears_in_the_order() {
    let listed: BTreeSet<Token> =
        REFUSAL_ORDER.iter().flat_map(|row| row.tokens.iter().copied()).collect();
    for token in Token::ALL {
        assert!(listed.contains(&token), "{token} is in no row of the order");
    }
}

#[test]
fn the_first_applicable_refusal_wins() {
    let mut ran = Vec::new();
    let result: Result<_, ()> = first_refusal(|check| {
        ran.push(check);
        Ok(match check {
            Check::FrontierAfterTarget => Some(Refusal::new(Token::BackupAfterTarget, "first")),
            Check::LineageDivergent => Some(Refusal::new(Token::ArchiveDivergentHistory, "later")),
            _ => None,
        })
    });
    assert_eq!(result.unwrap().unwrap().message, "first");
    assert_eq!(ran.last(), Some(&Check::FrontierAfterTarget));
    assert!(!ran.contains(&Check::LineageDivergent));
}

#[test]
fn tokens_match_the_operator_catalog() {
    for token in Token::ALL {
        let parsed = bloodraven_crd::group::PitrToken::parse(token.as_str());
        assert!(parsed.is_known(), "{token} is not a known crd PitrToken");
        assert_eq!(serde_json::to_value(token).unwrap(), token.as_str());
    }
}
