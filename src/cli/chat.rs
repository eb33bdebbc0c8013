//! `troupe chat`: a conversation with the workflow, one user turn per
//! line, kept in the configured store so `--session ID` resumes it
//! (`--new` starts it; `--list` shows the stored ones).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::BufReader;
use troupe::config::{Config, Store};
use troupe::{RunContext, Session, Workflow};

use super::cluster::{ClusterArgs, join};
use super::end_line::{EndLine, Question};
use super::input;
use super::interrupt::Interrupt;
use super::render::Console;
use super::{
    EventsFormat, FAILED, INTERRUPTED, INVALID, OK, Output, build_options, emit, leave, make_id,
    report, show, sinks, store, write_failed, write_out,
};

/// How long a turn under way gets to finish after Ctrl-C.
const GRACE: Duration = Duration::from_secs(10);

/// Which conversation to hold.
pub(crate) struct Start {
    /// `--session`: the conversation's id.
    pub(crate) session: Option<String>,
    /// `--new`: the session is to be started, not continued.
    pub(crate) new: bool,
}

/// `troupe chat FILE --list`: the stored conversations, one a line with
/// their length.
pub(crate) async fn list(file: PathBuf) -> u8 {
    let config = match Config::load(&file) {
        Ok(c) => c,
        Err(e) => return report(&e),
    };
    let store = match store::open(&config, "`troupe chat --list`") {
        Ok(s) => s,
        Err(code) => return code,
    };
    let ids = match store.threads.conversations().await {
        Ok(ids) => ids,
        Err(e) => {
            eprintln!(
                "troupe chat: cannot list the sessions in the {}: {e}",
                store::describe(&store)
            );
            return FAILED;
        }
    };
    if ids.is_empty() {
        eprintln!("no sessions in the {}", store::describe(&store));
        return OK;
    }
    let mut out = String::new();
    for id in ids {
        let len = match store.threads.load_thread(&id).await {
            Ok(Some(t)) => format!("{} messages", t.len()),
            Ok(None) => "deleted".into(),
            Err(e) => format!("cannot read: {e}"),
        };
        out.push_str(&format!("{id}\t{len}\n"));
    }
    emit(&out)
}

pub(crate) async fn chat(file: PathBuf, start: Start, output: Output, cluster: ClusterArgs) -> u8 {
    let config = match Config::load(&file) {
        Ok(c) => c,
        Err(e) => return report(&e),
    };
    let chatty = !output.quiet && output.events == EventsFormat::Pretty;
    let node = match join(&file, &config, &cluster, chatty).await {
        Ok(n) => n,
        Err(code) => return code,
    };
    let code = converse(&config, start, output).await;
    leave(node).await;
    code
}

async fn converse(config: &Config, start: Start, output: Output) -> u8 {
    let options = match build_options(&output) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let built = match config.build(&options).await {
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
    let named = start.session.is_some();
    let (id, known) = match start.session {
        Some(id) => match store.threads.load_thread(&id).await {
            Ok(found) => {
                let known = found.is_some();
                (id, known)
            }
            Err(e) => {
                eprintln!("troupe chat: cannot read session `{id}`: {e}");
                built.close().await;
                return FAILED;
            }
        },
        None => (make_id("chat"), false),
    };
    if let Err(why) = check_session(&id, named, known, start.new, &store) {
        eprintln!("troupe chat: {why}");
        built.close().await;
        return INVALID;
    }
    let (sink, console) = sinks(&output, config);
    let ctx = RunContext::with_sink(sink.clone());
    let interrupted = Interrupt::watch(&ctx, GRACE, None);
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
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut code = OK;
    loop {
        if tty {
            eprint!("you> ");
            let _ = std::io::stderr().flush();
        }
        let line = tokio::select! {
            l = input::next_line(&mut stdin) => l,
            _ = interrupted.wait() => { code = INTERRUPTED; break; }
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
                    let lines: String = t
                        .messages()
                        .iter()
                        .map(|m| format!("{}: {}\n", m.source, m.text_content()))
                        .collect();
                    // Nobody reads any more: the conversation ends.
                    if let Err(e) = write_out(&lines) {
                        code = write_failed(&e);
                        break;
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
                    let (status, detail) = r.status.final_status();
                    let line = EndLine::Result {
                        status,
                        detail,
                        final_response: r.final_text(),
                        turns: Some(r.turns),
                        usage: Some(r.usage),
                        stats: Some(r.stats.clone()),
                        run_id: Some(r.run_id.clone()),
                        session: Some(id.clone()),
                        checkpoint: r.checkpoint.map(|c| c.to_string()),
                        requests: Question::all(&Workflow::pending_requests(&r.thread)),
                    };
                    if let Err(e) = write_out(&line.to_line()) {
                        code = write_failed(&e);
                        break;
                    }
                } else if console.is_none()
                    && let Err(e) = write_out(&format!("{}\n", r.final_text()))
                {
                    code = write_failed(&e);
                    break;
                }
            }
            Err(e) => {
                if interrupted.happened() {
                    code = INTERRUPTED;
                    break;
                }
                eprintln!("turn failed: {e}");
                code = FAILED;
            }
        }
        if let Some(e) = console.as_ref().and_then(Console::take_write_error) {
            code = write_failed(&e);
            break;
        }
        if interrupted.happened() {
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

/// Whether conversation `id` (`named` with `--session`; `known`: stored
/// already) may be held: a named one must exist unless `--new` starts it,
/// and `--new` does not start over an existing one.
fn check_session(
    id: &str,
    named: bool,
    known: bool,
    new: bool,
    store: &Store,
) -> Result<(), String> {
    match (known, new) {
        (true, true) => Err(format!(
            "session `{id}` exists already in the {}: drop --new to continue it",
            store::describe(store)
        )),
        (false, false) if named => Err(format!(
            "no session `{id}` in the {}; `--new` starts it, `--list` shows the stored ones",
            store::describe(store)
        )),
        _ => Ok(()),
    }
}
