//! The hashed layout of tvm-ffi's maps (`DenseMapBaseObj` of `container/map_base.h`), worked
//! here as C++ code works it inline, so either side finds, inserts and erases in a map the other
//! built: slots in blocks of 16 (16 metadata bytes, then 16 items of a pair and the two links of
//! the iteration list), Fibonacci hashing into a power-of-two table, chains of slots linked by
//! one of 126 jump distances kept in the metadata byte, a 0.99 load factor, and the table
//! doubled (entries re-inserted in iteration order) when an insertion finds no room.
//!
//! Maps of up to four pairs use the small layout (`SmallMapBaseObj`: pairs in order, compared
//! one by one), as C++ code makes them; the fifth pair moves a map to this layout.
//!
//! Every operation that may meet a key it cannot hash or compare in place ([`map_keys`]) meets
//! it before it changes the cell, and stops with [`Stop::Ask`]: its caller asks outside the
//! containers' lock and runs it again. An insertion that must move a chain to free a slot plans
//! the moves first, so it never stops half way.

use super::map_keys::{self, Answers, Undecided};
use crate::abi::TVMFFIAny;
use crate::runtime::base::error::Error;
use std::ffi::c_void;

pub(super) const BLOCK_CAP: u64 = 16;
pub(super) const EMPTY_SLOT: u8 = 0xFF;
pub(super) const PROTECTED_SLOT: u8 = 0xFE;
const HEAD_BIT: u8 = 0x80;
const BLOCK_BYTES: usize = BLOCK_CAP as usize * (1 + std::mem::size_of::<DenseItem>());
/// The most pairs a small map holds (tvm-ffi's `kMaxSize`); the next moves it to this layout.
pub(super) const SMALL_MAX: u64 = 4;

/// tvm-ffi's jump distances (`kNextProbeLocation`): 0 ends a chain; then 1..15, triangle
/// numbers, larger triangle numbers.
#[rustfmt::skip]
const JUMPS: [u64; 126] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    21, 28, 36, 45, 55, 66, 78, 91, 105, 120,
    136, 153, 171, 190, 210, 231, 253, 276, 300, 325,
    351, 378, 406, 435, 465, 496, 528, 561, 595, 630,
    666, 703, 741, 780, 820, 861, 903, 946, 990, 1035,
    1081, 1128, 1176, 1225, 1275, 1326, 1378, 1431, 1485, 1540,
    1596, 1653, 1711, 1770, 1830, 1891, 1953, 2016, 2080, 2145,
    2211, 2278, 2346, 2415, 2485, 2556, 2628,
    8515, 19110, 42778, 96141, 216153,
    486591, 1092981, 2458653, 5532801, 12442566,
    27993903, 62983476, 141717030, 318844378, 717352503,
    1614057336, 3631522476, 8170957530, 18384510628, 41364789378,
    93070452520, 209408356380, 471168559170, 1060128894105, 2385289465695,
    5366898840628, 12075518705635, 27169915244790, 61132312065111, 137547689707000,
    309482283181501, 696335127828753, 1566753995631385, 3525196511162271, 7931691992677701,
    17846306936293605, 40154190677507445, 90346928918121501, 203280589587557251,
    457381325854679626, 1029107982097042876, 2315492959180353330, 5209859154120846435,
];

/// The top bit of `slots`: the map uses the small layout.
pub(super) const SMALL_TAG: u64 = 1 << 63;
/// The dense layout's end-of-list index.
pub(super) const NO_INDEX: u64 = u64::MAX;

/// A key and its value, as both layouts store them.
#[repr(C)]
pub struct Kv {
    pub key: TVMFFIAny,
    pub value: TVMFFIAny,
}

/// One entry of the dense layout: the pair and its place in the iteration list.
#[repr(C)]
pub(super) struct DenseItem {
    pub(super) kv: Kv,
    pub(super) prev: u64,
    pub(super) next: u64,
}

/// `MapBaseObj`'s fields and, after them, the ones a map switched in place to the dense layout
/// (`DenseMapBaseObj`) adds: every map made here is large enough to be switched.
#[repr(C)]
pub struct MapCell {
    pub(super) data: *mut c_void,
    pub(super) size: u64,
    pub(super) slots: u64,
    pub(super) data_deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    pub(super) fib_shift: u32,
    pub(super) iter_head: u64,
    pub(super) iter_tail: u64,
}

impl MapCell {
    pub(super) fn new() -> Self {
        MapCell {
            data: std::ptr::null_mut(),
            size: 0,
            slots: SMALL_TAG,
            data_deleter: None,
            fib_shift: 0,
            iter_head: NO_INDEX,
            iter_tail: NO_INDEX,
        }
    }
}

/// Why an operation on a cell stopped: keys to ask about (nothing changed yet), or an error.
pub enum Stop {
    Ask(Undecided),
    Fail(Error),
}

impl From<Undecided> for Stop {
    fn from(u: Undecided) -> Self {
        Stop::Ask(u)
    }
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Fail(e)
    }
}

pub type Step<T> = std::result::Result<T, Stop>;

/// What an insertion did with the pair given (owned values the caller releases after the lock).
pub enum Put {
    /// The pair is in the map.
    Added,
    /// The key was there: it took the new value; the new key and the old value are left over.
    Replaced { key: TVMFFIAny, old: TVMFFIAny },
}

/// Where a slot search for an insertion ended.
enum Landing {
    Found(u64),
    New(u64),
    NoRoom,
}

fn fib_hash(h: u64, shift: u32) -> u64 {
    11_400_714_819_323_198_485u64.wrapping_mul(h) >> shift
}

/// tvm-ffi's `CalcTableSize`: the shift and the power-of-two slot count for `cap` entries
/// (at least twice `cap` slots' worth of room: `cap` below half the table).
pub(super) fn table_size(cap: u64) -> (u32, u64) {
    let (mut shift, mut slots, mut c) = (64u32, 1u64, cap);
    while c != 0 {
        (shift, slots, c) = (shift - 1, slots << 1, c >> 1);
    }
    if slots < cap * 2 {
        (shift - 1, slots << 1)
    } else {
        (shift, slots)
    }
}

/// Fresh dense blocks for `slots` slots, every one empty (`malloc`ed: the cell's data deleter
/// is `free_buffer`).
fn new_blocks(slots: u64) -> Result<*mut u8, Error> {
    let blocks = slots.div_ceil(BLOCK_CAP) as usize;
    let data = crate::runtime::container::alloc_buffer::<[u8; BLOCK_BYTES]>(blocks)? as *mut u8;
    for b in 0..blocks {
        // SAFETY: the metadata bytes of block `b` of the buffer just allocated.
        unsafe { std::ptr::write_bytes(data.add(b * BLOCK_BYTES), EMPTY_SLOT, BLOCK_CAP as usize) };
    }
    Ok(data)
}

impl MapCell {
    /// The metadata byte of slot `i` (below the slot count of a dense cell).
    fn meta(&self, i: u64) -> *mut u8 {
        // SAFETY: slot `i` lies in block `i / 16` of the cell's blocks (callers keep `i` below
        // the slot count).
        unsafe { (self.data as *mut u8).add((i / BLOCK_CAP) as usize * BLOCK_BYTES + (i % BLOCK_CAP) as usize) }
    }

    /// The item of slot `i` (below the slot count of a dense cell).
    pub(super) fn item(&self, i: u64) -> *mut DenseItem {
        let block = (i / BLOCK_CAP) as usize * BLOCK_BYTES + BLOCK_CAP as usize;
        // SAFETY: as in `meta`: item `i % 16` after the block's metadata bytes.
        unsafe { ((self.data as *mut u8).add(block) as *mut DenseItem).add((i % BLOCK_CAP) as usize) }
    }

    pub(super) fn meta_byte(&self, i: u64) -> u8 {
        // SAFETY: a slot of the cell (see `meta`).
        unsafe { *self.meta(i) }
    }

    fn key_at(&self, i: u64) -> &TVMFFIAny {
        // SAFETY: an occupied slot's pair, alive while the cell is.
        unsafe { &(*self.item(i)).kv.key }
    }

    /// The slot after `i` on its chain, by the jump in `meta`.
    fn chain_next(&self, i: u64, meta: u8) -> Option<u64> {
        let jump = JUMPS[(meta & !HEAD_BIT) as usize];
        (jump != 0).then(|| i.wrapping_add(jump) % self.capacity())
    }

    /// The first empty slot a jump away from `i`, and the jump's index; `taken` overrides
    /// slots' metadata (an insertion's plan).
    fn next_empty(&self, i: u64, taken: &[(u64, u8)]) -> Option<(u8, u64)> {
        (1..JUMPS.len()).find_map(|j| {
            let c = i.wrapping_add(JUMPS[j]) % self.capacity();
            let meta = taken.iter().rev().find(|(s, _)| *s == c).map_or_else(|| self.meta_byte(c), |(_, m)| *m);
            (meta == EMPTY_SLOT).then_some((j as u8, c))
        })
    }

    fn set_jump(&self, i: u64, jump: u8) {
        // SAFETY: a slot of the cell (see `meta`).
        unsafe { *self.meta(i) = (*self.meta(i) & HEAD_BIT) | jump };
    }

    fn is_full(&self) -> bool {
        (self.size + 1) as f64 > self.capacity() as f64 * 0.99
    }

    /// The slot of the pair whose key equals `key` (hash `h`).
    fn search(&self, key: &TVMFFIAny, h: u64, answers: &Answers) -> Step<Option<u64>> {
        if self.size == 0 || self.capacity() == 0 {
            return Ok(None);
        }
        let mut at = fib_hash(h, self.fib_shift);
        if self.meta_byte(at) & HEAD_BIT != 0 {
            return Ok(None);
        }
        for _ in 0..=self.size {
            if map_keys::equal(key, self.key_at(at), answers)? {
                return Ok(Some(at));
            }
            match self.chain_next(at, self.meta_byte(at)) {
                Some(n) => at = n,
                None => return Ok(None),
            }
        }
        Err(Stop::Fail(Error::value("a map's chain of slots does not end (the map is corrupt)")))
    }

    /// The slot before `i` on its chain (`i` is not a chain's head).
    fn find_prev(&self, i: u64, answers: &Answers) -> Step<u64> {
        let mut prev = fib_hash(map_keys::hash(self.key_at(i), answers)?, self.fib_shift);
        for _ in 0..=self.size {
            match self.chain_next(prev, self.meta_byte(prev)) {
                Some(n) if n == i => return Ok(prev),
                Some(n) => prev = n,
                None => break,
            }
        }
        Err(Stop::Fail(Error::value("a map slot is missing from its own chain (the map is corrupt)")))
    }

    fn links(&self, i: u64) -> (u64, u64) {
        // SAFETY: an occupied slot's item.
        unsafe { ((*self.item(i)).prev, (*self.item(i)).next) }
    }

    fn set_links(&self, i: u64, prev: u64, next: u64) {
        // SAFETY: an occupied slot's item.
        unsafe { ((*self.item(i)).prev, (*self.item(i)).next) = (prev, next) };
    }

    fn set_next(&mut self, i: u64, next: u64) {
        match i {
            NO_INDEX => self.iter_head = next,
            // SAFETY: an occupied slot's item.
            _ => unsafe { (*self.item(i)).next = next },
        }
    }

    fn set_prev(&mut self, i: u64, prev: u64) {
        match i {
            NO_INDEX => self.iter_tail = prev,
            // SAFETY: an occupied slot's item.
            _ => unsafe { (*self.item(i)).prev = prev },
        }
    }

    fn list_unlink(&mut self, i: u64) {
        let (prev, next) = self.links(i);
        self.set_next(prev, next);
        self.set_prev(next, prev);
    }

    fn list_push_back(&mut self, i: u64) {
        let tail = self.iter_tail;
        self.set_links(i, tail, NO_INDEX);
        self.set_next(tail, i);
        self.iter_tail = i;
    }

    /// Puts slot `dst` where slot `src` was in the iteration list.
    fn list_replace(&mut self, src: u64, dst: u64) {
        let (prev, next) = self.links(src);
        self.set_links(dst, prev, next);
        self.set_next(prev, dst);
        self.set_prev(next, dst);
    }

    /// Writes `key` (moved in) with no value yet at the empty slot `i`, a chain's head or not.
    fn occupy(&mut self, i: u64, key: TVMFFIAny, head: bool) {
        // SAFETY: a slot of the cell; its item is written whole.
        unsafe {
            *self.meta(i) = if head { 0 } else { HEAD_BIT };
            self.item(i).write(DenseItem { kv: Kv { key, value: TVMFFIAny::NONE }, prev: NO_INDEX, next: NO_INDEX });
        }
        self.size += 1;
    }

    /// tvm-ffi's `TryInsert`: the slot of `key` (hash `h`), found or newly taken with the key
    /// (moved in), or no room. `distinct`: the key is known to be absent (a rebuild).
    fn try_insert(&mut self, key: &TVMFFIAny, h: u64, distinct: bool, answers: &Answers) -> Step<Landing> {
        if self.capacity() == 0 {
            return Ok(Landing::NoRoom);
        }
        let i = fib_hash(h, self.fib_shift);
        let meta = self.meta_byte(i);
        if meta == EMPTY_SLOT {
            self.occupy(i, *key, true);
            return Ok(Landing::New(i));
        }
        if meta & HEAD_BIT != 0 {
            return match self.is_full() {
                true => Ok(Landing::NoRoom),
                false => self.spare_head(i, key, answers),
            };
        }
        let mut at = i;
        loop {
            if !distinct && map_keys::equal(key, self.key_at(at), answers)? {
                self.list_unlink(at);
                return Ok(Landing::Found(at));
            }
            match self.chain_next(at, self.meta_byte(at)) {
                Some(n) => at = n,
                None => break,
            }
        }
        let Some((jump, empty)) = self.next_empty(at, &[]).filter(|_| !self.is_full()) else {
            return Ok(Landing::NoRoom);
        };
        self.occupy(empty, *key, false);
        self.set_jump(at, jump);
        Ok(Landing::New(empty))
    }

    /// tvm-ffi's `TrySpareListHead`: slot `target` holds part of another chain; that chain's
    /// rest moves, link by link, to empty slots after the slot before it, and `key` becomes the
    /// head at `target`. The moves are planned first: no room for one of them means no room,
    /// with nothing moved.
    fn spare_head(&mut self, target: u64, key: &TVMFFIAny, answers: &Answers) -> Step<Landing> {
        let first_prev = self.find_prev(target, answers)?;
        let (mut plan, mut taken) = (Vec::new(), Vec::new());
        let (mut r, mut w) = (target, first_prev);
        loop {
            let Some((jump, empty)) = self.next_empty(w, &taken) else { return Ok(Landing::NoRoom) };
            let vacated = if plan.is_empty() { PROTECTED_SLOT } else { EMPTY_SLOT };
            taken.extend([(empty, HEAD_BIT), (r, vacated)]);
            plan.push((r, empty, jump));
            w = empty;
            match self.chain_next(r, self.meta_byte(r)) {
                Some(n) => r = n,
                None => break,
            }
        }
        let mut w = first_prev;
        for (r, empty, jump) in plan {
            // SAFETY: the pair moves bit for bit from `r` to the empty slot (and is not
            // released at `r`).
            let kv = unsafe { std::ptr::read(&(*self.item(r)).kv) };
            // SAFETY: a slot of the cell.
            unsafe {
                *self.meta(empty) = HEAD_BIT;
                self.item(empty).write(DenseItem { kv, prev: NO_INDEX, next: NO_INDEX });
            }
            self.list_replace(r, empty);
            // SAFETY: a slot of the cell.
            unsafe { *self.meta(r) = if r == target { PROTECTED_SLOT } else { EMPTY_SLOT } };
            self.set_jump(w, jump);
            w = empty;
        }
        self.occupy(target, *key, true);
        Ok(Landing::New(target))
    }

    /// Moves every pair, in iteration order, into a new dense table of `slots` slots; the old
    /// storage is freed with its own deleter (its pairs moved, not released). Every key's hash
    /// is found before anything moves.
    fn rebuild(&mut self, shift: u32, slots: u64, answers: &Answers) -> Step<()> {
        let entries = self.entries();
        let mut hashes = Vec::with_capacity(entries.len());
        let mut ask = Vec::new();
        for &kv in &entries {
            // SAFETY: a live pair of the cell.
            match map_keys::hash(unsafe { &(*kv).key }, answers) {
                Ok(h) => hashes.push(h),
                Err(u) => ask.extend(u.keys),
            }
        }
        if !ask.is_empty() {
            return Err(Stop::Ask(Undecided { keys: ask, hash: true }));
        }
        let mut fresh = MapCell::empty_dense(shift, slots)?;
        for (&kv, h) in entries.iter().zip(hashes) {
            // SAFETY: the pair moves bit for bit into the new table (the old storage is freed
            // below without releasing it).
            let Kv { key, value } = unsafe { std::ptr::read(kv) };
            let at = match fresh.land_distinct(&key, h, answers) {
                Ok(at) => at,
                Err(stop) => {
                    // The old table still owns every pair: the new one's copies are not released.
                    fresh.abandon();
                    return Err(stop);
                }
            };
            // SAFETY: the slot just taken for the key.
            unsafe { (*fresh.item(at)).kv.value = value };
            fresh.list_push_back(at);
        }
        // The old cell's pairs moved: its storage is freed, nothing in it released.
        std::mem::replace(self, fresh).abandon();
        Ok(())
    }

    /// A slot for a key absent from this dense table, doubling the table while there is no room.
    fn land_distinct(&mut self, key: &TVMFFIAny, h: u64, answers: &Answers) -> Step<u64> {
        loop {
            match self.try_insert(key, h, true, answers)? {
                Landing::New(i) | Landing::Found(i) => return Ok(i),
                Landing::NoRoom => self.rebuild(self.fib_shift - 1, self.capacity() * 2, answers)?,
            }
        }
    }

    /// The pair whose key equals `key`, in either layout.
    pub fn find_key(&self, key: &TVMFFIAny, answers: &Answers) -> Step<Option<*mut Kv>> {
        if let Some((base, n)) = self.small_pairs() {
            for i in 0..n {
                // SAFETY: pair `i` of the small map's `n` live pairs.
                if map_keys::equal(key, unsafe { &(*base.add(i)).key }, answers)? {
                    // SAFETY: as above.
                    return Ok(Some(unsafe { base.add(i) }));
                }
            }
            return Ok(None);
        }
        let h = map_keys::hash(key, answers)?;
        // SAFETY: the slot just found holds a pair.
        Ok(self.search(key, h, answers)?.map(|i| unsafe { &mut (*self.item(i)).kv as *mut Kv }))
    }

    /// Sets `key` to `value` (both owned, moved in), in either layout: a small map past four
    /// pairs becomes dense; a dense one doubles when an insertion finds no room. Re-setting a
    /// key keeps its place in a small map and moves it last in a dense one, as in C++.
    pub fn insert(&mut self, key: TVMFFIAny, value: TVMFFIAny, answers: &Answers) -> Step<Put> {
        if self.is_small() {
            if let Some(kv) = self.find_key(&key, answers)? {
                // SAFETY: a live pair of the cell; its old value goes to the caller.
                let old = unsafe { std::mem::replace(&mut (*kv).value, value) };
                return Ok(Put::Replaced { key, old });
            }
            if self.size < self.capacity() {
                // SAFETY: room for one more pair in the small buffer.
                unsafe { (self.data as *mut Kv).add(self.size as usize).write(Kv { key, value }) };
                self.size += 1;
                return Ok(Put::Added);
            }
            if self.capacity() < SMALL_MAX {
                self.respill((self.capacity() * 2).clamp(2, SMALL_MAX) as usize)?;
                return self.insert(key, value, answers);
            }
            let (shift, slots) = table_size(self.size);
            self.rebuild(shift, slots, answers)?;
        }
        let h = map_keys::hash(&key, answers)?;
        loop {
            match self.try_insert(&key, h, false, answers)? {
                Landing::Found(i) => {
                    // SAFETY: the slot found holds a pair; its old value goes to the caller.
                    let old = unsafe { std::mem::replace(&mut (*self.item(i)).kv.value, value) };
                    self.list_push_back(i);
                    return Ok(Put::Replaced { key, old });
                }
                Landing::New(i) => {
                    // SAFETY: the slot just taken for the key.
                    unsafe { (*self.item(i)).kv.value = value };
                    self.list_push_back(i);
                    return Ok(Put::Added);
                }
                Landing::NoRoom => self.rebuild(self.fib_shift - 1, self.capacity() * 2, answers)?,
            }
        }
    }

    /// Removes the pair whose key equals `key`, handing it to the caller to release.
    pub fn remove(&mut self, key: &TVMFFIAny, answers: &Answers) -> Step<Option<Kv>> {
        if let Some((base, n)) = self.small_pairs() {
            let Some(kv) = self.find_key(key, answers)? else { return Ok(None) };
            // SAFETY: `kv` is pair `i` of the small buffer: it is taken out and the later
            // pairs move down one place, keeping the order.
            unsafe {
                let i = kv.offset_from(base) as usize;
                let taken = std::ptr::read(kv);
                std::ptr::copy(base.add(i + 1), base.add(i), n - i - 1);
                self.size -= 1;
                return Ok(Some(taken));
            }
        }
        let h = map_keys::hash(key, answers)?;
        let Some(i) = self.search(key, h, answers)? else { return Ok(None) };
        self.erase_slot(i, answers).map(Some)
    }

    /// tvm-ffi's `Erase` of slot `i`: a chain's last link is cut off; another link takes the
    /// chain's last pair into its slot.
    fn erase_slot(&mut self, i: u64, answers: &Answers) -> Step<Kv> {
        let meta = self.meta_byte(i);
        if self.chain_next(i, meta).is_none() {
            let prev = if meta & HEAD_BIT != 0 { Some(self.find_prev(i, answers)?) } else { None };
            if let Some(p) = prev {
                self.set_jump(p, 0);
            }
            self.list_unlink(i);
            // SAFETY: the slot's pair, taken out; the slot becomes empty.
            let kv = unsafe { std::ptr::read(&(*self.item(i)).kv) };
            // SAFETY: a slot of the cell.
            unsafe { *self.meta(i) = EMPTY_SLOT };
            self.size -= 1;
            return Ok(kv);
        }
        let (mut prev, mut last) = (i, self.chain_next(i, meta).expect("a next link"));
        while let Some(n) = self.chain_next(last, self.meta_byte(last)) {
            (prev, last) = (last, n);
        }
        self.list_unlink(i);
        // SAFETY: slot `i`'s pair is taken out for the caller, and the chain's last pair moves
        // into its place bit for bit; the last slot becomes empty.
        let kv = unsafe {
            let kv = std::ptr::read(&(*self.item(i)).kv);
            std::ptr::write(&mut (*self.item(i)).kv, std::ptr::read(&(*self.item(last)).kv));
            kv
        };
        self.list_replace(last, i);
        // SAFETY: a slot of the cell.
        unsafe { *self.meta(last) = EMPTY_SLOT };
        self.set_jump(prev, 0);
        self.size -= 1;
        Ok(kv)
    }

    /// A cell for `n` pairs: dense from four pairs up, as C++ code builds a map from a range.
    pub(super) fn dense_for(n: u64) -> Result<MapCell, Error> {
        let (shift, slots) = table_size(n);
        MapCell::empty_dense(shift, slots)
    }

    /// An empty dense cell of `slots` slots (`shift`: its Fibonacci shift).
    fn empty_dense(shift: u32, slots: u64) -> Result<MapCell, Error> {
        let mut cell = MapCell::new();
        cell.data = new_blocks(slots)? as *mut std::ffi::c_void;
        (cell.slots, cell.fib_shift) = (slots, shift);
        cell.data_deleter = Some(crate::runtime::container::free_buffer);
        Ok(cell)
    }

    /// Frees a cell's storage with its own deleter without releasing its pairs (moved elsewhere,
    /// or bit copies another cell owns).
    fn abandon(self) {
        if let (Some(free), false) = (self.data_deleter, self.data.is_null()) {
            // SAFETY: the cell's own storage, freed once; nothing in it is released.
            unsafe { free(self.data) };
        }
        std::mem::forget(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::runtime::collections::list_map::{dict_erase, dict_set, map_get, map_items, DictObj};
    use crate::runtime::function::packed::Value;

    /// A key of a random run: integers, short strings (held in the value) and long ones.
    fn key(n: u64) -> Value {
        match n % 3 {
            0 => Value::Int(n as i64 * 7919),
            1 => Value::Str(format!("k{}", n % 1000)),
            _ => Value::Str(format!("a parameter name {n}")),
        }
    }

    fn same_key(a: &Value, b: &Value) -> bool {
        crate::runtime::collections::list_map::any_equal(a, b)
    }

    /// Sets, re-sets, erases and lookups at random on a dict and on a plain model of it (a
    /// list in iteration order: a re-set key keeps its place while the dict is small and moves
    /// last once it is dense, as in C++), through the small layout, the move to the dense one
    /// and several doublings.
    #[test]
    fn a_dict_agrees_with_a_model_through_growth_and_erasure() {
        let d = DictObj::new(Vec::new()).unwrap();
        let o = d.to_object_ref();
        let (mut model, mut dense): (Vec<(Value, i64)>, bool) = (Vec::new(), false);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for step in 0..40_000i64 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let range = if step < 20_000 { 3000 } else { 60 };
            let k = key(seed % range);
            let at = model.iter().position(|(m, _)| same_key(m, &k));
            match (seed >> 40) % 4 {
                0 => {
                    assert_eq!(dict_erase(&d, &k).unwrap(), at.is_some(), "step {step}");
                    if let Some(i) = at {
                        model.remove(i);
                    }
                }
                1 => {
                    let found = map_get(&o, &k).unwrap().map(|v| v.as_int().unwrap());
                    assert_eq!(found, at.map(|i| model[i].1), "step {step}");
                }
                _ => {
                    dict_set(&d, k.clone().into_any(), Value::Int(step).into_any()).unwrap();
                    match at {
                        Some(i) if dense => {
                            model.remove(i);
                            model.push((k, step));
                        }
                        Some(i) => model[i].1 = step,
                        None => model.push((k, step)),
                    }
                    dense |= model.len() > SMALL_MAX as usize;
                }
            }
        }
        let items = map_items(&o).unwrap();
        assert_eq!(items.len(), model.len());
        for ((k, v), (mk, mv)) in items.iter().zip(&model) {
            assert!(same_key(k, mk) && v.as_int().unwrap() == *mv);
        }
    }

    #[test]
    fn table_sizes_are_tvm_ffis() {
        assert_eq!(table_size(4), (61, 8));
        assert_eq!(table_size(5), (60, 16));
        assert_eq!(table_size(8), (60, 16));
        assert_eq!(table_size(10_000), (49, 32768));
    }
}
