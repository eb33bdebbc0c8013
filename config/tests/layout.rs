//! The crate's layout holds: no source file of 600 lines or more, and no
//! circle of imports between its files (a file imports shared helpers and
//! the topics below it, never a file that imports it back).
//!
//! Imports are read from the source: `mod` declarations, `use` paths and
//! `crate::`/`super::` paths in code (comments are skipped), each resolved
//! to the file of the longest module prefix that has one.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a readable source directory")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a source file: `lib.rs` is the root, `a/mod.rs`
/// and `a.rs` are `a`, `a/b.rs` is `a::b`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("a file under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    match last.as_str() {
        "lib.rs" | "mod.rs" => {}
        name => parts.push(name.trim_end_matches(".rs").to_string()),
    }
    parts
}

/// The code of a file without its comments (doc links are not imports)
/// and without its test module (at the end of the file, by convention).
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or(text);
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Module paths a file names, relative to its own module: `crate::a::b`,
/// `super::c`, `mod d;` and, in a module root, `d::e` for a child `d`.
fn named_paths(module: &[String], text: &str, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let words: Vec<&str> = text
        .split(|c: char| !(is_ident(c) || c == ':'))
        .filter(|w| !w.is_empty())
        .collect();
    for (i, word) in words.iter().enumerate() {
        let segments: Vec<&str> = word.split("::").filter(|s| !s.is_empty()).collect();
        let Some(first) = segments.first() else {
            continue;
        };
        let rest: Vec<String> = segments[1..].iter().map(|s| s.to_string()).collect();
        let path = match *first {
            // `pub(crate)`, `pub(super)`: visibility, not a path.
            "crate" | "super" if rest.is_empty() => continue,
            "crate" => rest,
            "super" => {
                let mut base = module.to_vec();
                base.pop();
                base.extend(rest);
                base
            }
            "mod" if i + 1 < words.len() => {
                let mut base = module.to_vec();
                base.push(words[i + 1].to_string());
                base
            }
            child if children.contains(child) && segments.len() > 1 => {
                let mut base = module.to_vec();
                base.extend(segments.iter().map(|s| s.to_string()));
                base
            }
            _ => continue,
        };
        out.push(path);
    }
    out
}

#[test]
fn files_are_small_and_import_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 20, "found only {} files", files.len());

    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|f| (module_of(&src, f), f.clone()))
        .collect();
    let mut long = Vec::new();
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a readable source file");
        let lines = text.lines().count();
        if lines >= 600 {
            long.push(format!("{} ({lines} lines)", file.display()));
        }
        let module = module_of(&src, file);
        let children: BTreeSet<String> = modules
            .keys()
            .filter(|m| m.len() == module.len() + 1 && m.starts_with(&module))
            .filter_map(|m| m.last().cloned())
            .collect();
        for path in named_paths(&module, &code(&text), &children) {
            // The longest prefix that is a file of the crate.
            let target = (0..=path.len())
                .rev()
                .find_map(|n| modules.get(&path[..n]))
                .expect("the crate root is a module");
            if target != file {
                edges
                    .entry(file.clone())
                    .or_default()
                    .insert(target.clone());
            }
        }
    }
    assert!(long.is_empty(), "files of 600 lines or more: {long:?}");

    // A circle is a path from a file back to itself.
    let mut circles = Vec::new();
    for start in &files {
        let mut stack: Vec<(PathBuf, Vec<PathBuf>)> = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((at, trail)) = stack.pop() {
            for next in edges.get(&at).into_iter().flatten() {
                if next == start {
                    let names: Vec<String> = trail
                        .iter()
                        .chain([start])
                        .map(|p| p.strip_prefix(&src).unwrap_or(p).display().to_string())
                        .collect();
                    circles.push(names.join(" -> "));
                } else if seen.insert(next.clone()) {
                    let mut longer = trail.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "imports that go round:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_reader_sees_imports_and_skips_comments() {
    let module = vec!["validate".to_string(), "graph".to_string()];
    let text = code(
        "use super::loops::{Edge, endless_cycles};\nuse crate::schema::GraphSpec;\n/// [`x`](crate::build)\nlet y = crate::refs::ref_id(a);\n",
    );
    let paths = named_paths(&module, &text, &BTreeSet::new());
    assert_eq!(
        paths,
        [
            vec!["validate", "loops"],
            vec!["schema", "GraphSpec"],
            vec!["refs", "ref_id"],
        ]
        .map(|p| p.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    );
    let root = named_paths(
        &[],
        &code(
            "mod build;\npub(crate) use build::Built;\n#[cfg(test)]\nmod tests { use super::x; }\n",
        ),
        &BTreeSet::from(["build".to_string()]),
    );
    assert_eq!(
        root,
        [
            vec!["build".to_string()],
            vec!["build".to_string(), "Built".to_string()]
        ]
    );
}
