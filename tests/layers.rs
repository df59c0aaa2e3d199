//! The layers point one way: `abi` ← `runtime` ← `graph` / `vm` ← `ffi`. A lower layer naming a higher
//! one fails here, with the file and line, so the direction does not erode between reviews; and
//! inside `runtime` and `graph` the files read top-down (no import circles), checked the same way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Lines under `src/<layer>` that name any of `forbidden` (as `crate::<name>`).
fn upward_references(layer: &str, forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(layer);
    let mut files = Vec::new();
    rust_files(&root, &mut files);
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

/// A layer's files as modules: `a/b.rs` is `a::b`, `a/mod.rs` is `a`, the layer's `mod.rs` is
/// the empty path; each with its file name and text.
type Modules = BTreeMap<Vec<String>, (String, String)>;

fn layer_modules(layer: &str) -> Modules {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(layer);
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut modules = Modules::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap().with_extension("");
        let mut name: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        if name.last().is_some_and(|s| s == "mod") {
            name.pop();
        }
        let text = std::fs::read_to_string(&file).unwrap();
        modules.insert(name, (file.display().to_string(), text));
    }
    modules
}

/// The module a path in module `from` names, when it is another module of the layer (the
/// longest module prefix, or the module behind a name the layer's `mod.rs` re-exports).
fn resolve(
    layer: &str,
    modules: &Modules,
    reexports: &[(String, String)],
    from: &[String],
    path: &[String],
) -> Option<Vec<String>> {
    let (mut base, mut rest) = match path[0].as_str() {
        "crate" if path.get(1).is_some_and(|s| s == layer) => (Vec::new(), &path[2..]),
        "crate" => return None,
        "self" => (from.to_vec(), &path[1..]),
        _ => (from.to_vec(), path),
    };
    while rest.first().is_some_and(|s| s == "super") {
        base.pop()?;
        rest = &rest[1..];
    }
    let full: Vec<String> = base.iter().chain(rest).cloned().collect();
    let target = (1..=full.len()).rev().map(|n| full[..n].to_vec()).find(|m| modules.contains_key(m));
    let target = target.or_else(|| {
        let name = full.first()?;
        reexports.iter().find(|(n, _)| n == name).map(|(_, m)| vec![m.clone()])
    })?;
    (!from.starts_with(&target)).then_some(target)
}

/// What the layer's `mod.rs` re-exports (`pub use a::{B, C}`): each name with its module.
fn root_reexports(code: &str) -> Vec<(String, String)> {
    let toks = path_tokens(code);
    let mut out = Vec::new();
    for i in 1..toks.len() {
        if toks[i - 1].1 == "pub" && toks[i].1 == "use" {
            for p in use_tree(&toks, i + 1).0 {
                out.push((p.last().unwrap().clone(), p[0].clone()));
            }
        }
    }
    out
}

/// The import edges between the layer's modules, each with the first line naming it.
fn import_edges(layer: &str, modules: &Modules) -> BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>> {
    let code: BTreeMap<_, _> =
        modules.iter().map(|(m, (_, text))| (m.clone(), without_test_items(&code_only(text)))).collect();
    let reexports = code.get(&Vec::new()).map(|c| root_reexports(c)).unwrap_or_default();
    let mut edges = BTreeMap::new();
    for (m, c) in code.iter().filter(|(m, _)| !m.is_empty()) {
        let out: &mut BTreeMap<Vec<String>, String> = edges.entry(m.clone()).or_default();
        for (at, path) in rooted_paths(c) {
            if let Some(t) = resolve(layer, modules, &reexports, m, &path) {
                let line = c[..at].lines().count().max(1);
                out.entry(t).or_insert_with(|| format!("{}:{line}", modules[m].0));
            }
        }
    }
    edges
}

/// The strongly connected components with more than one module (Tarjan), as import circles.
fn circles(edges: &BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>>) -> Vec<Vec<Vec<String>>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>>,
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
fn import_circles(layer: &str, modules: &Modules) -> Vec<String> {
    let edges = import_edges(layer, modules);
    circles(&edges)
        .into_iter()
        .map(|comp| {
            let mut lines = Vec::new();
            for m in &comp {
                for (t, at) in edges[m].iter().filter(|(t, _)| comp.contains(t)) {
                    lines.push(format!("  {} -> {} ({at})", m.join("::"), t.join("::")));
                }
            }
            lines.sort();
            lines.join("\n")
        })
        .collect()
}

#[test]
fn runtime_files_import_no_circle() {
    let found = import_circles("runtime", &layer_modules("runtime"));
    assert!(found.is_empty(), "src/runtime imports in circles:\n{}", found.join("\n\n"));
}

#[test]
fn vm_files_import_no_circle() {
    let found = import_circles("vm", &layer_modules("vm"));
    assert!(found.is_empty(), "src/vm imports in circles:\n{}", found.join("\n\n"));
}

#[test]
fn rpc_files_import_no_circle() {
    let found = import_circles("rpc", &layer_modules("rpc"));
    assert!(found.is_empty(), "src/rpc imports in circles:\n{}", found.join("\n\n"));
}

#[test]
fn graph_files_import_no_circle() {
    let found = import_circles("graph", &layer_modules("graph"));
    assert!(found.is_empty(), "src/graph imports in circles:\n{}", found.join("\n\n"));
}

/// The check itself: a circle through a use tree and a call path is found, with its lines; a
/// mention in a comment or a string, an import in a test module and a child naming its parent
/// are not edges.
#[test]
fn circle_check_finds_circles_and_ignores_comments_and_tests() {
    let files: &[(&[&str], &str)] = &[
        (&[], "pub use c::Thing;\n"),
        (&["a"], "use super::{b::{self, B}, dtype};\n"),
        (&["b"], "// super::d\nfn f() {\n    crate::runtime::a::g(\"super::d\", r#\"super::d\"#, 'x');\n}\n"),
        (&["c"], "/* use super::a; /* nested */ super::a */\n#[cfg(test)]\nmod tests {\n    use super::super::a;\n}\n"),
        (&["d"], "use super::Thing;\n"),
        (&["c", "e"], "use super::super::d;\nuse super::Parent;\n"),
        (&["dtype"], "fn x<'a>(s: &'a str) -> char { '{' }\nuse crate::runtime::c::e;\n"),
    ];
    let modules: Modules = files
        .iter()
        .map(|(m, text)| (m.iter().map(|s| s.to_string()).collect(), (format!("{}.rs", m.join("/")), text.to_string())))
        .collect();
    let found = import_circles("runtime", &modules);
    assert_eq!(found, vec!["  a -> b (a.rs:1)\n  b -> a (b.rs:3)"]);
    let edges = import_edges("runtime", &modules);
    let names = |m: &[&str]| -> Vec<String> {
        edges[&m.iter().map(|s| s.to_string()).collect::<Vec<_>>()].keys().map(|k| k.join("::")).collect()
    };
    assert_eq!(names(&["a"]), ["b", "dtype"]);
    assert_eq!(names(&["c"]), Vec::<String>::new());
    assert_eq!(names(&["d"]), ["c"], "a re-exported name resolves to its module");
    assert_eq!(names(&["c", "e"]), ["d"], "a child naming its parent is no edge");
    assert_eq!(names(&["dtype"]), ["c::e"]);
}
