//! tvm-ffi's type registry and reflection functions (`TVMFFIType*`, `TVMFFIGetTypeInfo`,
//! `TVMFFIGetTypeAttrColumn`), over the one type table (`runtime::object::header`) and its reflection
//! (`runtime::reflection::type_info`). Type indices are tvm-ffi's.

use crate::abi::{TVMFFIAny, TVMFFIByteArray, TVMFFIFieldInfo, TVMFFIMethodInfo, TVMFFITypeAttrColumn};
use crate::abi::{TVMFFITypeInfo, TVMFFITypeMetadata};
use crate::ffi::ptr::{bytes_arg, text_arg};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{byte_array, Value};
use crate::runtime::{function::registry, reflection::type_info};
use std::ffi::c_int;

/// A type index argument: not negative.
fn index_arg(type_index: i32) -> Result<u32> {
    u32::try_from(type_index).map_err(|_| Error::index(format!("type index {type_index} is negative")))
}

/// The index of `type_key`, registered now if new (at `static_type_index` when that is not
/// negative, else in a slot of its parent's, else after every index so far, if the parent
/// allows it), with `num_child_slots` indices kept for its subtypes. -1 on error; -2 when
/// `parent_type_index` is -2 and the key is unknown (a lookup only).
///
/// # Safety
/// `type_key` must be NULL (an error) or a valid byte array.
#[no_mangle]
pub unsafe extern "C" fn TVMFFITypeGetOrAllocIndex(
    type_key: *const TVMFFIByteArray,
    static_type_index: i32,
    type_depth: i32,
    num_child_slots: i32,
    child_slots_can_overflow: i32,
    parent_type_index: i32,
) -> i32 {
    // Called from C++ static initializers (load time): the type table only, no layers.
    ffi_boundary!("TVMFFITypeGetOrAllocIndex", before_init, {
        let _ = type_depth; // the table knows each type's depth from its parent
                            // SAFETY: the caller's contract.
        let key = unsafe { text_arg(type_key, "type_key")? };
        if parent_type_index == -2 {
            return Ok(crate::runtime::object::type_table::type_key_to_index(key).map_or(-2, |i| i as i32));
        }
        let static_index = u32::try_from(static_type_index).ok();
        let slots =
            u32::try_from(num_child_slots).map_err(|_| Error::value(format!("num_child_slots {num_child_slots}")))?;
        let parent = index_arg(parent_type_index)?;
        Ok(crate::runtime::object::type_table::get_or_alloc_type(
            key,
            static_index,
            parent,
            slots,
            child_slots_can_overflow != 0,
        )? as i32)
    })
}

/// The information of a registered type (NULL, with the error raised, for an unknown index).
#[no_mangle]
pub extern "C" fn TVMFFIGetTypeInfo(type_index: i32) -> *const TVMFFITypeInfo {
    ffi_boundary!("TVMFFIGetTypeInfo", { type_info::type_info(index_arg(type_index)?) })
}

/// Add a reflected field to a type.
///
/// # Safety
/// `info` must be NULL (an error) or a valid field description.
#[no_mangle]
pub unsafe extern "C" fn TVMFFITypeRegisterField(type_index: i32, info: *const TVMFFIFieldInfo) -> c_int {
    ffi_boundary!("TVMFFITypeRegisterField", {
        check_not_null!(info);
        // SAFETY: a valid description (caller contract).
        unsafe { type_info::register_field(index_arg(type_index)?, &*info)? };
        Ok(0)
    })
}

/// Add a reflected method to a type.
///
/// # Safety
/// `info` must be NULL (an error) or a valid method description.
#[no_mangle]
pub unsafe extern "C" fn TVMFFITypeRegisterMethod(type_index: i32, info: *const TVMFFIMethodInfo) -> c_int {
    ffi_boundary!("TVMFFITypeRegisterMethod", {
        check_not_null!(info);
        // SAFETY: a valid description (caller contract).
        unsafe { type_info::register_method(index_arg(type_index)?, &*info)? };
        Ok(0)
    })
}

/// Set a type's metadata (once).
///
/// # Safety
/// `metadata` must be NULL (an error) or valid.
#[no_mangle]
pub unsafe extern "C" fn TVMFFITypeRegisterMetadata(type_index: i32, metadata: *const TVMFFITypeMetadata) -> c_int {
    ffi_boundary!("TVMFFITypeRegisterMetadata", {
        check_not_null!(metadata);
        // SAFETY: valid metadata (caller contract).
        unsafe { type_info::register_metadata(index_arg(type_index)?, &*metadata)? };
        Ok(0)
    })
}

/// Set a type attribute (type index 0 only makes sure its column exists).
///
/// # Safety
/// `attr_name` and `attr_value` must be NULL (an error) or valid.
#[no_mangle]
pub unsafe extern "C" fn TVMFFITypeRegisterAttr(
    type_index: i32,
    attr_name: *const TVMFFIByteArray,
    attr_value: *const TVMFFIAny,
) -> c_int {
    ffi_boundary!("TVMFFITypeRegisterAttr", {
        check_not_null!(attr_value);
        // SAFETY: the caller's contract.
        let name = unsafe { bytes_arg(attr_name, "attr_name")? };
        // SAFETY: a valid view (caller contract).
        unsafe { type_info::register_attr(index_arg(type_index)?, name, &*attr_value)? };
        Ok(0)
    })
}

/// The column of a type attribute by type index, NULL when no type registered it.
///
/// # Safety
/// `attr_name` must be NULL (an error) or a valid byte array.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIGetTypeAttrColumn(attr_name: *const TVMFFIByteArray) -> *const TVMFFITypeAttrColumn {
    ffi_boundary!("TVMFFIGetTypeAttrColumn", {
        // SAFETY: the caller's contract.
        let name = unsafe { bytes_arg(attr_name, "attr_name")? };
        Ok(type_info::attr_column(name).unwrap_or(std::ptr::null()))
    })
}

/// Register a method description's function as a global under its name.
///
/// # Safety
/// `method_info` must be NULL (an error) or a valid method description.
#[no_mangle]
pub unsafe extern "C" fn TVMFFIFunctionSetGlobalFromMethodInfo(
    method_info: *const TVMFFIMethodInfo,
    allow_override: c_int,
) -> c_int {
    ffi_boundary!("TVMFFIFunctionSetGlobalFromMethodInfo", {
        check_not_null!(method_info);
        // SAFETY: a valid description (caller contract).
        let (name, f) = unsafe { (byte_array(&(*method_info).name), Value::from_any_view(&(*method_info).method)?) };
        let name = std::str::from_utf8(name).map_err(|_| Error::value("the method's name is not UTF-8"))?;
        // SAFETY: as above.
        let metadata = String::from_utf8_lossy(unsafe { byte_array(&(*method_info).metadata) }).into_owned();
        registry::register_with_metadata(name, f.into_func()?, &metadata, allow_override != 0)?;
        Ok(0)
    })
}
