//! The web console in a real browser: `troupe serve` runs a team of
//! scripted agents (one asks the user a question), headless Chromium loads
//! the console through chromedriver, a message is sent, the reply streams
//! into the chat and the event tree, the question is answered from the
//! page, the finished run is reopened from the runs list, and a screenshot
//! is saved (`target/tmp/serve_console.png`).
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/install-chromium.sh`
//! installs them, and `.ci/run` calls it). Without them the test fails,
//! saying how to install them, unless `TROUPE_ALLOW_SKIP=1` (never in CI).

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
#[path = "serve_console/webdriver.rs"]
mod webdriver;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::{troupe, write};
use webdriver::{Driver, Killed, free_port, http};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const TOKEN: &str = "console-test-token";

/// A clerk who asks which order before refunding it, and a reviewer.
const TEAM: &str = "version: 1
name: help-desk
description: A clerk who asks before refunding, and a reviewer.
models:
  m:
    provider: scripted
    pricing: {input: 0.15, output: 0.6}
agents:
  clerk:
    description: Works out refunds.
    model: m
    tools: [ask_user, calculator]
    script:
      - tool_call: {name: ask_user, arguments: {question: \"Which order was charged twice?\"}}
      - tool_call: {name: calculator, arguments: {expression: \"2 * 49.99 - 49.99\"}}
      - \"Refunded 49.99 on the order you named.\"
  reviewer:
    description: Checks the refund.
    model: m
    script: [\"Reviewed: the refund is right.\"]
workflow:
  steps:
    - agent: clerk
    - agent: reviewer
checkpoint: {store: sqlite, path: state/console.db}
";

/// Whether this run is CI's, where a missing browser is a failure.
/// `troupe serve` on a free port, answering once `/team` does.
fn serve(dir: &Path, cfg: &str) -> (Killed, u16) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = troupe(dir, &["serve", cfg, "--listen", &listen]);
    cmd.env("TROUPE_SERVE_TOKEN", TOKEN);
    let mut child = cmd.spawn().expect("start troupe serve");
    let out = common::lines(child.stdout.take().expect("stdout"));
    let err = common::lines(child.stderr.take().expect("stderr"));
    let mut server = Killed(child);
    let auth = format!("Bearer {TOKEN}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok((200, _)) = http(port, "GET", "/team", &[("Authorization", &auth)], None) {
            return (server, port);
        }
        let exited = server.0.try_wait().ok().flatten();
        if exited.is_some() || Instant::now() > deadline {
            std::thread::sleep(Duration::from_millis(200));
            let said: Vec<String> = out.try_iter().chain(err.try_iter()).collect();
            panic!(
                "troupe serve never answered on {listen} ({exited:?}):\n{}",
                said.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// JSON from the server's API, with the token.
fn api(port: u16, path: &str) -> Value {
    let auth = format!("Bearer {TOKEN}");
    let (status, body) =
        http(port, "GET", path, &[("Authorization", &auth)], None).expect("GET the API");
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

/// Clicks the list item `css` selects, found and clicked in one step in
/// the page: the lists are redrawn whenever a run ends, so an element found
/// first and clicked after may be gone.
fn pick(page: &webdriver::Browser<'_>, css: &str) {
    let clicked = page.js(
        "const item = document.querySelector(arguments[0] + ' button');
         if (!item) return false;
         item.click();
         return true;",
        json!([css]),
    );
    assert_eq!(clicked, true, "no list item `{css}`");
}

/// Saves a screenshot of the page as `target/tmp/NAME`.
fn save(page: &webdriver::Browser<'_>, name: &str) {
    let png = page.screenshot();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&shot, &png).expect("write the screenshot");
    eprintln!("screenshot: {}", shot.display());
}

#[test]
fn the_console_chats_streams_shows_the_tree_and_answers_a_question() {
    for tool in [CHROMIUM, CHROMEDRIVER] {
        if !Path::new(tool).exists() {
            common::prereq::missing(
                &format!("{tool} (Debian's chromium and chromium-driver)"),
                "`.ci/install-chromium.sh` (apt-get; sudo when not root)",
            );
            return;
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "help_desk.yaml", TEAM);
    let (_server, port) = serve(dir.path(), cfg.to_str().expect("utf-8"));

    let driver = Driver::start(Path::new(CHROMEDRIVER));
    let profile = tempfile::tempdir().expect("profile dir");
    let page = driver.session(Path::new(CHROMIUM), profile.path());

    // The token comes in the address once; the page keeps it and drops it
    // from the address bar, and sends it on every request after.
    page.goto(&format!("http://127.0.0.1:{port}/?token={TOKEN}"));
    page.wait_for(
        "the team's name",
        "return document.getElementById('team-name').textContent === 'help-desk'",
    );
    assert!(!page.url().contains(TOKEN), "{}", page.url());
    // The workflow graph: the user, both agents, and the edges between.
    page.wait_for(
        "the workflow graph",
        "const g = document.querySelector('#graph svg');
         if (!g) return false;
         const labels = [...g.querySelectorAll('[data-testid=graph-node]')].map(n => n.dataset.label);
         return ['user', 'clerk', 'reviewer'].every(l => labels.includes(l))
             && g.querySelectorAll('g.edge').length >= 2;",
    );
    let agents = page.js(
        "return [...document.querySelectorAll('#agents li')].map(li => li.dataset.agent)",
        json!([]),
    );
    assert_eq!(agents, json!(["clerk", "reviewer"]));

    page.type_into("#chat-input", "I was charged twice");
    page.click("#chat-send");

    // The clerk's question, answered from the page.
    page.wait_for(
        "the clerk's question",
        "const q = document.querySelector('[data-testid=input-request]');
         return !!q && q.innerText.includes('Which order was charged twice?');",
    );
    page.wait_for(
        "the question in the event tree",
        "return !!document.querySelector(
             '[data-testid=tree-node][data-path=\"help-desk/clerk\"] [data-type=input_requested]')",
    );
    save(&page, "serve_console_question.png");
    page.type_into("[data-testid=input-answer]", "order A-1001");
    page.click("[data-testid=input-submit]");

    // The answers stream in, agent by agent, and the run completes.
    page.wait_for(
        "the run to complete",
        "return document.getElementById('run-status').dataset.status === 'completed'",
    );
    let chat = page.js(
        "return [...document.querySelectorAll('[data-testid=chat-message]')].map(b => ({
             role: b.dataset.role, agent: b.dataset.agent || '',
             text: b.querySelector('.text').textContent,
             deltas: Number(b.dataset.deltas || 0),
             streaming: b.classList.contains('streaming') }))",
        json!([]),
    );
    // Each message once: a streamed answer's bubble is the message it made.
    let said = |agent: &str, text: &str| {
        let found: Vec<&Value> = chat
            .as_array()
            .expect("chat messages")
            .iter()
            .filter(|m| m["agent"] == agent && m["text"] == text)
            .collect();
        assert_eq!(
            found.len(),
            1,
            "`{text}` from {agent} in the chat: {chat:#}"
        );
        found[0].clone()
    };
    let order: Vec<&str> = chat
        .as_array()
        .expect("chat messages")
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert_eq!(
        order,
        [
            "I was charged twice",
            "order A-1001",
            "Refunded 49.99 on the order you named.",
            "Reviewed: the refund is right."
        ],
        "the chat in the order it happened"
    );
    assert_eq!(said("you", "I was charged twice")["role"], "user");
    assert_eq!(said("you → clerk", "order A-1001")["role"], "user");
    for (agent, text) in [
        ("clerk", "Refunded 49.99 on the order you named."),
        ("reviewer", "Reviewed: the refund is right."),
    ] {
        let m = said(agent, text);
        assert!(m["deltas"].as_u64() >= Some(1), "not streamed: {m}");
        assert_eq!(m["streaming"], false, "still streaming: {m}");
    }

    // The tree: the team, and under it each agent with what it did.
    let tree = page.js(
        "const out = {};
         for (const n of document.querySelectorAll('[data-testid=tree-node]')) {
             const own = n.querySelector(':scope > details > ol');
             out[n.dataset.path] = {
                 types: [...own.querySelectorAll(':scope > [data-testid=tree-event]')].map(e => e.dataset.type),
                 meter: n.querySelector('.meter').textContent,
             };
         }
         return out;",
        json!([]),
    );
    let types = |path: &str| tree[path]["types"].clone();
    for t in [
        "tool_call",
        "input_requested",
        "tool_result",
        "message_produced",
    ] {
        assert!(
            types("help-desk/clerk")
                .as_array()
                .is_some_and(|a| a.contains(&json!(t))),
            "no {t} under the clerk: {tree:#}"
        );
    }
    assert!(
        types("help-desk")
            .as_array()
            .is_some_and(|a| a.contains(&json!("run_finished"))),
        "{tree:#}"
    );
    let clerk_meter = tree["help-desk/clerk"]["meter"].as_str().unwrap_or("");
    assert!(
        clerk_meter.contains("in ") && clerk_meter.contains('$'),
        "tokens and cost: {clerk_meter}"
    );

    // The run, as the API reports it, matches what the page shows.
    let runs = api(port, "/runs");
    let run = &runs[0];
    assert_eq!(run["status"], "completed", "{runs:#}");
    assert_eq!(run["task"], "I was charged twice");
    let id = run["id"].as_str().expect("run id").to_string();
    let session = page.js(
        "return document.getElementById('session-input').value",
        json!([]),
    );
    assert_eq!(run["session"], session, "{runs:#}");
    assert_eq!(api(port, &format!("/runs/{id}"))["requests"], json!([]));

    // The screenshot, for the README (docs/console.png is a copy).
    save(&page, "serve_console.png");

    // Reopened from the runs list, the run replays: its task and its answers.
    page.wait_for(
        "the run in the runs list",
        &format!("return !!document.querySelector('[data-testid=run-item][data-run-id=\"{id}\"]')"),
    );
    page.click("[data-testid=new-chat]");
    page.wait_for(
        "an empty chat",
        "return !document.querySelector('[data-testid=chat-message]')",
    );
    pick(
        &page,
        &format!("[data-testid=run-item][data-run-id=\"{id}\"]"),
    );
    page.wait_for(
        "the run replayed",
        "const texts = [...document.querySelectorAll('[data-testid=chat-message] .text')].map(t => t.textContent);
         return texts.includes('I was charged twice')
             && texts.includes('Reviewed: the refund is right.')
             && document.getElementById('run-status').dataset.status === 'completed';",
    );
    // The session is listed, and reopened shows the conversation it holds.
    let session_item = format!("[data-testid=session-item][data-session-id={session}]");
    page.wait_for(
        "the session in the sessions list",
        &format!("return !!document.querySelector('{session_item}')"),
    );
    page.click("[data-testid=new-chat]");
    pick(&page, &session_item);
    page.wait_for(
        "the session's messages",
        "const texts = [...document.querySelectorAll('[data-testid=chat-message] .text')].map(t => t.textContent);
         return texts.includes('I was charged twice')
             && texts.includes('Reviewed: the refund is right.');",
    );
    assert_eq!(
        page.js(
            "return document.getElementById('session-input').value",
            json!([])
        ),
        session,
        "the next message continues the session"
    );
}

/// A sloth whose turn takes 30 s: a run to cancel.
const SLOW_TEAM: &str = "version: 1
name: slow-desk
models:
  m: {provider: auto, model: \"${TROUPE_TEST_UNSET_MODEL:-gpt-test-mini}\", delay: 30s}
agents:
  sloth:
    model: m
    script: [\"at last\"]
workflow:
  steps:
    - agent: sloth
";

#[test]
fn the_console_asks_for_its_token_shows_a_cancelled_run_and_fits_360_px() {
    for tool in [CHROMIUM, CHROMEDRIVER] {
        if !Path::new(tool).exists() {
            common::prereq::missing(
                &format!("{tool} (Debian's chromium and chromium-driver)"),
                "`.ci/install-chromium.sh` (apt-get; sudo when not root)",
            );
            return;
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "slow_desk.yaml", SLOW_TEAM);
    let (_server, port) = serve(dir.path(), cfg.to_str().expect("utf-8"));
    // The model's name as it runs, never the raw `${…}`.
    let team = api(port, "/team");
    assert_eq!(team["models"][0]["model"], "gpt-test-mini", "{team:#}");

    let driver = Driver::start(Path::new(CHROMEDRIVER));
    let profile = tempfile::tempdir().expect("profile dir");
    let page = driver.session(Path::new(CHROMIUM), profile.path());
    page.resize(360, 760);

    // Without the token: a small page asking for it, which opens the console.
    page.goto(&format!("http://127.0.0.1:{port}/"));
    page.wait_for(
        "the page asking for the token",
        "return !!document.querySelector('[data-testid=token-form]')",
    );
    page.type_into("[data-testid=token-form] input", TOKEN);
    page.click("[data-testid=token-form] button");
    page.wait_for(
        "the console",
        "return document.getElementById('team-name').textContent === 'slow-desk'",
    );
    let shown = page.js("return document.body.innerText", json!([]));
    assert!(
        !shown.as_str().unwrap_or_default().contains("${"),
        "a raw ${{…}} on the page: {shown}"
    );

    page.type_into("#chat-input", "take your time");
    page.click("#chat-send");
    page.wait_for(
        "the sloth speaking",
        "return document.getElementById('speaking').textContent.includes('sloth')
             && !!document.querySelector('#timeline .tnode.speaking')",
    );
    page.click("#cancel-run");
    page.wait_for(
        "the run cancelled",
        "return document.getElementById('run-status').dataset.status === 'cancelled'",
    );
    let after = page.js(
        "return {
             speaking: document.getElementById('speaking').textContent,
             nodes: document.querySelectorAll('#timeline .tnode.speaking').length,
             active: document.querySelectorAll('#graph g.node.active').length,
             overflow: document.documentElement.scrollWidth - window.innerWidth,
         }",
        json!([]),
    );
    assert_eq!(after["speaking"], "", "{after}");
    assert_eq!(after["nodes"], 0, "{after}");
    assert_eq!(after["active"], 0, "{after}");
    // 360 px wide: nothing wider than the window.
    assert!(after["overflow"].as_i64() <= Some(0), "{after}");
    save(&page, "serve_console_360.png");
}

/// Three steps, checkpointed: a run to fork.
const PAGES_TEAM: &str = "version: 1
name: pages
models:
  m: {provider: scripted}
agents:
  planner: {model: m, script: [\"an outline\"]}
  writer: {model: m, script: [\"a draft\"]}
  editor: {model: m, script: [\"edited: fine\"]}
workflow:
  steps: [{agent: planner}, {agent: writer}, {agent: editor}]
checkpoint: {store: sqlite, path: state/pages.db}
";

#[test]
fn the_console_forks_a_run_from_a_checkpoint_in_the_event_tree() {
    for tool in [CHROMIUM, CHROMEDRIVER] {
        if !Path::new(tool).exists() {
            common::prereq::missing(
                &format!("{tool} (Debian's chromium and chromium-driver)"),
                "`.ci/install-chromium.sh` (apt-get; sudo when not root)",
            );
            return;
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(dir.path(), "pages.yaml", PAGES_TEAM);
    let (_server, port) = serve(dir.path(), cfg.to_str().expect("utf-8"));
    let driver = Driver::start(Path::new(CHROMEDRIVER));
    let profile = tempfile::tempdir().expect("profile dir");
    let page = driver.session(Path::new(CHROMIUM), profile.path());
    page.goto(&format!("http://127.0.0.1:{port}/?token={TOKEN}"));
    page.wait_for(
        "the team's name",
        "return document.getElementById('team-name').textContent === 'pages'",
    );
    page.type_into("#chat-input", "write a page");
    page.click("#chat-send");
    page.wait_for(
        "the run to complete",
        "return document.getElementById('run-status').dataset.status === 'completed'",
    );
    let original = api(port, "/runs")[0]["id"]
        .as_str()
        .expect("run id")
        .to_string();

    // "fork from here" on the checkpoint after the writer's superstep.
    let checkpoint = page.js(
        "const line = [...document.querySelectorAll('[data-testid=tree-event][data-type=checkpoint_saved]')]
             .find(l => l.textContent.includes('after superstep 2'));
         if (!line) return null;
         line.querySelector('[data-testid=fork-here]').click();
         return line.dataset.checkpoint;",
        json!([]),
    );
    let checkpoint = checkpoint.as_str().expect("a checkpoint line").to_string();
    page.wait_for(
        "the fork form",
        "return !!document.querySelector('[data-testid=fork-form]')",
    );
    page.type_into("[data-testid=fork-message]", "a better draft");
    page.click("[data-testid=fork-submit]");
    page.wait_for(
        "the fork opened and completed",
        &format!(
            "const shown = document.getElementById('timeline-run').textContent;
             return shown !== '' && shown !== '{original}'
                 && document.getElementById('run-status').dataset.status === 'completed';"
        ),
    );
    let fork_id = page.js(
        "return document.getElementById('timeline-run').textContent",
        json!([]),
    );
    let fork_id = fork_id.as_str().expect("the fork's id").to_string();
    let fork = api(port, &format!("/runs/{fork_id}"));
    assert_eq!(
        fork["forked_from"],
        json!({"run_id": original, "checkpoint": checkpoint}),
        "{fork:#}"
    );
    assert_eq!(fork["response"], "edited: fine", "{fork:#}");
    // The fork's tree: the editor alone ran.
    let ran = page.js(
        "return [...document.querySelectorAll('[data-testid=tree-event][data-type=agent_started]')]
             .map(e => e.closest('[data-testid=tree-node]').dataset.path)",
        json!([]),
    );
    assert_eq!(ran, json!(["pages/editor"]), "{ran}");
    page.wait_for(
        "the fork in the runs list",
        &format!(
            "const li = document.querySelector('[data-testid=run-item][data-run-id=\"{fork_id}\"]');
             return !!li && li.dataset.forkedFrom === '{original}';"
        ),
    );
    save(&page, "serve_console_fork.png");
}
