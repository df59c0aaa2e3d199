//! Reference-counted objects with TVM's 16-byte header.
//!
//! Every object handed to C starts with [`ObjectHeader`] (`type_index` u32, atomic refcount i32,
//! deleter pointer), so a handle is a pointer to the header and `TVMObjectRetain/Free` work on any
//! object. Typed payloads live right after the header in [`Obj<T>`]; for NDArrays that puts the
//! `DLTensor` at offset 16, the address TVM uses as `TVMArrayHandle`.

use super::error::{Error, Result};
use super::live;
use once_cell::sync::Lazy;
use parking_lot::RwLock;
use std::alloc::Layout;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, Ordering};

/// Static type indices (TVM's `TypeIndex`).
pub mod type_index {
    pub const ROOT: u32 = 0;
    pub const MODULE: u32 = 1;
    pub const NDARRAY: u32 = 2;
    pub const STRING: u32 = 3;
    pub const ARRAY: u32 = 4;
    pub const MAP: u32 = 5;
    pub const SHAPE_TUPLE: u32 = 6;
    pub const PACKED_FUNC: u32 = 7;
    pub const DISCO_DREF: u32 = 8;
    pub const RPC_OBJECT_REF: u32 = 9;
    pub const CLOSURE: u32 = 10;
    pub const ADT: u32 = 11;
    pub const DYNAMIC_BEGIN: u32 = 12;
}

/// The header every object starts with (16 bytes on LP64).
#[repr(C)]
pub struct ObjectHeader {
    pub type_index: u32,
    pub ref_count: AtomicI32,
    pub deleter: Option<unsafe extern "C" fn(*mut ObjectHeader)>,
}

/// A payload type that can live inside an object.
pub trait ObjectType: Send + Sync + 'static {
    const TYPE_INDEX: u32;
}

/// Header plus payload, laid out as in C.
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

/// The block of an `Obj<T>` followed by `n` elements, and the offset of the first element.
fn inplace_layout<T: InplaceObject>(n: usize) -> (Layout, usize) {
    let (layout, offset) = Layout::new::<Obj<T>>()
        .extend(Layout::array::<T::Elem>(n).expect("element count of an existing Vec"))
        .expect("element count of an existing Vec");
    (layout.pad_to_align(), offset)
}

/// Return a dead object's block (its payload already dropped) to the allocator, or with checked
/// handles hold it back, so the next object does not get this address while a stale handle to it
/// may still be around.
///
/// # Safety
/// `header` must start a block of `layout` from the global allocator whose count reached zero;
/// it is not used again by the caller.
unsafe fn free_block(header: *mut ObjectHeader, layout: Layout) {
    if live::checking() {
        // SAFETY: the block is still allocated (contract above) and is handed over once.
        unsafe {
            (*header).type_index = DEAD_TYPE_INDEX;
            live::quarantine(header as *mut u8, layout);
        }
    } else {
        // SAFETY: allocated with `layout` by the global allocator, freed once (contract above).
        unsafe { std::alloc::dealloc(header as *mut u8, layout) };
    }
}

unsafe extern "C" fn delete_obj<T>(header: *mut ObjectHeader) {
    let obj = header as *mut Obj<T>;
    // SAFETY: installed only by `ObjPtr::<T>::new` (a `Box<Obj<T>>`, so of `Obj<T>`'s layout
    // from the global allocator); the count reached zero, so nobody else holds it; the payload
    // is dropped once, and the block is freed once.
    unsafe {
        std::ptr::drop_in_place(std::ptr::addr_of_mut!((*obj).data));
        free_block(header, Layout::new::<Obj<T>>());
    }
}

unsafe extern "C" fn delete_inplace<T: InplaceObject>(header: *mut ObjectHeader) {
    let obj = header as *mut Obj<T>;
    // SAFETY: installed only by `ObjPtr::<T>::new_inplace`, which allocated `inplace_layout(n)`
    // with `n == tail_len()` initialised elements at its offset; the count reached zero, so
    // nobody else holds it; elements and payload are dropped once, then the block is freed.
    unsafe {
        let n = (*obj).data.tail_len();
        let (layout, offset) = inplace_layout::<T>(n);
        let first = (header as *mut u8).add(offset) as *mut T::Elem;
        std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(first, n));
        std::ptr::drop_in_place(std::ptr::addr_of_mut!((*obj).data));
        free_block(header, layout);
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

fn header_of<T: ObjectType>(deleter: unsafe extern "C" fn(*mut ObjectHeader)) -> ObjectHeader {
    ObjectHeader { type_index: T::TYPE_INDEX, ref_count: AtomicI32::new(1), deleter: Some(deleter) }
}

impl<T: ObjectType> ObjPtr<T> {
    pub fn new(data: T) -> Self {
        let boxed = Box::new(Obj { header: header_of::<T>(delete_obj::<T>), data });
        Self::adopt(NonNull::from(Box::leak(boxed)))
    }

    /// Take the first reference to a new object.
    fn adopt(ptr: NonNull<Obj<T>>) -> Self {
        if live::checking() {
            live::register(ptr.as_ptr() as usize);
        }
        ObjPtr { ptr, _marker: PhantomData }
    }

    /// Address of the header: the C handle of this object.
    pub fn as_header(&self) -> *mut ObjectHeader {
        self.ptr.as_ptr() as *mut ObjectHeader
    }

    /// Give up this reference and return the handle (one owned reference travels with it).
    pub fn into_raw(self) -> *mut ObjectHeader {
        let p = self.as_header();
        std::mem::forget(self);
        p
    }

    /// Take over one owned reference from a handle.
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

    /// A new reference to a live object of type `T` from a borrowed handle.
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

    pub fn ref_count(&self) -> i32 {
        // SAFETY: we hold a reference, so the header is live.
        unsafe { (*self.as_header()).ref_count.load(Ordering::Relaxed) }
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
        let (layout, offset) = inplace_layout::<T>(elems.len());
        // SAFETY: `layout` has a non-zero size (it holds the header).
        let block = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(block as *mut Obj<T>) else { std::alloc::handle_alloc_error(layout) };
        // SAFETY: the fresh block has room for `Obj<T>` at its start and `elems` at `offset`
        // (`inplace_layout`), both suitably aligned; each slot is written once.
        unsafe {
            ptr.as_ptr().write(Obj { header: header_of::<T>(delete_inplace::<T>), data });
            let first = block.add(offset) as *mut T::Elem;
            for (i, e) in elems.into_iter().enumerate() {
                first.add(i).write(e);
            }
        }
        Self::adopt(ptr)
    }

    /// The elements after the payload.
    pub fn tail(&self) -> &[T::Elem] {
        let (_, offset) = inplace_layout::<T>(0);
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

/// Increment the reference count.
///
/// # Safety
/// `header` must be non-null and point to a live object (one whose count is at least one and
/// stays so for the duration of the call). The caller then owns the added reference.
pub unsafe fn retain(header: *mut ObjectHeader) {
    // SAFETY: `header` points to a live object by this function's contract; the count is atomic.
    unsafe { (*header).ref_count.fetch_add(1, Ordering::Relaxed) };
}

/// Decrement the reference count and run the deleter when it reaches zero.
///
/// # Safety
/// `header` must be non-null and point to a live object, and the caller must own one reference,
/// which this call consumes: `header` must not be used through that reference afterwards.
pub unsafe fn release(header: *mut ObjectHeader) {
    // SAFETY: live by this function's contract (the caller's reference keeps it alive).
    if unsafe { (*header).ref_count.fetch_sub(1, Ordering::Release) } == 1 {
        // SAFETY: ours was the last reference, so the object is still allocated and unshared.
        // Acquire load rather than a fence (same effect; ThreadSanitizer understands it).
        let deleter = unsafe {
            (*header).ref_count.load(Ordering::Acquire);
            (*header).deleter
        };
        if live::checking() {
            live::unregister(header as usize);
        }
        if let Some(deleter) = deleter {
            // SAFETY: the count reached zero; the deleter installed with the object frees it
            // exactly once, and `header` is not touched afterwards.
            unsafe { deleter(header) };
        }
    }
}

/// An owning, untyped reference to any object: one pointer, as TVM's `ObjectRef` (so an
/// `Option<ObjectRef>` is a nullable `Object*` in C).
#[repr(transparent)]
pub struct ObjectRef {
    ptr: NonNull<ObjectHeader>,
}

// SAFETY: objects are only created from Send + Sync payloads; refcount is atomic.
unsafe impl Send for ObjectRef {}
// SAFETY: as above.
unsafe impl Sync for ObjectRef {}

impl ObjectRef {
    /// Take over one owned reference from a handle.
    ///
    /// # Safety
    /// `header` must be non-null and point to a live object (any type) whose header is an
    /// [`ObjectHeader`], and the caller must own one reference, which passes to the result.
    pub unsafe fn from_raw(header: *mut ObjectHeader) -> Self {
        // SAFETY: `header` is non-null by this function's contract (`# Safety` above).
        ObjectRef { ptr: unsafe { NonNull::new_unchecked(header) } }
    }
    /// A new reference from a borrowed handle.
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
    pub fn type_index(&self) -> u32 {
        // SAFETY: live object.
        unsafe { (*self.as_header()).type_index }
    }
    /// A typed reference if the object's type index is `T`'s.
    pub fn downcast<T: ObjectType>(&self) -> Option<ObjPtr<T>> {
        if self.type_index() == T::TYPE_INDEX {
            // SAFETY: the type index identifies the payload type; objects with a given static
            // index are created by `ObjPtr::<T>` of the matching `T`, or by foreign code with
            // the same C layout (TVM's, which the payloads of `container` keep).
            Some(unsafe { ObjPtr::from_borrowed(self.as_header()) })
        } else {
            None
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

/// The type table: keys and parents by index.
struct TypeTable {
    keys: Vec<String>,
    parents: Vec<u32>,
    by_key: HashMap<String, u32>,
}

static TYPES: Lazy<RwLock<TypeTable>> = Lazy::new(|| {
    let statics = [
        "runtime.Object",
        "runtime.Module",
        "runtime.NDArray",
        "runtime.String",
        // TVM's keys for these two have no `runtime.` prefix; its Python finds its container
        // classes by them.
        "Array",
        "Map",
        "runtime.ShapeTuple",
        "runtime.PackedFunc",
        "runtime.DiscoDRef",
        "runtime.RPCObjectRef",
        "runtime.Closure",
        "runtime.ADT",
    ];
    let keys: Vec<String> = statics.iter().map(|s| s.to_string()).collect();
    let by_key = keys.iter().enumerate().map(|(i, k)| (k.clone(), i as u32)).collect();
    RwLock::new(TypeTable { parents: vec![0; keys.len()], keys, by_key })
});

/// Index of a registered type key.
pub fn type_key_to_index(key: &str) -> Result<u32> {
    let t = TYPES.read();
    t.by_key.get(key).copied().ok_or_else(|| Error::value(format!("Cannot find type `{key}`")))
}

/// Key of a registered type index.
pub fn type_index_to_key(index: u32) -> Result<String> {
    let t = TYPES.read();
    t.keys.get(index as usize).cloned().ok_or_else(|| Error::index(format!("type index {index} is not registered")))
}

fn type_key_of(index: u32) -> String {
    type_index_to_key(index).unwrap_or_else(|_| format!("<type {index}>"))
}

/// Register a dynamic type deriving from `parent`; returns its index (existing key: same index).
pub fn register_type(key: &str, parent: u32) -> Result<u32> {
    let mut t = TYPES.write();
    if let Some(&i) = t.by_key.get(key) {
        return Ok(i);
    }
    if parent as usize >= t.keys.len() {
        return Err(Error::index(format!("parent type index {parent} is not registered")));
    }
    let index = t.keys.len() as u32;
    t.keys.push(key.to_string());
    t.parents.push(parent);
    t.by_key.insert(key.to_string(), index);
    Ok(index)
}

/// Whether `child` is `parent` or derives from it.
pub fn derived_from(child: u32, parent: u32) -> Result<bool> {
    let t = TYPES.read();
    let n = t.keys.len() as u32;
    if child >= n {
        return Err(Error::index(format!("type index {child} is not registered")));
    }
    if parent >= n {
        return Err(Error::index(format!("type index {parent} is not registered")));
    }
    let mut cur = child;
    loop {
        if cur == parent {
            return Ok(true);
        }
        if cur == type_index::ROOT {
            return Ok(false);
        }
        cur = t.parents[cur as usize];
    }
}

/// How a handle of an object with static type index `type_index` is named in errors.
pub fn kind_name(type_index: u32) -> &'static str {
    use self::type_index as ti;
    match type_index {
        ti::MODULE => "module",
        ti::PACKED_FUNC => "function",
        ti::NDARRAY => "NDArray",
        _ => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static DROPS: AtomicUsize = AtomicUsize::new(0);
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
    fn refcount_and_deleter() {
        let a = ObjPtr::new(Probe(7));
        assert_eq!(std::mem::size_of::<ObjectHeader>(), 16);
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

    #[test]
    fn type_table() {
        assert_eq!(type_key_to_index("runtime.NDArray").unwrap(), 2);
        assert_eq!(type_index_to_key(7).unwrap(), "runtime.PackedFunc");
        assert!(type_key_to_index("no.such.Type").unwrap_err().message().contains("no.such.Type"));
        let child = register_type("test.Child", type_index::MODULE).unwrap();
        assert!(child >= type_index::DYNAMIC_BEGIN);
        assert!(derived_from(child, type_index::MODULE).unwrap());
        assert!(derived_from(child, type_index::ROOT).unwrap());
        assert!(!derived_from(child, type_index::NDARRAY).unwrap());
        assert!(derived_from(99999, 0).is_err());
    }
}
