//! A [`Swarm`]: agents hand a support conversation to each other, and to
//! the customer.
//!
//! A triage agent hands a double-charge complaint to billing; billing
//! checks the charges with a tool and hands over to refunds; refunds needs
//! the customer's choice, so it hands off to `user`, which ends the run and
//! returns control to the caller ([`StopCondition::handoff`]). The caller
//! appends the customer's reply to the thread the run returned and runs
//! again: the swarm resumes with refunds — the agent that handed off — not
//! with triage. Every handoff is a `transfer_to_<name>` tool call the model
//! makes; events print on the console.
//!
//! Offline: every model is scripted.
//!
//! ```text
//! cargo run --example swarm
//! ```

use std::error::Error;

use serde::Deserialize;
use serde_json::json;
use troupe_agents::schemars::JsonSchema;
use troupe_agents::{ChatAgent, FunctionTool, ScriptedModel, ScriptedReply};
use troupe_presets::Swarm;
use troupe_runtime::{Message, RunContext, RunResult, StopCondition};

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "troupe_agents::schemars")]
struct Customer {
    /// The customer's account id.
    account: String,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "troupe_agents::schemars")]
struct Refund {
    /// The charge to refund.
    charge: String,
    /// "card" or "credit".
    method: String,
}

/// A stand-in for the billing system.
fn list_charges() -> FunctionTool {
    FunctionTool::new(
        "list_charges",
        "Lists an account's charges of the last 60 days.",
        |c: Customer| async move {
            Ok::<_, String>(
                json!([
                    {"charge": "ch_7710", "date": "2025-03-01", "amount_eur": 12.0, "item": "Pro plan, March"},
                    {"charge": "ch_7716", "date": "2025-03-01", "amount_eur": 12.0, "item": "Pro plan, March"},
                    {"charge": "ch_6402", "date": "2025-02-01", "amount_eur": 12.0, "item": "Pro plan, February"},
                ])
                .to_string()
                    + &format!(" (account {})", c.account),
            )
        },
    )
}

fn issue_refund() -> FunctionTool {
    FunctionTool::new(
        "issue_refund",
        "Refunds one charge to the card or as account credit.",
        |r: Refund| async move {
            match r.method.as_str() {
                "card" | "credit" => Ok(format!(
                    "refund re_3391 for {} created ({}), 12.00 EUR",
                    r.charge, r.method
                )),
                other => Err(format!("unknown method '{other}'")),
            }
        },
    )
}

fn triage() -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new([ScriptedReply::handoff(
        "billing",
        "Customer acct_5521 reports being charged twice for March.",
    )])
    .named("scripted-triage");
    Ok(ChatAgent::builder("triage")
        .description("First contact: routes the customer to the right desk.")
        .instructions("Find out what the customer needs and hand off to the right agent.")
        .model(model)
        .handoff_described("billing", "Charges, invoices and payment problems.")
        .build()?)
}

fn billing() -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new([
        ScriptedReply::tool_call("list_charges", json!({"account": "acct_5521"})),
        ScriptedReply::handoff(
            "refunds",
            "Confirmed duplicate: ch_7710 and ch_7716, both 12.00 EUR on 2025-03-01. \
             Refund ch_7716.",
        ),
    ])
    .named("scripted-billing");
    Ok(ChatAgent::builder("billing")
        .description("Checks charges and invoices.")
        .instructions("Check the customer's charges with list_charges before anything else.")
        .model(model)
        .tool(list_charges())
        .handoff_described("refunds", "Issues refunds.")
        .handoff("user")
        .build()?)
}

fn refunds() -> Result<ChatAgent, Box<dyn Error>> {
    // One script across both runs: the same agent value serves them.
    let model = ScriptedModel::new([
        // Run 1: the customer must choose how to be refunded.
        ScriptedReply::handoff(
            "user",
            "You were indeed charged twice on 1 March. I can refund the extra 12.00 EUR \
             to your card (5–10 days) or as account credit (immediately). Which do you prefer?",
        ),
        // Run 2: the customer answered; refund, then give control back.
        ScriptedReply::tool_call(
            "issue_refund",
            json!({"charge": "ch_7716", "method": "card"}),
        ),
        ScriptedReply::handoff(
            "user",
            "Done: 12.00 EUR is on its way back to your card (refund re_3391), \
             expect it within 5–10 business days. Anything else I can help with?",
        ),
    ])
    .named("scripted-refunds");
    Ok(ChatAgent::builder("refunds")
        .description("Issues refunds once the customer has chosen how.")
        .instructions(
            "Ask the customer whether they want the money back on their card or as credit, \
             then issue the refund with issue_refund.",
        )
        .model(model)
        .tool(issue_refund())
        .handoff("user")
        .handoff("billing")
        .build()?)
}

fn report(result: &RunResult) {
    let speakers: Vec<&str> = result.messages.iter().map(|m| &*m.source).collect();
    println!("\nspeakers this run: {}", speakers.join(" → "));
    let to = result
        .final_response
        .as_ref()
        .and_then(|m| m.handoff_target())
        .unwrap_or("-");
    println!("final response (handoff to {to}): {}", result.final_text());
    println!("status: {}", result.status);
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    let swarm = Swarm::builder()
        .name("support")
        .participant(triage()?)
        .participant(billing()?)
        .participant(refunds()?)
        // Handing off to the user ends the run: the caller answers.
        .stop_condition(StopCondition::handoff("user"))
        .max_turns(12)
        .build()?;

    println!("— run 1: the customer writes in —");
    let console = RunContext::console();
    let first = swarm
        .run_task(
            "Hi, I was charged twice for my March subscription (account acct_5521).",
            &console,
        )
        .await?;
    console.sink().flush().await; // its events are all printed first
    report(&first);

    // Runs are stateless: continue from the returned thread with the
    // customer's answer. The swarm resumes at the agent that handed off.
    let reply = "Back to my card, please.";
    println!("\n— run 2: the customer replies {reply:?} —");
    let mut thread = first.thread;
    thread.push(Message::user(reply));
    let console2 = RunContext::console();
    let second = swarm.run(thread, &console2).await?;
    console2.sink().flush().await; // its events are all printed first
    report(&second);
    Ok(())
}
