//! A team behind a chatbot, with conversations that survive restarts.
//!
//! Each line read on stdin is one user turn of a [`Session`]: the session
//! loads the conversation's thread from a SQLite database, appends the
//! line, runs the team and saves the thread the run returns. Restart the
//! program with the same database and conversation id and the team carries
//! on where it left off — it knows how many messages you sent and what you
//! asked before.
//!
//! The team is a [`SelectorGroupChat`] for a bike shop: a routing function
//! sends repair questions to the workshop (which looks tickets up with a
//! tool) and everything else to the front desk. Each turn ends when one of
//! them has answered.
//!
//! Offline: the models are scripted functions of what they are shown, so
//! they answer any number of lines. Works with a terminal or a pipe; ends
//! at end of input or on `/quit`.
//!
//! ```text
//! cargo run --example chatbot
//! printf 'When are you open?\nIs ticket 4411 ready?\n' | cargo run --example chatbot -- --db bikes.sqlite3
//! echo 'What did I ask before?' | cargo run --example chatbot -- --db bikes.sqlite3   # remembers
//! cargo run --example chatbot -- --db bikes.sqlite3 --conversation alice
//! ```
//!
//! Options: `--db PATH` (the database to keep conversations in; without
//! it, a fresh one in a temporary directory of this run, removed at exit,
//! so no two runs or users share a conversation by accident),
//! `--conversation ID` (default `default`), `--events` to print the team's
//! events as well.

use std::error::Error;
use std::io::IsTerminal;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use troupe_agents::schemars::JsonSchema;
use troupe_agents::{
    ChatAgent, ChatMessage, ChatRequest, FunctionTool, ScriptedModel, ScriptedReply,
};
use troupe_presets::SelectorGroupChat;
use troupe_runtime::store::SqliteStore;
use troupe_runtime::{RunContext, Session, StopCondition, Workflow};

struct Options {
    /// `--db`; `None`: a database of this run only.
    db: Option<PathBuf>,
    conversation: String,
    events: bool,
}

fn options() -> Result<Options, String> {
    let mut opts = Options {
        db: None,
        conversation: "default".into(),
        events: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--db" => opts.db = Some(args.next().ok_or("--db needs a path")?.into()),
            "--conversation" => {
                opts.conversation = args.next().ok_or("--conversation needs an id")?;
            }
            "--events" => opts.events = true,
            "-h" | "--help" => {
                println!("usage: chatbot [--db PATH] [--conversation ID] [--events]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument '{other}' (try --help)")),
        }
    }
    Ok(opts)
}

/// The user's own messages in a request (other agents' turns are user
/// messages too, but carry a name).
fn user_turns(request: &ChatRequest) -> Vec<&str> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::User {
                content,
                name: None,
            } => Some(content.as_str()),
            _ => None,
        })
        .collect()
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The front desk's scripted answers: opening hours, prices, and what the
/// customer asked earlier (from the stored conversation).
fn front_desk_reply(request: &ChatRequest) -> ScriptedReply {
    let turns = user_turns(request);
    let n = turns.len();
    let question = turns.last().copied().unwrap_or_default().to_lowercase();
    let answer = if question.contains("before") || question.contains("earlier") {
        let earlier = &turns[..n.saturating_sub(1)];
        if earlier.is_empty() {
            "This is the first thing you've asked me.".to_string()
        } else {
            format!(
                "Before this you asked: {}.",
                earlier
                    .iter()
                    .map(|q| format!("\"{q}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    } else if question.contains("open") || question.contains("hours") {
        "We're open Tuesday to Saturday, 9:00–18:00, and until 20:00 on Thursdays.".into()
    } else if question.contains("price")
        || question.contains("cost")
        || question.contains("how much")
    {
        "A basic service is 45 EUR, a full service 95 EUR; inner tubes are fitted for 12 EUR."
            .into()
    } else if n == 1 {
        "Hi, I'm the Spoke & Chain front desk. Ask me about opening hours, prices or a repair ticket.".into()
    } else {
        "I can help with opening hours, prices, or the status of a repair ticket.".into()
    };
    ScriptedReply::text(format!(
        "{answer} (That's your {} message in this conversation.)",
        ordinal(n)
    ))
}

/// The workshop's scripted answers: look the ticket up, then report.
fn workshop_reply(request: &ChatRequest) -> ScriptedReply {
    // After the tool call, the last message is its result: report it.
    if let Some(ChatMessage::Tool { content, .. }) = request.messages.last() {
        let n = user_turns(request).len();
        return ScriptedReply::text(format!(
            "{content} (That's your {} message in this conversation.)",
            ordinal(n)
        ));
    }
    let question = user_turns(request).last().copied().unwrap_or_default();
    let ticket: String = question
        .split(|c: char| !c.is_ascii_digit())
        .find(|w| w.len() >= 3)
        .unwrap_or_default()
        .to_string();
    if ticket.is_empty() {
        return ScriptedReply::text(
            "Which repair ticket is it? The number is on your receipt, e.g. 4411.",
        );
    }
    ScriptedReply::tool_call("repair_status", json!({ "ticket": ticket }))
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "troupe_agents::schemars")]
struct Ticket {
    /// The repair ticket number.
    ticket: String,
}

fn repair_status() -> FunctionTool {
    FunctionTool::new(
        "repair_status",
        "The status of a repair ticket.",
        |t: Ticket| async move {
            Ok::<_, String>(match t.ticket.as_str() {
                "4411" => "Ticket 4411 (city bike, new chain and brake pads) is ready for pick-up; 68 EUR to pay.".to_string(),
                "4420" => "Ticket 4420 (e-bike, motor check) is waiting for a part, due Friday.".to_string(),
                other => format!("There is no open ticket {other}."),
            })
        },
    )
}

fn team() -> Result<Workflow, Box<dyn Error>> {
    let front_desk = ChatAgent::builder("front_desk")
        .description("Answers questions about the shop: hours, prices, anything general.")
        .instructions(
            "You are the front desk of the Spoke & Chain bike shop. Be brief and friendly.",
        )
        .model(ScriptedModel::from_fn(|r| Ok(front_desk_reply(r))).named("scripted-front-desk"))
        .build()?;
    let workshop = ChatAgent::builder("workshop")
        .description("Knows the status of every repair ticket.")
        .instructions("Look tickets up with repair_status; never guess a status.")
        .model(ScriptedModel::from_fn(|r| Ok(workshop_reply(r))).named("scripted-workshop"))
        .tool(repair_status())
        .build()?;
    Ok(SelectorGroupChat::builder()
        .name("bike-shop")
        .participant(front_desk)
        .participant(workshop)
        // Routing by keywords needs no model call; a real deployment could
        // return `None` here to let a selector model decide.
        .selector_fn(|input| {
            let last = input.thread.last()?.text_content().to_lowercase();
            let repair = ["ticket", "repair", "ready", "fixed"]
                .iter()
                .any(|k| last.contains(k));
            Some(if repair { "workshop" } else { "front_desk" }.to_string())
        })
        // A turn of the chat ends once a participant has answered.
        .stop_condition(StopCondition::source_match(["front_desk", "workshop"]))
        .build()?)
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    let opts = options()?;
    // Without `--db`, a database of this run alone, removed at exit.
    let scratch = tempfile::tempdir()?;
    let (db, kept) = match &opts.db {
        Some(db) => (db.clone(), ""),
        None => (
            scratch.path().join("chatbot.sqlite3"),
            ", for this run only: `--db PATH` keeps it",
        ),
    };
    let store = SqliteStore::open(&db)?;
    let ctx = if opts.events {
        RunContext::console()
    } else {
        RunContext::new()
    };
    let session = Session::new(team()?, store).with_context(ctx);

    let earlier = session.history(&opts.conversation).await?.len();
    println!(
        "conversation '{}' in {}{kept} ({earlier} earlier messages); /quit or end of input to leave",
        opts.conversation,
        db.display()
    );

    let interactive = std::io::stdin().is_terminal();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    loop {
        if interactive {
            stdout.write_all(b"you> ").await?;
            stdout.flush().await?;
        }
        let Some(line) = lines.next_line().await? else {
            break; // end of input
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "/quit" {
            break;
        }
        if !interactive {
            // Piped input is not echoed by a terminal: show it, so the
            // transcript reads as a conversation.
            println!("you> {line}");
        }
        match session.send(&opts.conversation, line).await {
            Ok(result) => println!("bot> {}", result.final_text()),
            // One failed turn need not end the chat; the session has saved
            // what happened.
            Err(e) => eprintln!("error: {e}"),
        }
    }
    let saved = session.history(&opts.conversation).await?.len();
    println!("bye ({saved} messages saved)");
    Ok(())
}
