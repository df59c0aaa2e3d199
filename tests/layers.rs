//! The layers point one way: `abi` ← `runtime` ← `graph` ← `ffi`. A lower layer naming a higher
//! one fails here, with the file and line, so the direction does not erode between reviews.

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
    let hits = upward_references("abi", &["runtime", "graph", "ffi", "init"]);
    assert!(hits.is_empty(), "abi reaches up:\n{}", hits.join("\n"));
}

#[test]
fn runtime_names_neither_graph_nor_ffi() {
    let hits = upward_references("runtime", &["graph", "ffi", "init"]);
    assert!(hits.is_empty(), "runtime reaches up (register from crate::init instead):\n{}", hits.join("\n"));
}

#[test]
fn graph_names_no_ffi() {
    let hits = upward_references("graph", &["ffi"]);
    assert!(hits.is_empty(), "graph reaches into the C API:\n{}", hits.join("\n"));
}
