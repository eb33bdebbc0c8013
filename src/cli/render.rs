//! The console view of a run: who speaks, tool calls folded to a line
//! each, handoffs, timings and token usage; answers printed as they are
//! generated when the model streams; a spinner on stderr while a model is
//! thinking; colour only on a terminal.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use troupe::{Content, Event, event::FinalStatus, message::Usage, sink::EventSink};

use super::console_text::{count, elapsed, handoff_line, one_line, paint, usd};

/// How much of an error a retry line shows: enough for the cause at the
/// end of a chain (`… Connection refused (os error 111)`).
const ERROR_CHARS: usize = 320;

const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

struct State {
    color: bool,
    root: Option<String>,
    /// The agents step ids stand for (`draft` → `writer`).
    names: BTreeMap<String, String>,
    running: BTreeMap<String, Instant>,
    pending: BTreeMap<String, Vec<String>>,
    /// Turns that ended and whose messages are still to come: elapsed
    /// time and how many messages.
    finished: BTreeMap<String, (f64, usize)>,
    parents: BTreeSet<String>,
    /// The agent whose streamed answer is being printed; its line may be
    /// open (the spinner waits meanwhile, not to wipe it).
    live: Option<String>,
    /// Whether the streamed output stands at the start of a line.
    line_start: bool,
    /// The agent named by the latest line printed, when that line was its
    /// streamed text.
    speaker: Option<String>,
    /// Agents whose turn printed streamed text (their header is out, their
    /// answer need not be printed again).
    streamed: BTreeSet<String>,
    spinner_shown: bool,
    frame: usize,
    /// The first write to stdout that failed (a closed pipe, a full
    /// disk): nothing more is written once set.
    lost: Option<std::io::Error>,
}

/// Prints events for people.
pub(crate) struct Console {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    spinner: Option<JoinHandle<()>>,
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // Printing state stays usable even if a print panicked midway.
    state.lock().unwrap_or_else(|p| p.into_inner())
}

impl Console {
    /// A console view naming the agent where a step's id stands for it
    /// (`names`); the spinner runs only when stderr is a terminal.
    pub(crate) fn new(names: BTreeMap<String, String>) -> Self {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let state = Arc::new(Mutex::new(State {
            color,
            root: None,
            names,
            running: BTreeMap::new(),
            pending: BTreeMap::new(),
            finished: BTreeMap::new(),
            parents: BTreeSet::new(),
            live: None,
            line_start: true,
            speaker: None,
            streamed: BTreeSet::new(),
            spinner_shown: false,
            frame: 0,
            lost: None,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let spinner = std::io::stderr().is_terminal().then(|| {
            let state = state.clone();
            let stop = stop.clone();
            std::thread::spawn(move || spin(&state, &stop))
        });
        Console {
            state,
            stop,
            spinner,
        }
    }

    /// The sink to give a run: it prints from a writer thread, so a slow
    /// terminal never holds the run up.
    pub(crate) fn sink(&self) -> EventSink {
        let state = self.state.clone();
        EventSink::background(move |e| handle(&state, e))
    }

    /// The first failed write to stdout, if any (taken: asked again, it
    /// is `None`).
    pub(crate) fn take_write_error(&self) -> Option<std::io::Error> {
        lock(&self.state).lost.take()
    }

    /// Stops the spinner and clears its line.
    pub(crate) fn finish(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.spinner.take() {
            let _ = h.join();
        }
        clear_spinner(&mut lock(&self.state));
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn spin(state: &Mutex<State>, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(90));
        let mut s = lock(state);
        if s.live.is_some() {
            continue;
        }
        if s.running.is_empty() {
            clear_spinner(&mut s);
            continue;
        }
        let now = Instant::now();
        let who: Vec<String> = s
            .running
            .iter()
            .filter(|(p, _)| !s.parents.contains(*p))
            .map(|(p, t)| format!("{} {:.1}s", speaker(&s, p), (now - *t).as_secs_f64()))
            .collect();
        s.frame = (s.frame + 1) % SPINNER.len();
        let line = format!("{} thinking: {}", SPINNER[s.frame], who.join(", "));
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{}", paint(s.color, "2", &line));
        let _ = err.flush();
        s.spinner_shown = true;
    }
}

fn clear_spinner(s: &mut State) {
    if s.spinner_shown {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
        s.spinner_shown = false;
    }
}

/// A path without the top workflow's name.
fn short(root: &Option<String>, path: &str) -> String {
    match root {
        Some(r) => path
            .strip_prefix(r.as_str())
            .and_then(|p| p.strip_prefix('/'))
            .unwrap_or(path)
            .to_string(),
        None => path.to_string(),
    }
}

/// How an agent's path is shown: without the top workflow's name, and
/// with a step id that stands for an agent replaced by the agent's name.
fn speaker(s: &State, path: &str) -> String {
    let short = short(&s.root, path);
    match short.rsplit_once('/') {
        Some((up, last)) => match s.names.get(last) {
            Some(agent) => format!("{up}/{agent}"),
            None => short,
        },
        None => s.names.get(&short).cloned().unwrap_or(short),
    }
}

/// `● agent · 1.2s · 340 tokens`
fn header(s: &State, path: &str, elapsed_ms: f64, usage: &Usage) -> String {
    let mut meta = vec![elapsed(elapsed_ms)];
    if usage.total() > 0 {
        meta.push(count(usage.total(), "token"));
    }
    format!(
        "{} {}",
        paint(s.color, "1;36", &format!("● {}", speaker(s, path))),
        paint(s.color, "2", &format!("· {}", meta.join(" · ")))
    )
}

fn print(s: &mut State, lines: &[String]) {
    clear_spinner(s);
    if s.lost.is_some() {
        return;
    }
    let mut out = std::io::stdout().lock();
    close_live(s, &mut out);
    s.speaker = None;
    let written = lines
        .iter()
        .try_for_each(|l| writeln!(out, "{}", troupe::secrets::redact(l)))
        .and_then(|()| out.flush());
    s.lost = written.err();
}

/// Ends the line of streamed text, if one is open.
fn close_live(s: &mut State, out: &mut impl Write) {
    if s.live.take().is_some() && !s.line_start {
        let _ = writeln!(out);
    }
    s.line_start = true;
}

/// Prints a piece of `path`'s streamed answer, after naming the agent when
/// the speaker changes (the first time in a turn, with the tool calls it
/// made before).
fn stream_text(s: &mut State, path: &str, text: &str) {
    if s.live.as_deref() != Some(path) {
        // An agent called as a tool speaks under its caller's path: the
        // caller's calls so far come first.
        let mut at = 0;
        while let Some(i) = path[at..].find('/') {
            at += i + 1;
            let caller = &path[..at - 1];
            if s.pending.contains_key(caller) && !s.parents.contains(caller) {
                s.streamed.insert(caller.to_string());
                let lines = s.pending.remove(caller).unwrap_or_default();
                say(s, caller, &lines);
            }
        }
        let lines = if s.streamed.insert(path.to_string()) {
            s.pending.remove(path).unwrap_or_default()
        } else {
            Vec::new()
        };
        say(s, path, &lines);
        s.live = Some(path.to_string());
    }
    clear_spinner(s);
    // Masked piece by piece: a secret the model spells out whole in one
    // piece is caught; the final message is masked whole when printed.
    let text = troupe::secrets::redact(text);
    if s.lost.is_some() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let mut written = Ok(());
    for piece in text.split_inclusive('\n') {
        if s.line_start {
            written = written.and_then(|()| out.write_all(b"  "));
        }
        written = written.and_then(|()| out.write_all(piece.as_bytes()));
        s.line_start = piece.ends_with('\n');
    }
    s.lost = written.and_then(|()| out.flush()).err();
}

/// Prints `lines` about `path`, naming it first unless the latest lines
/// were its own.
fn say(s: &mut State, path: &str, lines: &[String]) {
    let mut out = Vec::with_capacity(lines.len() + 1);
    if s.speaker.as_deref() != Some(path) || s.live.as_deref().is_some_and(|l| l != path) {
        out.push(paint(s.color, "1;36", &format!("● {}", speaker(s, path))));
    }
    out.extend_from_slice(lines);
    print(s, &out);
    s.speaker = Some(path.to_string());
}

/// `  · 1.2s · 340 tokens`: what a streamed turn took, right after its
/// text; `● agent · 1.2s · 340 tokens` when something else was printed
/// since.
fn streamed_meta(s: &State, path: &str, elapsed_ms: f64, usage: &Usage) -> String {
    if s.speaker.as_deref() != Some(path) {
        return header(s, path, elapsed_ms, usage);
    }
    let mut meta = vec![elapsed(elapsed_ms)];
    if usage.total() > 0 {
        meta.push(count(usage.total(), "token"));
    }
    paint(s.color, "2", &format!("  · {}", meta.join(" · ")))
}

fn handle(state: &Mutex<State>, event: &Event) {
    let mut s = lock(state);
    let c = s.color;
    let path = event.path().to_string();
    // Every ancestor of a path that takes turns or runs is a workflow (an
    // agent called as a tool streams under its caller's path, which stays
    // an agent).
    let concerns_a_model = matches!(
        event,
        Event::TextDelta { .. }
            | Event::ToolArgumentsDelta { .. }
            | Event::ModelCallStarted { .. }
            | Event::ModelCallFinished { .. }
            | Event::ModelCallRetry { .. }
    );
    let mut p = path.as_str();
    while !concerns_a_model && let Some(i) = p.rfind('/') {
        p = &p[..i];
        s.parents.insert(p.to_string());
    }
    match event {
        Event::RunStarted { participants, .. } if s.root.is_none() => {
            s.root = Some(path.clone());
            let who = count(*participants as u64, "participant");
            let line = paint(c, "2", &format!("▶ {path} ({who})"));
            print(&mut s, &[line]);
        }
        Event::AgentStarted { .. } => {
            // The turn's first streamed piece may arrive before this (the
            // agent and the run's actor emit side by side): what it
            // printed stays marked as printed, or the answer would be
            // printed a second time with the turn's message.
            s.running.insert(path.clone(), Instant::now());
            s.finished.remove(&path);
        }
        Event::AgentFailed { .. } => {
            // A failed turn's streamed text stays as it was printed; the
            // next turn starts afresh.
            s.running.remove(&path);
            s.streamed.remove(&path);
        }
        Event::TextDelta { text, .. } => stream_text(&mut s, &path, text),
        // Handoffs are shown as such, not as the tool call behind them.
        Event::ToolCall { call, .. } if !call.name.starts_with("transfer_to_") => {
            let line = paint(
                c,
                "33",
                &format!("  ↳ {}({})", call.name, one_line(&call.arguments, 100)),
            );
            if s.streamed.contains(&path) {
                say(&mut s, &path, &[line]);
            } else {
                s.pending.entry(path).or_default().push(line);
            }
        }
        Event::ToolResult { result, .. } if !result.name.starts_with("transfer_to_") => {
            let mark = if result.is_error { "✗" } else { "=" };
            let line = paint(
                c,
                "2",
                &format!("    {mark} {}", one_line(&result.content, 100)),
            );
            if s.streamed.contains(&path) {
                say(&mut s, &path, &[line]);
            } else {
                s.pending.entry(path).or_default().push(line);
            }
        }
        Event::AgentFinished {
            produced,
            elapsed_ms,
            ..
        } => {
            s.running.remove(&path);
            if *produced == 0 && s.streamed.remove(&path) {
                let mut out = s.pending.remove(&path).unwrap_or_default();
                out.push(streamed_meta(&s, &path, *elapsed_ms, &Usage::default()));
                print(&mut s, &out);
            } else if *produced == 0 {
                let mut out = vec![header(&s, &path, *elapsed_ms, &Usage::default())];
                out.extend(s.pending.remove(&path).unwrap_or_default());
                print(&mut s, &out);
            } else {
                // The turn's messages are reported right after it ends.
                s.finished.insert(path, (*elapsed_ms, *produced));
            }
        }
        Event::MessageProduced { message, .. } => {
            let (elapsed_ms, left) = s.finished.get(&path).copied().unwrap_or((0.0, 1));
            let mut out = Vec::new();
            let streamed = s.streamed.contains(&path);
            if streamed {
                // The answer was printed as it came: what is left is a
                // handoff, and at the turn's last message its cost.
                out.extend(s.pending.remove(&path).unwrap_or_default());
                if let Content::Handoff(h) = &message.content {
                    out.push(handoff_line(c, &h.target, &h.reason));
                }
                if left <= 1 {
                    s.streamed.remove(&path);
                    out.push(streamed_meta(
                        &s,
                        &path,
                        elapsed_ms,
                        &message.usage.unwrap_or_default(),
                    ));
                }
            } else if s.parents.contains(&path) && left > 1 {
                // A nested workflow's turn with more messages to come: it
                // is said done once, at its last.
            } else if s.parents.contains(&path) {
                // A nested workflow: its agents spoke for it already.
                let usage = message.usage.unwrap_or_default();
                let mut meta = vec![elapsed(elapsed_ms)];
                if usage.total() > 0 {
                    meta.push(count(usage.total(), "token"));
                }
                out.push(paint(
                    c,
                    "2",
                    &format!("◆ {} done · {}", short(&s.root, &path), meta.join(" · ")),
                ));
            } else {
                let mut head = header(&s, &path, elapsed_ms, &message.usage.unwrap_or_default());
                // A turn run on another cluster node says which.
                if let Some(node) = message.metadata.get(troupe::cluster::NODE_METADATA) {
                    head.push_str(&paint(c, "2", &format!(" · on node {node}")));
                }
                out.push(head);
                out.extend(s.pending.remove(&path).unwrap_or_default());
                match &message.content {
                    Content::Handoff(h) => out.push(handoff_line(c, &h.target, &h.reason)),
                    _ => out.extend(message.text_content().lines().map(|l| format!("  {l}"))),
                }
            }
            if left <= 1 {
                s.finished.remove(&path);
            } else {
                s.finished.insert(path, (elapsed_ms, left - 1));
            }
            print(&mut s, &out);
        }
        // A Magentic manager's plan and progress checks.
        Event::Ledger { kind, summary, .. } => {
            let mut out = vec![paint(
                c,
                "36",
                &format!("📋 {} {} ledger", short(&s.root, &path), kind.as_str()),
            )];
            out.extend(summary.lines().map(|l| paint(c, "2", &format!("  {l}"))));
            print(&mut s, &out);
        }
        Event::Selected { next, .. } => {
            let line = paint(
                c,
                "2",
                &format!("☞ {} picks {}", short(&s.root, &path), next.join(", ")),
            );
            print(&mut s, &[line]);
        }
        Event::Retry {
            attempt,
            error,
            delay_ms,
            ..
        } => {
            let line = paint(
                c,
                "33",
                &format!(
                    "↻ {}: attempt {attempt} failed ({}); retrying in {}",
                    speaker(&s, &path),
                    one_line(error, ERROR_CHARS),
                    elapsed(*delay_ms)
                ),
            );
            print(&mut s, &[line]);
        }
        Event::ModelCallRetry {
            model,
            attempt,
            error,
            delay_ms,
            ..
        } => {
            let line = paint(
                c,
                "33",
                &format!(
                    "↻ {}: {model} call, attempt {attempt} failed ({}); retrying in {}",
                    speaker(&s, &path),
                    one_line(error, ERROR_CHARS),
                    elapsed(*delay_ms)
                ),
            );
            print(&mut s, &[line]);
        }
        Event::Warning { text, .. } => {
            let line = paint(
                c,
                "33",
                &format!("⚠ {}: {}", short(&s.root, &path), one_line(text, 200)),
            );
            print(&mut s, &[line]);
        }
        Event::Custom { name, data, .. } => {
            let line = paint(
                c,
                "35",
                &format!(
                    "✦ {}: {name} {}",
                    short(&s.root, &path),
                    one_line(&data.to_string(), 200)
                ),
            );
            print(&mut s, &[line]);
        }
        Event::EventsDropped { count, .. } => {
            let line = paint(
                c,
                "33",
                &format!("⚠ {count} event(s) not shown: the terminal could not keep up"),
            );
            print(&mut s, &[line]);
        }
        Event::MessageHeld { to, capacity, .. } => {
            let line = paint(
                c,
                "2",
                &format!("  ⏸ a message to {to} waits for room (inbox full, capacity {capacity})"),
            );
            print(&mut s, &[line]);
        }
        Event::MessageDropped { to, reason, .. } => {
            let line = paint(
                c,
                "2",
                &format!("  ✗ a message to {to} was dropped ({reason})"),
            );
            print(&mut s, &[line]);
        }
        Event::InputRequested { prompt, .. } => {
            let line = paint(
                c,
                "35",
                &format!("? {} asks: {}", speaker(&s, &path), one_line(prompt, 200)),
            );
            print(&mut s, &[line]);
        }
        Event::RunFinished {
            status,
            detail,
            usage,
            elapsed_ms,
            stats,
            ..
        } if s.root.as_deref() == Some(path.as_str()) => {
            let cost = stats
                .total
                .cost
                .map(|c| format!(" · {}", usd(c)))
                .unwrap_or_default();
            // Turns as `spent:` counts them, nested workflows' included.
            let turns = stats.total.turns;
            let line = paint(
                c,
                "2",
                &format!(
                    "■ {status} · {} · {} · {}{cost}",
                    count(turns, "turn"),
                    elapsed(*elapsed_ms),
                    count(usage.total(), "token")
                ),
            );
            // Why a stopped run stopped (a budget, a ceiling and how to
            // raise it), under its end line.
            let mut lines = vec![line];
            if *status == FinalStatus::Stopped
                && let Some(why) = detail
            {
                lines.push(paint(
                    c,
                    "33",
                    &format!("  stopped by {}", one_line(why, 400)),
                ));
            }
            print(&mut s, &lines);
        }
        _ => {}
    }
}
