//! Checked handles: an opt-in mode, switched on by `TVM_RUNTIME_CHECK_HANDLES=1` (read once, when
//! the first object is made), in which every object handle C passes in (modules, functions,
//! NDArrays, any object) is validated against the set of live objects before it is followed.
//! A freed handle, or one this runtime never made, is then an error naming it instead of a
//! crash or a silent corruption.
//!
//! TVM's ABI makes a handle the object's address, and so does this runtime in both modes. The
//! checked mode adds:
//! - a live set: objects register when made and leave when their count reaches zero; 64 shards
//!   (by address) behind their own locks, so concurrent threads rarely meet;
//! - a quarantine: a dead object's memory is kept (its payload dropped) for the next
//!   [`QUARANTINE`] deaths before it returns to the allocator, so a new object does not take the
//!   address of one just freed, and a second free through the old handle is found dead instead
//!   of releasing the new object.
//!
//! Unchecked (the default), the cost is one relaxed atomic load where an object is made, dies, or
//! a handle is checked.

use crate::runtime::base::error::{Error, Result};
use parking_lot::Mutex;
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable that switches the checked mode on (`1`, `true`, `yes` or `on`).
pub const ENV_VAR: &str = "TVM_RUNTIME_CHECK_HANDLES";

/// Dead objects whose memory is held back in checked mode before it is freed.
pub const QUARANTINE: usize = 1 << 14;

const UNSET: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;
static MODE: AtomicU8 = AtomicU8::new(UNSET);

/// Whether handles are checked (decided once, from [`ENV_VAR`], on the first call).
#[inline]
pub fn checking() -> bool {
    match MODE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => decide(None),
    }
}

/// Whether handles are known to be unchecked (the mode decided, and off): one relaxed load
/// and no call, for hot paths that fall back to a checked path otherwise.
#[inline(always)]
pub fn known_unchecked() -> bool {
    MODE.load(Ordering::Relaxed) == OFF
}

#[cold]
fn decide(request: Option<bool>) -> bool {
    let on = request.unwrap_or_else(|| {
        std::env::var(ENV_VAR)
            .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
    });
    match MODE.compare_exchange(UNSET, if on { ON } else { OFF }, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => on,
        Err(current) => current == ON,
    }
}

/// Ask for the checked mode (or not) from Rust, as the environment variable does: it takes
/// effect only if the mode is not decided yet (nothing made an object or checked a handle).
/// Returns the mode in force.
pub fn request_checking(on: bool) -> bool {
    match MODE.load(Ordering::Relaxed) {
        UNSET => decide(Some(on)),
        m => m == ON,
    }
}

/// Hashing for addresses: one multiply (SipHash, the default, costs more than the lock).
use crate::runtime::base::addr_map::AddrHash;

const SHARDS: usize = 64;
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SHARD: Mutex<Option<HashSet<usize, AddrHash>>> = Mutex::new(None);
static LIVE: [Mutex<Option<HashSet<usize, AddrHash>>>; SHARDS] = [EMPTY_SHARD; SHARDS];

fn shard(addr: usize) -> &'static Mutex<Option<HashSet<usize, AddrHash>>> {
    // Objects are at least 16-byte aligned; mix in higher bits so neighbours spread out.
    &LIVE[((addr >> 4) ^ (addr >> 12)) % SHARDS]
}

/// Record a new object (checked mode only; the caller tests [`checking`]).
pub(crate) fn register(addr: usize) {
    let mut s = shard(addr).lock();
    s.get_or_insert_with(HashSet::default).insert(addr);
}

/// Forget an object whose count reached zero (checked mode only).
pub(crate) fn unregister(addr: usize) {
    let mut s = shard(addr).lock();
    if let Some(set) = s.as_mut() {
        set.remove(&addr);
    }
}

/// Whether an object made by this runtime lives at `addr` (checked mode).
pub fn is_live(addr: usize) -> bool {
    let s = shard(addr).lock();
    s.as_ref().is_some_and(|set| set.contains(&addr))
}

/// The value of the header's padding word in every object this runtime makes (tvm-ffi's own
/// objects have 0 there), so objects of a type whose payload is this runtime's own can be told
/// from foreign ones of the same type index, and the checked mode can tell its own dead objects
/// from objects it never saw made.
pub const MADE_HERE: u32 = 0x7276_6d74;

/// In checked mode, an error unless `handle` is a live object made here or a
/// [`foreign_object`]; `kind` names it ("module", "function", "NDArray", "object"). Unchecked,
/// always Ok.
#[inline]
pub fn check<P>(handle: *const P, kind: &str) -> Result<()> {
    if checking() {
        return check_taken(handle as usize, kind);
    }
    Ok(())
}

/// [`check`]'s checked mode, out of line (callers' hot paths stay small).
#[cold]
#[inline(never)]
fn check_taken(addr: usize, kind: &str) -> Result<()> {
    if taken(addr) {
        Ok(())
    } else {
        Err(not_live(addr, kind))
    }
}

/// Whether the checked mode takes the object header at `addr`: a live object made here, or a
/// [`foreign_object`].
pub fn taken(addr: usize) -> bool {
    is_live(addr) || foreign_object(addr)
}

/// Whether `addr` reads as the header of a live object that code compiled against tvm-ffi's
/// headers made: a strong count, a type index among objects', and a padding word without
/// [`MADE_HERE`] (an object made here and dead keeps the mark in its held-back block). Read
/// through a copy that cannot fault, so an unmapped address is just `false`. The checked mode
/// never sees such objects made (their maker's inline code makes them), so it takes them as the
/// default mode does, unchecked beyond this.
pub fn foreign_object(addr: usize) -> bool {
    let mut header = [0u8; 24];
    let local = libc::iovec { iov_base: header.as_mut_ptr().cast(), iov_len: header.len() };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: header.len() };
    // SAFETY: copies from this process's own memory into `header`; an unmapped source is an
    // error (EFAULT) of the call, not a fault.
    let copied = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    let word = |at: usize| u32::from_ne_bytes(header[at..at + 4].try_into().expect("4 bytes"));
    // tvm-ffi's header: the strong count in the low half of word 0, the type index at 8 (object
    // indices start at 64), the padding at 12.
    copied == header.len() as isize && word(0) > 0 && (64..1 << 20).contains(&word(8)) && word(12) != MADE_HERE
}

/// The error for a handle that is not live (its address as C passed it).
#[cold]
pub fn not_live(addr: usize, kind: &str) -> Error {
    Error::value(format!("{kind} handle {addr:#x} is not live (freed already, or not created by this runtime)"))
}

static HELD: Mutex<VecDeque<usize>> = Mutex::new(VecDeque::new());

/// Keep a dead object's block (from `malloc`) out of the allocator's hands for a while; the
/// oldest held block is freed once [`QUARANTINE`] are held.
///
/// # Safety
/// `p` must have been allocated by `malloc`, hold nothing that still needs dropping, and not be
/// used by anyone afterwards (it is freed here, later).
pub(crate) unsafe fn quarantine(p: *mut u8) {
    let oldest = {
        let mut held = HELD.lock();
        held.push_back(p as usize);
        if held.len() > QUARANTINE {
            held.pop_front()
        } else {
            None
        }
    };
    if let Some(addr) = oldest {
        // SAFETY: a `malloc` block given to `quarantine` (contract above), freed once: it left
        // the queue here.
        unsafe { libc::free(addr as *mut libc::c_void) };
    }
}
