//! The console form of an [`Event`]: one readable line each.

use std::fmt;

use super::Event;

/// Shortens text for one console line.
fn excerpt(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ⏎ ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// The console form: one readable line per event.
impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::RunStarted { path, participants } => {
                write!(f, "▶ {path}: run started ({participants} participants)")
            }
            Event::RunFinished {
                path,
                status,
                detail,
                usage,
                turns,
                elapsed_ms,
                stats,
            } => {
                write!(f, "■ {path}: {status}")?;
                if let Some(detail) = detail {
                    write!(f, " ({detail})")?;
                }
                write!(
                    f,
                    " after {turns} turns in {elapsed_ms:.1} ms ({} tokens",
                    usage.total()
                )?;
                if let Some(cost) = stats.total.cost {
                    write!(f, ", {}", crate::stats::format_usd(cost))?;
                }
                f.write_str(")")
            }
            Event::AgentStarted { path, batch } => write!(f, "  → {path} ({batch} new)"),
            Event::AgentFinished {
                path,
                produced,
                elapsed_ms,
            } => write!(f, "  ← {path}: {produced} message(s) in {elapsed_ms:.1} ms"),
            Event::AgentFailed {
                path,
                kind,
                error,
                attempt,
            } => write!(
                f,
                "  ✗ {path}: attempt {attempt} failed ({kind:?}): {}",
                excerpt(error, 160)
            ),
            Event::MessageProduced { path, message } => {
                write!(f, "  💬 {path}: {}", excerpt(&message.text_content(), 160))
            }
            Event::MessageDelivered { path, message, to } => {
                write!(f, "    ✉ {path}: {} → {to}", &message.to_string()[24..])
            }
            Event::MessageHeld {
                path,
                message,
                to,
                capacity,
            } => write!(
                f,
                "    ⏸ {path}: {} held for {to} (inbox full, capacity {capacity})",
                &message.to_string()[24..]
            ),
            Event::MessageDropped {
                path,
                message,
                to,
                reason,
            } => write!(
                f,
                "    ✗ {path}: {} dropped at {to} ({reason})",
                &message.to_string()[24..]
            ),
            Event::ToolCall { path, call } => write!(
                f,
                "  🔧 {path}: {}({})",
                call.name,
                excerpt(&call.arguments, 120)
            ),
            Event::ToolResult { path, result } => write!(
                f,
                "  {} {path}: {} = {}",
                if result.is_error { "⚠" } else { "✓" },
                result.name,
                excerpt(&result.content, 120)
            ),
            Event::Handoff { path, to } => write!(f, "  ⇒ {path} hands off to {to}"),
            Event::InputRequested {
                path,
                request,
                prompt,
            } => write!(f, "  ? {path} asks ({request}): {}", excerpt(prompt, 160)),
            Event::CheckpointSaved {
                path,
                checkpoint,
                superstep,
                bytes,
                ..
            } => write!(
                f,
                "  ⛁ {path}: checkpoint {} after superstep {superstep} ({bytes} bytes)",
                &checkpoint[checkpoint.len().saturating_sub(8)..]
            ),
            Event::Plan { path, plan } => {
                write!(f, "  ✎ {path} plans:")?;
                for line in plan.lines() {
                    write!(f, "\n      {line}")?;
                }
                Ok(())
            }
            Event::Ledger {
                path,
                kind,
                summary,
                ..
            } => {
                write!(f, "  📋 {path} {} ledger:", kind.as_str())?;
                for line in summary.lines() {
                    write!(f, "\n      {line}")?;
                }
                Ok(())
            }
            Event::Selected { path, next } => write!(f, "  ☞ {path} selects {}", next.join(", ")),
            Event::SuperstepStarted {
                path,
                superstep,
                nodes,
            } => write!(f, "┌ {path}: superstep {superstep} [{}]", nodes.join(", ")),
            Event::SuperstepCompleted { path, superstep } => {
                write!(f, "└ {path}: superstep {superstep} done")
            }
            Event::Retry {
                path,
                attempt,
                error,
                delay_ms,
            } => write!(
                f,
                "  ↻ {path}: attempt {attempt} failed ({error}); retrying in {delay_ms:.0} ms"
            ),
            Event::Warning { path, text } => write!(f, "  ⚠ {path}: {text}"),
            Event::Custom { path, name, data } => write!(f, "  ✦ {path}: {name} {data}"),
            Event::EventsDropped { path, count } => write!(
                f,
                "  ⚠ {path}: {count} event(s) dropped: the event output could not keep up"
            ),
            Event::TextDelta { path, text } => write!(f, "  … {path}: {}", excerpt(text, 160)),
            Event::ToolArgumentsDelta {
                path,
                index,
                name,
                arguments,
                ..
            } => write!(
                f,
                "  … {path}: call {index}{} {}",
                name.as_deref().map_or(String::new(), |n| format!(" ({n})")),
                excerpt(arguments, 120)
            ),
            Event::ModelCallStarted {
                path,
                model,
                attempt,
            } => write!(f, "  ⇢ {path}: {model} (attempt {attempt})"),
            Event::ModelCallFinished {
                path,
                model,
                attempt,
                latency_ms,
                usage,
                usage_estimated,
                cost,
                error,
            } => {
                write!(
                    f,
                    "  ⇠ {path}: {model} attempt {attempt} in {latency_ms:.1} ms"
                )?;
                if let Some(u) = usage {
                    let about = if *usage_estimated { "~" } else { "" };
                    write!(f, " ({about}{} tokens)", u.total())?;
                }
                if let Some(cost) = cost {
                    write!(f, " {}", crate::stats::format_usd(*cost))?;
                }
                match error {
                    Some(e) => write!(f, ", failed: {}", excerpt(e, 160)),
                    None => Ok(()),
                }
            }
            Event::ModelCallRetry {
                path,
                model,
                attempt,
                error,
                delay_ms,
            } => write!(
                f,
                "  ↻ {path}: {model} attempt {attempt} failed ({}); retrying in {delay_ms:.0} ms",
                excerpt(error, 160)
            ),
            Event::ModelFailover {
                path,
                model,
                error,
                next,
            } => write!(
                f,
                "  ⇢ {path}: {model} failed ({}); {next} takes over",
                excerpt(error, 160)
            ),
            Event::ToolCallStarted {
                path,
                call_id,
                name,
            } => write!(f, "  ⚙ {path}: {name} [{call_id}] started"),
            Event::ToolCallFinished {
                path,
                call_id,
                name,
                elapsed_ms,
                error,
            } => {
                write!(
                    f,
                    "  ⚙ {path}: {name} [{call_id}] done in {elapsed_ms:.1} ms"
                )?;
                match error {
                    Some(e) => write!(f, ", failed: {}", excerpt(e, 160)),
                    None => Ok(()),
                }
            }
            Event::ModelCallThrottled {
                path,
                model,
                waited_ms,
            } => write!(
                f,
                "  ⧗ {path}: {model} waited {waited_ms:.0} ms for its rate limit"
            ),
            Event::ToolProgress {
                path,
                call_id,
                name,
                progress,
                total,
                message,
            } => {
                write!(f, "  ⚙ {path}: {name} [{call_id}] at {progress}")?;
                if let Some(total) = total {
                    write!(f, "/{total}")?;
                }
                match message {
                    Some(m) => write!(f, ": {}", excerpt(m, 120)),
                    None => Ok(()),
                }
            }
        }
    }
}
