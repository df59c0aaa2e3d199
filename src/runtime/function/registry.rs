//! The process-wide registry of named packed functions.
//!
//! Lookups clone the function (a refcount bump) and release the lock before any user code runs,
//! so functions may call back into the registry. It starts empty: the runtime's own globals
//! (`builtins.rs`) are installed by the crate's `init`, which every C entry point runs
//! first (C static constructors before `main` included).

use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::PackedFunc;
use once_cell::sync::Lazy;
use parking_lot::RwLock;
use std::collections::{HashMap, HashSet};

static REGISTRY: Lazy<RwLock<HashMap<String, PackedFunc>>> = Lazy::new(Default::default);
/// Names whose function the runtime installed itself (TVM 0.18's and tvm-ffi's globals), until
/// someone registers over them.
static BUILT_IN: Lazy<RwLock<HashSet<String>>> = Lazy::new(Default::default);
/// tvm-ffi's metadata text (JSON) of globals registered with one.
static METADATA: Lazy<RwLock<HashMap<String, String>>> = Lazy::new(Default::default);

/// Register `f` under `name` with tvm-ffi's metadata text, as [`register_over_built_in`] does.
pub fn register_with_metadata(name: &str, f: PackedFunc, metadata: &str, allow_override: bool) -> Result<()> {
    register_over_built_in(name, f, allow_override)?;
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
    // The old function (if any) is dropped after the locks are released.
    let old = map.insert(name.to_string(), f);
    drop(map);
    METADATA.write().remove(name);
    BUILT_IN.write().remove(name);
    drop(old);
    Ok(())
}

/// Install one of the runtime's own globals: kept out when the name is already registered (a
/// user's registration before the runtime's initialization wins).
pub(crate) fn register_built_in(name: &str, f: PackedFunc) {
    let mut map = REGISTRY.write();
    if !map.contains_key(name) {
        map.insert(name.to_string(), f);
        BUILT_IN.write().insert(name.to_string());
    }
}

/// Register through tvm-ffi's C ABI: as [`register`], except that a global this runtime
/// installed as a runtime (any name tvm-ffi's own library does not register) gives way. Under
/// the real `libtvm_ffi.so` those names are free, and a runtime built on tvm-ffi (apache-tvm's
/// `libtvm_runtime.so`) registers its own functions under them as it loads.
pub fn register_over_built_in(name: &str, f: PackedFunc, allow_override: bool) -> Result<()> {
    let gives_way = !owned_by_tvm_ffi(name) && BUILT_IN.read().contains(name);
    register(name, f, allow_override || gives_way)
}

/// Whether `name` is one tvm-ffi's own library registers: its `ffi.` names, except the module
/// loaders and creators of other kinds (`ffi.Module.load_from_bytes.<kind>`, ...), which the
/// runtimes built on it register (tvm-ffi itself loads only `.so` files).
fn owned_by_tvm_ffi(name: &str) -> bool {
    const RUNTIMES: [&str; 3] = ["ffi.Module.load_from_bytes.", "ffi.Module.load_from_file.", "ffi.Module.create."];
    name.starts_with("ffi.")
        && (name == "ffi.Module.load_from_file.so" || !RUNTIMES.iter().any(|p| name.starts_with(p)))
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
    BUILT_IN.write().remove(name);
    let old = REGISTRY.write().remove(name);
    old.is_some()
}

/// All registered names, sorted.
pub fn list_names() -> Vec<String> {
    let mut names: Vec<String> = REGISTRY.read().keys().cloned().collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::function::packed::Value;

    fn returning(v: i64) -> PackedFunc {
        PackedFunc::from_typed(move |_| Ok(Value::Int(v)))
    }

    fn result_of(name: &str) -> i64 {
        match get(name).unwrap().call(&[]).unwrap() {
            Value::Int(v) => v,
            v => panic!("{name}: {}", v.type_name()),
        }
    }

    #[test]
    fn built_ins_give_way_to_tvm_ffi_registrations_outside_ffi_names() {
        register_built_in("test.registry.built_in", returning(1));
        register_built_in("test.registry.built_in", returning(2)); // kept out: already there
        assert_eq!(result_of("test.registry.built_in"), 1);
        // TVM 0.18's C ABI keeps TVM's rule: an existing name is an error.
        let e = register("test.registry.built_in", returning(3), false).unwrap_err();
        assert!(e.message().contains("already registered"), "{e}");
        // tvm-ffi's: a built-in gives way once, then the name is the newcomer's.
        register_over_built_in("test.registry.built_in", returning(4), false).unwrap();
        assert_eq!(result_of("test.registry.built_in"), 4);
        assert!(register_over_built_in("test.registry.built_in", returning(5), false).is_err());
        // tvm-ffi's own names never give way.
        register_built_in("ffi.test.registry.built_in", returning(6));
        assert!(register_over_built_in("ffi.test.registry.built_in", returning(7), false).is_err());
        assert_eq!(result_of("ffi.test.registry.built_in"), 6);
        // A runtime's module loaders do give way, tvm-ffi's own `.so` loader does not.
        register_built_in("ffi.Module.load_from_bytes.test_kind", returning(8));
        register_over_built_in("ffi.Module.load_from_bytes.test_kind", returning(9), false).unwrap();
        assert_eq!(result_of("ffi.Module.load_from_bytes.test_kind"), 9);
        assert!(owned_by_tvm_ffi("ffi.Module.load_from_file.so") && !owned_by_tvm_ffi("ffi.Module.create.x"));
        for n in ["test.registry.built_in", "ffi.test.registry.built_in", "ffi.Module.load_from_bytes.test_kind"] {
            assert!(remove(n));
        }
    }
}
