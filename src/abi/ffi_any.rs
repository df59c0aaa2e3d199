//! The tvm-ffi calling convention's value (`TVMFFIAny`, apache-tvm-ffi 0.1.x `tvm/ffi/c_api.h`),
//! used by kernels that apache-tvm 0.25 and later export as `__tvm_ffi_<name>`:
//! `int (*)(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result)`.

use std::ffi::{c_char, c_void};

/// `TVMFFITypeIndex`: what a [`TVMFFIAny`] holds (the on-stack kinds, then objects from 64).
pub mod ffi_type_index {
    pub const NONE: i32 = 0;
    pub const INT: i32 = 1;
    pub const BOOL: i32 = 2;
    pub const FLOAT: i32 = 3;
    pub const OPAQUE_PTR: i32 = 4;
    pub const DATA_TYPE: i32 = 5;
    pub const DEVICE: i32 = 6;
    pub const DLTENSOR_PTR: i32 = 7;
    pub const RAW_STR: i32 = 8;
    pub const BYTE_ARRAY_PTR: i32 = 9;
    pub const OBJECT_RVALUE_REF: i32 = 10;
    /// A string of at most 7 bytes held in the value (its length in `zero_padding`).
    pub const SMALL_STR: i32 = 11;
    pub const SMALL_BYTES: i32 = 12;
    /// First type index of heap objects (`kTVMFFIStaticObjectBegin`).
    pub const STATIC_OBJECT_BEGIN: i32 = 64;
}

/// `TVMFFIAny`: a type index, 4 bytes of padding (the length of a small string), 8 bytes of value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TVMFFIAny {
    pub type_index: i32,
    pub zero_padding: u32,
    /// `v_int64`, `v_float64` (as bits), `v_ptr`, `v_c_str`, `v_dtype`, `v_device`: the 8 bytes
    /// of the value union, read and written through the accessors below.
    pub value: u64,
}

impl TVMFFIAny {
    pub const NONE: TVMFFIAny = TVMFFIAny { type_index: ffi_type_index::NONE, zero_padding: 0, value: 0 };

    pub fn int(type_index: i32, v: i64) -> TVMFFIAny {
        TVMFFIAny { type_index, zero_padding: 0, value: v as u64 }
    }
    pub fn float(v: f64) -> TVMFFIAny {
        TVMFFIAny { type_index: ffi_type_index::FLOAT, zero_padding: 0, value: v.to_bits() }
    }
    pub fn ptr(type_index: i32, p: *const c_void) -> TVMFFIAny {
        TVMFFIAny { type_index, zero_padding: 0, value: p as usize as u64 }
    }
    /// A POD value of at most 8 bytes (`DLDataType`, `DLDevice`) stored at the union's start.
    pub fn pod<T: Copy>(type_index: i32, v: T) -> TVMFFIAny {
        assert!(std::mem::size_of::<T>() <= 8);
        let mut value = 0u64;
        // SAFETY: T fits in the 8 bytes of `value` (asserted) and is plain data.
        unsafe {
            std::ptr::copy_nonoverlapping(
                &v as *const T as *const u8,
                &mut value as *mut u64 as *mut u8,
                std::mem::size_of::<T>(),
            )
        };
        TVMFFIAny { type_index, zero_padding: 0, value }
    }
    pub fn as_i64(&self) -> i64 {
        self.value as i64
    }
    pub fn as_f64(&self) -> f64 {
        f64::from_bits(self.value)
    }
    pub fn as_ptr(&self) -> *mut c_void {
        self.value as usize as *mut c_void
    }
    /// The POD value of at most 8 bytes stored at the union's start (see [`TVMFFIAny::pod`]).
    pub fn as_pod<T: Copy>(&self) -> T {
        assert!(std::mem::size_of::<T>() <= 8);
        // SAFETY: T fits in the 8 bytes of `value` (asserted) and is plain data; unaligned read.
        unsafe { std::ptr::read_unaligned(&self.value as *const u64 as *const T) }
    }
    /// A small string or bytes value: up to 7 bytes held in the value itself.
    pub fn small(type_index: i32, bytes: &[u8]) -> TVMFFIAny {
        assert!(bytes.len() <= 7);
        let mut value = [0u8; 8];
        value[..bytes.len()].copy_from_slice(bytes);
        TVMFFIAny { type_index, zero_padding: bytes.len() as u32, value: u64::from_ne_bytes(value) }
    }
    /// A small string's bytes as a C string in place, when they are one: no NUL among them and
    /// one right after (tvm-ffi's writers terminate small strings; a value that is not is left
    /// to the caller's copying path).
    pub fn small_c_str(&self) -> Option<*const c_char> {
        let n = self.zero_padding as usize;
        let bytes = self.value.to_ne_bytes();
        (n <= 7 && bytes[n] == 0 && !bytes[..n].contains(&0)).then_some(&self.value as *const u64 as *const c_char)
    }
    /// The bytes of a small string or bytes value.
    pub fn small_bytes(&self) -> Vec<u8> {
        let n = (self.zero_padding as usize).min(7);
        self.value.to_ne_bytes()[..n].to_vec()
    }
}

/// `TVMFFIByteArray`: bytes the callee does not own.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TVMFFIByteArray {
    pub data: *const c_char,
    pub size: usize,
}

/// A kernel exported as `__tvm_ffi_<name>`.
pub type TVMFFISafeCallType =
    unsafe extern "C" fn(handle: *mut c_void, args: *const TVMFFIAny, num_args: i32, result: *mut TVMFFIAny) -> i32;

/// `TVMFFIFieldInfo`: one reflected field of an object type.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TVMFFIFieldInfo {
    pub name: TVMFFIByteArray,
    pub doc: TVMFFIByteArray,
    pub metadata: TVMFFIByteArray,
    pub flags: i64,
    pub size: i64,
    pub alignment: i64,
    pub offset: i64,
    pub getter: Option<unsafe extern "C" fn(field: *mut c_void, result: *mut TVMFFIAny) -> i32>,
    pub setter: *mut c_void,
    pub default_value_or_factory: TVMFFIAny,
    pub field_static_type_index: i32,
}

/// `TVMFFIMethodInfo`: one reflected method (a function value).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TVMFFIMethodInfo {
    pub name: TVMFFIByteArray,
    pub doc: TVMFFIByteArray,
    pub metadata: TVMFFIByteArray,
    pub flags: i64,
    pub method: TVMFFIAny,
}

/// `TVMFFITypeMetadata`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TVMFFITypeMetadata {
    pub doc: TVMFFIByteArray,
    pub creator: Option<unsafe extern "C" fn(result: *mut *mut c_void) -> i32>,
    pub total_size: i32,
    pub structural_eq_hash_kind: i32,
}

/// `TVMFFITypeInfo`: what tvm-ffi's frontends read of a type, directly.
#[repr(C)]
pub struct TVMFFITypeInfo {
    pub type_index: i32,
    pub type_depth: i32,
    pub type_key: TVMFFIByteArray,
    pub type_ancestors: *const *const TVMFFITypeInfo,
    pub type_key_hash: u64,
    pub num_fields: i32,
    pub num_methods: i32,
    pub fields: *const TVMFFIFieldInfo,
    pub methods: *const TVMFFIMethodInfo,
    pub metadata: *const TVMFFITypeMetadata,
}

/// `TVMFFITypeAttrColumn`: one attribute's values by type index (from `begin_index`).
#[repr(C)]
pub struct TVMFFITypeAttrColumn {
    pub data: *const TVMFFIAny,
    pub size: i32,
    pub begin_index: i32,
}

impl Default for TVMFFITypeAttrColumn {
    fn default() -> Self {
        TVMFFITypeAttrColumn { data: std::ptr::null(), size: 0, begin_index: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_strings_are_c_strings_in_place_only_when_terminated() {
        let a = TVMFFIAny::small(ffi_type_index::SMALL_STR, b"abc");
        // SAFETY: `small_c_str` points into `a`, NUL-terminated (checked by it).
        let s = unsafe { std::ffi::CStr::from_ptr(a.small_c_str().unwrap()) };
        assert_eq!(s.to_bytes(), b"abc");
        assert!(TVMFFIAny::small(ffi_type_index::SMALL_STR, b"1234567").small_c_str().is_some());
        assert!(TVMFFIAny::small(ffi_type_index::SMALL_STR, b"a\0b").small_c_str().is_none());
        let mut unterminated = TVMFFIAny::small(ffi_type_index::SMALL_STR, b"abcdefg");
        unterminated.zero_padding = 3; // bytes after the length are not NUL
        assert!(unterminated.small_c_str().is_none());
    }
}
