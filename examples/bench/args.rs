//! The bench's command line: a workload, its sizes and its options.

use super::{BoxError, WORKLOADS};

/// The command line: a workload and its sizes.
pub(super) struct Args {
    pub workload: String,
    pub n: Option<u64>,
    pub k: Option<usize>,
    pub runs: Option<usize>,
    pub whole_context: bool,
    pub threads: Option<usize>,
    pub store: String,
    pub durability: String,
    pub reps: usize,
    pub m: u64,
    pub latency_ms: f64,
    pub server: String,
}

pub(super) fn parse_args() -> Result<Args, BoxError> {
    let mut args = std::env::args().skip(1);
    let Some(workload) = args.next() else {
        return Err(format!(
            "usage: bench <workload> [--n N] [--k K] [--runs R] [--context buffered|whole] [--threads T]\n\
             \x20      [--store memory|file|sqlite|postgres] [--durability process|fsync|exit] [--reps R] (ckpt)\n\
             \x20      [--m M] [--latency-ms L] (conc)\n\
             \x20      [--server troupe|langgraph|floor] [--k K] [--n TURNS] [--latency-ms L] [--store sqlite|memory] (serve)\n\
             workloads: {}",
            WORKLOADS.join(", ")
        )
        .into());
    };
    let mut parsed = Args {
        workload,
        n: None,
        k: None,
        runs: None,
        whole_context: false,
        threads: None,
        store: "sqlite".into(),
        durability: "process".into(),
        reps: 5,
        m: 10,
        latency_ms: 20.0,
        server: "troupe".into(),
    };
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .replace('_', "")
                .parse::<u64>()
                .map_err(|e| format!("{flag} {value}: {e}"))
        };
        match flag.as_str() {
            "--n" => parsed.n = Some(number()?),
            "--k" => parsed.k = Some(number()? as usize),
            "--runs" => parsed.runs = Some(number()? as usize),
            "--threads" => parsed.threads = Some(number()? as usize),
            "--reps" => parsed.reps = number()? as usize,
            "--m" => parsed.m = number()?,
            "--latency-ms" => {
                parsed.latency_ms = value.parse().map_err(|e| format!("{flag} {value}: {e}"))?
            }
            "--store" => parsed.store = value,
            "--server" => parsed.server = value,
            "--durability" => parsed.durability = value,
            "--context" => match value.as_str() {
                "buffered" => parsed.whole_context = false,
                "whole" | "unbounded" => parsed.whole_context = true,
                other => return Err(format!("--context {other}: buffered or whole").into()),
            },
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    Ok(parsed)
}
