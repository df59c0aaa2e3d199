//! tvm-ffi's mutable and hashed containers, in the layouts its C++ headers read and write inline:
//! `ffi.List` (the sequence cell of `ffi.Array`, grown in place) and `ffi.Map` / `ffi.Dict`
//! (`container/map_base.h`'s `MapBaseObj`).
//!
//! Maps use the header's two layouts as C++ code does: up to four pairs the *small* one (pairs
//! in insertion order, compared one by one; the tag in the top bit of `slots`), past that the
//! *dense* hash table, worked in [`map_table`](super::map_table) with the key hash and equality
//! of C++'s inline code ([`map_keys`](super::map_keys)): C++ code finds, inserts and erases in
//! maps made here, and the reverse.
//!
//! A small map made here holds its pairs in its own block, after the cell, as tvm-ffi's small
//! maps do (one allocation, no data deleter); one that outgrows that room moves them to a buffer
//! of its own. Buffers are `malloc`ed and freed by [`free_buffer`], stored as the cell's data
//! deleter: C++ code that grows a list calls that deleter on the old buffer and keeps it for
//! the new one, which it allocates with `operator new` (`malloc` underneath, as with libstdc++).
//!
//! tvm-ffi's mutable containers are not synchronised; here every read and write of a list's or
//! a dict's cell from this runtime holds one lock, so this runtime's own users cannot race. (A
//! map is read without it: it is not changed once shared.)
//!
//! The map cell's layout and its table work live in [`map_table`](super::map_table), key hashing
//! and equality in [`map_keys`](super::map_keys); this file holds the containers' objects, the
//! lock, and the globals' argument readers, which read the cells in place under the lock.

use super::map_keys::Answers;
pub use super::map_keys::{any_equal, bytes_of, text_of};
use super::map_table::{DenseItem, Put, Step, Stop, EMPTY_SLOT, NO_INDEX, PROTECTED_SLOT, SMALL_TAG};
pub use super::map_table::{Kv, MapCell};
use crate::abi::TVMFFIAny;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::Value;
use crate::runtime::object::{
    header::{release_any, InplaceObject, Obj, ObjPtr, ObjectHeader, ObjectRef, ObjectType},
    type_table::type_index as ti,
};
use parking_lot::{Mutex, MutexGuard};
use std::cell::UnsafeCell;
use std::ffi::c_void;

pub(crate) use crate::runtime::container::alloc_buffer;
pub use crate::runtime::container::{free_buffer, SeqCell};

/// Held across every read and write of a mutable container's cell made from this runtime.
static CELLS: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    CELLS.lock()
}

/// The elements of an `ffi.Array` or `ffi.List` (new references), or `None` for other objects.
pub fn sequence_items(o: &ObjectRef) -> Result<Option<Vec<Value>>> {
    if let Some(l) = o.downcast::<ListObj>() {
        return l.with(|c| c.items().iter().map(view).collect::<Result<Vec<_>>>()).map(Some);
    }
    match o.downcast::<crate::runtime::container::FfiArrayObj>() {
        Some(a) => a.items().iter().map(view).collect::<Result<Vec<_>>>().map(Some),
        None => Ok(None),
    }
}

/// The entries of an `ffi.Map` or `ffi.Dict` in order (new references).
pub fn map_items(o: &ObjectRef) -> Result<Vec<(Value, Value)>> {
    map_cell(o, |c| {
        // SAFETY: live entries of the locked cell.
        c.entries().into_iter().map(|kv| unsafe { Ok((view(&(*kv).key)?, view(&(*kv).value)?)) }).collect()
    })
}

/// A value viewed from a container slot (a new reference for objects).
pub fn view(a: &TVMFFIAny) -> Result<Value> {
    // SAFETY: slots hold owned, initialised values, alive while the container is.
    unsafe { Value::from_any_view(a) }
}

/// Releases owned values (each gives up its reference).
pub fn release_all(values: Vec<TVMFFIAny>) {
    for a in values {
        // SAFETY: each value is owned (caller contract of the values' makers), released once.
        unsafe { release_any(&a) };
    }
}

// ---------------------------------------------------------------------------------------------
// ffi.List

/// Payload of an `ffi.List`: tvm-ffi's sequence cell, which this runtime and C++ code both grow.
#[repr(transparent)]
pub struct ListObj(UnsafeCell<SeqCell>);

// SAFETY: the cell is only touched under `CELLS` from this runtime; elements are owned values
// of Send + Sync objects.
unsafe impl Send for ListObj {}
// SAFETY: as above.
unsafe impl Sync for ListObj {}

impl ObjectType for ListObj {
    const TYPE_INDEX: u32 = crate::runtime::object::type_table::type_index::LIST;
    const LAYOUT_SHARED: bool = true;
}

impl ListObj {
    pub fn new(items: Vec<TVMFFIAny>) -> Result<Self> {
        Ok(ListObj(UnsafeCell::new(SeqCell::new(items)?)))
    }

    /// A list of a call's views, each made an owned value straight into the list's buffer (on
    /// an error the values made so far are released with the cell).
    pub fn from_views(views: &[TVMFFIAny]) -> Result<ObjPtr<ListObj>> {
        let mut cell = SeqCell::with_capacity(views.len())?;
        for v in views {
            // SAFETY: the caller's views are valid for the call.
            cell.push(unsafe { crate::runtime::reflection::type_info::owned_any(v) }?)?;
        }
        Ok(ObjPtr::new(ListObj(UnsafeCell::new(cell))))
    }

    /// Runs `f` on the cell, under the containers' lock.
    pub fn with<R>(&self, f: impl FnOnce(&mut SeqCell) -> Result<R>) -> Result<R> {
        let _g = lock();
        // SAFETY: exclusive access under the lock (C++ code mutating the same list at the same
        // time would race as it does with tvm-ffi's own library).
        f(unsafe { &mut *self.0.get() })
    }
}

// ---------------------------------------------------------------------------------------------
// ffi.Map / ffi.Dict

impl MapCell {
    pub(super) fn is_small(&self) -> bool {
        self.slots & SMALL_TAG != 0
    }

    pub(super) fn capacity(&self) -> u64 {
        self.slots & !SMALL_TAG
    }

    /// The dense layout's item at slot `i`, and its metadata byte.
    ///
    /// # Safety
    /// The map is dense and `i` below its slot count.
    unsafe fn dense_slot(&self, i: u64) -> (u8, *mut DenseItem) {
        (self.meta_byte(i), self.item(i))
    }

    /// A small map's pairs, in order: its buffer and their count (`None` for a dense map).
    pub(super) fn small_pairs(&self) -> Option<(*mut Kv, usize)> {
        self.is_small().then_some((self.data as *mut Kv, self.size as usize))
    }

    /// The entries, in iteration order (pointers into the cell, valid until it changes).
    pub fn entries(&self) -> Vec<*mut Kv> {
        let mut out = Vec::with_capacity(self.size as usize);
        let mut place = self.first_place();
        while let Some(kv) = self.entry_at(place) {
            if out.len() == self.size as usize {
                break; // a foreign dense map whose list runs on (not ours to follow further)
            }
            out.push(kv);
            place = self.next_place(place);
        }
        out
    }

    /// The first place of the iteration order (a place is the small layout's index, the dense
    /// layout's slot); past the end when the map is empty.
    pub fn first_place(&self) -> u64 {
        match self.is_small() {
            true => 0,
            false => self.iter_head,
        }
    }

    /// The entry at `place`, or `None` past the end. A place the cell no longer has (a dict
    /// changed since the place was read) is past the end too, never an address outside it.
    pub fn entry_at(&self, place: u64) -> Option<*mut Kv> {
        if let Some((base, n)) = self.small_pairs() {
            // SAFETY: a small map's buffer holds `size` initialised pairs.
            return (place < n as u64).then(|| unsafe { base.add(place as usize) });
        }
        if place >= self.capacity() {
            return None;
        }
        // SAFETY: a slot of this dense map (checked above).
        let (meta, item) = unsafe { self.dense_slot(place) };
        // SAFETY: an occupied slot holds an item.
        (meta != EMPTY_SLOT && meta != PROTECTED_SLOT).then(|| unsafe { &mut (*item).kv as *mut Kv })
    }

    /// The place after `place` (which must hold an entry, else past the end).
    pub fn next_place(&self, place: u64) -> u64 {
        if self.is_small() {
            return place.saturating_add(1);
        }
        if self.entry_at(place).is_none() {
            return NO_INDEX;
        }
        // SAFETY: an occupied slot of this dense map (checked above).
        unsafe { (*self.dense_slot(place).1).next }
    }

    pub fn len(&self) -> usize {
        self.size as usize
    }

    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// Moves the pairs of a small map into a fresh small buffer of `cap` pairs, releasing the
    /// old storage (its pairs are moved, not released).
    pub(super) fn respill(&mut self, cap: usize) -> Result<()> {
        let (base, n) = self.small_pairs().expect("a small map");
        let buf = alloc_buffer::<Kv>(cap.max(n))?;
        // SAFETY: moving the live pairs bit for bit into the new buffer (within its room).
        unsafe { std::ptr::copy_nonoverlapping(base, buf, n) };
        if let Some(free) = self.data_deleter {
            // SAFETY: the old storage's own deleter; its pairs were moved out above.
            unsafe { free(self.data) };
        }
        (self.data, self.slots) = (buf as *mut c_void, cap.max(n) as u64 | SMALL_TAG);
        self.data_deleter = Some(free_buffer);
        Ok(())
    }

    /// Releases every entry and the storage, leaving an empty small map.
    pub fn clear(&mut self) {
        self.release_all();
        // The old storage is released above: forget it rather than drop it again.
        std::mem::forget(std::mem::replace(self, MapCell::new()));
    }

    fn release_all(&mut self) {
        if let Some((base, n)) = self.small_pairs() {
            for i in 0..n {
                // SAFETY: each of the `n` live pairs released once.
                unsafe { (release_any(&(*base.add(i)).key), release_any(&(*base.add(i)).value)) };
            }
        } else {
            for i in 0..self.slots {
                // SAFETY: every slot of the dense blocks; occupied ones released once.
                let (meta, item) = unsafe { self.dense_slot(i) };
                if meta != EMPTY_SLOT && meta != PROTECTED_SLOT {
                    // SAFETY: as above.
                    unsafe { (release_any(&(*item).kv.key), release_any(&(*item).kv.value)) };
                }
            }
        }
        if let (Some(free), false) = (self.data_deleter, self.data.is_null()) {
            // SAFETY: the storage's own deleter, called once.
            unsafe { free(self.data) };
        }
    }
}

impl Drop for MapCell {
    fn drop(&mut self) {
        self.release_all();
    }
}

/// Payload of an `ffi.Map` (`INDEX` 72) or an `ffi.Dict` (76): the same cell.
#[repr(transparent)]
pub struct HashObj<const INDEX: u32>(UnsafeCell<MapCell>);

pub type FfiMapObj = HashObj<{ crate::runtime::object::type_table::type_index::FFI_MAP }>;
pub type DictObj = HashObj<{ crate::runtime::object::type_table::type_index::DICT }>;

// SAFETY: the cell is only touched under `CELLS` from this runtime; entries are owned values of
// Send + Sync objects.
unsafe impl<const I: u32> Send for HashObj<I> {}
// SAFETY: as above.
unsafe impl<const I: u32> Sync for HashObj<I> {}

impl<const I: u32> ObjectType for HashObj<I> {
    const TYPE_INDEX: u32 = I;
    const LAYOUT_SHARED: bool = true;
}

impl<const I: u32> InplaceObject for HashObj<I> {
    type Elem = Kv;
    /// None: the cell releases the pairs, wherever they are by then (a map that outgrew its
    /// block moved them to a buffer of their own), and a pair has no destructor to run.
    fn tail_len(&self) -> usize {
        0
    }
}

impl<const I: u32> HashObj<I> {
    /// An empty map for `n` pairs: below four, a small map with room for them (at least two)
    /// after its cell, in the same block, as tvm-ffi's own small maps (one allocation; no data
    /// deleter, so nothing frees the room apart); from four, a dense one sized for them, as C++
    /// code builds a map from a range.
    fn with_room(n: usize) -> Result<ObjPtr<Self>> {
        if n as u64 >= super::map_table::SMALL_MAX {
            return Ok(ObjPtr::new(HashObj(UnsafeCell::new(MapCell::dense_for(n as u64)?))));
        }
        let n = n.max(2);
        let cell = |first: *mut Kv| {
            let mut cell = MapCell::new();
            (cell.data, cell.slots) = (first as *mut c_void, n as u64 | SMALL_TAG);
            HashObj(UnsafeCell::new(cell))
        };
        // SAFETY: the cell holds no pairs yet, so it reads none of the `n` uninitialised slots.
        Ok(unsafe { ObjPtr::new_inline_with(n, I, cell) })
    }

    /// The cell of a map nobody else holds yet.
    fn unshared(map: &mut ObjPtr<Self>) -> &mut MapCell {
        // SAFETY: the map was just made and its only reference is the caller's, borrowed
        // mutably for as long as the cell is.
        unsafe { &mut *map.0.get() }
    }

    /// A map of `pairs` (owned values; a repeated key keeps its last value). On an error every
    /// pair is released.
    pub fn new(pairs: Vec<(TVMFFIAny, TVMFFIAny)>) -> Result<ObjPtr<Self>> {
        let mut map = match Self::with_room(pairs.len()) {
            Ok(map) => map,
            Err(e) => {
                release_all(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect());
                return Err(e);
            }
        };
        let mut pairs = pairs.into_iter();
        for (k, v) in pairs.by_ref() {
            if let Err(e) = Self::put_unshared(&mut map, k, v) {
                release_all(pairs.flat_map(|(k, v)| [k, v]).collect());
                return Err(e);
            }
        }
        Ok(map)
    }

    /// Sets `key` to `value` (both owned; released on an error) in a map nobody else holds yet.
    fn put_unshared(map: &mut ObjPtr<Self>, key: TVMFFIAny, value: TVMFFIAny) -> Result<()> {
        let put = asking(&key, |answers| Ok(Self::unshared(map).insert(key, value, answers)));
        settle(put, key, value)
    }

    /// A map of a call's views, keys and values alternating (tvm-ffi's `ffi.Map` arguments),
    /// each made an owned value in place: one allocation for small keys and values.
    pub fn from_views(views: &[TVMFFIAny]) -> Result<ObjPtr<Self>> {
        if views.len() % 2 != 0 {
            return Err(Error::value(format!("expected key and value pairs, got {} arguments", views.len())));
        }
        let mut map = Self::with_room(views.len() / 2)?;
        for kv in views.chunks(2) {
            // SAFETY: the caller's views are valid for the call.
            let key = unsafe { crate::runtime::reflection::type_info::owned_any(&kv[0]) }?;
            // SAFETY: as above.
            let value = match unsafe { crate::runtime::reflection::type_info::owned_any(&kv[1]) } {
                Ok(v) => v,
                Err(e) => {
                    release_all(vec![key]);
                    return Err(e);
                }
            };
            Self::put_unshared(&mut map, key, value)?;
        }
        Ok(map)
    }

    /// Runs `f` on the cell, under the containers' lock.
    pub fn with<R>(&self, f: impl FnOnce(&mut MapCell) -> Result<R>) -> Result<R> {
        let _g = lock();
        // SAFETY: exclusive access under the lock (see the module note on C++ code).
        f(unsafe { &mut *self.0.get() })
    }
}

/// How many rounds of asking a type's own key functions one operation may take (each round
/// answers every key it met; a dict changed meanwhile by another thread takes more).
const MAX_ASKS: usize = 64;

/// Runs `attempt` (one try of an operation on a cell, taking the cell's lock itself if it needs
/// it) until it needs no answer it lacks: the keys it stops at are asked about between tries,
/// outside any lock (see [`map_keys`](super::map_keys)). `key` is the operation's key.
fn asking<R>(key: &TVMFFIAny, mut attempt: impl FnMut(&Answers) -> Result<Step<R>>) -> Result<R> {
    let mut answers = Answers::default();
    for _ in 0..MAX_ASKS {
        match attempt(&answers)? {
            Ok(r) => return Ok(r),
            Err(Stop::Fail(e)) => return Err(e),
            Err(Stop::Ask(u)) => answers.learn(u, key)?,
        }
    }
    Err(Error::value("a map's keys kept changing while their own hash and equality functions ran"))
}

/// Releases what an insertion left over: on an error, the pair it was given.
fn settle(put: Result<Put>, key: TVMFFIAny, value: TVMFFIAny) -> Result<()> {
    match put {
        Ok(Put::Added) => Ok(()),
        Ok(Put::Replaced { key, old }) => {
            release_all(vec![key, old]);
            Ok(())
        }
        Err(e) => {
            release_all(vec![key, value]);
            Err(e)
        }
    }
}

/// The cell of a map or dict object, and whether it is a dict.
fn hashed(o: &ObjectRef) -> Result<(&FfiMapObj, bool)> {
    let dict = o.type_index() == ti::DICT;
    if !dict && o.type_index() != ti::FFI_MAP {
        return Err(Error::type_error(format!("expected ffi.Map or ffi.Dict, got {}", type_name(o))));
    }
    // SAFETY: a live map or dict (`Map` and `Dict` share the cell), held by `o`.
    Ok((unsafe { &(*(o.as_header() as *const Obj<FfiMapObj>)).data }, dict))
}

/// What `take` makes of the value `map` holds for `key` (any value or a call's view), if any:
/// a dict's read under the containers' lock.
fn lookup<R>(
    map: &FfiMapObj,
    dict: bool,
    key: &TVMFFIAny,
    take: impl Fn(&TVMFFIAny) -> Result<R>,
) -> Result<Option<R>> {
    asking(key, |answers| {
        read_map(map, dict, |c| {
            Ok(match c.find_key(key, answers) {
                // SAFETY: a live pair of the cell, read while the cell is held.
                Ok(Some(kv)) => Ok(Some(take(unsafe { &(*kv).value })?)),
                Ok(None) => Ok(None),
                Err(stop) => Err(stop),
            })
        })
    })
}

/// The value a map or dict holds for `key`.
pub fn map_get(o: &ObjectRef, key: &Value) -> Result<Option<Value>> {
    let (map, dict) = hashed(o)?;
    let key = key.clone().into_any();
    let found = lookup(map, dict, &key, view);
    release_all(vec![key]);
    found
}

/// Sets `key` to `value` in a dict (both owned).
pub fn dict_set(d: &ObjPtr<DictObj>, key: TVMFFIAny, value: TVMFFIAny) -> Result<()> {
    let put = asking(&key, |answers| d.with(|c| Ok(c.insert(key, value, answers))));
    settle(put, key, value)
}

/// Removes `key` from a dict; whether it was there.
pub fn dict_erase(d: &ObjPtr<DictObj>, key: &Value) -> Result<bool> {
    let key = key.clone().into_any();
    let removed = asking(&key, |answers| d.with(|c| Ok(c.remove(&key, answers))));
    release_all(vec![key]);
    match removed? {
        Some(kv) => {
            release_all(vec![kv.key, kv.value]);
            Ok(true)
        }
        None => Ok(false),
    }
}

/// The map or dict an object is, as a cell runner (for globals that take either).
pub fn map_cell<R>(o: &ObjectRef, f: impl FnOnce(&mut MapCell) -> Result<R>) -> Result<R> {
    if let Some(m) = o.downcast::<FfiMapObj>() {
        m.with(f)
    } else if let Some(d) = o.downcast::<DictObj>() {
        d.with(f)
    } else {
        Err(Error::type_error(format!("expected ffi.Map or ffi.Dict, got {}", type_name(o))))
    }
}

/// View `i` of a call, or an error naming the missing argument.
#[inline]
pub fn arg(views: &[TVMFFIAny], i: usize) -> Result<&TVMFFIAny> {
    match views.get(i) {
        Some(v) => Ok(v),
        None => Err(Error::type_error(format!("missing argument {i}"))),
    }
}

/// The integer view `i` of a call holds (an int or a bool).
#[inline]
pub fn int_arg(views: &[TVMFFIAny], i: usize) -> Result<i64> {
    use crate::abi::ffi_type_index as fti;
    let v = arg(views, i)?;
    match v.type_index {
        fti::INT | fti::BOOL => Ok(v.as_i64()),
        t => Err(wrong_arg(i, "int", t)),
    }
}

/// The object view `i` of a call holds when it has type index `index`, borrowed for the call
/// (made here or by foreign code: containers share tvm-ffi's layouts); `what` names the type.
#[inline]
pub fn object_arg(views: &[TVMFFIAny], i: usize, index: u32, what: &str) -> Result<*mut ObjectHeader> {
    let v = arg(views, i)?;
    let p = v.as_ptr() as *mut ObjectHeader;
    if v.type_index != index as i32 || p.is_null() {
        return Err(wrong_arg(i, what, v.type_index));
    }
    crate::runtime::object::live::check(p, "object").map_err(|e| e.context(format!("argument {i}")))?;
    Ok(p)
}

/// The error of argument `i` not being a `what` (its type index `got`).
#[cold]
fn wrong_arg(i: usize, what: &str, got: i32) -> Error {
    Error::type_error(format!("argument {i}: expected {what}, got type index {got}"))
}

/// The map or dict view `i` of a call holds, borrowed for the call.
fn map_arg(views: &[TVMFFIAny], i: usize) -> Result<&FfiMapObj> {
    let index = if arg(views, i)?.type_index == ti::DICT as i32 { ti::DICT } else { ti::FFI_MAP };
    let p = object_arg(views, i, index, "ffi.Map or ffi.Dict")?;
    // SAFETY: a live map or dict (`Map` and `Dict` share the cell, whoever made them), kept
    // alive by the caller for the call.
    Ok(unsafe { &(*(p as *const Obj<FfiMapObj>)).data })
}

/// Runs `f` under the containers' lock on the cell of the map or dict view `i` holds.
pub fn with_map_arg<R>(views: &[TVMFFIAny], i: usize, f: impl FnOnce(&mut MapCell) -> Result<R>) -> Result<R> {
    map_arg(views, i)?.with(f)
}

/// Runs `f` on the cell of the map or dict view `i` holds, to read it: a dict's under the
/// containers' lock; a map's without it, since a map is not changed once shared (tvm-ffi's
/// maps are copied on write, here and in C++: changed in place only by the holder of the one
/// reference, whom no other reader can be racing).
pub fn read_map_arg<R>(views: &[TVMFFIAny], i: usize, f: impl FnOnce(&MapCell) -> Result<R>) -> Result<R> {
    read_map(map_arg(views, i)?, views[i].type_index == ti::DICT as i32, f)
}

/// [`read_map_arg`] on a map or dict the caller holds (`dict`: whether it is one).
fn read_map<R>(map: &FfiMapObj, dict: bool, f: impl FnOnce(&MapCell) -> Result<R>) -> Result<R> {
    if dict {
        return map.with(|c| f(c));
    }
    // SAFETY: a map, not changed while shared (the caller's reference shares it).
    f(unsafe { &*map.0.get() })
}

/// tvm-ffi's forward iterator over a map or dict (`ffi.MapForwardIterFunctor`): it holds the
/// map and a place in it; [`MapWalk::step`] reads the key (command 0) or the value (1) there,
/// or moves on (2: whether an entry follows). A dict changed meanwhile reads from where the
/// place lands in it, or past the end (an error), never outside it.
pub struct MapWalk {
    map: ObjectRef,
    place: std::sync::atomic::AtomicU64,
}

impl MapWalk {
    /// A walk over the map or dict view `i` holds, from its first entry.
    pub fn new(views: &[TVMFFIAny], i: usize) -> Result<MapWalk> {
        let first = read_map_arg(views, i, |c| Ok(c.first_place()))?;
        // SAFETY: a live map or dict (checked by `read_map_arg`), kept alive by the caller.
        let map = unsafe { ObjectRef::from_borrowed(views[i].as_ptr().cast()) };
        Ok(MapWalk { map, place: first.into() })
    }

    /// Command 0, 1 or 2 at the current place; 0 and 1 give the caller an owned value.
    pub fn step(&self, command: i64) -> Result<TVMFFIAny> {
        use std::sync::atomic::Ordering::Relaxed;
        // SAFETY: a map or dict (checked in `new`), alive while this walk holds it.
        let map = unsafe { &(*(self.map.as_header() as *const Obj<FfiMapObj>)).data };
        read_map(map, self.map.type_index() == ti::DICT, |c| {
            let at = self.place.load(Relaxed);
            let read = |pick: fn(&Kv) -> &TVMFFIAny| match c.entry_at(at) {
                // SAFETY: an entry of the cell, live while it is read, copied out with its own
                // reference.
                Some(kv) => unsafe { crate::runtime::reflection::type_info::owned_any(pick(&*kv)) },
                None => Err(Error::index(format!("map iterator read ({command}) past the end"))),
            };
            match command {
                0 => read(|kv| &kv.key),
                1 => read(|kv| &kv.value),
                2 => {
                    let next = c.next_place(at);
                    self.place.store(next, Relaxed);
                    Ok(TVMFFIAny::int(crate::abi::ffi_type_index::BOOL, c.entry_at(next).is_some() as i64))
                }
                _ => Err(Error::value(format!("map iterator command {command} is not 0, 1 or 2"))),
            }
        })
    }
}

/// Runs `f` under the containers' lock on the cell of the list view `i` holds.
pub fn with_list_arg<R>(views: &[TVMFFIAny], i: usize, f: impl FnOnce(&mut SeqCell) -> Result<R>) -> Result<R> {
    let p = object_arg(views, i, ti::LIST, "ffi.List")?;
    // SAFETY: a live list (tvm-ffi's sequence cell, whoever made it), kept alive by the caller.
    unsafe { &(*(p as *const Obj<ListObj>)).data }.with(f)
}

/// What `take` makes of the value the map or dict of view 0 holds for the key of view 1, if it
/// holds one.
pub fn map_find_arg<R>(views: &[TVMFFIAny], take: impl Fn(&TVMFFIAny) -> Result<R>) -> Result<Option<R>> {
    let key = arg(views, 1)?;
    lookup(map_arg(views, 0)?, views[0].type_index == ti::DICT as i32, key, take)
}

/// Sets the key of view 1 to the value of view 2 in the dict of view 0.
pub fn dict_set_arg(views: &[TVMFFIAny]) -> Result<()> {
    let header = object_arg(views, 0, ti::DICT, "ffi.Dict")?;
    // SAFETY: the caller's views, valid for the call.
    let (k, v) = unsafe {
        (
            crate::runtime::reflection::type_info::owned_any(arg(views, 1)?)?,
            crate::runtime::reflection::type_info::owned_any(arg(views, 2)?),
        )
    };
    let v = v.inspect_err(|_| release_all(vec![k]))?;
    // SAFETY: the live dict of the caller's view (checked above), kept alive for the call.
    let d = unsafe { ObjectRef::from_borrowed(header) }.downcast::<DictObj>();
    match d {
        Some(d) => dict_set(&d, k, v),
        None => {
            release_all(vec![k, v]);
            Err(Error::type_error("expected ffi.Dict"))
        }
    }
}

/// An object's type key for messages.
pub fn type_name(o: &ObjectRef) -> String {
    crate::runtime::object::type_table::type_index_to_key(o.type_index())
        .unwrap_or_else(|_| format!("type index {}", o.type_index()))
}

/// A new map or dict object of `pairs`.
pub fn new_map<const I: u32>(pairs: Vec<(TVMFFIAny, TVMFFIAny)>) -> Result<ObjectRef> {
    Ok(HashObj::<I>::new(pairs)?.to_object_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: i64) -> TVMFFIAny {
        Value::Int(v).into_any()
    }

    #[test]
    fn map_cell_has_map_base_layout() {
        // MapBaseObj: data_ @24, size_ @32, slots_ @40, data_deleter_ @48; the dense layout's
        // fib_shift_ @56, iter_list_head_ @64, iter_list_tail_ @72 (sizeof DenseMapBaseObj 80).
        assert_eq!(std::mem::size_of::<MapCell>(), 56);
        assert_eq!(std::mem::offset_of!(MapCell, data_deleter), 24);
        assert_eq!(std::mem::offset_of!(MapCell, iter_head), 40);
        assert_eq!(std::mem::size_of::<DenseItem>(), 48);
    }

    /// The keys a [`MapWalk`] over `map` reads, in order, until it says none follows.
    fn walk_keys(map: &ObjectRef) -> Vec<i64> {
        let view = [TVMFFIAny::ptr(map.type_index() as i32, map.as_header() as *const c_void)];
        let walk = MapWalk::new(&view, 0).unwrap();
        let mut keys = Vec::new();
        for _ in 0..map_cell(map, |c| Ok(c.len())).unwrap() {
            keys.push(walk.step(0).unwrap().as_i64());
            assert!(walk.step(1).is_ok());
            if walk.step(2).unwrap().as_i64() == 0 {
                break;
            }
        }
        assert!(walk.step(0).is_err() && walk.step(1).is_err(), "past the end is an error");
        assert!(walk.step(3).is_err(), "an unknown command is an error");
        keys
    }

    /// A dense map cell over one block whose slots `order` hold keys `slot * 100` (int values),
    /// linked in that order; the storage is the caller's to keep while the cell lives.
    fn dense_cell(order: &[u64]) -> (Vec<u64>, MapCell) {
        const BLOCK_CAP: usize = super::super::map_table::BLOCK_CAP as usize;
        let block_bytes = BLOCK_CAP + BLOCK_CAP * std::mem::size_of::<DenseItem>();
        let mut storage = vec![0u64; block_bytes / 8];
        let mut cell = MapCell::new();
        (cell.data, cell.size, cell.slots) =
            (storage.as_mut_ptr() as *mut c_void, order.len() as u64, BLOCK_CAP as u64);
        // SAFETY: the block's metadata bytes, then its items (initialised below).
        unsafe { std::ptr::write_bytes(cell.data as *mut u8, EMPTY_SLOT, BLOCK_CAP) };
        for (i, &slot) in order.iter().enumerate() {
            let prev = if i == 0 { NO_INDEX } else { order[i - 1] };
            let next = order.get(i + 1).copied().unwrap_or(NO_INDEX);
            // SAFETY: slot `slot` of the one block.
            unsafe {
                let (_, item) = cell.dense_slot(slot);
                *(cell.data as *mut u8).add(slot as usize) = 0;
                item.write(DenseItem { kv: Kv { key: int(slot as i64 * 100), value: int(1) }, prev, next });
            }
        }
        (cell.iter_head, cell.iter_tail) = (order[0], *order.last().unwrap());
        (storage, cell)
    }

    #[test]
    fn the_forward_iterator_walks_small_and_dense_maps_in_order() {
        for n in [0, 1, 3, 40] {
            let map = new_map::<{ ti::FFI_MAP }>((0..n).map(|k| (int(k * 7), int(k))).collect()).unwrap();
            assert_eq!(walk_keys(&map), (0..n).map(|k| k * 7).collect::<Vec<_>>(), "{n} entries");
        }
        // The dense layout (maps C++ code made with more than a few entries): slots in one
        // block, linked in an order of their own.
        let order = [5u64, 2, 9, 0, 15];
        let (storage, cell) = dense_cell(&order);
        let map = ObjPtr::new(HashObj::<{ ti::FFI_MAP }>(UnsafeCell::new(cell))).to_object_ref();
        assert_eq!(walk_keys(&map), order.iter().map(|&slot| slot as i64 * 100).collect::<Vec<_>>());
        drop((map, storage));
        let d = DictObj::new((0..40).map(|k| (int(k), int(k))).collect()).unwrap();
        assert!(dict_erase(&d, &Value::Int(5)).unwrap());
        dict_set(&d, int(100), int(0)).unwrap();
        let expected: Vec<i64> = (0..40).filter(|&k| k != 5).chain([100]).collect();
        assert_eq!(walk_keys(&d.to_object_ref()), expected);
    }

    #[test]
    fn a_dict_changed_under_its_iterator_reads_inside_it_or_past_the_end() {
        let d = DictObj::new((0..40).map(|k| (int(k), int(k))).collect()).unwrap();
        let view = [TVMFFIAny::ptr(ti::DICT as i32, d.as_header() as *const c_void)];
        let walk = MapWalk::new(&view, 0).unwrap();
        for _ in 0..30 {
            walk.step(2).unwrap();
        }
        // Shrunk to 3 entries, then grown past its old size: the place the walk holds reads
        // whatever entry lands there, or past the end, as the dict now is.
        for k in 3..40 {
            dict_erase(&d, &Value::Int(k)).unwrap();
        }
        assert!(walk.step(0).is_err(), "the place of the 31st entry of a 3-entry dict is empty");
        (100..200).try_for_each(|k| dict_set(&d, int(k), int(k))).unwrap();
        for _ in 0..200 {
            let key = walk.step(0).map(|a| a.as_i64());
            assert!(matches!(key, Ok(0..=2 | 100..=199) | Err(_)), "{key:?}");
            if walk.step(2).unwrap().as_i64() == 0 {
                break;
            }
        }
    }

    #[test]
    fn dict_sets_replaces_and_erases_in_insertion_order() {
        let d = DictObj::new(vec![(int(1), int(10)), (int(2), int(20)), (int(1), int(11))]).unwrap();
        let o = d.to_object_ref();
        assert!(matches!(map_get(&o, &Value::Int(1)).unwrap(), Some(Value::Int(11))));
        for k in 3..40 {
            dict_set(&d, int(k), int(k * 10)).unwrap();
        }
        assert!(dict_erase(&d, &Value::Int(2)).unwrap());
        assert!(!dict_erase(&d, &Value::Int(2)).unwrap());
        assert!(matches!(map_get(&o, &Value::Int(39)).unwrap(), Some(Value::Int(390))));
        d.with(|c| {
            let keys: Vec<i64> = c.entries().iter().map(|kv| unsafe { (**kv).key.value as i64 }).collect();
            assert_eq!(keys[..3], [1, 3, 4]);
            assert_eq!(c.len(), 38);
            c.clear();
            assert_eq!(c.len(), 0);
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn a_map_of_views_holds_its_pairs_in_its_block_and_keeps_the_last_of_equal_keys() {
        let text = |s: &str| Value::Str(s.into()).into_any();
        // Small strings, integers and two string objects of equal text (decided by content).
        let views = [text("k"), int(1), text("a long key"), int(3), text("a long key"), int(5)];
        let map = FfiMapObj::from_views(&views).unwrap();
        release_all(views.to_vec());
        map.with(|c| {
            assert!(c.is_small() && c.data_deleter.is_none(), "pairs in the map's own block");
            assert_eq!(c.len(), 2);
            Ok(())
        })
        .unwrap();
        let o = map.to_object_ref();
        assert!(matches!(map_get(&o, &Value::Str("k".into())).unwrap(), Some(Value::Int(1))));
        assert!(matches!(map_get(&o, &Value::Str("a long key".into())).unwrap(), Some(Value::Int(5))));
        // Four pairs or more: the dense layout, as C++ code builds a map from a range.
        let views = [text("k"), int(1), int(7), int(2), text("a long key"), int(3), text("k"), int(4)];
        let map = FfiMapObj::from_views(&views).unwrap();
        release_all(views.to_vec());
        assert!(map.with(|c| Ok(!c.is_small() && c.len() == 3)).unwrap());
        let o = map.to_object_ref();
        assert!(matches!(map_get(&o, &Value::Str("k".into())).unwrap(), Some(Value::Int(4))));
        assert!(matches!(map_get(&o, &Value::Int(7)).unwrap(), Some(Value::Int(2))));
        assert!(matches!(map_get(&o, &Value::Str("a long key".into())).unwrap(), Some(Value::Int(3))));
        assert!(map_get(&o, &Value::Int(8)).unwrap().is_none());
        let odd = FfiMapObj::from_views(&[int(1)]).unwrap_err();
        assert!(odd.to_string().contains("key and value pairs"), "{odd}");
    }

    #[test]
    fn keys_decided_in_place_agree_with_any_equal_and_equal_keys_hash_alike() {
        use super::super::map_keys::{equal, hash};
        use crate::abi::ffi_type_index as fti;
        let text = |s: &str| Value::Str(s.into()).into_any();
        let shape = Value::Object(crate::runtime::container::shape_object(&[2])).into_any();
        let values = vec![
            int(1),
            int(2),
            TVMFFIAny::int(fti::BOOL, 1),
            TVMFFIAny::NONE,
            TVMFFIAny::float(1.0),
            text("a"),
            text("b"),
            text("a long key"),
            text("a long key"),
            shape,
            shape,
            text("ab"),
            text("abc"),
            text(""),
            // "a" with bytes past its length that are not zero (foreign code need not clear them)
            TVMFFIAny { type_index: fti::SMALL_STR, zero_padding: 1, value: u64::from_ne_bytes(*b"a\0\xffxyzw\x01") },
        ];
        let none = Answers::default();
        let raw = std::ffi::CString::new("a").unwrap();
        let raw = TVMFFIAny::ptr(fti::RAW_STR, raw.as_ptr().cast());
        assert!(equal(&raw, &values[5], &none).ok().unwrap(), "a C string against a small string");
        assert!(!equal(&raw, &values[6], &none).ok().unwrap());
        for (i, a) in values.iter().enumerate() {
            for (j, b) in values.iter().enumerate() {
                let same = equal(a, b, &none).ok().expect("decided in place");
                assert_eq!(same, any_equal(&view(a).unwrap(), &view(b).unwrap()), "values {i} and {j}");
                if same {
                    assert_eq!(hash(a, &none).ok(), hash(b, &none).ok(), "values {i} and {j} hash alike");
                }
            }
        }
        assert!(equal(&values[5], &values[14], &none).ok().unwrap(), "only the text's bytes count");
        assert!(!equal(&values[11], &values[12], &none).ok().unwrap(), "a prefix is another text");
        release_all(values[..10].to_vec());
    }

    #[test]
    fn list_grows_in_place() {
        let l = ListObj::new(vec![int(1)]).unwrap();
        l.with(|c| {
            for v in 2..20 {
                c.push(int(v))?;
            }
            assert_eq!(c.items().len(), 19);
            assert_eq!(c.items()[18].value, 19);
            Ok(())
        })
        .unwrap();
    }
}
