//! The public API of each library crate, compared with its committed
//! snapshot, and the rules that keep the snapshots honest.
//!
//! - `every_crates_public_api_matches_its_snapshot`: builds each crate's
//!   rustdoc JSON with the project's own toolchain (`RUSTC_BOOTSTRAP=1 cargo
//!   rustdoc -- --output-format json`, into `target/public-api/`), renders one line per public item with the
//!   `public-api` crate (blanket, auto-trait and derived impls left out) and
//!   compares with `api-check/snapshots/CRATE.txt`. A difference fails,
//!   printing the lines gone (`-`) and added (`+`). When the change is
//!   meant: `UPDATE_PUBLIC_API=1 cargo test --manifest-path
//!   api-check/Cargo.toml` rewrites the snapshots. The first run builds the
//!   dependencies' metadata (a few minutes); later runs only document the
//!   changed crates.
//! - `changelog_names_the_hash_of_every_snapshot`: every snapshot's hash
//!   (FNV-1a, 16 hex digits, printed by the failure) must appear in
//!   `CHANGELOG.md` as `CRATE HASH`, in the entry that describes the change.
//!   So a snapshot cannot change without a CHANGELOG entry saying what
//!   changed.
//! - `no_public_type_name_is_defined_in_two_crates`: a struct, enum, union,
//!   trait or type alias name defined by two crates (read from the
//!   snapshots) fails, naming both.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The library crates whose API is kept. The `troupe` package's library
/// only re-exports them (and adds `troupe::prelude`, their preludes in one).
const CRATES: [&str; 7] = [
    "troupe-router",
    "troupe-runtime",
    "troupe-cluster",
    "troupe-agents",
    "troupe-presets",
    "troupe-planning",
    "troupe-config",
];

/// The rustdoc JSON format the pinned `public-api` reads.
const FORMAT_VERSION: u64 = 57;

const UPDATE: &str = "UPDATE_PUBLIC_API=1 cargo test --manifest-path api-check/Cargo.toml";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("api-check sits in the workspace")
        .to_path_buf()
}

fn snapshot_path(krate: &str) -> PathBuf {
    workspace()
        .join("api-check/snapshots")
        .join(format!("{krate}.txt"))
}

fn read_snapshot(krate: &str) -> String {
    let path = snapshot_path(krate);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; write it with `{UPDATE}`", path.display()))
}

/// FNV-1a over the snapshot's bytes: a short, stable fingerprint.
fn fingerprint(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Builds `krate`'s rustdoc JSON with the toolchain that runs this test
/// (the project's one stable toolchain): rustdoc's JSON output is
/// unstable, so `RUSTC_BOOTSTRAP=1` lets stable's rustdoc write it. Its
/// format is then fixed by the toolchain the project already pins, not
/// by whichever nightly a machine happens to have.
fn rustdoc_json(krate: &str) -> PathBuf {
    let ws = workspace();
    let target = ws.join("target/public-api");
    let status = Command::new("cargo")
        .args(["rustdoc", "--quiet", "-p", krate, "--lib"])
        .arg("--target-dir")
        .arg(&target)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .current_dir(&ws)
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove("CARGO_TARGET_DIR")
        .status()
        .expect("runs cargo rustdoc");
    assert!(
        status.success(),
        "cargo rustdoc -p {krate} (JSON output) failed"
    );
    target
        .join("doc")
        .join(format!("{}.json", krate.replace('-', "_")))
}

/// The rustdoc JSON's format, read before `public-api` parses it, so a
/// newer toolchain fails with the fix rather than a parse error.
fn format_version(json: &Path) -> u64 {
    let text = std::fs::read_to_string(json).expect("reads the rustdoc JSON");
    // rustdoc writes it last; item docs may quote the key, so from the end.
    let at = text
        .rfind("\"format_version\":")
        .expect("the rustdoc JSON has a format_version");
    text[at + "\"format_version\":".len()..]
        .chars()
        .skip_while(|c| c.is_whitespace())
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .expect("format_version is a number")
}

fn render(json: &Path) -> String {
    let api = public_api::Builder::from_rustdoc_json(json)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .omit_auto_derived_impls(true)
        .build()
        .expect("public-api reads the rustdoc JSON");
    api.items().map(|item| format!("{item}\n")).collect()
}

/// The lines only in `old` (`-`) and only in `new` (`+`), in file order.
fn diff(old: &str, new: &str) -> String {
    let before: HashSet<&str> = old.lines().collect();
    let after: HashSet<&str> = new.lines().collect();
    let gone = old
        .lines()
        .filter(|l| !after.contains(l))
        .map(|l| format!("- {l}\n"));
    let added = new
        .lines()
        .filter(|l| !before.contains(l))
        .map(|l| format!("+ {l}\n"));
    gone.chain(added).collect()
}

#[test]
fn every_crates_public_api_matches_its_snapshot() {
    let update = std::env::var("UPDATE_PUBLIC_API").is_ok_and(|v| v == "1");
    let mut failures = String::new();
    for krate in CRATES {
        let json = rustdoc_json(krate);
        let format = format_version(&json);
        assert_eq!(
            format, FORMAT_VERSION,
            "this toolchain's rustdoc writes JSON format {format}; public-api =0.52.0 (api-check/Cargo.toml) \
             reads {FORMAT_VERSION}. Pin the public-api release that reads format {format} \
             (its CHANGELOG says which), set FORMAT_VERSION in this file, and regenerate with `{UPDATE}`"
        );
        let now = render(&json);
        let path = snapshot_path(krate);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if now == committed {
            continue;
        }
        if update {
            std::fs::write(&path, &now).expect("writes the snapshot");
            eprintln!(
                "updated {}: now name `{krate} {}` in the CHANGELOG.md entry that says what changed",
                path.display(),
                fingerprint(&now)
            );
        } else {
            failures.push_str(&format!(
                "\n{krate}'s public API differs from {}:\n{}",
                path.display(),
                diff(&committed, &now)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{failures}\nIf the change is meant, rewrite the snapshots with `{UPDATE}`, then say what \
         changed in CHANGELOG.md under [Unreleased], naming each new snapshot hash (the \
         `changelog_names_the_hash_of_every_snapshot` test prints them)."
    );
}

#[test]
fn changelog_names_the_hash_of_every_snapshot() {
    let changelog =
        std::fs::read_to_string(workspace().join("CHANGELOG.md")).expect("CHANGELOG.md");
    let missing: Vec<String> = CRATES
        .iter()
        .map(|krate| format!("{krate} {}", fingerprint(&read_snapshot(krate))))
        .filter(|line| !changelog.contains(line.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "CHANGELOG.md does not name these public-API snapshots:\n  {}\nA snapshot changed: say what \
         changed in CHANGELOG.md under [Unreleased] and end that entry with the names above \
         (`(api: CRATE HASH, …)`).",
        missing.join("\n  ")
    );
}

/// The name a snapshot line defines, for a struct, enum, union, trait or
/// type alias declared in a module (not an associated type: its parent
/// would be a type, written in CamelCase).
fn defined_type(line: &str) -> Option<&str> {
    let mut rest = line;
    while let Some(attr) = rest.strip_prefix("#[") {
        rest = attr.split_once("] ")?.1;
    }
    let rest = rest.strip_prefix("pub ")?;
    let rest = rest.strip_prefix("unsafe ").unwrap_or(rest);
    let path = ["struct ", "enum ", "union ", "trait ", "type "]
        .iter()
        .find_map(|kw| rest.strip_prefix(kw))?;
    let full = path
        .split(['<', ' ', '(', ';'])
        .next()?
        .trim_end_matches(':');
    let (parents, name) = full.rsplit_once("::")?;
    parents
        .split("::")
        .all(|seg| !seg.starts_with(|c: char| c.is_ascii_uppercase()))
        .then_some(name)
}

#[test]
fn no_public_type_name_is_defined_in_two_crates() {
    let mut crates_of: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let snapshots: Vec<(&str, String)> = CRATES.iter().map(|k| (*k, read_snapshot(k))).collect();
    for (krate, text) in &snapshots {
        for name in text.lines().filter_map(defined_type) {
            crates_of.entry(name).or_default().insert(krate);
        }
    }
    assert!(
        crates_of.len() > 100,
        "the snapshots name only {} types: is the parser behind their format?",
        crates_of.len()
    );
    let twice: Vec<String> = crates_of
        .iter()
        .filter(|(_, crates)| crates.len() > 1)
        .map(|(name, crates)| format!("{name}: {crates:?}"))
        .collect();
    assert!(
        twice.is_empty(),
        "public type names defined in more than one crate (give each a name of its own):\n  {}",
        twice.join("\n  ")
    );
}

#[test]
fn a_type_line_names_its_type_and_an_associated_type_is_not_one() {
    assert_eq!(
        defined_type("pub struct troupe_runtime::Message"),
        Some("Message")
    );
    assert_eq!(
        defined_type("#[non_exhaustive] pub enum troupe_runtime::store::StoreError"),
        Some("StoreError")
    );
    assert_eq!(
        defined_type("pub trait troupe_runtime::Agent: core::marker::Send"),
        Some("Agent")
    );
    assert_eq!(
        defined_type("pub type troupe_runtime::BoxError = alloc::boxed::Box<dyn Error>"),
        Some("BoxError")
    );
    assert_eq!(
        defined_type("pub struct troupe_router::Envelope<M>"),
        Some("Envelope")
    );
    assert_eq!(
        defined_type("pub type troupe_runtime::RunStream::Item = Event"),
        None
    );
    assert_eq!(defined_type("pub fn troupe_runtime::Message::new()"), None);
    assert_eq!(defined_type("pub use troupe_runtime::FnAgent"), None);
}
