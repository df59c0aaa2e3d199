//! Small container objects crossing the API: `runtime.String`, `Array`, `Map` (TVM's type
//! keys; string keys) and `ShapeTuple`. TVM's global accessors over them (`runtime.ArraySize`,
//! `runtime.MapGetItem`, ...) are defined above the packed functions, in `collections/tvm_globals.rs`.

use super::base::error::{Error, Result};
use super::object::{
    header::{InplaceObject, LegacyRef, ObjPtr, ObjectRef, ObjectType},
    type_table::type_index,
};
use crate::abi::TVMFFIAny;
use std::ffi::c_char;

/// TVM's `{const T* data; uint64_t size}` payload (of `StringObj` and `ShapeTupleObj`), which code
/// compiled against TVM's headers reads directly. Ours hold `size + 1` elements after the cell, in
/// the object's own block, the last a zero (a string's NUL terminator; a valid address even when
/// empty), so `data` points into the object itself; objects of the same type made by foreign
/// code are read through the same two fields and freed by their own deleter.
#[repr(C)]
pub struct SliceObj<T: Copy + Default> {
    data: *const T,
    size: u64,
}

// SAFETY: the elements are never written after construction, and those of an object made here
// live in its own block (freed with it).
unsafe impl<T: Copy + Default + Send> Send for SliceObj<T> {}
// SAFETY: as above (shared access is read-only).
unsafe impl<T: Copy + Default + Sync> Sync for SliceObj<T> {}

impl<T: Copy + Default> SliceObj<T> {
    /// A cell over `items` and a terminating default element (a string's NUL), copied to
    /// `first`, its object's inline elements.
    ///
    /// # Safety
    /// `first` must have room for `items.len() + 1` elements.
    unsafe fn inline(items: &[T], first: *mut T) -> Self {
        // SAFETY: room for `items.len() + 1` elements (contract above); `items` is elsewhere.
        unsafe {
            std::ptr::copy_nonoverlapping(items.as_ptr(), first, items.len());
            first.add(items.len()).write(T::default());
        }
        SliceObj { data: first, size: items.len() as u64 }
    }

    /// The elements an object made here holds after its payload: the items and the terminator.
    fn inline_len(&self) -> usize {
        self.size as usize + 1
    }

    /// The elements; `what` names the object type in the error for a foreign object whose data
    /// pointer is NULL while its size is not zero.
    fn items(&self, what: &str) -> Result<&[T]> {
        let len = usize::try_from(self.size).ok().filter(|&n| n <= isize::MAX as usize / size_of::<T>().max(1));
        match (self.data.is_null(), len) {
            (true, Some(0)) => Ok(&[]),
            (false, Some(n)) => {
                // SAFETY: `data`/`size` are the object's own inline elements (made by `inline`)
                // or, for an object of this type made by foreign code, describe its elements as
                // TVM's layout requires; the object (and so the elements) outlives the borrow.
                Ok(unsafe { std::slice::from_raw_parts(self.data, n) })
            }
            _ => Err(Error::value(format!("{what} object has data {:p} and size {}", self.data, self.size))),
        }
    }
}

/// A new object of `W` (a `{data, size}` cell) over a copy of `items`, held after the cell in
/// the same block, with a terminating default element: one allocation.
fn slice_object<T: Copy + Default, W: InplaceObject<Elem = T>>(items: &[T], wrap: fn(SliceObj<T>) -> W) -> ObjPtr<W> {
    // SAFETY: `inline` writes the `items.len() + 1` elements the block has room for, and the
    // wrappers report `inline_len` (the same count) as their `tail_len`.
    unsafe { ObjPtr::new_inline_with(items.len() + 1, W::TYPE_INDEX, |first| wrap(SliceObj::inline(items, first))) }
}

/// Payload of a `runtime.String`: TVM's `StringObj` (`data` NUL-terminated in ours).
#[repr(transparent)]
pub struct StringObj(SliceObj<c_char>);

impl ObjectType for StringObj {
    const TYPE_INDEX: u32 = type_index::STRING;
    const LAYOUT_SHARED: bool = true;
}

impl InplaceObject for StringObj {
    type Elem = c_char;
    fn tail_len(&self) -> usize {
        self.0.inline_len()
    }
}

/// Bytes as C characters (`c_char` and `u8` have the same size and alignment).
fn chars(bytes: &[u8]) -> &[c_char] {
    // SAFETY: only reinterprets elements of the same size and alignment.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const c_char, bytes.len()) }
}

/// The reverse of [`chars`].
fn bytes_of(chars: &[c_char]) -> &[u8] {
    // SAFETY: as in `chars`.
    unsafe { std::slice::from_raw_parts(chars.as_ptr() as *const u8, chars.len()) }
}

/// Payload of an `ffi.Bytes`: tvm-ffi's `TVMFFIByteArray` cell, `{data, size}` like a string's.
#[repr(transparent)]
pub struct BytesObj(SliceObj<c_char>);

impl ObjectType for BytesObj {
    const TYPE_INDEX: u32 = type_index::BYTES;
    const LAYOUT_SHARED: bool = true;
}

impl InplaceObject for BytesObj {
    type Elem = c_char;
    fn tail_len(&self) -> usize {
        self.0.inline_len()
    }
}

impl BytesObj {
    pub fn new(bytes: &[u8]) -> ObjPtr<BytesObj> {
        slice_object(chars(bytes), BytesObj)
    }

    pub fn as_bytes(&self) -> Result<&[u8]> {
        Ok(bytes_of(self.0.items("ffi.Bytes")?))
    }
}

impl StringObj {
    pub fn new(s: &str) -> ObjPtr<StringObj> {
        Self::from_bytes(s.as_bytes())
    }

    /// A string of arbitrary bytes (tvm-ffi's strings need not be UTF-8).
    pub fn from_bytes(bytes: &[u8]) -> ObjPtr<StringObj> {
        slice_object(chars(bytes), StringObj)
    }

    pub fn as_bytes(&self) -> Result<&[u8]> {
        Ok(bytes_of(self.0.items("runtime.String")?))
    }

    pub fn to_string(&self) -> Result<String> {
        String::from_utf8(self.as_bytes()?.to_vec())
            .map_err(|_| Error::value("runtime.String object is not valid UTF-8"))
    }
}

/// Payload of an `ffi.BigInt`: tvm-ffi's `BigIntObj`, the count of 64-bit words (two's
/// complement, least significant first) followed by the words in the same block. Values that fit
/// one word travel as plain ints instead.
#[repr(C)]
pub struct BigIntObj {
    size: u64,
}

impl ObjectType for BigIntObj {
    const TYPE_INDEX: u32 = type_index::BIG_INT;
    const LAYOUT_SHARED: bool = true;
}

impl InplaceObject for BigIntObj {
    type Elem = i64;
    fn tail_len(&self) -> usize {
        self.size as usize
    }
}

/// The shortest two's-complement form of `words` (redundant sign words dropped; one word stays).
pub fn normalized_words(words: &[i64]) -> &[i64] {
    let mut n = words.len();
    while n > 1 && words[n - 1] == if words[n - 2] < 0 { -1 } else { 0 } {
        n -= 1;
    }
    &words[..n]
}

/// The words of `o` (normalized, least significant first) if it is an `ffi.BigInt`.
pub fn big_int_words(o: &ObjectRef) -> Option<Vec<i64>> {
    o.downcast::<BigIntObj>().map(|b| normalized_words(b.tail()).to_vec())
}

/// The order of two big integers given by normalized words: the sign first, then (same sign)
/// the word count, then the words from the most significant down, the top one signed.
pub fn compare_big_ints(a: &[i64], b: &[i64]) -> std::cmp::Ordering {
    let negative = |w: &[i64]| w.last().is_some_and(|&top| top < 0);
    let (na, nb) = (negative(a), negative(b));
    if na != nb {
        return nb.cmp(&na);
    }
    if a.len() != b.len() {
        let longer = a.len().cmp(&b.len());
        return if na { longer.reverse() } else { longer };
    }
    let Some((ta, rest_a)) = a.split_last() else { return std::cmp::Ordering::Equal };
    let (tb, rest_b) = b.split_last().expect("same length as a");
    ta.cmp(tb).then_with(|| rest_a.iter().rev().map(|&w| w as u64).cmp(rest_b.iter().rev().map(|&w| w as u64)))
}

/// A big integer of more than one word (normalized words, at least two).
pub fn big_int(words: Vec<i64>) -> ObjPtr<BigIntObj> {
    ObjPtr::new_inplace(BigIntObj { size: words.len() as u64 }, words)
}

/// The data deleter of every buffer allocated here.
///
/// # Safety
/// `data` is NULL or a buffer from `malloc` (or `operator new` over it) not freed yet.
pub unsafe extern "C" fn free_buffer(data: *mut std::ffi::c_void) {
    // SAFETY: `data` was allocated by `malloc` (here, or by `operator new` over malloc).
    unsafe { libc::free(data) }
}

/// A `malloc`ed buffer for `n` values of `T` (none for 0), or an error when out of memory.
pub(crate) fn alloc_buffer<T>(n: usize) -> Result<*mut T> {
    if n == 0 {
        return Ok(std::ptr::null_mut());
    }
    let bytes = n.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| Error::value("container too large"))?;
    // SAFETY: plain allocation; checked for NULL below.
    let p = unsafe { libc::malloc(bytes) } as *mut T;
    if p.is_null() {
        return Err(Error::value(format!("out of memory allocating {bytes} bytes for a container")));
    }
    Ok(p)
}

/// tvm-ffi's `TVMFFISeqCell`, the payload of `ffi.Array` and `ffi.List`: elements as owned
/// `TVMFFIAny` values in a buffer of `capacity`, `size` of them used, freed by `data_deleter`.
/// Buffers made here are `malloc`ed with [`free_buffer`](free_buffer) as
/// their deleter (C++ code growing a list reuses it); foreign cells are read through the fields.
#[repr(C)]
pub struct SeqCell {
    data: *mut TVMFFIAny,
    size: i64,
    capacity: i64,
    data_deleter: Option<unsafe extern "C" fn(*mut std::ffi::c_void)>,
}

impl SeqCell {
    /// A cell owning `items` (each an owned value: its object reference passes to the cell).
    pub fn new(items: Vec<TVMFFIAny>) -> Result<Self> {
        let mut cell = SeqCell::with_capacity(items.len())?;
        for a in items {
            cell.push(a)?;
        }
        Ok(cell)
    }

    /// An empty cell with room for `n` elements.
    pub fn with_capacity(n: usize) -> Result<Self> {
        let mut cell = SeqCell { data: std::ptr::null_mut(), size: 0, capacity: 0, data_deleter: None };
        cell.reserve(n)?;
        Ok(cell)
    }

    /// The elements (views: the cell keeps them).
    pub fn items(&self) -> &[TVMFFIAny] {
        match usize::try_from(self.size) {
            // SAFETY: `data` holds `size` initialised elements (ours, or as a foreign cell says),
            // alive as long as the cell is unchanged.
            Ok(n) if n > 0 && !self.data.is_null() => unsafe { std::slice::from_raw_parts(self.data, n) },
            _ => &[],
        }
    }

    /// Makes room for `n` elements in all (moving them to a new buffer when needed).
    pub fn reserve(&mut self, n: usize) -> Result<()> {
        if n as i64 <= self.capacity {
            return Ok(());
        }
        let cap = n.max(4).max(self.capacity as usize * 2);
        let buf = alloc_buffer::<TVMFFIAny>(cap)?;
        let len = self.items().len();
        if len > 0 {
            // SAFETY: the `len` live elements move bit for bit into the new buffer (room for `cap`).
            unsafe { std::ptr::copy_nonoverlapping(self.data, buf, len) };
        }
        if let (Some(free), false) = (self.data_deleter, self.data.is_null()) {
            // SAFETY: the old buffer's own deleter; its elements were moved out above.
            unsafe { free(self.data as *mut std::ffi::c_void) };
        }
        (self.data, self.capacity) = (buf, cap as i64);
        self.data_deleter = Some(free_buffer);
        Ok(())
    }

    /// Appends an owned value.
    pub fn push(&mut self, a: TVMFFIAny) -> Result<()> {
        if !self.data.is_null() && (0..self.capacity).contains(&self.size) {
            // SAFETY: room for one more element after the `size` live ones.
            unsafe { self.data.add(self.size as usize).write(a) };
            self.size += 1;
            return Ok(());
        }
        self.insert(self.items().len(), a)
    }

    /// Inserts an owned value before position `i` (at most the length).
    pub fn insert(&mut self, i: usize, a: TVMFFIAny) -> Result<()> {
        let n = self.items().len();
        if i > n {
            // SAFETY: the value is ours to release.
            unsafe { super::object::header::release_any(&a) };
            return Err(Error::index(format!("insert position {i} out of range for a list of size {n}")));
        }
        self.reserve(n + 1)?;
        // SAFETY: room for n + 1 elements; later ones shift up one place.
        unsafe {
            if i < n {
                std::ptr::copy(self.data.add(i), self.data.add(i + 1), n - i);
            }
            self.data.add(i).write(a);
        }
        self.size += 1;
        Ok(())
    }

    /// Takes the elements of `range` out (owned by the caller now), closing the gap.
    pub fn drain(&mut self, range: std::ops::Range<usize>) -> Result<Vec<TVMFFIAny>> {
        let n = self.items().len();
        if range.start > range.end || range.end > n {
            return Err(Error::index(format!("range {range:?} out of range for a list of size {n}")));
        }
        let out = self.items()[range.clone()].to_vec();
        // SAFETY: the taken elements' places are closed by moving the tail down.
        unsafe { std::ptr::copy(self.data.add(range.end), self.data.add(range.start), n - range.end) };
        self.size -= range.len() as i64;
        Ok(out)
    }

    /// Replaces element `i` by an owned value, returning the old one (owned by the caller).
    pub fn replace(&mut self, i: usize, a: TVMFFIAny) -> Result<TVMFFIAny> {
        // SAFETY: `&mut self`: no one else reads or writes the cell meanwhile.
        unsafe { self.replace_unshared(i, a) }
    }

    /// [`replace`](Self::replace) through a shared reference (the elements live in the buffer the
    /// cell points to, not in the cell).
    ///
    /// # Safety
    /// No one else reads or writes the cell's elements meanwhile: the caller holds the only
    /// reference to the container, or the lock its other users take.
    pub unsafe fn replace_unshared(&self, i: usize, a: TVMFFIAny) -> Result<TVMFFIAny> {
        let n = self.items().len();
        if i >= n {
            // SAFETY: the value is ours to release.
            unsafe { super::object::header::release_any(&a) };
            return Err(Error::index(format!("index {i} out of range for a list of size {n}")));
        }
        // SAFETY: element `i` is live; the old value moves out to the caller.
        Ok(unsafe { std::ptr::replace(self.data.add(i), a) })
    }

    /// Reverses the elements in place.
    pub fn reverse(&mut self) {
        let n = self.items().len();
        if n > 1 {
            // SAFETY: `n` live elements, permuted in place.
            unsafe { std::slice::from_raw_parts_mut(self.data, n) }.reverse();
        }
    }
}

impl Drop for SeqCell {
    fn drop(&mut self) {
        for a in self.items() {
            // SAFETY: each element is owned by the cell, released once.
            unsafe { super::object::header::release_any(a) };
        }
        if let (Some(free), false) = (self.data_deleter, self.data.is_null()) {
            // SAFETY: the buffer's own deleter, called once.
            unsafe { free(self.data as *mut std::ffi::c_void) };
        }
    }
}

/// Payload of an `ffi.Array`: a sequence cell never changed after construction.
#[repr(transparent)]
pub struct FfiArrayObj(SeqCell);

// SAFETY: the elements are owned values of Send + Sync objects (or plain data), written after
// construction only by the holder of the array's only reference.
unsafe impl Send for FfiArrayObj {}
// SAFETY: as above (shared access is read-only: an array with two holders is never written).
unsafe impl Sync for FfiArrayObj {}

impl ObjectType for FfiArrayObj {
    const TYPE_INDEX: u32 = type_index::FFI_ARRAY;
    const LAYOUT_SHARED: bool = true;
}

impl InplaceObject for FfiArrayObj {
    type Elem = TVMFFIAny;
    fn tail_len(&self) -> usize {
        self.0.capacity as usize
    }
}

impl FfiArrayObj {
    /// An array owning `items` (each an owned value: its object reference passes to the array),
    /// held after its cell in the same block, as tvm-ffi lays out its own arrays: one allocation.
    /// The cell has no data deleter (the block is freed with the object).
    pub fn new(items: Vec<TVMFFIAny>) -> ObjPtr<FfiArrayObj> {
        let n = items.len();
        let cell = |first: *mut TVMFFIAny| {
            // SAFETY: room for `n` elements at `first`; the values move bit for bit (the vector
            // only frees its buffer, `TVMFFIAny` has no destructor).
            unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), first, n) };
            FfiArrayObj(SeqCell { data: first, size: n as i64, capacity: n as i64, data_deleter: None })
        };
        // SAFETY: `cell` writes the `n` elements the block has room for, and the array reports
        // its capacity, `n`, as its `tail_len`.
        unsafe { ObjPtr::new_inline_with(n, type_index::FFI_ARRAY, cell) }
    }

    /// An array of `n` values made in place by `make(i)` (each an owned value), with no list
    /// of them before it: the same one allocation. On an error the values made so far are
    /// released.
    pub fn try_from_fn(n: usize, mut make: impl FnMut(usize) -> Result<TVMFFIAny>) -> Result<ObjPtr<FfiArrayObj>> {
        let mut failed = None;
        let cell = |first: *mut TVMFFIAny| {
            let mut made = 0;
            while made < n {
                match make(made) {
                    // SAFETY: slot `made` of the `n` the block has room for.
                    Ok(a) => unsafe { first.add(made).write(a) },
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
                made += 1;
            }
            FfiArrayObj(SeqCell { data: first, size: made as i64, capacity: n as i64, data_deleter: None })
        };
        // SAFETY: the cell holds (and on drop releases) exactly the `made` values written, and
        // reports its capacity, `n`, as its `tail_len` (no element has a destructor).
        let array = unsafe { ObjPtr::new_inline_with(n, type_index::FFI_ARRAY, cell) };
        failed.map_or(Ok(array), Err)
    }

    /// The elements (views: the array keeps them).
    pub fn items(&self) -> &[TVMFFIAny] {
        self.0.items()
    }

    /// Replaces element `i` by an owned value and returns the old one (owned by the caller):
    /// tvm-ffi's in-place write to an array nobody else holds.
    ///
    /// # Safety
    /// The caller holds the array's only reference, so no one else reads it meanwhile.
    pub unsafe fn replace_unshared(&self, i: usize, a: TVMFFIAny) -> Result<TVMFFIAny> {
        // SAFETY: the caller's promise.
        unsafe { self.0.replace_unshared(i, a) }
    }
}

/// A plain `ffi.Object` (no payload), for sentinels such as tvm-ffi's missing and kwargs objects.
pub struct PlainObj;

impl ObjectType for PlainObj {
    const TYPE_INDEX: u32 = type_index::ROOT;
}

/// Payload of an `Array`: TVM's `ArrayNode`, `{int64_t size_; int64_t capacity_;}` followed in
/// the same block by the items (`ObjectRef`s, one nullable `Object*` each).
#[repr(C)]
pub struct ArrayObj {
    size: i64,
    capacity: i64,
}

impl ObjectType for ArrayObj {
    const TYPE_INDEX: u32 = type_index::ARRAY;
    /// TVM 0.18's `ArrayNode` layout, which C code may build itself (c_tests/test_object_layout.c).
    const LAYOUT_SHARED: bool = true;
}

impl InplaceObject for ArrayObj {
    type Elem = Option<LegacyRef>;
    fn tail_len(&self) -> usize {
        usize::try_from(self.size).unwrap_or(0)
    }
}

/// An array object of `items`.
pub fn array_object(items: Vec<ObjectRef>) -> ObjectRef {
    let n = items.len() as i64;
    ObjPtr::new_inplace(ArrayObj { size: n, capacity: n }, items.into_iter().map(|i| Some(LegacyRef::new(i))).collect())
        .to_object_ref()
}

/// Payload of a `Map` with string keys, in insertion order (made by the global `runtime.Map`).
pub struct MapObj(pub Vec<(String, ObjectRef)>);

impl ObjectType for MapObj {
    const TYPE_INDEX: u32 = type_index::MAP;
}

impl MapObj {
    pub fn get(&self, key: &str) -> Option<&ObjectRef> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// A string object.
pub fn string_object(s: &str) -> ObjectRef {
    StringObj::new(s).to_object_ref()
}

/// A map object from string keys and objects.
pub fn map_object(entries: Vec<(String, ObjectRef)>) -> ObjectRef {
    ObjPtr::new(MapObj(entries)).to_object_ref()
}

/// Payload of a `runtime.ShapeTuple`: TVM's `ShapeTupleObj`.
#[repr(transparent)]
pub struct ShapeTupleObj(SliceObj<i64>);

impl ShapeTupleObj {
    pub fn new(dims: &[i64]) -> ObjPtr<ShapeTupleObj> {
        slice_object(dims, ShapeTupleObj)
    }

    /// The payload of a shape tuple whose `dims` and a terminating 0 are copied to `first`, its
    /// inline elements (`dims.len() + 1` of them, its `tail_len`).
    ///
    /// # Safety
    /// `first` has room for `dims.len() + 1` values.
    pub unsafe fn inline(dims: &[i64], first: *mut i64) -> Self {
        // SAFETY: the caller's promise.
        ShapeTupleObj(unsafe { SliceObj::inline(dims, first) })
    }

    pub fn dims(&self) -> Result<&[i64]> {
        self.0.items("runtime.ShapeTuple")
    }

    /// The address of the first dimension (TVM's `data` field), for a tuple made by `inline`:
    /// its elements in the block, never NULL.
    pub fn first(&self) -> *mut i64 {
        self.0.data as *mut i64
    }
}

impl ObjectType for ShapeTupleObj {
    const TYPE_INDEX: u32 = type_index::SHAPE_TUPLE;
    const LAYOUT_SHARED: bool = true;
}

impl InplaceObject for ShapeTupleObj {
    type Elem = i64;
    fn tail_len(&self) -> usize {
        self.0.inline_len()
    }
}

/// A shape tuple object.
pub fn shape_object(shape: &[i64]) -> ObjectRef {
    ShapeTupleObj::new(shape).to_object_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::function::packed::Value;
    use crate::runtime::object::header::{Obj, ObjectHeader};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Offset of a field from the TVM 0.18 handle of its object (8 bytes into the tvm-ffi
    /// header, whose offsets are 8 more).
    fn offset<T>(header: *mut ObjectHeader, field: *const T) -> usize {
        field as usize - crate::runtime::object::header::legacy::handle(header) as usize
    }

    #[test]
    fn big_ints_order_by_value() {
        use std::cmp::Ordering::*;
        let (two_64, minus_two_64) = ([0i64, 1], [0i64, -1]);
        assert_eq!(compare_big_ints(&two_64, &[1, 1]), Less);
        assert_eq!(compare_big_ints(&minus_two_64, &two_64), Less);
        assert_eq!(compare_big_ints(&[-1, -1, 5], &two_64), Greater, "more words, positive: larger");
        assert_eq!(compare_big_ints(&[0, 0, -5], &minus_two_64), Less, "more words, negative: smaller");
        assert_eq!(compare_big_ints(&[-1, 0], &[1, 0]), Greater, "lower words compare unsigned");
        assert_eq!(compare_big_ints(&two_64, &two_64), Equal);
        let words = big_int_words(&big_int(vec![0, 1, 0]).to_object_ref()).unwrap();
        assert_eq!(words, vec![0, 1], "read back normalized");
    }

    #[test]
    fn an_array_made_in_place_releases_what_it_made_when_a_value_fails() {
        use crate::runtime::object::header::{retain, strong_count};
        let shape = ShapeTupleObj::new(&[4]);
        let h = shape.as_header();
        let make = |i: usize| match i {
            // SAFETY: a live object; the new reference goes into the array.
            0 | 1 => Ok(unsafe { retain(h) }).map(|_| TVMFFIAny::ptr(type_index::SHAPE_TUPLE as i32, h as *const _)),
            _ => Err(Error::value("no third value")),
        };
        let err = FfiArrayObj::try_from_fn(3, make).unwrap_err();
        assert!(err.to_string().contains("no third value"), "{err}");
        // SAFETY: `shape` keeps it alive.
        assert_eq!(unsafe { strong_count(h) }, 1, "both references the array took were released");
        let array = FfiArrayObj::try_from_fn(2, make).unwrap();
        assert_eq!(array.items().len(), 2);
        // SAFETY: as above.
        assert_eq!(unsafe { strong_count(h) }, 3);
        drop(array);
        // SAFETY: as above.
        assert_eq!(unsafe { strong_count(h) }, 1);
    }

    #[test]
    fn strings_and_shape_tuples_have_tvm_layout() {
        assert_eq!(size_of::<Obj<StringObj>>(), 40);
        assert_eq!(size_of::<Obj<ShapeTupleObj>>(), 40);
        for text in ["héllo", ""] {
            let s = StringObj::new(text);
            assert_eq!(offset(s.as_header(), &s.0.data), 16);
            assert_eq!(offset(s.as_header(), &s.0.size), 24);
            assert_eq!(s.0.size, text.len() as u64);
            // SAFETY: our strings are NUL-terminated (what this checks) and live while `s` is.
            let c = unsafe { std::ffi::CStr::from_ptr(s.0.data) };
            assert_eq!(c.to_bytes(), text.as_bytes());
        }
        for dims in [&[2, -3, 1 << 40][..], &[]] {
            let t = ShapeTupleObj::new(dims);
            assert_eq!(offset(t.as_header(), &t.0.data), 16);
            assert_eq!(offset(t.as_header(), &t.0.size), 24);
            assert!(!t.0.data.is_null());
            assert_eq!(t.dims().unwrap(), dims);
            assert_eq!(t.dims().unwrap().as_ptr(), t.0.data);
        }
    }

    #[test]
    fn array_items_follow_the_node_inline() {
        assert_eq!(size_of::<Obj<ArrayObj>>(), 40);
        assert_eq!(size_of::<Option<LegacyRef>>(), size_of::<*mut ObjectHeader>());
        let items = vec![string_object("a"), shape_object(&[1]), string_object("c")];
        let arr = array_object(items.clone()).downcast::<ArrayObj>().unwrap();
        let h = arr.as_header();
        assert_eq!((offset(h, &arr.size), offset(h, &arr.capacity)), (16, 24));
        assert_eq!((arr.size, arr.capacity), (3, 3));
        assert_eq!(offset(h, arr.tail().as_ptr()), 32);
        for (slot, item) in arr.tail().iter().zip(&items) {
            assert_eq!(slot.as_ref().unwrap().get().as_header(), item.as_header());
        }
        assert_eq!(items[0].downcast::<StringObj>().unwrap().ref_count(), 3); // items, array, this
        drop(arr);
        assert_eq!(items[0].downcast::<StringObj>().unwrap().ref_count(), 2);
        let empty = array_object(Vec::new()).downcast::<ArrayObj>().unwrap();
        assert!(empty.tail().is_empty());
    }

    /// An `ffi.String` as foreign code compiled against tvm-ffi's headers makes one: its own
    /// allocation and deleter (taking flags), and `size` bytes of data with no NUL after them.
    #[repr(C)]
    struct ForeignString {
        header: ObjectHeader,
        data: *const u8,
        size: u64,
    }

    static FOREIGN_FREED: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn free_foreign(h: *mut std::ffi::c_void, flags: std::ffi::c_int) {
        assert_eq!(flags, crate::runtime::object::header::DELETE_BOTH, "no weak reference was taken");
        // SAFETY: installed only on boxes of `ForeignString` made by `foreign_string`.
        drop(unsafe { Box::from_raw(h as *mut ForeignString) });
        FOREIGN_FREED.fetch_add(1, Ordering::SeqCst);
    }

    fn foreign_string(data: *const u8, size: u64) -> ObjectRef {
        let header = ObjectHeader::new(type_index::STRING, free_foreign);
        let raw = Box::into_raw(Box::new(ForeignString { header, data, size }));
        // SAFETY: a live object with the object header, whose one reference passes over.
        unsafe { ObjectRef::from_raw(raw as *mut ObjectHeader) }
    }

    #[test]
    fn foreign_strings_are_read_through_tvm_fields() {
        let before = FOREIGN_FREED.load(Ordering::SeqCst);
        let s = foreign_string(b"keyXYZ".as_ptr(), 3);
        assert_eq!(Value::Object(s.clone()).into_string().unwrap(), "key");
        let map = map_object(vec![("k".into(), s.clone())]);
        drop(s);
        assert_eq!(FOREIGN_FREED.load(Ordering::SeqCst), before);
        drop(map);
        assert_eq!(FOREIGN_FREED.load(Ordering::SeqCst), before + 1);
        let bad = foreign_string(std::ptr::null(), 4);
        let err = Value::Object(bad).into_string().unwrap_err();
        assert!(err.message().contains("runtime.String") && err.message().contains("size 4"), "{}", err.message());
    }
}
