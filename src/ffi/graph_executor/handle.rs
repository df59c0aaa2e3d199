//! The executor handle: what a `TVMGraphExecutor` holds for C, and the table of live handles
//! every call looks its argument up in.

use crate::graph::{Frame, Front};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::object::handles::HandleTable;
use parking_lot::Mutex;
use std::ffi::CString;
use std::sync::Arc;

/// An executor handle (opaque to C): the shared front, plus what C needs to outlive a call.
pub struct TVMGraphExecutor {
    pub(in crate::ffi) front: Front<dyn Frame>,
    /// NUL-terminated input and output names handed out by the info calls.
    pub(super) input_names: Vec<CString>,
    pub(super) output_names: Vec<CString>,
    /// Owned text returned by the profiling calls.
    pub(super) text: Mutex<CString>,
}

/// Live executors by handle address. A call holds its own reference for its duration, so a
/// freed or foreign handle is an error instead of a crash, even when another thread frees the
/// executor during the call.
static LIVE: HandleTable<TVMGraphExecutor> = HandleTable::new();

/// The live executor behind `g`: an error naming `g` when it is NULL, freed or foreign.
pub(in crate::ffi) fn handle(g: *const TVMGraphExecutor) -> Result<Arc<TVMGraphExecutor>> {
    if g.is_null() {
        return Err(Error::value("argument `g` (graph executor) is NULL"));
    }
    LIVE.get(g).ok_or_else(|| {
        Error::value(format!("graph executor {g:p} is not live (freed already, or not created by this runtime)"))
    })
}

/// Make `front` a live executor handle for C, with the C names of its inputs and outputs.
pub(in crate::ffi) fn publish(front: Front<dyn Frame>) -> Result<*mut TVMGraphExecutor> {
    let (input_names, output_names) = {
        let e = front.lock()?;
        let inputs = (0..e.num_inputs()).map(|i| Ok(c_name(&e.input_info(i)?.name))).collect::<Result<_>>()?;
        let outputs = (0..e.num_outputs()).map(|i| Ok(c_name(&e.output_info(i)?.name))).collect::<Result<_>>()?;
        (inputs, outputs)
    };
    let g = Arc::new(TVMGraphExecutor { input_names, output_names, front, text: Mutex::new(CString::default()) });
    Ok(LIVE.insert(g))
}

/// Take `g` out of the live executors; `None` if it is not live.
pub(super) fn unpublish(g: *mut TVMGraphExecutor) -> Option<Arc<TVMGraphExecutor>> {
    LIVE.remove(g)
}

/// A C string of `s` (names cannot hold NUL in C: any are dropped).
fn c_name(s: &str) -> CString {
    CString::new(s.replace('\0', "")).expect("NULs removed")
}
