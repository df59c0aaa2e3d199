//! The `__tvm_dev_mblob` import blob: the modules packed into a library by `export_library`.
//!
//! Layout: u64 payload length, then payload = u64 count, then `count` entries each
//! `str type_key` + payload. `_lib` stands for the library itself, `_import_tree` holds the CSR
//! import edges, anything else is decoded by the binary loader registered for its type key.
//! There are no per-entry lengths, so an entry we cannot decode stops the load with an error
//! naming it.

use crate::runtime::base::byteio::{Input, Reader, Writer};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Module, PackedFunc, Value};
use crate::runtime::function::registry;
use once_cell::sync::Lazy;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::ffi::c_void;

/// Decodes one module's payload from the stream.
pub type BinaryLoader = fn(&mut Reader<'_>) -> Result<Module>;

static LOADERS: Lazy<RwLock<HashMap<String, BinaryLoader>>> = Lazy::new(|| {
    // Loaders of the layers above (the graph executor factory) register themselves.
    let mut m: HashMap<String, BinaryLoader> = HashMap::new();
    m.insert("const_loader".into(), crate::runtime::module::const_loader::load_binary);
    m.insert("metadata".into(), crate::runtime::module::const_loader::load_binary);
    m.insert("metadata_module".into(), crate::runtime::module::const_loader::load_metadata_module);
    m.insert("static_library".into(), crate::runtime::module::static_library::load_binary);
    m.insert("opencl".into(), crate::runtime::module::opencl::load_binary);
    RwLock::new(m)
});

/// Register a decoder for modules of `type_key` found in import blobs, and as the global
/// `ffi.Module.load_from_bytes.<type_key>` (see [`loader_globals`]).
pub fn register_binary_loader(type_key: &str, loader: BinaryLoader) {
    LOADERS.write().insert(type_key.to_string(), loader);
    registry::register_built_in(&format!("ffi.Module.load_from_bytes.{type_key}"), loader_global(loader));
}

/// The decoders as tvm-ffi's globals `ffi.Module.load_from_bytes.<type_key>` (bytes -> module),
/// which the tvm-ffi releases' runtimes register for their kinds; a runtime built on tvm-ffi
/// that registers its own later takes the name over.
pub fn loader_globals() -> Vec<(String, PackedFunc)> {
    let loaders = LOADERS.read();
    loaders.iter().map(|(k, &l)| (format!("ffi.Module.load_from_bytes.{k}"), loader_global(l))).collect()
}

fn loader_global(loader: BinaryLoader) -> PackedFunc {
    PackedFunc::from_typed(move |args| loader(&mut Reader::new(args.bytes(0)?, "module bytes")).map(Value::Module))
}

pub(super) fn binary_loader(type_key: &str) -> Result<BinaryLoader> {
    let loaders = LOADERS.read();
    loaders.get(type_key).copied().ok_or_else(|| {
        let mut known: Vec<&str> = loaders.keys().map(|s| s.as_str()).collect();
        known.sort();
        Error::unsupported(format!(
            "the import blob contains a module of type `{type_key}`, which this runtime cannot load \
             (loaders available: {})",
            known.join(", ")
        ))
    })
}

/// CSR import edges: `row_ptr[i]..row_ptr[i + 1]` indexes module `i`'s children.
pub(super) type ImportTree = (Vec<u64>, Vec<u64>);

/// Rebuild the module tree from a blob (`data` starts at the u64 length prefix). `lib` is the
/// library module of the `.so` the blob came from. Returns the root module.
pub fn load_import_tree(data: &[u8], lib: Module) -> Result<Module> {
    let mut outer = Reader::new(data, "module blob");
    let n = outer.u64("blob length")?;
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n <= outer.remaining())
        .ok_or_else(|| outer.error(format!("blob length {n} exceeds the {} bytes available", outer.remaining())))?;
    let payload = outer.bytes(n, "blob payload")?;
    let (modules, tree) = read_entries(&mut Reader::new(payload, "module blob"), &lib)?;
    match tree {
        Some(tree) => link_import_tree(modules, tree),
        None => {
            // Legacy layout: the library is the root and imports every decoded module.
            for m in &modules {
                if !Module::ptr_eq(m, &lib) {
                    lib.import(m)?;
                }
            }
            Ok(lib)
        }
    }
}

/// The modules of the blob in order (`_lib` standing for `lib`) and its import tree, if any.
fn read_entries(r: &mut Reader<'_>, lib: &Module) -> Result<(Vec<Module>, Option<ImportTree>)> {
    // Each entry is at least a type-key length.
    let count = r.count("module count", 8)?;
    let mut modules: Vec<Module> = Vec::new();
    let mut tree: Option<ImportTree> = None;
    let mut lib_seen = false;
    for i in 0..count {
        let key = r.string(&format!("type key of entry {i}"))?;
        match key.as_str() {
            "_lib" if lib_seen => return Err(r.error("more than one `_lib` entry")),
            "_lib" => {
                lib_seen = true;
                modules.push(lib.clone());
            }
            "_import_tree" if tree.is_some() => return Err(r.error("more than one `_import_tree` entry")),
            "_import_tree" => {
                let row_ptr = r.u64s("import tree row_ptr")?;
                let children = r.u64s("import tree child_indices")?;
                tree = Some((row_ptr, children));
            }
            _ => {
                let loader = binary_loader(&key)?;
                modules.push(loader(r).map_err(|e| e.context(format!("loading blob entry {i} (`{key}`)")))?);
            }
        }
    }
    Ok((modules, tree))
}

/// Make each module import its children as the CSR tree says; the first module is the root.
pub(super) fn link_import_tree(modules: Vec<Module>, (row_ptr, children): ImportTree) -> Result<Module> {
    check_import_tree(modules.len(), &row_ptr, &children)?;
    for (i, m) in modules.iter().enumerate() {
        for &c in &children[row_ptr[i] as usize..row_ptr[i + 1] as usize] {
            let child = usize::try_from(c).ok().and_then(|c| modules.get(c)).ok_or_else(|| {
                Error::value(format!(
                    "module blob: import tree child index {c} out of range ({} modules)",
                    modules.len()
                ))
            })?;
            // A module C++ code made (a loader global's) keeps its imports in its own list.
            m.import_module(child).map_err(|e| e.context("module blob: import tree"))?;
        }
    }
    Ok(modules[0].clone())
}

/// Error unless `row_ptr` is a CSR index of `n_modules` rows over `children`.
fn check_import_tree(n_modules: usize, row_ptr: &[u64], children: &[u64]) -> Result<()> {
    if n_modules == 0 {
        return Err(Error::value("module blob: import tree given but no modules"));
    }
    if row_ptr.len() != n_modules + 1 {
        return Err(Error::value(format!(
            "module blob: import tree row_ptr has {} entries for {n_modules} modules (expected {})",
            row_ptr.len(),
            n_modules + 1
        )));
    }
    if row_ptr[0] != 0 || row_ptr.windows(2).any(|w| w[0] > w[1]) || row_ptr[n_modules] != children.len() as u64 {
        return Err(Error::value(format!(
            "module blob: import tree row_ptr {row_ptr:?} is not a valid CSR index over {} children",
            children.len()
        )));
    }
    Ok(())
}

/// One entry of a blob to write.
pub enum BlobEntry {
    /// The library module itself (`_lib`).
    Lib,
    /// A module: its type key and serialized payload.
    Module { type_key: String, payload: Vec<u8> },
}

/// Write a blob (with its u64 length prefix) as `export_library` does: the entries in order,
/// then `_import_tree` with the given CSR import edges.
pub fn write_import_tree(entries: &[BlobEntry], row_ptr: &[u64], children: &[u64]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u64(entries.len() as u64 + 1);
    for e in entries {
        match e {
            BlobEntry::Lib => w.string("_lib"),
            BlobEntry::Module { type_key, payload } => {
                w.string(type_key);
                w.bytes(payload);
            }
        }
    }
    w.string("_import_tree");
    w.u64s(row_ptr);
    w.u64s(children);
    let payload = w.into_bytes();
    let mut out = Writer::new();
    out.u64(payload.len() as u64);
    out.bytes(&payload);
    out.into_bytes()
}

/// Size of the data symbol at `addr` from the ELF symbol table, when the platform tells.
fn symbol_size(addr: *mut c_void) -> Option<usize> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const RTLD_DL_SYMENT: libc::c_int = 1;
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        let mut sym: *mut c_void = std::ptr::null_mut();
        // SAFETY: valid out-pointers; `addr` is a symbol address inside a loaded image.
        let ok = unsafe { libc::dladdr1(addr, &mut info, &mut sym, RTLD_DL_SYMENT) };
        if ok != 0 && !sym.is_null() {
            // SAFETY: with RTLD_DL_SYMENT, `sym` points to the image's ElfW(Sym) entry.
            let size = unsafe { (*(sym as *const libc::Elf64_Sym)).st_size } as usize;
            if size > 0 {
                return Some(size);
            }
        }
        None
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = addr;
        None
    }
}

/// Largest blob accepted when the symbol size is unknown.
const MAX_BLOB_BYTES: u64 = 1 << 36;

/// The bytes of `__tvm_dev_mblob` (length prefix included), bounded by the symbol's size.
pub(crate) fn blob_bytes<'a>(addr: *mut c_void) -> Result<&'a [u8]> {
    let size = symbol_size(addr);
    if let Some(s) = size.filter(|&s| s < 8) {
        return Err(Error::value(format!(
            "module blob: the __tvm_dev_mblob symbol is {s} bytes, too short for its 8-byte length prefix"
        )));
    }
    // SAFETY: the blob starts with an 8-byte length (checked against the symbol size where
    // known); read unaligned (the array is 1-aligned).
    let n = unsafe { std::ptr::read_unaligned(addr as *const u64) };
    let total = n.checked_add(8).ok_or_else(|| Error::value("module blob: length prefix overflows"))?;
    match size {
        Some(size) if total > size as u64 => {
            return Err(Error::value(format!(
            "module blob: length prefix says {n} bytes but the __tvm_dev_mblob symbol holds only {} after the prefix",
            size.saturating_sub(8)
        )))
        }
        None if total > MAX_BLOB_BYTES => {
            return Err(Error::value(format!("module blob: implausible length {n}")));
        }
        _ => {}
    }
    // SAFETY: the symbol holds at least `total` bytes (checked against its size where known).
    Ok(unsafe { std::slice::from_raw_parts(addr as *const u8, total as usize) })
}
