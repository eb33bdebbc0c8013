//! The QA loop of seed 004 (cagent's "conditional branching & loops"):
//!
//! ```text
//! generator → translator → qa ─APPROVE→ publisher
//!                 ↑          │
//!                 └─REJECT───┘   (a loop: counted, limited to 5 rounds here)
//! ```
//!
//! Every agent is a scripted [`FnAgent`], so the example runs offline and
//! always tells the same story:
//!
//! - the generator drafts a short English note from the task;
//! - the translator "translates" it into French word by word with a small
//!   dictionary that lacks a few words, and on later passes also uses the
//!   glossary entries for every word QA complained about in its thread;
//! - QA flags the first English word left in the text
//!   (`REJECT: 'hello' left untranslated`) and approves a clean text;
//! - the publisher formats the approved translation.
//!
//! The draft holds two words the dictionary lacks, so QA rejects twice and
//! approves the third time. Events print on the console as they happen:
//! supersteps, turns and every message.
//!
//! ```text
//! cargo run --example qa_loop
//! ```

use std::error::Error;

use troupe::{FnAgent, Graph, RunContext, Thread, Workflow, graph::Condition, graph::Isolation};

/// The translator's dictionary. It lacks "hello" and "thanks" on purpose:
/// that is what QA will catch.
const DICTIONARY: &[(&str, &str)] = &[
    ("and", "et"),
    ("welcome", "bienvenue"),
    ("to", "dans"),
    ("the", "l'"),
    ("team", "équipe"),
    ("we", "nous"),
    ("are", "sommes"),
    ("very", "très"),
    ("happy", "heureux"),
    ("for", "pour"),
    ("reading", "votre lecture"),
];

/// What the translator looks up only for words QA named: a slower, more
/// careful source (a terminology base, a colleague).
const GLOSSARY: &[(&str, &str)] = &[("hello", "bonjour"), ("thanks", "merci")];

/// Words QA knows to be English; one of them in the output means the
/// translation is not finished.
const ENGLISH: &[&str] = &["hello", "thanks", "welcome", "team", "happy", "very", "the"];

fn last_text(t: &Thread) -> String {
    t.last()
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// The words QA flagged so far, read back from the translator's own thread:
/// the thread holds every REJECT it was sent, so the agent needs no state of
/// its own and a re-run from the returned thread behaves the same.
fn flagged_words(t: &Thread) -> Vec<String> {
    t.messages()
        .iter()
        .filter(|m| &*m.source == "qa")
        .filter_map(|m| {
            let text = m.text_content();
            let word = text.strip_prefix("REJECT: '")?.split('\'').next()?;
            Some(word.to_string())
        })
        .collect()
}

/// Translates word by word, keeping punctuation where it was and eliding
/// after an apostrophe ("l'équipe").
fn translate(text: &str, flagged: &[String]) -> String {
    let lookup = |word: &str| -> Option<&'static str> {
        let lower = word.to_lowercase();
        DICTIONARY
            .iter()
            .chain(
                GLOSSARY
                    .iter()
                    .filter(|(en, _)| flagged.iter().any(|f| f == en)),
            )
            .find(|(en, _)| *en == lower)
            .map(|(_, fr)| *fr)
    };
    text.split(' ')
        .map(|token| {
            let word = token.trim_end_matches(|c: char| c.is_ascii_punctuation());
            let punctuation = &token[word.len()..];
            match lookup(word) {
                Some(fr) if word.starts_with(char::is_uppercase) => {
                    let mut chars = fr.chars();
                    let first = chars.next().map(|c| c.to_uppercase().to_string());
                    format!(
                        "{}{}{punctuation}",
                        first.unwrap_or_default(),
                        chars.as_str()
                    )
                }
                Some(fr) => format!("{fr}{punctuation}"),
                // Unknown words stay as they are: QA's job to notice.
                None => token.to_string(),
            }
        })
        .fold(String::new(), |mut out, word| {
            if !out.is_empty() && !out.ends_with('\'') {
                out.push(' ');
            }
            out.push_str(&word);
            out
        })
}

fn main() -> Result<(), Box<dyn Error>> {
    let generator = FnAgent::sync("generator", |t: &Thread| {
        // The task is the only message the generator sees.
        let task = last_text(t);
        let audience = task
            .split_once(" for ")
            .map(|(_, who)| who.trim_end_matches('.'))
            .unwrap_or("everyone");
        Ok(format!(
            "Hello and welcome to the team! We are very happy. Thanks for reading. (draft for {audience})"
        ))
    });

    let translator = FnAgent::sync("translator", |t: &Thread| {
        // The draft is the first message the translator received; later ones
        // are its own attempts and QA's verdicts.
        let draft = t
            .messages()
            .iter()
            .find(|m| &*m.source == "generator")
            .map(|m| m.text_content().into_owned())
            .unwrap_or_default();
        // The audience note is for the team, not for the reader.
        let body = draft.split(" (draft").next().unwrap_or(&draft);
        Ok(translate(body, &flagged_words(t)))
    });

    let qa = FnAgent::sync("qa", |t: &Thread| {
        let translation = last_text(t);
        let left = translation
            .split(|c: char| !c.is_alphabetic())
            .map(str::to_lowercase)
            .find(|w| ENGLISH.contains(&w.as_str()));
        Ok(match left {
            Some(word) => format!("REJECT: '{word}' left untranslated"),
            None => "APPROVE: reads as French throughout".to_string(),
        })
    });

    let publisher = FnAgent::sync("publisher", |t: &Thread| {
        // The publisher starts from a copy of qa's thread (see `fan_out`
        // below), so the translation qa approved is in it, not only the verdict.
        let translation = t
            .messages()
            .iter()
            .rev()
            .find(|m| &*m.source == "translator")
            .map(|m| m.text_content().into_owned())
            .unwrap_or_default();
        Ok(format!(
            "=== Bienvenue ===\n{translation}\n— published after QA approval"
        ))
    });

    let graph = Graph::builder()
        .add_agent(generator)
        .add_agent(translator)
        .add_agent(qa)
        .add_agent(publisher)
        .add_edge("generator", "translator")
        .add_edge("translator", "qa")
        .add_transition("qa", "publisher", Condition::text_contains("APPROVE"))
        // The back-edge: counted per run and failing the run past its limit,
        // so a QA agent that never approves cannot loop for ever.
        .add_loop_with_limit("qa", "translator", Condition::text_contains("REJECT"), 5)
        // Whoever qa hands over to starts from a copy of qa's thread: the
        // publisher then has the approved translation, not the verdict alone
        // (the translator already holds those messages; a thread takes a
        // message once, so nothing doubles).
        .fan_out("qa", Isolation::Inherit)
        .build()?;
    let workflow = Workflow::builder().name("qa_loop").graph(graph).build()?;

    let rt = tokio::runtime::Runtime::new()?;
    let console = RunContext::console();
    let result =
        rt.block_on(workflow.run_task("Write a short welcome note for new members.", &console))?;
    rt.block_on(console.sink().flush()); // its events are all printed first

    // Each REJECT took the back-edge once.
    let iterations = result
        .messages
        .iter()
        .filter(|m| &*m.source == "qa" && m.text_content().starts_with("REJECT"))
        .count();
    let translations = result
        .messages
        .iter()
        .filter(|m| &*m.source == "translator")
        .count();
    println!();
    println!("final response:\n{}", result.final_text());
    println!("status: {}", result.status);
    println!("loop iterations (qa → translator): {iterations}");
    println!(
        "translator turns: {translations}, turns in all: {}",
        result.turns
    );
    Ok(())
}
