//! Tests of [`CallIds`]: two worked examples, and the properties that
//! whatever ids a model sends, reply after reply, the conversation ends up
//! with unique ids; an id not used before is kept, the renames say exactly
//! what changed, the result is the same every time, and a result given the
//! call's (new) id answers that call.

use std::collections::{HashMap, HashSet};

use dsh_llm::{CallIds, ContentBlock, ToolCall};
use proptest::prelude::*;

/// Ids from a small alphabet, so repeats are common, including ids that
/// look like the suffixes the renaming gives (`a-2`).
fn any_id() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec!["a", "b", "call_0", ""]).prop_map(str::to_string),
        (prop::sample::select(vec!["a", "b", "call_0"]), 2u8..5)
            .prop_map(|(base, n)| format!("{base}-{n}")),
    ]
}

/// A reply: tool calls (with the text block models put between them).
fn reply<S: AsRef<str>>(ids: &[S]) -> Vec<ContentBlock> {
    let mut blocks = vec![ContentBlock::text("thinking aloud")];
    for (i, id) in ids.iter().enumerate() {
        blocks.push(ContentBlock::ToolCall(ToolCall::new(
            id.as_ref(),
            "bash",
            format!("{{\"n\":{i}}}"),
        )));
    }
    blocks
}

fn call_ids(blocks: &[ContentBlock]) -> Vec<String> {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(c.call_id.to_string()),
            _ => None,
        })
        .collect()
}

/// Claims every reply in order after observing `history`; the replies as
/// recorded.
fn run(history: &[String], replies: &[Vec<String>]) -> Vec<Vec<ContentBlock>> {
    let mut ids = CallIds::new();
    ids.observe(&reply(history));
    replies
        .iter()
        .map(|r| {
            let mut blocks = reply(r);
            ids.claim(&mut blocks);
            blocks
        })
        .collect()
}

#[test]
fn repeats_in_one_reply_and_across_replies_get_free_suffixes() {
    let mut seen = CallIds::new();
    let mut first = reply(&["a", "a", "b"]);
    let renamed = seen.claim(&mut first);
    assert_eq!(call_ids(&first), ["a", "a-2", "b"]);
    assert_eq!(renamed.len(), 1);
    assert_eq!((renamed[0].position, renamed[0].from.as_str()), (1, "a"));
    let mut second = reply(&["a-3", "a", "b-2", "b"]);
    seen.claim(&mut second);
    assert_eq!(call_ids(&second), ["a-3", "a-4", "b-2", "b-3"]);
}

#[test]
fn observed_history_counts_as_taken() {
    let mut seen = CallIds::new();
    seen.observe(&reply(&["x", "x"]));
    assert_eq!(seen.len(), 1);
    let mut next = reply(&["x"]);
    seen.claim(&mut next);
    assert_eq!(call_ids(&next), ["x-2"]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn ids_end_up_unique_new_ones_are_kept_and_renames_say_what_changed(
        history in prop::collection::vec(any_id(), 0..4),
        replies in prop::collection::vec(prop::collection::vec(any_id(), 0..6), 0..6),
    ) {
        let mut ids = CallIds::new();
        ids.observe(&reply(&history));
        let mut taken: HashSet<String> = history.iter().cloned().collect();
        for sent in &replies {
            let mut blocks = reply(sent);
            let before = blocks.clone();
            let renamed = ids.claim(&mut blocks);
            let got = call_ids(&blocks);
            prop_assert_eq!(got.len(), sent.len());
            // Only the ids changed: text blocks, names and arguments kept.
            for (a, b) in before.iter().zip(&blocks) {
                match (a, b) {
                    (ContentBlock::ToolCall(a), ContentBlock::ToolCall(b)) => {
                        prop_assert_eq!(&a.name, &b.name);
                        prop_assert_eq!(&a.arguments, &b.arguments);
                    }
                    (a, b) => prop_assert_eq!(a, b),
                }
            }
            let mut renamed_at = HashMap::new();
            for r in &renamed {
                prop_assert_eq!(r.from.as_str(), sent[r.position].as_str());
                prop_assert_eq!(r.to.as_str(), got[r.position].as_str());
                renamed_at.insert(r.position, ());
            }
            for (i, (id, new)) in sent.iter().zip(&got).enumerate() {
                if renamed_at.contains_key(&i) {
                    prop_assert!(taken.contains(id), "{} was free but renamed", id);
                    let prefix = format!("{id}-");
                    prop_assert!(new.starts_with(&prefix), "{} is not {}<n>", new, prefix);
                } else {
                    prop_assert_eq!(id, new, "kept ids are unchanged");
                }
                prop_assert!(taken.insert(new.clone()), "{} is not unique", new);
                prop_assert!(ids.contains(new));
            }
        }
        prop_assert_eq!(ids.len(), taken.len());
    }

    #[test]
    fn renaming_is_deterministic_and_pairs_stay_matched(
        history in prop::collection::vec(any_id(), 0..4),
        replies in prop::collection::vec(prop::collection::vec(any_id(), 0..6), 0..6),
    ) {
        let first = run(&history, &replies);
        let second = run(&history, &replies);
        prop_assert_eq!(&first, &second);
        // Each result answers its call by the recorded id: one call per id,
        // and the arguments the result was computed from are that call's.
        let mut by_id: HashMap<String, String> = HashMap::new();
        for blocks in &first {
            for b in blocks {
                if let ContentBlock::ToolCall(c) = b {
                    let prev = by_id.insert(c.call_id.to_string(), c.arguments.clone());
                    prop_assert!(prev.is_none(), "two calls answer to {}", c.call_id);
                }
            }
        }
        // Already unique ids come out unchanged (a replay of the log renames
        // nothing).
        let recorded: Vec<Vec<String>> = first.iter().map(|b| call_ids(b)).collect();
        let again = run(&[], &recorded);
        let again: Vec<Vec<String>> = again.iter().map(|b| call_ids(b)).collect();
        prop_assert_eq!(again, recorded);
    }
}
