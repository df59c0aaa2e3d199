//! The layers point one way: `abi` ← `runtime` ← `graph` / `vm` ← `ffi`. A lower layer naming a higher
//! one fails here, with the file and line, so the direction does not erode between reviews; and
//! inside `runtime` and `graph` the files read top-down (no import circles), checked the same way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod common;
use common::{files_with_extension, rust_files};

/// Lines under `src/<layer>` that name any of `forbidden` (as `crate::<name>`).
fn upward_references(layer: &str, forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(layer);
    let files = rust_files(&root);
    assert!(!files.is_empty(), "no Rust files under {}", root.display());
    let mut hits = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for name in forbidden {
                if line.contains(&format!("crate::{name}")) {
                    hits.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    hits
}

#[test]
fn abi_names_no_layer_above_it() {
    let hits = upward_references("abi", &["runtime", "graph", "vm", "rpc", "ffi", "init"]);
    assert!(hits.is_empty(), "abi reaches up:\n{}", hits.join("\n"));
}

#[test]
fn runtime_names_neither_graph_nor_ffi() {
    let hits = upward_references("runtime", &["graph", "vm", "rpc", "ffi", "init"]);
    assert!(hits.is_empty(), "runtime reaches up (register from crate::init instead):\n{}", hits.join("\n"));
}

#[test]
fn graph_names_no_ffi() {
    let hits = upward_references("graph", &["ffi", "vm", "rpc"]);
    assert!(hits.is_empty(), "graph reaches into the C API or the VM:\n{}", hits.join("\n"));
}

/// The VM sits beside the graph executor: it names the runtime only.
#[test]
fn vm_names_neither_graph_nor_ffi() {
    let hits = upward_references("vm", &["graph", "rpc", "ffi", "init"]);
    assert!(hits.is_empty(), "vm reaches sideways or up:\n{}", hits.join("\n"));
}

/// The RPC server is a front end beside the graph executor and the VM: it reaches models the way
/// a TVM host does, through module functions and globals, so it names the runtime only.
#[test]
fn rpc_names_the_runtime_only() {
    let hits = upward_references("rpc", &["graph", "vm", "ffi", "init"]);
    assert!(hits.is_empty(), "rpc reaches sideways or up:\n{}", hits.join("\n"));
}

// Inside a layer, the files read top-down: no file imports one that (directly or through others)
// imports it. An edge is a path naming a sibling module (`super::x`, `crate::<layer>::x`,
// `self::x`, use trees included) in code outside `#[cfg(test)]` items; comments and literals do
// not count, and neither does a child naming its parent (it lives inside it).

/// `src` with comments removed and the contents of string and char literals blanked; newlines are
/// kept, so offsets still give line numbers.
fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        let ident_before = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        let end = if at(0) == '/' && at(1) == '/' {
            c[i..].iter().position(|&x| x == '\n').map_or(c.len(), |n| i + n)
        } else if at(0) == '/' && at(1) == '*' {
            block_comment_end(&c, i)
        } else if at(0) == '"' {
            quoted_end(&c, i, '"')
        } else if at(0) == 'r' && !ident_before && (at(1) == '"' || at(1) == '#') {
            raw_string_end(&c, i).unwrap_or(i + 1)
        } else if at(0) == '\'' && (at(1) == '\\' || at(2) == '\'') {
            quoted_end(&c, i, '\'')
        } else {
            i + 1
        };
        if end == i + 1 {
            out.push(c[i]);
        } else {
            out.extend(c[i..end].iter().map(|&x| blank(x)));
        }
        i = end;
    }
    out
}

/// One past the `*/` closing the (nestable) comment opened at `i`.
fn block_comment_end(c: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < c.len() {
        match (c[i], c.get(i + 1).copied()) {
            ('/', Some('*')) => (depth, i) = (depth + 1, i + 2),
            ('*', Some('/')) => (depth, i) = (depth - 1, i + 2),
            _ => i += 1,
        }
        if depth == 0 {
            return i;
        }
    }
    c.len()
}

/// One past the unescaped `quote` closing the literal opened at `i`.
fn quoted_end(c: &[char], mut i: usize, quote: char) -> usize {
    i += 1;
    while i < c.len() && c[i] != quote {
        i += if c[i] == '\\' { 2 } else { 1 };
    }
    (i + 1).min(c.len())
}

/// One past a raw string `r#*"..."#*` starting at `i`; `None` when `r` starts an identifier.
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    let hashes = c[i + 1..].iter().take_while(|&&x| x == '#').count();
    if c.get(i + 1 + hashes) != Some(&'"') {
        return None;
    }
    let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat('#').take(hashes)).collect();
    let body = i + 2 + hashes;
    let n = (body..c.len()).find(|&k| c[k..].starts_with(&close))?;
    Some(n + close.len())
}

/// `code` with every item under `#[cfg(test)]` blanked (to its `;` or its closing brace).
fn without_test_items(code: &str) -> String {
    let mut out = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(n) = code[from..].find("#[cfg(test)]") {
        let start = from + n;
        let end = item_end(code.as_bytes(), start + "#[cfg(test)]".len());
        for b in &mut out[start..end] {
            *b = blank(*b as char) as u8;
        }
        from = end;
    }
    String::from_utf8(out).expect("whole characters blanked")
}

/// One past the end of the item starting at byte `i`: its `;`, or the brace closing its first `{`.
fn item_end(code: &[u8], i: usize) -> usize {
    let mut depth = 0i32;
    for (k, &c) in code.iter().enumerate().skip(i) {
        match c {
            b';' if depth == 0 => return k + 1,
            b'{' => depth += 1,
            b'}' if depth == 1 => return k + 1,
            b'}' => depth -= 1,
            _ => {}
        }
    }
    code.len()
}

/// A removed character: a space, or the newline it was (so lines keep their numbers).
fn blank(c: char) -> char {
    if c == '\n' {
        '\n'
    } else {
        ' '
    }
}

/// The tokens of `code` that paths are made of: identifiers, `::`, braces, commas and `*`; any
/// other character ends a path (`;`).
fn path_tokens(code: &str) -> Vec<(usize, String)> {
    let mut toks = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let tok = if b[i].is_ascii_alphanumeric() || b[i] == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            code[start..i].to_string()
        } else if code[i..].starts_with("::") {
            i += 2;
            "::".to_string()
        } else {
            i += 1;
            match b[start] {
                c if c.is_ascii_whitespace() => continue,
                c @ (b'{' | b'}' | b',' | b'*') => (c as char).to_string(),
                _ => ";".to_string(),
            }
        };
        toks.push((start, tok));
    }
    toks
}

/// The paths of the use tree (or plain path) starting at token `i`: `a::{b, c::{self, d}}` gives
/// `a::b`, `a::c`, `a::c::d`. Returns them and the index after the tree.
fn use_tree(toks: &[(usize, String)], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        match toks.get(i).map(|t| t.1.as_str()) {
            Some("{") => {
                let mut paths = Vec::new();
                i += 1;
                while !matches!(toks.get(i).map(|t| t.1.as_str()), None | Some("}")) {
                    let (sub, next) = use_tree(toks, i);
                    paths.extend(sub.into_iter().map(|s| [prefix.clone(), s].concat()));
                    i = if toks.get(next).is_some_and(|t| t.1 == ",") { next + 1 } else { next };
                }
                return (paths, i + 1);
            }
            Some(t) if t == "self" && !prefix.is_empty() => i += 1,
            Some(t) if t != "::" && t != "}" && t != "," && t != ";" => {
                prefix.push(t.to_string());
                i += 1;
                if toks.get(i).is_some_and(|t| t.1 == "as") {
                    i += 2;
                }
            }
            _ => return (vec![prefix], i),
        }
        if toks.get(i).map_or(true, |t| t.1 != "::") {
            return (vec![prefix], i);
        }
        i += 1;
    }
}

/// Every path in `code` that starts at `super`, `self` or `crate` (not in the middle of a
/// longer path), with its byte offset.
fn rooted_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let toks = path_tokens(code);
    let mut out = Vec::new();
    for i in 0..toks.len() {
        let rooted = matches!(toks[i].1.as_str(), "super" | "self" | "crate");
        let continues = i > 0 && toks[i - 1].1 == "::";
        if rooted && !continues && toks.get(i + 1).is_some_and(|t| t.1 == "::") {
            out.extend(use_tree(&toks, i).0.into_iter().map(|p| (toks[i].0, p)));
        }
    }
    out
}

/// A crate's files as modules, keyed by their path from the crate root: `a/b.rs` is `a::b`,
/// `a/mod.rs` is `a`, the root file (`lib.rs`, `main.rs`) is the empty path; each with its file
/// name and text.
type Modules = BTreeMap<Vec<String>, (String, String)>;

/// Import edges: per module, the modules it imports, each with the first `file:line` naming it.
type Edges = BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>>;

/// The modules of the crate whose root file is `root` (relative to the repository), with the
/// files under `dir` (its folder) except those under `skip` (another crate's folder).
fn crate_modules(root: &str, dir: &str, skip: Option<&str>) -> Modules {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![repo.join(root)];
    files.extend(rust_files(&repo.join(dir)));
    files.dedup();
    let mut modules = Modules::new();
    for file in files {
        let rel = file.strip_prefix(repo).unwrap();
        if skip.is_some_and(|s| rel.starts_with(s)) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        if rel == Path::new(root) {
            modules.insert(Vec::new(), (rel.display().to_string(), text));
            continue;
        }
        let inner = rel.strip_prefix(dir).unwrap().with_extension("");
        let mut name: Vec<String> = inner.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        if name.last().is_some_and(|s| s == "mod") {
            name.pop();
        }
        modules.insert(name, (rel.display().to_string(), text));
    }
    assert!(modules.contains_key(&Vec::new()), "no crate root {root} under {dir}");
    modules
}

/// The longest prefix of `full` that is a module.
fn module_prefix(modules: &Modules, full: &[String]) -> Vec<String> {
    (0..=full.len()).rev().map(|n| full[..n].to_vec()).find(|m| modules.contains_key(m)).unwrap_or_default()
}

/// A path's absolute form, as written in module `from` (`crate::`, `self::`, `super::` or, for
/// a re-export, relative to `from`); `None` when it climbs above the crate.
fn absolute(from: &[String], path: &[String]) -> Option<Vec<String>> {
    let (mut base, mut rest) = match path[0].as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (from.to_vec(), &path[1..]),
        _ => (from.to_vec(), path),
    };
    while rest.first().is_some_and(|s| s == "super") {
        base.pop()?;
        rest = &rest[1..];
    }
    Some(base.iter().chain(rest).cloned().collect())
}

/// The names each module re-exports (`pub use a::{B, C}`, `pub(crate) use b::*`), each with
/// the absolute path it stands for (`*` for a glob, standing for its module).
type Reexports = BTreeMap<Vec<String>, Vec<(String, Vec<String>)>>;

fn reexports(code: &BTreeMap<Vec<String>, String>) -> Reexports {
    let mut out = Reexports::new();
    for (m, c) in code {
        let toks = path_tokens(c);
        for i in 1..toks.len() {
            let public = toks[i - 1].1 == "pub" || (i >= 4 && toks[i - 4].1 == "pub" && toks[i - 3].1 == ";");
            if toks[i].1 != "use" || !public {
                continue;
            }
            for p in use_tree(&toks, i + 1).0 {
                if let Some(full) = absolute(m, &p) {
                    out.entry(m.clone()).or_default().push((p.last().unwrap().clone(), full));
                }
            }
        }
    }
    out
}

/// Where `name`, reached through module `m`, is defined: what `m` re-exports under it, or a
/// module behind one of `m`'s globs that defines it.
fn reexported(modules: &Modules, reexports: &Reexports, m: &[String], name: &str) -> Option<Vec<String>> {
    let entries = reexports.get(m)?;
    if let Some((_, full)) = entries.iter().find(|(n, _)| n == name) {
        return Some(full.clone());
    }
    let defines = |text: &str| {
        ["fn", "struct", "enum", "const", "static", "type", "trait", "mod", "macro_rules!"]
            .iter()
            .any(|kw| text.contains(&format!("{kw} {name}")))
    };
    entries.iter().filter(|(n, _)| n == "*").find_map(|(_, full)| {
        let glob = full[..full.len() - 1].to_vec();
        modules.get(&glob).is_some_and(|(_, text)| defines(text)).then(|| [glob, vec![name.to_string()]].concat())
    })
}

/// The module a path in module `from` names (the longest module prefix of its absolute form,
/// followed through re-exports), when it is another module of the crate and not an ancestor.
fn resolve(modules: &Modules, reexports: &Reexports, from: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut full = absolute(from, path)?;
    let mut target = module_prefix(modules, &full);
    for _ in 0..8 {
        let Some(name) = full.get(target.len()) else { break };
        let Some(to) = reexported(modules, reexports, &target, name) else { break };
        full = [to, full[target.len() + 1..].to_vec()].concat();
        target = module_prefix(modules, &full);
    }
    (!from.starts_with(&target)).then_some(target)
}

/// The import edges between the crate's modules, each with the first line naming it.
fn import_edges(modules: &Modules) -> Edges {
    let code: BTreeMap<_, _> =
        modules.iter().map(|(m, (_, text))| (m.clone(), without_test_items(&code_only(text)))).collect();
    let reexports = reexports(&code);
    let mut edges = BTreeMap::new();
    for (m, c) in &code {
        let out: &mut BTreeMap<Vec<String>, String> = edges.entry(m.clone()).or_default();
        for (at, path) in rooted_paths(c) {
            if let Some(t) = resolve(modules, &reexports, m, &path) {
                let line = c[..at].lines().count().max(1);
                out.entry(t).or_insert_with(|| format!("{}:{line}", modules[m].0));
            }
        }
    }
    edges
}

/// The strongly connected components with more than one module (Tarjan), as import circles.
fn circles(edges: &Edges) -> Vec<Vec<Vec<String>>> {
    struct Walk<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a Vec<String>, (usize, usize)>,
        stack: Vec<&'a Vec<String>>,
        found: Vec<Vec<Vec<String>>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a Vec<String>) -> usize {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            let mut low = n;
            for w in self.edges.get(v).into_iter().flat_map(|e| e.keys()) {
                low = match self.index.get(w) {
                    None => low.min(self.visit(w)),
                    Some(&(wi, _)) if self.stack.contains(&w) => low.min(wi),
                    Some(_) => low,
                };
            }
            if low == n {
                let at = self.stack.iter().position(|&x| x == v).unwrap();
                let comp: Vec<Vec<String>> = self.stack.drain(at..).cloned().collect();
                if comp.len() > 1 {
                    self.found.push(comp);
                }
            }
            self.index.insert(v, (n, low));
            low
        }
    }
    let mut walk = Walk { edges, index: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// Each import circle of the layer, with the edges inside it and where they are written.
fn import_circles(modules: &Modules) -> Vec<String> {
    described_circles(&import_edges(modules), "::")
}

/// Each import circle among `edges`, as its edges and where they are written, a module path's
/// parts joined by `sep`.
fn described_circles(edges: &Edges, sep: &str) -> Vec<String> {
    circles(edges)
        .into_iter()
        .map(|comp| {
            let mut lines = Vec::new();
            for m in &comp {
                for (t, at) in edges[m].iter().filter(|(t, _)| comp.contains(t)) {
                    lines.push(format!("  {} -> {} ({at})", m.join(sep), t.join(sep)));
                }
            }
            lines.sort();
            lines.join("\n")
        })
        .collect()
}

/// The crates of the repository whose files are modules of one another: each root file, its
/// folder, and a folder inside it that is another crate. (Test, bench, example and fuzz files
/// outside these are crates of one file each, or share only `common/mod.rs`.)
const CRATES: [(&str, &str, Option<&str>); 4] = [
    ("src/lib.rs", "src", Some("src/bin")),
    ("src/bin/tvm-rt/main.rs", "src/bin/tvm-rt", None),
    ("triton/src/lib.rs", "triton/src", None),
    ("examples/demo.rs", "examples/demo", None),
];

/// No Rust file of any crate imports one that (directly or through others) imports it: the
/// runtime's rooms, the layers, the command-line tool, the Triton backend and the demo.
#[test]
fn no_rust_folder_imports_in_a_circle() {
    let mut found = Vec::new();
    for (root, dir, skip) in CRATES {
        for c in import_circles(&crate_modules(root, dir, skip)) {
            found.push(format!("{dir}:\n{c}"));
        }
    }
    assert!(found.is_empty(), "imports in circles:\n{}", found.join("\n\n"));
}

/// Every folder holding Rust files belongs to one of [`CRATES`] or is a folder of one-file
/// crates, so a new folder cannot slip past the circle check.
#[test]
fn every_rust_folder_is_checked_for_circles() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let flat =
        ["tests", "tests/common", "benches", "benches/common", "examples", "fuzz/fuzz_targets", "tvm-ffi-lib/src", "."];
    let tops = ["src", "tests", "benches", "examples", "fuzz/fuzz_targets", "triton/src", "tvm-ffi-lib/src"];
    let files: Vec<PathBuf> = tops.iter().flat_map(|top| rust_files(&repo.join(top))).collect();
    let mut unchecked: Vec<String> = files
        .iter()
        .map(|f| f.parent().unwrap().strip_prefix(repo).unwrap().display().to_string())
        .filter(|d| !flat.contains(&d.as_str()) && !CRATES.iter().any(|(_, dir, _)| d.starts_with(dir)))
        .collect();
    unchecked.dedup();
    assert!(unchecked.is_empty(), "folders of Rust files outside the circle check (add them to CRATES): {unchecked:?}");
}

/// The map of `src/` at the top of docs/ARCHITECTURE.md: each row's folder (or single-file
/// room) under `src/` and what it may use, in the table's order (bottom-up).
fn room_map() -> Vec<(String, Vec<String>)> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md")).unwrap();
    let section = doc.split("\n## The map").nth(1).expect("docs/ARCHITECTURE.md has a `## The map` section");
    let section = section.split("\n## ").next().unwrap();
    let ticked = |cell: &str| -> Vec<String> { cell.split('`').skip(1).step_by(2).map(str::to_string).collect() };
    let rows: Vec<(String, Vec<String>)> = section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            assert_eq!(cells.len(), 3, "a map row is `| folder | owns | may use |`: {l}");
            (ticked(cells[0]).remove(0), ticked(cells[2]))
        })
        .collect();
    assert!(rows.len() > 10, "the map has too few rows to be the map");
    rows
}

/// The room of a file (relative to `src/`): the longest row that is the file or a folder
/// holding it.
fn room_of<'a>(map: &'a [(String, Vec<String>)], file: &str) -> Option<&'a str> {
    map.iter()
        .map(|(room, _)| room.as_str())
        .filter(|room| file == *room || (room.ends_with('/') && file.starts_with(room)))
        .max_by_key(|room| room.len())
}

/// The map and the tree agree: every folder of Rust files under `src/` is a row, every row is
/// on disk, and a row may use only rows above it (so the rooms cannot point in a circle).
#[test]
fn the_map_matches_the_tree() {
    let map = room_map();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = rust_files(&src);
    let mut problems = Vec::new();
    for f in &files {
        let dir = format!("{}/", f.parent().unwrap().strip_prefix(&src).unwrap().display());
        if dir != "/" && !map.iter().any(|(room, _)| *room == dir) {
            problems.push(format!("folder src/{dir} is not on the map"));
        }
    }
    for (i, (room, uses)) in map.iter().enumerate() {
        if !src.join(room).exists() {
            problems.push(format!("the map's {room} is not in src/"));
        }
        for u in uses.iter().filter(|u| !map[..i].iter().any(|(r, _)| r == *u)) {
            problems.push(format!("{room} may use {u}, which is not a row above it"));
        }
    }
    problems.dedup();
    assert!(problems.is_empty(), "docs/ARCHITECTURE.md's map and src/ disagree:\n{}", problems.join("\n"));
}

/// What room `room` may use: the rows it names and, through them, what those may use.
fn may_use(map: &[(String, Vec<String>)], room: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut todo = vec![room.to_string()];
    while let Some(r) = todo.pop() {
        let named = map.iter().filter(|(row, _)| *row == r).flat_map(|(_, u)| u.clone());
        for u in named {
            if !out.contains(&u) {
                out.push(u.clone());
                // a folder named stands for its rooms, and what they may use
                todo.extend(map.iter().map(|(row, _)| row.clone()).filter(|row| row.starts_with(&u)));
            }
        }
    }
    out
}

/// Each import between rooms of the library is one the map allows: the importing room lists
/// the imported room, or a folder holding it (`runtime/` allows every room of the runtime).
#[test]
fn rooms_use_only_what_the_map_allows() {
    let map = room_map();
    let modules = crate_modules("src/lib.rs", "src", Some("src/bin"));
    let src_rel = |m: &Vec<String>| modules[m].0.trim_start_matches("src/").to_string();
    let mut found = Vec::new();
    for (m, targets) in import_edges(&modules) {
        let from = room_of(&map, &src_rel(&m)).unwrap_or("");
        let uses = may_use(&map, from);
        for (t, at) in targets {
            let to = room_of(&map, &src_rel(&t)).unwrap_or("");
            if from != to && !uses.iter().any(|u| to.starts_with(u.as_str())) {
                found.push(format!("{at}: {from} uses {to} ({})", t.join("::")));
            }
        }
    }
    assert!(found.is_empty(), "imports the map of docs/ARCHITECTURE.md does not allow:\n{}", found.join("\n"));
}

/// The check itself: a circle through a use tree and a call path is found, with its lines; a
/// mention in a comment or a string, an import in a test module and a child naming its parent
/// are not edges; names re-exported (also through a glob) lead to the module defining them.
#[test]
fn circle_check_finds_circles_and_ignores_comments_and_tests() {
    let files: &[(&[&str], &str)] = &[
        (&[], "pub mod runtime;\npub mod ffi;\n"),
        (&["runtime"], "pub use c::Thing;\n"),
        (&["runtime", "a"], "use super::{b::{self, B}, dtype};\n"),
        (
            &["runtime", "b"],
            "// super::d\nfn f() {\n    crate::runtime::a::g(\"super::d\", r#\"super::d\"#, 'x');\n}\n",
        ),
        (
            &["runtime", "c"],
            "/* use super::a; /* nested */ super::a */\n#[cfg(test)]\nmod tests {\n    use super::super::a;\n}\n",
        ),
        (&["runtime", "d"], "use super::Thing;\n"),
        (&["runtime", "c", "e"], "use super::super::d;\nuse super::Parent;\n"),
        (&["runtime", "dtype"], "fn x<'a>(s: &'a str) -> char { '{' }\nuse crate::runtime::c::e;\n"),
        (&["ffi"], "pub(crate) use boundary::*;\npub use other::*;\n"),
        (&["ffi", "boundary"], "pub fn options_arg() {}\n"),
        (&["ffi", "other"], "pub fn something_else() {}\n"),
        (&["ffi", "legacy"], "use crate::ffi::options_arg;\n"),
    ];
    let modules: Modules = files
        .iter()
        .map(|(m, text)| (m.iter().map(|s| s.to_string()).collect(), (format!("{}.rs", m.join("/")), text.to_string())))
        .collect();
    let found = import_circles(&modules);
    assert_eq!(found, vec!["  runtime::a -> runtime::b (runtime/a.rs:1)\n  runtime::b -> runtime::a (runtime/b.rs:3)"]);
    let edges = import_edges(&modules);
    let names = |m: &[&str]| -> Vec<String> {
        edges[&m.iter().map(|s| s.to_string()).collect::<Vec<_>>()].keys().map(|k| k.join("::")).collect()
    };
    assert_eq!(names(&["runtime", "a"]), ["runtime::b", "runtime::dtype"]);
    assert_eq!(names(&["runtime", "c"]), Vec::<String>::new());
    assert_eq!(names(&["runtime", "d"]), ["runtime::c"], "a re-exported name resolves to its module");
    assert_eq!(names(&["runtime", "c", "e"]), ["runtime::d"], "a child naming its parent is no edge");
    assert_eq!(names(&["runtime", "dtype"]), ["runtime::c::e"]);
    assert_eq!(
        names(&["ffi", "legacy"]),
        ["ffi::boundary"],
        "a glob re-export resolves to the module defining the name"
    );
}

/// The Python package's modules, each with the package modules it imports (`from .x import`,
/// `from . import x`, `from .x.y import`; at the top or inside a function, since a deferred import
/// is still a dependency), with the first line naming each.
fn python_edges(package: &Path) -> Edges {
    let files = files_with_extension(package, "py");
    let name_of = |f: &Path| -> Vec<String> {
        let rel = f.strip_prefix(package).unwrap().with_extension("");
        let mut name: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        if name.last().is_some_and(|s| s == "__init__") {
            name.pop();
        }
        name
    };
    let modules: Vec<Vec<String>> = files.iter().map(|f| name_of(f)).collect();
    let mut edges = BTreeMap::new();
    for f in &files {
        let from = name_of(f);
        let is_package = f.file_name().is_some_and(|n| n == "__init__.py");
        let here: Vec<String> = if is_package { from.clone() } else { from[..from.len().saturating_sub(1)].to_vec() };
        let out: &mut BTreeMap<Vec<String>, String> = edges.entry(from.clone()).or_default();
        for (n, line) in std::fs::read_to_string(f).unwrap().lines().enumerate() {
            let words: Vec<&str> = line.trim().split([' ', ',', '(']).filter(|w| !w.is_empty()).collect();
            let (Some(&"from"), Some(spec), Some(&"import")) = (words.first(), words.get(1), words.get(2)) else {
                continue;
            };
            let dots = spec.chars().take_while(|&c| c == '.').count();
            if dots == 0 || dots > here.len() + 1 {
                continue;
            }
            let mut base = here[..here.len() + 1 - dots].to_vec();
            base.extend(spec[dots..].split('.').filter(|s| !s.is_empty()).map(str::to_string));
            let mut targets = vec![base.clone()];
            targets.extend(words[3..].iter().map(|w| [base.clone(), vec![w.to_string()]].concat()));
            for t in targets.into_iter().filter(|t| modules.contains(t) && *t != from && !from.starts_with(t)) {
                out.entry(t).or_insert_with(|| format!("{}:{}", f.display(), n + 1));
            }
        }
    }
    edges
}

/// The Python package reads top-down too: no module imports one that imports it.
#[test]
fn python_package_imports_no_circle() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/tvmrt");
    let edges = python_edges(&package);
    assert!(edges.len() > 10, "too few modules found in {}", package.display());
    let found = described_circles(&edges, ".");
    assert!(found.is_empty(), "python/tvmrt imports in circles:\n{}", found.join("\n\n"));
}
