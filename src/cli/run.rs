//! `troupe run`: a run on a task, or one carried on from its last
//! checkpoint (`--resume RUN_ID|latest`), its questions answered with
//! `--answer REQUEST_ID=TEXT` or, on a terminal, asked inline. Ctrl-C and
//! SIGTERM stop it gracefully (see `interrupt`).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use troupe::config::{Built, Config};
use troupe::store::CheckpointId;
use troupe::{
    CheckpointError, InputRequest, RunContext, RunError, RunResult, RunStatus, Workflow,
    event::FinalStatus, stats::RunStats,
};

use super::cluster::{self, ClusterArgs};
use super::end_line::{EndLine, Question};
use super::interrupt::Interrupt;
use super::run_fork::{self, ForkArgs};
use super::run_start::{Start, parse_answers, read_prompt, resolve};
use super::{
    EventsFormat, FAILED, INTERRUPTED, INVALID, OK, Output, WAITING, build_options, lease, leave,
    make_id, report, sinks, store, write_failed, write_out,
};

/// `troupe run`'s arguments.
#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// The config file.
    file: PathBuf,
    /// The task; `-` (or nothing, when stdin is not a terminal) reads it
    /// from stdin. Not given with `--resume`.
    prompt: Option<String>,
    /// Names the run (checkpoints are saved under it). A run of that id
    /// already in the store is refused, unless `--replace` is given.
    #[arg(long, conflicts_with = "resume")]
    run_id: Option<String>,
    /// With `--run-id`: starts that run over, dropping the stored run of
    /// that id (its checkpoints and the questions it waits on).
    #[arg(long, requires = "run_id")]
    replace: bool,
    /// Continues run RUN_ID (`latest`: the newest) exactly where its last
    /// checkpoint in the config's store left it.
    #[arg(long, value_name = "RUN_ID")]
    resume: Option<String>,
    /// With --resume: carries on from this checkpoint of the run (an id
    /// `troupe runs FILE --json` or the run's events name) instead of its
    /// newest.
    #[arg(
        long,
        value_name = "CHECKPOINT",
        requires = "resume",
        conflicts_with = "answer"
    )]
    at: Option<String>,
    /// Answers a question the resumed run waits on (repeatable; applied one
    /// at a time, in order).
    #[arg(long, value_name = "REQUEST_ID=TEXT", requires = "resume")]
    answer: Vec<String>,
    /// Answers the first question the resumed run waits on, whatever its
    /// id (a script need not read the id from the previous output).
    #[arg(
        long,
        value_name = "TEXT",
        requires = "resume",
        conflicts_with = "answer"
    )]
    answer_next: Option<String>,
    /// With --resume: carries the run on from its checkpoint (--at, else
    /// its newest) as a new run NEW_ID (made up when not given); the run
    /// resumed is only read, never changed.
    #[arg(
        long,
        value_name = "NEW_ID",
        requires = "resume",
        conflicts_with_all = ["answer", "answer_next"],
        num_args = 0..=1,
        default_missing_value = ""
    )]
    fork: Option<String>,
    /// With --fork: replaces the text of the checkpoint's last message.
    #[arg(long, value_name = "TEXT", requires = "fork")]
    edit_last: Option<String>,
    /// With --fork: sets a state value first (repeatable; a JSON string is
    /// kept as its text, other JSON as its JSON text).
    #[arg(long, value_name = "KEY=JSON", requires = "fork")]
    set_state: Vec<String>,
    /// Never asks on the terminal: a run that needs input ends, waiting,
    /// with exit code 3.
    #[arg(long)]
    no_input: bool,
    /// Seconds the turns under way get to finish after Ctrl-C or SIGTERM
    /// before the run is cancelled.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    grace: f64,
    #[command(flatten)]
    output: Output,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// `troupe run`.
pub(crate) async fn run(args: RunArgs) -> u8 {
    let config = match Config::load(&args.file) {
        Ok(c) => c,
        Err(e) => return report(&e),
    };
    let grace = match Duration::try_from_secs_f64(args.grace) {
        Ok(g) => g,
        Err(_) => {
            eprintln!(
                "troupe run: --grace takes a number of seconds, 0 or more (got {})",
                args.grace
            );
            return INVALID;
        }
    };
    let at = match args
        .at
        .as_deref()
        .map(str::parse::<CheckpointId>)
        .transpose()
    {
        Ok(at) => at,
        Err(_) => {
            eprintln!(
                "troupe run: --at takes a checkpoint id (32 hex digits, as `troupe runs {} --json` lists under \"checkpoint\"), got `{}`",
                args.file.display(),
                args.at.as_deref().unwrap_or_default()
            );
            return INVALID;
        }
    };
    let answers = match parse_answers(&args.answer) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("troupe run: {e}");
            return INVALID;
        }
    };
    // Checked before anything runs: a run id no store takes would run
    // with every checkpoint refused.
    if let Some(id) = &args.run_id
        && let Err(e) = troupe::store::check_run_id(id)
    {
        eprintln!("troupe run: --run-id: {e}");
        return INVALID;
    }
    let task = match (&args.resume, args.prompt.clone()) {
        (Some(_), Some(_)) => {
            eprintln!(
                "troupe run: a task cannot be given with --resume: the run carries on from its checkpoint"
            );
            return INVALID;
        }
        (Some(_), None) => None,
        (None, prompt) => match read_prompt(prompt) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("troupe run: {e}");
                return INVALID;
            }
        },
    };
    let chatty = !args.output.quiet && args.output.events == EventsFormat::Pretty;
    let node = match cluster::join(&args.file, &config, &args.cluster, chatty).await {
        Ok(n) => n,
        Err(code) => return code,
    };
    let options = match build_options(&args.output) {
        Ok(o) => o,
        Err(code) => {
            leave(node).await;
            return code;
        }
    };
    let built = match config.build(&options).await {
        Ok(b) => b,
        Err(e) => {
            leave(node).await;
            return report(&e);
        }
    };
    // What `troupe validate` would warn of (a cycle of routes, a model
    // nothing uses), said once before the first turn.
    if !args.output.quiet {
        for w in &built.warnings {
            eprintln!("{}", w.warning_line());
        }
    }
    if chatty {
        for note in super::console_text::distinct(&built.notes) {
            eprintln!("{note}");
        }
    }
    let start = match (task, &args.resume) {
        (Some(task), _) => Ok(Start::Task(task)),
        (None, Some(wanted)) if args.fork.is_some() => {
            let fork = ForkArgs {
                new_id: args.fork.as_deref().unwrap_or_default(),
                edit_last: args.edit_last.as_deref(),
                set_state: &args.set_state,
            };
            run_fork::resolve(&args.file, &built, wanted, at, fork).await
        }
        (None, Some(wanted)) => {
            resolve(
                &args.file,
                &built,
                wanted,
                answers,
                args.answer_next.clone(),
                at,
            )
            .await
        }
        (None, None) => Err(INVALID),
    };
    let code = match start {
        Ok(start) => drive(&args, &config, &built, start, grace).await,
        Err(code) => code,
    };
    built.close().await;
    leave(node).await;
    code
}

/// Runs (or resumes) under a context watched for signals, asks the
/// questions inline when it may, and reports the result.
async fn drive(
    args: &RunArgs,
    config: &Config,
    built: &Built,
    start: Start,
    grace: Duration,
) -> u8 {
    let run_id = match &start {
        Start::Task(_) => args
            .run_id
            .clone()
            .unwrap_or_else(|| make_id(&config.workflow_name())),
        Start::Resume { run_id, .. } => run_id.clone(),
        Start::Fork { new_id, .. } => new_id.clone(),
    };
    // Held until the run ends here: no other process runs it meanwhile.
    let _lease = match lease::claim(args.run_id.is_some(), args.replace, built, &run_id).await {
        Ok(l) => l,
        Err(code) => return code,
    };
    let (sink, console) = sinks(&args.output, config);
    let ctx = RunContext::with_sink(sink.clone()).with_run_id(run_id.clone());
    let hint = store::outlives(built.store.as_ref()).then(|| resume_hint(&args.file, &run_id));
    let interrupt = Interrupt::watch(&ctx, grace, hint.clone());
    let workflow = &built.workflow;
    let mut result = match start {
        Start::Task(task) => workflow.run_task(task, &ctx).await,
        Start::Fork {
            from, at, edits, ..
        } => match &built.store {
            Some(store) => {
                workflow
                    .fork(store.checkpoints.as_ref(), &from, at, &run_id, &edits, &ctx)
                    .await
            }
            None => Err(CheckpointError::NoStore(workflow.name().to_string()).into()),
        },
        Start::Resume { at: Some(at), .. } => match &built.store {
            Some(store) => {
                workflow
                    .run_from_checkpoint(store.checkpoints.as_ref(), &run_id, Some(at), &ctx)
                    .await
            }
            None => Err(CheckpointError::NoStore(workflow.name().to_string()).into()),
        },
        Start::Resume { answers, .. } if answers.is_empty() => workflow.resume(&run_id, &ctx).await,
        Start::Resume { answers, .. } => {
            let mut last = None;
            for (id, text) in answers {
                let r = respond(built, &run_id, None, &id, text, &ctx).await;
                let go_on =
                    matches!(&r, Ok(r) if !Workflow::pending_requests(&r.thread).is_empty());
                last = Some(r);
                if !go_on || interrupt.happened() {
                    break;
                }
            }
            match last {
                Some(r) => r,
                None => workflow.resume(&run_id, &ctx).await,
            }
        }
    };
    // A cancelled turn of a remote A2A agent cancels its remote task in
    // the background: those cancels go out before the process exits.
    troupe::agents::a2a::settle_cancels(Duration::from_secs(6)).await;
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if terminal && !args.no_input {
        sink.flush().await;
        result = ask_inline(built, &run_id, result, &ctx, &interrupt).await;
    }
    // Every event is out before the result line and the exit.
    sink.flush().await;
    let lost = console.and_then(|c| {
        let lost = c.take_write_error();
        c.finish();
        lost
    });
    let ended = Ended {
        file: &args.file,
        store: built.store.as_ref().map(store::describe),
        run_id: &run_id,
        output: &args.output,
        interrupted: interrupt.happened(),
        hint: hint.as_deref(),
    };
    match (ended.report(built, result), lost) {
        // The events shown were lost: a run that passed fails.
        (OK, Some(e)) => write_failed(&e),
        (code, _) => code,
    }
}

/// Asks the questions a run waits on, one at a time on the terminal, and
/// runs on with each answer until the run ends otherwise (or stdin ends, or
/// a signal comes).
async fn ask_inline(
    built: &Built,
    run_id: &str,
    mut result: Result<RunResult, RunError>,
    ctx: &RunContext,
    interrupt: &Interrupt,
) -> Result<RunResult, RunError> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(r) = &result {
        let Some(q) = Workflow::pending_requests(&r.thread).into_iter().next() else {
            break;
        };
        if interrupt.happened() {
            break;
        }
        ctx.sink().flush().await;
        eprint!("? {} asks ({}): {}\n> ", q.agent, q.id, q.prompt);
        let _ = std::io::stderr().flush();
        let line = tokio::select! {
            l = lines.next_line() => l,
            _ = interrupt.wait() => break,
        };
        let Ok(Some(answer)) = line else { break };
        let thread = r.thread.clone();
        result = respond(built, run_id, Some(thread), &q.id, answer, ctx).await;
    }
    result
}

/// Answers `request` and runs on: from the store's latest checkpoint when
/// the config has a store, else from `thread`.
async fn respond(
    built: &Built,
    run_id: &str,
    thread: Option<troupe::Thread>,
    request: &str,
    answer: String,
    ctx: &RunContext,
) -> Result<RunResult, RunError> {
    match (&built.store, thread) {
        (None, Some(thread)) => {
            built
                .workflow
                .respond_in_thread(thread, request, answer, ctx)
                .await
        }
        (Some(store), _) => {
            built
                .workflow
                .respond(store.checkpoints.as_ref(), run_id, request, answer, ctx)
                .await
        }
        (None, None) => Err(CheckpointError::NoStore(built.workflow.name().to_string()).into()),
    }
}

fn resume_hint(file: &Path, run_id: &str) -> String {
    format!(
        "resume with: troupe run {} --resume {run_id}",
        file.display()
    )
}

/// How a run ended, for its report.
struct Ended<'a> {
    file: &'a Path,
    /// The checkpoint store, described (`dir store at state/`).
    store: Option<String>,
    run_id: &'a str,
    output: &'a Output,
    /// A signal arrived.
    interrupted: bool,
    /// How to resume, when the store outlives the process.
    hint: Option<&'a str>,
}

impl Ended<'_> {
    /// Prints the result (stdout) and notes (stderr); returns the exit
    /// code.
    fn report(&self, built: &Built, result: Result<RunResult, RunError>) -> u8 {
        match result {
            Ok(r) => self.report_result(built, &r),
            Err(e) => self.report_error(e),
        }
    }

    fn jsonl(&self) -> bool {
        self.output.events == EventsFormat::Jsonl && !self.output.quiet
    }

    fn report_result(&self, built: &Built, r: &RunResult) -> u8 {
        let pending = Workflow::pending_requests(&r.thread);
        let waiting = !pending.is_empty();
        // What goes to stdout, written at once so that a failed write is
        // seen. A run that did not finish has no final response to show
        // (but `--quiet` prints what it has).
        let quiet_end =
            matches!(r.status, RunStatus::Cancelled | RunStatus::Interrupted) || waiting;
        let out = if self.jsonl() {
            let (status, detail) = if waiting {
                (FinalStatus::WaitingForInput, Some(r.status.to_string()))
            } else {
                r.status.final_status()
            };
            EndLine::Result {
                status,
                detail,
                final_response: r.final_text(),
                turns: Some(r.turns),
                usage: Some(r.usage),
                stats: Some(r.stats.clone()),
                run_id: Some(self.run_id.to_string()),
                session: None,
                checkpoint: r.checkpoint.map(|c| c.to_string()),
                requests: Question::all(&pending),
            }
            .to_line()
        } else if self.output.quiet {
            format!("{}\n", r.final_text())
        } else if !quiet_end {
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            let rule = "── final response ──";
            let rule = if color {
                format!("\x1b[1m{rule}\x1b[0m")
            } else {
                rule.into()
            };
            format!("\n{rule}\n{}\n", r.final_text())
        } else {
            String::new()
        };
        let written = write_out(&out);
        self.spent_note(Some(&r.stats));
        if let Some(note) = checkpoint_note(built, self.run_id, r) {
            eprintln!("{note}");
        }
        if waiting && !self.jsonl() {
            for q in &pending {
                eprintln!("? {} asks ({}): {}", q.agent, q.id, q.prompt);
            }
            eprintln!("{}", self.waiting_note(&pending));
        }
        let stopped = self.interrupted || r.status == RunStatus::Interrupted;
        if stopped && let Some(h) = self.hint {
            eprintln!("interrupted: {h}");
        }
        let code = match r.status {
            _ if stopped => INTERRUPTED,
            _ if waiting => WAITING,
            RunStatus::Cancelled => FAILED,
            _ => OK,
        };
        match written {
            Ok(()) => code,
            // Output lost fails a run that would have passed; an
            // interrupted or waiting run keeps its own code.
            Err(e) => {
                let failed = write_failed(&e);
                if code == OK { failed } else { code }
            }
        }
    }

    /// How to answer the questions of a run that waits: by id, in a
    /// later process, when its checkpoints outlive this one; else only by
    /// running it again where it can ask.
    fn waiting_note(&self, pending: &[InputRequest]) -> String {
        if self.hint.is_none() {
            return format!(
                "waiting for input, but {} keeps no checkpoint that outlives this process, so the run cannot be answered later: add `checkpoint: {{store: sqlite, path: runs.db}}` to answer with --resume and --answer, or run it on a terminal (without --no-input) to answer inline",
                self.file.display()
            );
        }
        format!(
            "waiting for input: answer with `troupe run {} --resume {} --answer {}=TEXT`",
            self.file.display(),
            self.run_id,
            pending.first().map_or("REQUEST_ID", |q| q.id.as_str())
        )
    }

    fn report_error(&self, e: RunError) -> u8 {
        if self.interrupted {
            eprintln!("interrupted: {e}");
            if let Some(h) = self.hint {
                eprintln!("{h}");
            }
            return INTERRUPTED;
        }
        let code = match &e {
            RunError::Checkpoint(c) => {
                eprintln!("troupe run: cannot resume run `{}`: {c}", self.run_id);
                if matches!(c, CheckpointError::OtherTopology { .. }) {
                    eprintln!(
                        "the config changed since the checkpoint was saved; run the config it was saved with, or start a new run"
                    );
                }
                INVALID
            }
            RunError::CheckpointNotSaved { last_saved, .. } => {
                let store = self.store.as_deref().unwrap_or("checkpoint store");
                eprintln!("run failed: {store}: {e}");
                self.spent_note(e.stats());
                match (last_saved, self.hint) {
                    (Some(id), Some(hint)) => {
                        eprintln!(
                            "once the store can be written again, {hint} (from checkpoint {id})"
                        )
                    }
                    (None, Some(_)) => eprintln!(
                        "no checkpoint of run `{}` was saved: run it again once the store can be written",
                        self.run_id
                    ),
                    _ => {}
                }
                FAILED
            }
            _ => {
                eprintln!("run failed: {e}");
                self.spent_note(e.stats());
                FAILED
            }
        };
        if self.jsonl() {
            let line = EndLine::Error {
                error: e.to_string(),
                run_id: self.run_id.to_string(),
                stats: e.stats().cloned(),
            };
            if let Err(e) = write_out(&line.to_line()) {
                // The run failed either way; the lost line is said too.
                write_failed(&e);
            }
        }
        code
    }
}

impl Ended<'_> {
    /// The summary line of what the run spent (stderr; not with `--quiet`
    /// or `--events jsonl`, whose result line carries it).
    fn spent_note(&self, stats: Option<&RunStats>) {
        if let Some(stats) = stats
            && !self.output.quiet
            && self.output.events != EventsFormat::Jsonl
        {
            eprintln!("spent: {}", stats.total);
        }
    }
}

fn checkpoint_note(built: &Built, run_id: &str, result: &RunResult) -> Option<String> {
    let store = built.store.as_ref()?;
    let id = result.checkpoint?;
    Some(format!(
        "checkpoint {id} of run `{run_id}` saved ({})",
        store::describe(store)
    ))
}
