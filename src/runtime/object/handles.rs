//! Live objects handed to C as opaque handles (streams, events, executors, pipelines): a
//! handle is the object's address, and every use looks it up here, so a freed or foreign
//! handle is found missing (an error for the caller to name) instead of dereferenced. A lookup
//! returns its own reference, so an object freed by another thread during a call lives until
//! that call is done.

use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::Arc;

pub struct HandleTable<T> {
    live: RwLock<Option<HashMap<usize, Arc<T>>>>,
}

impl<T> HandleTable<T> {
    pub const fn new() -> Self {
        HandleTable { live: RwLock::new(None) }
    }

    /// Keep `item` alive; its handle is its address.
    pub fn insert(&self, item: Arc<T>) -> *mut T {
        let handle = Arc::as_ptr(&item) as *mut T;
        let mut live = self.live.write();
        live.get_or_insert_with(HashMap::new).insert(handle as usize, item);
        handle
    }

    /// The object behind `handle`, if it is live.
    pub fn get<P>(&self, handle: *const P) -> Option<Arc<T>> {
        let live = self.live.read();
        live.as_ref()?.get(&(handle as usize)).cloned()
    }

    /// Stop keeping the object behind `handle`; None if it was not live.
    pub fn remove<P>(&self, handle: *const P) -> Option<Arc<T>> {
        let mut live = self.live.write();
        live.as_mut()?.remove(&(handle as usize))
    }
}

impl<T> Default for HandleTable<T> {
    fn default() -> Self {
        Self::new()
    }
}
