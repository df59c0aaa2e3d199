//! Reference-counted objects in tvm-ffi's layout, seen by TVM 0.18's ABI 8 bytes in.
//!
//! Every object is a block from `malloc`: [`AllocHeader`] (8 bytes, tvm-ffi's
//! `TVMFFIObjectAllocHeader`), then the 24-byte [`ObjectHeader`] (tvm-ffi's `TVMFFIObject`:
//! combined strong/weak count, type index, deleter taking flags), then the payload `T` of
//! [`Obj<T>`]. A tvm-ffi handle is the header's address; a TVM 0.18 handle is the same object
//! seen 8 bytes in ([`legacy`]), where 0.18's type index, deleter and payload fall on tvm-ffi's.
//! Type indices are tvm-ffi's (the table is `type_table.rs`); [`legacy`] translates 0.18's static
//! ones (docs/ARCHITECTURE.md, "Two ABIs, one object model").
//!
//! One file of about 1 000 lines (a tenth of them tests), on purpose: the header, the typed and
//! untyped references and the 0.18 view name one another (a reference is released through the
//! header's deleter, every reference hands out its 0.18 handle, the 0.18 view is the header 8
//! bytes in), so split they would import in a circle. The type table, which needs none of them,
//! is `type_table.rs`.

use crate::runtime::object::live;
use crate::runtime::object::type_table::type_index;
use crate::runtime::object::type_table::type_key_of;
use std::alloc::Layout;
use std::ffi::{c_int, c_void};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// tvm-ffi's `TVMFFIObjectAllocHeader`, right before every object: `delete_space` is NULL, our
/// deleters free the block themselves.
#[repr(C)]
pub struct AllocHeader {
    pub delete_space: Option<unsafe extern "C" fn(*mut c_void)>,
}

/// The deleter's `flags`: drop the payload (strong count reached zero), free the block (weak).
pub const DELETE_STRONG: c_int = 1;
pub const DELETE_WEAK: c_int = 2;
pub const DELETE_BOTH: c_int = DELETE_STRONG | DELETE_WEAK;
const STRONG_ONE: u64 = 1;
const WEAK_ONE: u64 = 1 << 32;
const BOTH_ONE: u64 = STRONG_ONE | WEAK_ONE;
const COUNT_MASK: u64 = (1 << 32) - 1;

/// A deleter as tvm-ffi calls it: the object (tvm-ffi handle) and the `DELETE_*` flags.
pub type Deleter = unsafe extern "C" fn(*mut c_void, c_int);

/// tvm-ffi's `TVMFFIObject` (24 bytes), which every object starts with.
#[repr(C)]
pub struct ObjectHeader {
    /// Strong count in the low 32 bits, weak count in the high 32.
    pub combined_ref_count: AtomicU64,
    pub type_index: u32,
    /// tvm-ffi's `__padding`, where TVM 0.18's view has its (unused) counter: [`MADE_HERE`] in
    /// objects made by this runtime.
    pub padding: u32,
    pub deleter: Option<Deleter>,
}

impl ObjectHeader {
    /// The header of a new object of type `type_index`: one strong and one weak reference.
    pub fn new(type_index: u32, deleter: Deleter) -> Self {
        ObjectHeader {
            combined_ref_count: AtomicU64::new(BOTH_ONE),
            type_index,
            padding: MADE_HERE,
            deleter: Some(deleter),
        }
    }
}

/// A payload type that can live inside an object.
pub trait ObjectType: Send + Sync + 'static {
    const TYPE_INDEX: u32;
    /// Whether objects of this type index made by foreign code (tvm-ffi's C++ headers) have
    /// this payload's layout in every field this runtime reads, so they may be read as `Self`
    /// (strings, bytes, shapes, big integers, a function's or an error's cell). Otherwise only
    /// objects made here are (their header carries [`MADE_HERE`]).
    const LAYOUT_SHARED: bool = false;
}

pub use crate::runtime::object::live::MADE_HERE;

/// Header plus payload, laid out as in C (the payload at offset 24).
#[repr(C)]
pub struct Obj<T> {
    header: ObjectHeader,
    pub data: T,
}

/// The type index a dead object's header shows while its memory is held back (checked mode).
pub const DEAD_TYPE_INDEX: u32 = u32::MAX;

/// Objects whose payload `T` is followed in the same block by `tail_len()` elements of `Elem`
/// (TVM's `InplaceArrayBase`, e.g. an `ArrayNode`'s items), made by [`ObjPtr::new_inplace`].
pub trait InplaceObject: ObjectType {
    type Elem;
    /// The number of elements after the payload (objects made here have exactly that many slots).
    fn tail_len(&self) -> usize;
}

/// Offset of the object header in its block.
const HEADER_OFFSET: usize = size_of::<AllocHeader>();

/// The block of an `Obj<T>` (after its allocation header) followed by `n` elements of `E`, and
/// the offset of the first element from the object header.
fn block_layout<T, E>(n: usize) -> (Layout, usize) {
    const { assert!(align_of::<Obj<T>>() <= 8, "a payload sits 24 bytes after the header") };
    let (with_tail, offset) = Layout::new::<Obj<T>>()
        .extend(Layout::array::<E>(n).expect("element count of an existing Vec"))
        .expect("element count of an existing Vec");
    let size = HEADER_OFFSET + with_tail.size();
    (Layout::from_size_align(size, 16).expect("an object's size fits"), offset)
}

/// A fresh block for an object of `layout` (from [`block_layout`]); returns the header's place.
fn alloc_block(layout: Layout) -> NonNull<ObjectHeader> {
    // SAFETY: malloc of a non-zero size; 16-byte aligned on the platforms we build for, which
    // `block_layout` asks no more than.
    let block = unsafe { libc::malloc(layout.size()) } as *mut u8;
    let Some(block) = NonNull::new(block) else { std::alloc::handle_alloc_error(layout) };
    // SAFETY: the block has room for the allocation header at its start and the object after.
    unsafe {
        (block.as_ptr() as *mut AllocHeader).write(AllocHeader { delete_space: None });
        NonNull::new_unchecked(block.as_ptr().add(HEADER_OFFSET) as *mut ObjectHeader)
    }
}

/// Return a dead object's block (its payload already dropped) to `malloc`, or with checked
/// handles hold it back, so the next object does not get this address while a stale handle to it
/// may still be around.
///
/// # Safety
/// `header` must be the header of a block from [`alloc_block`] whose counts both reached zero;
/// it is not used again by the caller.
unsafe fn free_block(header: *mut ObjectHeader) {
    let block = (header as *mut u8).wrapping_sub(HEADER_OFFSET);
    if live::checking() {
        // SAFETY: the block is still allocated (contract above) and is handed over once.
        unsafe {
            (*header).type_index = DEAD_TYPE_INDEX;
            live::quarantine(block);
        }
    } else {
        // SAFETY: allocated by `malloc` in `alloc_block`, freed once (contract above).
        unsafe { libc::free(block as *mut c_void) };
    }
}

unsafe extern "C" fn delete_obj<T>(header: *mut c_void, flags: c_int) {
    let obj = header as *mut Obj<T>;
    // SAFETY: installed only by `ObjPtr::<T>::new` (an `Obj<T>` in a block of `alloc_block`);
    // tvm-ffi's protocol calls it once with the strong flag (the payload is dropped once) and
    // once with the weak flag (the block is freed once), or once with both.
    unsafe {
        if flags & DELETE_STRONG != 0 {
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*obj).data));
        }
        if flags & DELETE_WEAK != 0 {
            free_block(header as *mut ObjectHeader);
        }
    }
}

/// The tail of an object made by [`ObjPtr::new_with_tail`] with a payload `T` and a tail `X`.
///
/// # Safety
/// `header` is such an object's header; the tail lives as long as the object.
pub unsafe fn tail_of<T, X>(header: *mut c_void) -> *const X {
    // SAFETY: the tail lies at this offset in the object's block (the caller's promise).
    unsafe { (header as *const u8).add(block_layout::<T, X>(1).1) as *const X }
}

unsafe extern "C" fn delete_with_tail<T, X>(header: *mut c_void, flags: c_int) {
    let obj = header as *mut Obj<T>;
    // SAFETY: installed only by `ObjPtr::new_with_tail`; called as `delete_obj` is (payload,
    // then tail, dropped once with the strong flag; the block freed once with the weak one).
    unsafe {
        if flags & DELETE_STRONG != 0 {
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*obj).data));
            std::ptr::drop_in_place(tail_of::<T, X>(header) as *mut X);
        }
        if flags & DELETE_WEAK != 0 {
            free_block(header as *mut ObjectHeader);
        }
    }
}

unsafe extern "C" fn delete_inplace<T: InplaceObject>(header: *mut c_void, flags: c_int) {
    let obj = header as *mut Obj<T>;
    // SAFETY: installed only by `ObjPtr::<T>::new_inplace`, which wrote `tail_len()` elements
    // at `block_layout`'s offset; called as `delete_obj` is (payload and elements dropped once,
    // with the strong flag, before the block is freed).
    unsafe {
        if flags & DELETE_STRONG != 0 {
            let n = (*obj).data.tail_len();
            let (_, offset) = block_layout::<T, T::Elem>(n);
            let first = (header as *mut u8).add(offset) as *mut T::Elem;
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(first, n));
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*obj).data));
        }
        if flags & DELETE_WEAK != 0 {
            free_block(header as *mut ObjectHeader);
        }
    }
}

/// A companion object in its main object's block (see [`ObjPtr::new_with_companion`]): its own
/// allocation header (NULL `delete_space`, as before every object), then the object.
#[repr(C)]
struct CompanionSlot<C> {
    alloc: AllocHeader,
    obj: Obj<C>,
}

/// Offset of a companion's header from its main object's header, and of the companion's first
/// element from the companion's header (where [`ObjPtr::tail`] looks for it, as in a block of
/// its own).
fn companion_offsets<T, C: InplaceObject>() -> (usize, usize) {
    let (_, slot) = Layout::new::<Obj<T>>().extend(Layout::new::<CompanionSlot<C>>()).expect("fixed sizes");
    let (_, elems) = block_layout::<C, C::Elem>(0);
    (slot + HEADER_OFFSET, elems)
}

/// The deleter of an object made with a companion: with the strong flag its payload is dropped
/// (it does not release the companion); with the weak flag it lets go of the companion, whose
/// own weak deleter frees the block. So the block lives while either object does.
unsafe extern "C" fn delete_with_companion<T: ObjectType, C: InplaceObject>(header: *mut c_void, flags: c_int) {
    let obj = header as *mut Obj<T>;
    // SAFETY: installed only by `new_with_companion`: an `Obj<T>` whose companion sits at the
    // fixed offset, the reference to it held by this object until this weak call. After the
    // release nothing of the block is touched (it may be freed by then).
    unsafe {
        if flags & DELETE_STRONG != 0 {
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*obj).data));
        }
        if flags & DELETE_WEAK != 0 {
            let (companion, _) = companion_offsets::<T, C>();
            let companion = (header as *mut u8).add(companion) as *mut ObjectHeader;
            // The usual case: nobody else holds the companion, which has nothing to drop; its
            // release would only come back to free the block (`release`'s unshared test, and
            // its own deleter's). Else it is released as any object.
            let alone = (*companion).combined_ref_count.load(Ordering::Acquire) == BOTH_ONE
                && !std::mem::needs_drop::<C>()
                && !std::mem::needs_drop::<C::Elem>()
                && !live::checking();
            if alone {
                free_block(header as *mut ObjectHeader);
            } else {
                release(companion);
            }
        }
    }
}

/// The deleter of a companion: its payload and elements dropped with the strong flag, and with
/// the weak flag its main object's block freed (the main object let go of it last).
unsafe extern "C" fn delete_companion<T: ObjectType, C: InplaceObject>(header: *mut c_void, flags: c_int) {
    let obj = header as *mut Obj<C>;
    let (companion, elems) = companion_offsets::<T, C>();
    // SAFETY: installed only by `new_with_companion` on the companion at `companion` bytes
    // after its main object's header, its `tail_len()` elements at `elems` after its own.
    unsafe {
        if flags & DELETE_STRONG != 0 {
            let first = (header as *mut u8).add(elems) as *mut C::Elem;
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(first, (*obj).data.tail_len()));
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*obj).data));
        }
        if flags & DELETE_WEAK != 0 {
            free_block((header as *mut u8).sub(companion) as *mut ObjectHeader);
        }
    }
}

/// An owning, typed reference to an object (like `Arc<T>`, with the C header): one pointer.
#[repr(transparent)]
pub struct ObjPtr<T: ObjectType> {
    ptr: NonNull<Obj<T>>,
    _marker: PhantomData<Obj<T>>,
}

// SAFETY: the payload is Send + Sync and the refcount is atomic.
unsafe impl<T: ObjectType> Send for ObjPtr<T> {}
// SAFETY: as above.
unsafe impl<T: ObjectType> Sync for ObjPtr<T> {}

impl<T: ObjectType> ObjPtr<T> {
    pub fn new(data: T) -> Self {
        Self::new_as(data, T::TYPE_INDEX)
    }

    /// A new object of type index `index`, a subtype sharing `T`'s layout (tvm-ffi's opaque
    /// objects, made at whatever opaque type the caller names).
    pub fn new_as(data: T, index: u32) -> Self {
        let (layout, _) = block_layout::<T, ()>(0);
        let header = alloc_block(layout);
        let ptr = header.cast::<Obj<T>>();
        // SAFETY: a fresh block with room for `Obj<T>` at the header's place, suitably aligned.
        unsafe { ptr.as_ptr().write(Obj { header: ObjectHeader::new(index, delete_obj::<T>), data }) };
        Self::adopt(ptr)
    }

    /// A new object whose block also holds `tail`, after the payload (a function's closure beside
    /// its cell: one allocation where a box would make two). The tail is dropped after the
    /// payload; [`tail_of`] finds it from the header.
    pub fn new_with_tail<X: Send + Sync>(data: T, tail: X) -> Self {
        const { assert!(align_of::<X>() <= 8, "a tail is 8-byte aligned at most, as the header is") };
        let (layout, offset) = block_layout::<T, X>(1);
        let header = alloc_block(layout);
        let ptr = header.cast::<Obj<T>>();
        // SAFETY: a fresh block with room for `Obj<T>` at the header and one `X` at `offset`
        // after it, both aligned (the layout above).
        unsafe {
            (header.as_ptr() as *mut u8).add(offset).cast::<X>().write(tail);
            ptr.as_ptr().write(Obj { header: ObjectHeader::new(T::TYPE_INDEX, delete_with_tail::<T, X>), data });
        }
        Self::adopt(ptr)
    }

    /// Take the first reference to a new object.
    fn adopt(ptr: NonNull<Obj<T>>) -> Self {
        if live::checking() {
            live::register(ptr.as_ptr() as usize);
        }
        ObjPtr { ptr, _marker: PhantomData }
    }

    /// Address of the header: the tvm-ffi handle of this object.
    pub fn as_header(&self) -> *mut ObjectHeader {
        self.ptr.as_ptr() as *mut ObjectHeader
    }

    /// Give up this reference as an owned tvm-ffi value (the object under its own type index).
    pub fn into_any(self) -> crate::abi::TVMFFIAny {
        // SAFETY: the object is live (we hold a reference).
        let index = unsafe { (*self.as_header()).type_index };
        crate::abi::TVMFFIAny::ptr(index as i32, self.into_raw() as *const c_void)
    }

    /// Give up this reference and return the header (one owned reference travels with it).
    pub fn into_raw(self) -> *mut ObjectHeader {
        let p = self.as_header();
        std::mem::forget(self);
        p
    }

    /// The TVM 0.18 handle of this object (borrowed).
    pub fn legacy_handle(&self) -> *mut c_void {
        legacy::handle(self.as_header())
    }

    /// Give up this reference and return the TVM 0.18 handle it travels with.
    pub fn into_legacy(self) -> *mut c_void {
        legacy::handle(self.into_raw())
    }

    /// Take over one owned reference from a header.
    ///
    /// # Safety
    /// `header` must be non-null and point to a live object laid out as `Obj<T>` (header followed
    /// by a `T` payload, e.g. made by [`ObjPtr::new`]), and the caller must own one reference to
    /// it, which passes to the returned pointer (it is released on drop).
    pub unsafe fn from_raw(header: *mut ObjectHeader) -> Self {
        // SAFETY: `header` is non-null by this function's contract (`# Safety` above).
        let ptr = unsafe { NonNull::new_unchecked(header as *mut Obj<T>) };
        ObjPtr { ptr, _marker: PhantomData }
    }

    /// A new reference to a live object of type `T` from a borrowed header.
    ///
    /// # Safety
    /// `header` must be non-null and point to a live object laid out as `Obj<T>`, kept alive by
    /// some reference for the duration of this call. The caller keeps its own reference.
    pub unsafe fn from_borrowed(header: *mut ObjectHeader) -> Self {
        // SAFETY: `header` is live by this function's contract; the new count is the reference
        // handed to `from_raw`, whose layout requirement is ours as well.
        unsafe {
            retain(header);
            Self::from_raw(header)
        }
    }

    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.ptr == b.ptr
    }

    /// The strong reference count.
    pub fn ref_count(&self) -> i32 {
        // SAFETY: we hold a reference, so the header is live.
        unsafe { strong_count(self.as_header()) }
    }

    /// An untyped reference to the same object.
    pub fn to_object_ref(&self) -> ObjectRef {
        // SAFETY: the object is live (we hold a reference).
        unsafe { ObjectRef::from_borrowed(self.as_header()) }
    }
}

impl<T: InplaceObject> ObjPtr<T> {
    /// A new object whose payload `data` is followed by `elems` in the same block; `data` must
    /// report `elems.len()` as its `tail_len`.
    pub fn new_inplace(data: T, elems: Vec<T::Elem>) -> Self {
        assert_eq!(data.tail_len(), elems.len(), "an inline object's payload counts its elements");
        Self::new_inplace_as(data, elems, T::TYPE_INDEX)
    }

    /// As [`new_inplace`](Self::new_inplace), at type index `index` (a type sharing `T`'s
    /// layout, such as a reflected type whose fields are the elements); `data.tail_len()` is
    /// asked only once the object is in place (it may read the object's header).
    pub fn new_inplace_as(data: T, elems: Vec<T::Elem>, index: u32) -> Self {
        let (layout, offset) = block_layout::<T, T::Elem>(elems.len());
        let header = alloc_block(layout);
        let ptr = header.cast::<Obj<T>>();
        // SAFETY: the fresh block has room for `Obj<T>` at the header's place and `elems` at
        // `offset` from it (`block_layout`), both suitably aligned; each slot is written once.
        unsafe {
            ptr.as_ptr().write(Obj { header: ObjectHeader::new(index, delete_inplace::<T>), data });
            let first = (header.as_ptr() as *mut u8).add(offset) as *mut T::Elem;
            for (i, e) in elems.into_iter().enumerate() {
                first.add(i).write(e);
            }
        }
        Self::adopt(ptr)
    }

    /// A new object of type index `index` whose `n` elements follow the payload in the same
    /// block (one allocation): `init` gets the address of the first, writes all `n`, and returns
    /// the payload, which may keep that address (a `{data, size}` cell over its own elements).
    ///
    /// # Safety
    /// `init` must write `n` elements from the address it gets, and the payload it returns must
    /// report `n` as its `tail_len`.
    pub unsafe fn new_inline_with(n: usize, index: u32, init: impl FnOnce(*mut T::Elem) -> T) -> Self {
        let (layout, offset) = block_layout::<T, T::Elem>(n);
        let header = alloc_block(layout);
        let ptr = header.cast::<Obj<T>>();
        // SAFETY: the fresh block has room for `n` elements at `offset` from the header
        // (`block_layout`), which `init` writes (caller contract), and for `Obj<T>` at the
        // header's place, written once here.
        unsafe {
            let data = init((header.as_ptr() as *mut u8).add(offset) as *mut T::Elem);
            ptr.as_ptr().write(Obj { header: ObjectHeader::new(index, delete_inplace::<T>), data });
        }
        Self::adopt(ptr)
    }

    /// A new object of `M` and, in the same block after it, this type's object with `n`
    /// elements, which `init` writes at the pointer it gets and describes: one allocation for
    /// two objects (an array and its shape tuple). `make` gets the companion's only reference and
    /// must keep it, unreleased, in the main object (the main object's weak deleter releases
    /// it; the companion's frees the block, so the block lives while either object does).
    ///
    /// # Safety
    /// `init` writes the `n` elements and its payload reports `n` as its `tail_len`; the payload
    /// `make` returns holds the companion reference without releasing it when dropped.
    #[inline(always)]
    pub unsafe fn new_with_companion<M: ObjectType>(
        n: usize,
        init: impl FnOnce(*mut T::Elem) -> T,
        make: impl FnOnce(ObjPtr<T>) -> M,
    ) -> ObjPtr<M> {
        let (main, slot) = Layout::new::<Obj<M>>().extend(Layout::new::<CompanionSlot<T>>()).expect("fixed sizes");
        let (with_tail, _) = main.extend(Layout::array::<T::Elem>(n).expect("element count")).expect("object size");
        let layout = Layout::from_size_align(HEADER_OFFSET + with_tail.size(), 16).expect("an object's size fits");
        let (companion_at, elems_at) = companion_offsets::<M, T>();
        debug_assert_eq!(companion_at, slot + HEADER_OFFSET);
        let header = alloc_block(layout);
        // SAFETY: the block has room for `Obj<M>` at the header, a companion slot after it and
        // the `n` elements after the companion's object, all aligned (the layout above); each
        // is written once, the companion before the main object that refers to it.
        unsafe {
            let base = header.as_ptr() as *mut u8;
            let c = base.add(companion_at);
            (c.sub(HEADER_OFFSET) as *mut AllocHeader).write(AllocHeader { delete_space: None });
            let data = init(c.add(elems_at) as *mut T::Elem);
            let c = c as *mut Obj<T>;
            c.write(Obj { header: ObjectHeader::new(T::TYPE_INDEX, delete_companion::<M, T>), data });
            let main = make(ObjPtr { ptr: NonNull::new_unchecked(c), _marker: PhantomData });
            let m = header.cast::<Obj<M>>();
            m.as_ptr()
                .write(Obj { header: ObjectHeader::new(M::TYPE_INDEX, delete_with_companion::<M, T>), data: main });
            // Both taken at once (one test of the mode).
            if live::checking() {
                live::register(c as usize);
                live::register(m.as_ptr() as usize);
            }
            ObjPtr { ptr: m, _marker: PhantomData }
        }
    }

    /// The elements after the payload.
    pub fn tail(&self) -> &[T::Elem] {
        let (_, offset) = block_layout::<T, T::Elem>(0);
        // SAFETY: an object of an inline type holds `tail_len()` initialised elements at this
        // offset (made by `new_inplace`, or by foreign code with the same C layout); they live
        // as long as the reference we hold.
        unsafe {
            let first = (self.as_header() as *const u8).add(offset) as *const T::Elem;
            std::slice::from_raw_parts(first, self.tail_len())
        }
    }
}

impl<T: ObjectType> std::ops::Deref for ObjPtr<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the object stays alive while this reference exists.
        unsafe { &self.ptr.as_ref().data }
    }
}

impl<T: ObjectType> std::fmt::Debug for ObjPtr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Object({}, {:p})", type_key_of(T::TYPE_INDEX), self.as_header())
    }
}

impl<T: ObjectType> Clone for ObjPtr<T> {
    fn clone(&self) -> Self {
        // SAFETY: live object; the new reference is owned by the clone.
        unsafe { Self::from_borrowed(self.as_header()) }
    }
}

impl<T: ObjectType> Drop for ObjPtr<T> {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { release(self.as_header()) }
    }
}

/// An owned reference kept as the object's TVM 0.18 handle, for a field that code compiled
/// against TVM 0.18's headers reads as an `Object*` (a 0.18 `Array`'s items).
#[repr(transparent)]
pub struct LegacyRef {
    handle: NonNull<c_void>,
}

// SAFETY: an `ObjectRef` in another form (Send + Sync payloads, atomic count).
unsafe impl Send for LegacyRef {}
// SAFETY: as above.
unsafe impl Sync for LegacyRef {}

impl LegacyRef {
    pub fn new(r: ObjectRef) -> Self {
        LegacyRef { handle: NonNull::new(r.into_legacy()).expect("an object's handle is not NULL") }
    }
    fn header(&self) -> *mut ObjectHeader {
        legacy::header(self.handle.as_ptr())
    }
    /// A new reference to the same object.
    pub fn get(&self) -> ObjectRef {
        // SAFETY: the object is live (we hold a reference).
        unsafe { ObjectRef::from_borrowed(self.header()) }
    }
}

impl Drop for LegacyRef {
    fn drop(&mut self) {
        // SAFETY: we own one reference (taken over from the `ObjectRef` in `new`).
        unsafe { release(self.header()) }
    }
}

/// [`LegacyRef`] to an object of type `T` (an NDArray's `shape_`).
#[repr(transparent)]
pub struct LegacyPtr<T: ObjectType> {
    inner: LegacyRef,
    _marker: PhantomData<ObjPtr<T>>,
}

impl<T: ObjectType> LegacyPtr<T> {
    pub fn new(p: ObjPtr<T>) -> Self {
        // SAFETY: the reference `into_raw` gives up passes to the `ObjectRef`.
        let inner = LegacyRef::new(unsafe { ObjectRef::from_raw(p.into_raw()) });
        LegacyPtr { inner, _marker: PhantomData }
    }
    /// An untyped reference to the same object.
    pub fn to_object_ref(&self) -> ObjectRef {
        self.inner.get()
    }
}

impl<T: ObjectType> std::ops::Deref for LegacyPtr<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: made from an `ObjPtr<T>` whose reference we hold: a live `Obj<T>`.
        unsafe { &(*(self.inner.header() as *const Obj<T>)).data }
    }
}

/// The strong count of a live object.
///
/// # Safety
/// `header` must point to a live object.
pub unsafe fn strong_count(header: *mut ObjectHeader) -> i32 {
    // SAFETY: live by this function's contract.
    (unsafe { (*header).combined_ref_count.load(Ordering::Relaxed) } & COUNT_MASK) as i32
}

/// Add a strong reference.
///
/// # Safety
/// `header` must be non-null and point to a live object (one whose count is at least one and
/// stays so for the duration of the call). The caller then owns the added reference.
pub unsafe fn retain(header: *mut ObjectHeader) {
    // SAFETY: `header` points to a live object by this function's contract; the count is atomic.
    unsafe { (*header).combined_ref_count.fetch_add(STRONG_ONE, Ordering::Relaxed) };
}

/// Give up what an owned `TVMFFIAny` holds: its object reference, if it names an object.
///
/// # Safety
/// `a` must be owned by the caller (its object, if any, live), and is not used afterwards.
pub unsafe fn release_any(a: &crate::abi::TVMFFIAny) {
    if a.type_index >= crate::abi::ffi_type_index::STATIC_OBJECT_BEGIN && !a.as_ptr().is_null() {
        // SAFETY: the caller's reference to a live object, given up once.
        unsafe { release(a.as_ptr() as *mut ObjectHeader) };
    }
}

/// Add a strong reference to a module unless the strong count already reached zero (the module
/// is dying); whether it was added. (Only modules: [`release`] lets other objects die without
/// counting down when their one reference goes.)
///
/// # Safety
/// `header` must point to a module whose block is still allocated (a weak reference, or a lock
/// its deleter takes, keeps it so).
pub unsafe fn try_retain(header: *mut ObjectHeader) -> bool {
    // SAFETY: the block is allocated by this function's contract; the count is atomic.
    debug_assert_eq!(unsafe { (*header).type_index }, type_index::MODULE, "try_retain is for modules");
    // SAFETY: as above.
    let count = unsafe { &(*header).combined_ref_count };
    let mut cur = count.load(Ordering::Acquire);
    while cur & COUNT_MASK != 0 {
        match count.compare_exchange_weak(cur, cur + STRONG_ONE, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
    false
}

/// Drop a strong reference and run the deleter as tvm-ffi does: with both flags when it was the
/// last reference of either kind, else with the strong flag, then the weak one when the last
/// weak reference (the one every object holds for its strong references) goes.
///
/// # Safety
/// `header` must be non-null and point to a live object, and the caller must own one reference,
/// which this call consumes: `header` must not be used through that reference afterwards.
pub unsafe fn release(header: *mut ObjectHeader) {
    // SAFETY: live by this function's contract (the caller's reference keeps it alive).
    let count = unsafe { &(*header).combined_ref_count };
    // One strong reference (ours) and no weak one but the strong references' own: nobody else
    // holds the object to count it up or down, so it dies without a read-modify-write. The
    // acquire load orders the other owners' releases (each a release RMW) before the deleter.
    // Modules are the exception: a library module may be found through a table that holds no
    // reference and revived by `try_retain`, which must see the count reach zero.
    // SAFETY: live by this function's contract.
    let unshared = count.load(Ordering::Acquire) == BOTH_ONE && unsafe { (*header).type_index } != type_index::MODULE;
    if unshared {
        // SAFETY: ours was the only reference, so the object dies here, as below.
        unsafe { die(header, DELETE_BOTH) };
        return;
    }
    let before = count.fetch_sub(STRONG_ONE, Ordering::Release);
    if before & COUNT_MASK != STRONG_ONE {
        return;
    }
    // Ours was the last strong reference. Acquire load rather than a fence (same effect;
    // ThreadSanitizer understands it).
    count.load(Ordering::Acquire);
    if before == BOTH_ONE {
        // SAFETY: no weak reference but the strong ones' own: the object dies here.
        unsafe { die(header, DELETE_BOTH) };
        return;
    }
    // SAFETY: the payload goes now; the block when the last weak reference does (`die` counts
    // the weak reference down after the payload's deleter).
    unsafe { die(header, DELETE_STRONG) };
}

/// The last strong reference to an object gone: it leaves the live set (checked mode) and its
/// deleter runs with `flags` (the payload, and with `DELETE_BOTH` the block too; with
/// `DELETE_STRONG` alone the weak reference the strong ones held is given up after it).
///
/// Deleting an object releases the objects it holds, which may die in turn: an object that dies
/// while another is being deleted on this thread is deleted after it, by the outermost `die`, in
/// a loop. So freeing a value nested however deep (a list of lists 100 000 deep) never recurses.
///
/// # Safety
/// `header` is an object whose strong count reached zero, its payload not yet deleted.
#[inline(always)]
unsafe fn die(header: *mut ObjectHeader, flags: c_int) {
    if live::checking() {
        live::unregister(header as usize);
    }
    // `try_with`: while the thread's own storage is being torn down, objects die at once.
    let outermost = DYING.try_with(|d| match d.deleting.replace(true) {
        true => {
            d.queue.borrow_mut().push((header as usize, flags));
            false
        }
        false => true,
    });
    match outermost {
        Ok(false) => {}
        Ok(true) => {
            // SAFETY: the object this call was given (contract above), then each queued one,
            // queued by a call with the same contract.
            unsafe { delete(header, flags) };
            while let Some((h, f)) = DYING.with(|d| d.queue.borrow_mut().pop()) {
                unsafe { delete(h as *mut ObjectHeader, f) };
            }
            DYING.with(|d| d.deleting.set(false));
        }
        Err(_) => unsafe { delete(header, flags) },
    }
}

/// The objects dying on this thread (see [`die`]).
struct Dying {
    deleting: std::cell::Cell<bool>,
    queue: std::cell::RefCell<Vec<(usize, c_int)>>,
}

thread_local! {
    static DYING: Dying = const { Dying { deleting: std::cell::Cell::new(false), queue: std::cell::RefCell::new(Vec::new()) } };
}

/// Run `header`'s deleter with `flags`, then, for `DELETE_STRONG` alone, give up the weak
/// reference the strong ones held (the block goes with the last weak reference).
///
/// # Safety
/// As [`die`].
unsafe fn delete(header: *mut ObjectHeader, flags: c_int) {
    // SAFETY: still allocated (contract above); its own deleter, called as tvm-ffi's protocol
    // says; `header` is not touched after the call that frees it.
    unsafe {
        let deleter = (*header).deleter;
        if let Some(d) = deleter {
            d(header as *mut c_void, flags);
        }
        if flags == DELETE_STRONG {
            let count = &(*header).combined_ref_count;
            if count.fetch_sub(WEAK_ONE, Ordering::Release) == WEAK_ONE {
                count.load(Ordering::Acquire);
                if let Some(d) = deleter {
                    d(header as *mut c_void, DELETE_WEAK);
                }
            }
        }
    }
}

/// An owning, untyped reference to any object: one pointer, as tvm-ffi's `ObjectRef` (so an
/// `Option<ObjectRef>` is a nullable `TVMFFIObject*` in C).
#[repr(transparent)]
pub struct ObjectRef {
    ptr: NonNull<ObjectHeader>,
}

// SAFETY: objects are only created from Send + Sync payloads; refcount is atomic.
unsafe impl Send for ObjectRef {}
// SAFETY: as above.
unsafe impl Sync for ObjectRef {}

impl ObjectRef {
    /// Take over one owned reference from a header.
    ///
    /// # Safety
    /// `header` must be non-null and point to a live object (any type) whose header is an
    /// [`ObjectHeader`], and the caller must own one reference, which passes to the result.
    pub unsafe fn from_raw(header: *mut ObjectHeader) -> Self {
        // SAFETY: `header` is non-null by this function's contract (`# Safety` above).
        ObjectRef { ptr: unsafe { NonNull::new_unchecked(header) } }
    }
    /// A new reference from a borrowed header.
    ///
    /// # Safety
    /// `header` must be non-null and point to a live object, kept alive by some reference for the
    /// duration of this call. The caller keeps its own reference.
    pub unsafe fn from_borrowed(header: *mut ObjectHeader) -> Self {
        // SAFETY: `header` is live by this function's contract; the new count is the reference
        // handed to `from_raw`.
        unsafe {
            retain(header);
            Self::from_raw(header)
        }
    }
    pub fn as_header(&self) -> *mut ObjectHeader {
        self.ptr.as_ptr()
    }
    pub fn into_raw(self) -> *mut ObjectHeader {
        let p = self.as_header();
        std::mem::forget(self);
        p
    }
    /// The TVM 0.18 handle of this object (borrowed).
    pub fn legacy_handle(&self) -> *mut c_void {
        legacy::handle(self.as_header())
    }
    /// Give up this reference and return the TVM 0.18 handle it travels with.
    pub fn into_legacy(self) -> *mut c_void {
        legacy::handle(self.into_raw())
    }
    pub fn type_index(&self) -> u32 {
        // SAFETY: live object.
        unsafe { (*self.as_header()).type_index }
    }
    /// Whether this runtime made the object (else foreign code compiled against tvm-ffi did).
    pub fn made_here(&self) -> bool {
        // SAFETY: live object.
        unsafe { (*self.as_header()).padding == MADE_HERE }
    }
    /// A typed reference if the object's type index is `T`'s (and, for a payload of this
    /// runtime's own layout, if this runtime made it).
    pub fn downcast<T: ObjectType>(&self) -> Option<ObjPtr<T>> {
        if self.type_index() == T::TYPE_INDEX && (T::LAYOUT_SHARED || self.made_here()) {
            // SAFETY: the type index identifies the payload type; objects with a given static
            // index are created by `ObjPtr::<T>` of the matching `T`, or by foreign code with
            // the same C layout (tvm-ffi's, which the payloads of `container` keep).
            Some(unsafe { ObjPtr::from_borrowed(self.as_header()) })
        } else {
            None
        }
    }

    /// As [`ObjectRef::downcast`], the payload borrowed for as long as this reference (no count
    /// change: for walks that visit many objects).
    pub fn downcast_ref<T: ObjectType>(&self) -> Option<&T> {
        if self.type_index() == T::TYPE_INDEX && (T::LAYOUT_SHARED || self.made_here()) {
            // SAFETY: as in `downcast`; the payload lives while `self` holds the object.
            Some(unsafe { &(*(self.as_header() as *const Obj<T>)).data })
        } else {
            None
        }
    }

    /// As [`ObjectRef::downcast`], handing this reference over (no count change); the object
    /// back when it is not a `T`.
    pub fn into_typed<T: ObjectType>(self) -> std::result::Result<ObjPtr<T>, ObjectRef> {
        if self.type_index() == T::TYPE_INDEX && (T::LAYOUT_SHARED || self.made_here()) {
            let header = std::mem::ManuallyDrop::new(self).as_header();
            // SAFETY: as in `downcast`; this reference passes to the typed pointer.
            Ok(unsafe { ObjPtr::from_raw(header) })
        } else {
            Err(self)
        }
    }
}

impl Clone for ObjectRef {
    fn clone(&self) -> Self {
        // SAFETY: live object.
        unsafe { Self::from_borrowed(self.as_header()) }
    }
}

impl Drop for ObjectRef {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { release(self.as_header()) }
    }
}

impl std::fmt::Debug for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Object({}, {:p})", type_key_of(self.type_index()), self.as_header())
    }
}

/// TVM 0.18's view of the objects: a handle 8 bytes into the header, and 0.18's static type
/// indices (0-11), which the table below maps to tvm-ffi's; every other index is the same in
/// both views.
pub mod legacy {
    use super::{type_index as ti, ObjectHeader};
    use crate::runtime::base::error::Result;
    use crate::runtime::object::live;
    use std::ffi::c_void;

    /// Where a 0.18 handle points into the tvm-ffi header.
    pub const VIEW_OFFSET: usize = 8;

    /// 0.18's static indices, in order, as tvm-ffi indices.
    const STATIC: [u32; 12] = [
        ti::ROOT,
        ti::MODULE,
        ti::NDARRAY,
        ti::STRING,
        ti::ARRAY,
        ti::MAP,
        ti::SHAPE_TUPLE,
        ti::PACKED_FUNC,
        ti::DISCO_DREF,
        ti::RPC_OBJECT_REF,
        ti::CLOSURE,
        ti::ADT,
    ];

    /// The 0.18 handle of an object.
    pub fn handle(header: *mut ObjectHeader) -> *mut c_void {
        (header as *mut u8).wrapping_add(VIEW_OFFSET) as *mut c_void
    }

    /// The header behind a 0.18 handle (address arithmetic only; nothing is read).
    pub fn header(handle: *mut c_void) -> *mut ObjectHeader {
        (handle as *mut u8).wrapping_sub(VIEW_OFFSET) as *mut ObjectHeader
    }

    /// The header behind a non-NULL 0.18 handle, which in the checked mode must be a live
    /// object made here or a foreign one (the error names the handle as C passed it, and
    /// `kind`): tvm-ffi callers' objects reach the runtime's functions through this view too.
    pub fn checked_header(handle: *mut c_void, kind: &str) -> Result<*mut ObjectHeader> {
        let h = header(handle);
        if live::checking() && !live::taken(h as usize) {
            return Err(live::not_live(handle as usize, kind));
        }
        Ok(h)
    }

    /// A tvm-ffi type index as 0.18 numbers it.
    pub fn index_of(ffi_index: u32) -> u32 {
        STATIC.iter().position(|&i| i == ffi_index).map_or(ffi_index, |p| p as u32)
    }

    /// A 0.18 type index as tvm-ffi numbers it.
    pub fn ffi_index(legacy_index: u32) -> u32 {
        STATIC.get(legacy_index as usize).copied().unwrap_or(legacy_index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::object::type_table::*;
    use std::sync::atomic::AtomicUsize;

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    #[test]
    fn a_key_asked_for_at_a_free_static_index_moves_there() {
        let old = register_type("test.object.MovedKey", type_index::ROOT).unwrap();
        let free = (100..128).find(|&i| type_index_to_key(i).is_err()).expect("a free static index");
        assert_eq!(get_or_alloc_type("test.object.MovedKey", Some(free), type_index::ROOT, 0, true).unwrap(), free);
        assert_eq!(type_key_to_index("test.object.MovedKey").unwrap(), free);
        // The old index keeps its entry (objects made under it keep their type).
        assert_eq!(type_index_to_key(old).unwrap(), "test.object.MovedKey");
        // A taken static index is not moved to: the key stays where it is.
        assert_eq!(
            get_or_alloc_type("test.object.MovedKey", Some(type_index::STRING), type_index::ROOT, 0, true).unwrap(),
            free
        );
    }
    struct Probe(u32);
    impl ObjectType for Probe {
        const TYPE_INDEX: u32 = type_index::ADT;
    }
    impl Drop for Probe {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn tvm_ffi_lists_its_own_type_keys_and_tvm_018_keys_still_resolve() {
        let keys = type_keys();
        assert!(keys.iter().any(|k| k == "ffi.Object") && keys.iter().any(|k| k == "ObjectRValueRef"));
        for only_018 in ["Array", "Map", "runtime.ADT", "runtime.Closure", "runtime.DiscoDRef"] {
            assert!(!keys.iter().any(|k| k == only_018), "{only_018} is listed");
            assert!(type_key_to_index(only_018).is_ok(), "{only_018} does not resolve");
        }
        let dynamic = register_type("testing.type_keys_probe", type_index::ROOT).unwrap();
        assert!(dynamic >= type_index::DYNAMIC_BEGIN);
        assert!(type_keys().iter().any(|k| k == "testing.type_keys_probe"));
    }

    #[test]
    fn refcount_and_deleter() {
        let a = ObjPtr::new(Probe(7));
        assert_eq!(std::mem::size_of::<ObjectHeader>(), 24);
        let b = a.clone();
        assert_eq!(a.ref_count(), 2);
        let untyped = a.to_object_ref();
        assert_eq!(untyped.type_index(), type_index::ADT);
        assert_eq!(untyped.downcast::<Probe>().unwrap().0, 7);
        drop(untyped);
        drop(a);
        assert_eq!(DROPS.load(Ordering::SeqCst), 0);
        drop(b);
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    }

    /// A payload that counts its drops in its own counter (tests run in parallel).
    struct Counted(&'static AtomicUsize);
    impl ObjectType for Counted {
        const TYPE_INDEX: u32 = type_index::ADT;
    }
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn an_object_shared_by_threads_dies_once_whichever_lets_go_last() {
        static DIED: AtomicUsize = AtomicUsize::new(0);
        for round in 0..200 {
            let shared = ObjPtr::new(Counted(&DIED));
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let mine = shared.clone();
                    std::thread::spawn(move || {
                        for _ in 0..50 {
                            drop(mine.clone());
                        }
                    })
                })
                .collect();
            drop(shared);
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(DIED.load(Ordering::SeqCst), round + 1, "round {round}");
        }
    }

    #[test]
    fn type_table() {
        assert_eq!(type_key_to_index("runtime.NDArray").unwrap(), type_index::NDARRAY);
        assert_eq!(type_key_to_index("ffi.Tensor").unwrap(), type_index::NDARRAY);
        assert_eq!(type_index_to_key(68).unwrap(), "ffi.Function");
        assert_eq!(legacy_type_key(68).unwrap(), "runtime.PackedFunc");
        assert_eq!((legacy::index_of(type_index::NDARRAY), legacy::ffi_index(2)), (2, type_index::NDARRAY));
        assert_eq!(legacy::index_of(type_index::ARRAY), 4);
        assert_eq!(type_key_to_index("int").unwrap(), 1);
        assert!(type_key_to_index("no.such.Type").unwrap_err().message().contains("no.such.Type"));
        let child = register_type("test.Child", type_index::MODULE).unwrap();
        assert!(child >= type_index::DYNAMIC_BEGIN);
        assert!(derived_from(child, type_index::MODULE).unwrap());
        assert!(derived_from(child, type_index::ROOT).unwrap());
        assert!(!derived_from(child, type_index::NDARRAY).unwrap());
        assert!(derived_from(99999, 0).is_err());
    }
}
