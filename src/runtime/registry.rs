//! The process-wide registry of named packed functions.
//!
//! Lookups clone the function (a refcount bump) and release the lock before any user code runs,
//! so functions may call back into the registry. It starts empty: the runtime's own globals
//! (`builtins.rs`) are installed by the crate's `init`, which every C entry point runs
//! first (C static constructors before `main` included).

use super::error::{Error, Result};
use super::packed::PackedFunc;
use once_cell::sync::Lazy;
use parking_lot::RwLock;
use std::collections::HashMap;

static REGISTRY: Lazy<RwLock<HashMap<String, PackedFunc>>> = Lazy::new(Default::default);
/// tvm-ffi's metadata text (JSON) of globals registered with one.
static METADATA: Lazy<RwLock<HashMap<String, String>>> = Lazy::new(Default::default);

/// Register `f` under `name` with tvm-ffi's metadata text, as [`register`] does.
pub fn register_with_metadata(name: &str, f: PackedFunc, metadata: &str, allow_override: bool) -> Result<()> {
    register(name, f, allow_override)?;
    METADATA.write().insert(name.to_string(), metadata.to_string());
    Ok(())
}

/// The metadata text of global `name` (empty when it was registered without), or an error when
/// there is no such global.
pub fn metadata(name: &str) -> Result<String> {
    if get(name).is_none() {
        return Err(Error::runtime(format!("Global Function is not found: {name}")));
    }
    Ok(METADATA.read().get(name).cloned().unwrap_or_default())
}

/// Register `f` under `name`; an existing name is an error unless `allow_override`.
pub fn register(name: &str, f: PackedFunc, allow_override: bool) -> Result<()> {
    let mut map = REGISTRY.write();
    if !allow_override && map.contains_key(name) {
        return Err(Error::value(format!("Global PackedFunc `{name}` is already registered")));
    }
    // The old function (if any) is dropped after the lock is released.
    let old = map.insert(name.to_string(), f);
    drop(map);
    METADATA.write().remove(name);
    drop(old);
    Ok(())
}

/// The function registered under `name`, if any.
pub fn get(name: &str) -> Option<PackedFunc> {
    REGISTRY.read().get(name).cloned()
}

/// The function registered under `name`, or an error naming it.
pub fn require(name: &str) -> Result<PackedFunc> {
    get(name).ok_or_else(|| Error::attribute(format!("Global PackedFunc `{name}` is not registered")))
}

/// Remove `name`; returns whether it existed.
pub fn remove(name: &str) -> bool {
    METADATA.write().remove(name);
    let old = REGISTRY.write().remove(name);
    old.is_some()
}

/// All registered names, sorted.
pub fn list_names() -> Vec<String> {
    let mut names: Vec<String> = REGISTRY.read().keys().cloned().collect();
    names.sort();
    names
}
