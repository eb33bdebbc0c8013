//! `schedules:`: a good one loads and builds its ticks; a bad cron
//! expression, an empty task or a repeated name is a located error.

use troupe_config::{Config, Schedule};

const BASE: &str = "version: 1
models:
  m: {provider: scripted, replies: [hi]}
agents:
  a: {model: m}
";

#[test]
fn schedules_load_and_bad_ones_are_located() {
    let good = format!(
        "{BASE}schedules:\n  - {{cron: '*/1 * * * * *', input: tick}}\n  - {{cron: '0 9 * * MON-FRI', input: report, name: morning}}\n"
    );
    let config = Config::parse(&good, "t.yaml").expect("loads");
    let all = Schedule::all(&config.spec().schedules).expect("builds");
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["schedule-1", "morning"]);

    for (rest, head, says) in [
        (
            "schedules:\n  - cron: '61 * * * *'\n    input: go\n",
            "t.yaml:7:11: field `schedules[0].cron`: ",
            "`61 * * * *` is not a cron expression",
        ),
        (
            "schedules:\n  - {cron: '* * * * *', input: ' '}\n",
            "t.yaml:7:32: field `schedules[0].input`: ",
            "`input` is empty",
        ),
        (
            "schedules:\n  - {cron: '* * * * *', input: a, name: x}\n  - {cron: '* * * * *', input: b, name: x}\n",
            "t.yaml:8:41: field `schedules[1].name`: ",
            "two schedules are named `x`",
        ),
    ] {
        let text = Config::parse(&format!("{BASE}{rest}"), "t.yaml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| panic!("loaded: {rest}"));
        assert!(
            text.lines()
                .any(|l| l.starts_with(head) && l.contains(says)),
            "expected `{head}` … `{says}`, got:\n{text}"
        );
    }
}
