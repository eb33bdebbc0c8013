//! `troupe chat`: a conversation with the workflow, one user turn per
//! line, kept in the configured store so `--session ID` resumes it.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use tokio::io::{AsyncBufReadExt, BufReader};
use troupe::config::{Config, Store};
use troupe::{RunContext, Session};

use super::cluster::{ClusterArgs, join};
use super::{
    EventsFormat, FAILED, INTERRUPTED, OK, Output, build_options, leave, make_id, on_interrupt,
    report, show, sinks, write_out,
};

pub(crate) async fn chat(
    file: PathBuf,
    session: Option<String>,
    output: Output,
    cluster: ClusterArgs,
) -> u8 {
    let config = match Config::load(&file) {
        Ok(c) => c,
        Err(e) => return report(&e),
    };
    let chatty = !output.quiet && output.events == EventsFormat::Pretty;
    let node = match join(&file, &config, &cluster, chatty).await {
        Ok(n) => n,
        Err(code) => return code,
    };
    let code = converse(&config, session, output).await;
    leave(node).await;
    code
}

async fn converse(config: &Config, session: Option<String>, output: Output) -> u8 {
    let built = match config.build(&build_options(&output)).await {
        Ok(b) => b,
        Err(e) => return report(&e),
    };
    let store = match &built.store {
        Some(s) => s.clone(),
        None => match Store::open(troupe::config::StoreKind::Memory, None) {
            Ok(s) => s,
            Err(e) => return report(&e),
        },
    };
    let id = session.unwrap_or_else(|| make_id("chat"));
    let (sink, console) = sinks(&output);
    let ctx = RunContext::with_sink(sink.clone());
    let interrupted = on_interrupt(&ctx);
    let chat = Session::new(built.workflow.clone(), store.threads.clone()).with_context(ctx);
    let history = chat.history(&id).await.map(|t| t.len()).unwrap_or(0);
    if !output.quiet {
        if history > 0 {
            eprintln!("resuming session `{id}` ({history} messages)");
        } else {
            eprintln!(
                "session `{id}` (kept in {}; resume with --session {id}); /exit to leave",
                show(store.location.as_deref())
            );
        }
    }
    let tty = std::io::stdin().is_terminal();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut code = OK;
    loop {
        if tty {
            eprint!("you> ");
            let _ = std::io::stderr().flush();
        }
        let line = tokio::select! {
            l = lines.next_line() => l,
            _ = wait_flag(&interrupted) => { code = INTERRUPTED; break; }
        };
        let line = match line {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                eprintln!("cannot read stdin: {e}");
                code = FAILED;
                break;
            }
        };
        let text = line.trim();
        match text {
            "" => continue,
            "/exit" | "/quit" => break,
            "/history" => {
                if let Ok(t) = chat.history(&id).await {
                    for m in t.messages() {
                        // A closed stdout is not worth a panic: the turn
                        // loop ends at stdin's end as usual.
                        let _ = write_out(&format!("{}: {}\n", m.source, m.text_content()));
                    }
                }
                continue;
            }
            _ => {}
        }
        let sent = chat.send(&id, text).await;
        // The turn's events are out before its result.
        sink.flush().await;
        match sent {
            Ok(r) => {
                // The console view has shown the answer already.
                if output.events == super::EventsFormat::Jsonl && !output.quiet {
                    let line = serde_json::json!({
                        "type": "result",
                        "session": id,
                        "status": r.status.to_string(),
                        "final_response": r.final_text(),
                    });
                    let _ = write_out(&format!("{line}\n"));
                } else if console.is_none() {
                    let _ = write_out(&format!("{}\n", r.final_text()));
                }
            }
            Err(e) => {
                if interrupted.load(Ordering::SeqCst) {
                    code = INTERRUPTED;
                    break;
                }
                eprintln!("turn failed: {e}");
                code = FAILED;
            }
        }
        if interrupted.load(Ordering::SeqCst) {
            code = INTERRUPTED;
            break;
        }
    }
    if let Some(c) = console {
        c.finish();
    }
    built.close().await;
    code
}

async fn wait_flag(flag: &std::sync::atomic::AtomicBool) {
    while !flag.load(Ordering::SeqCst) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
