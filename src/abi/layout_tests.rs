//! Sizes and field offsets of the C-visible structs, as DLPack and TVM define them on LP64.

use super::*;
use std::mem::{align_of, offset_of, size_of};

#[test]
fn dlpack_layouts() {
    assert_eq!(size_of::<DLDevice>(), 8);
    assert_eq!(offset_of!(DLDevice, device_type), 0);
    assert_eq!(offset_of!(DLDevice, device_id), 4);

    assert_eq!(size_of::<DLDataType>(), 4);
    assert_eq!(offset_of!(DLDataType, code), 0);
    assert_eq!(offset_of!(DLDataType, bits), 1);
    assert_eq!(offset_of!(DLDataType, lanes), 2);

    assert_eq!(size_of::<DLTensor>(), 48);
    assert_eq!(offset_of!(DLTensor, data), 0);
    assert_eq!(offset_of!(DLTensor, device), 8);
    assert_eq!(offset_of!(DLTensor, ndim), 16);
    assert_eq!(offset_of!(DLTensor, dtype), 20);
    assert_eq!(offset_of!(DLTensor, shape), 24);
    assert_eq!(offset_of!(DLTensor, strides), 32);
    assert_eq!(offset_of!(DLTensor, byte_offset), 40);

    assert_eq!(size_of::<DLManagedTensor>(), 64);
    assert_eq!(offset_of!(DLManagedTensor, dl_tensor), 0);
    assert_eq!(offset_of!(DLManagedTensor, manager_ctx), 48);
    assert_eq!(offset_of!(DLManagedTensor, deleter), 56);
}

#[test]
fn tvm_value_layouts() {
    assert_eq!(size_of::<TVMValue>(), 8);
    assert_eq!(align_of::<TVMValue>(), 8);
    assert_eq!(size_of::<TVMByteArray>(), 16);
    assert_eq!(offset_of!(TVMByteArray, data), 0);
    assert_eq!(offset_of!(TVMByteArray, size), 8);
    assert_eq!(size_of::<TVMParallelGroupEnv>(), 16);
    assert_eq!(offset_of!(TVMParallelGroupEnv, sync_handle), 0);
    assert_eq!(offset_of!(TVMParallelGroupEnv, num_task), 8);
    assert_eq!(size_of::<TVMPackedCFunc>(), 8);
    assert_eq!(size_of::<FTVMParallelLambda>(), 8);
}

#[test]
fn type_codes_match_tvm() {
    use type_code::*;
    let expected = [
        (INT, 0),
        (FLOAT, 2),
        (OPAQUE_HANDLE, 3),
        (NULLPTR, 4),
        (DATA_TYPE, 5),
        (DEVICE, 6),
        (DLTENSOR_HANDLE, 7),
        (OBJECT_HANDLE, 8),
        (MODULE_HANDLE, 9),
        (PACKED_FUNC_HANDLE, 10),
        (STR, 11),
        (BYTES, 12),
        (NDARRAY_HANDLE, 13),
        (OBJECT_RVALUE_REF_ARG, 14),
        (BOOL, 15),
        (EXT_BEGIN, 16),
        (NNVM_LAST, 20),
        (EXT_RESERVE_END, 64),
        (EXT_END, 128),
    ];
    for (got, want) in expected {
        assert_eq!(got, want);
    }
    assert_eq!(device_type::CPU, 1);
    assert_eq!(device_type::HEXAGON, 16);
    assert_eq!(device_type::AOCL, 32);
    assert_eq!(device_type::MICRO_DEV, 35);
}

/// tvm-ffi's `TVMFFIAny` (16 bytes: type index, padding, 8-byte union) and `TVMFFIByteArray`.
#[test]
fn tvm_ffi_any_layout() {
    assert_eq!(size_of::<TVMFFIAny>(), 16);
    assert_eq!(align_of::<TVMFFIAny>(), 8);
    assert_eq!(offset_of!(TVMFFIAny, type_index), 0);
    assert_eq!(offset_of!(TVMFFIAny, zero_padding), 4);
    assert_eq!(offset_of!(TVMFFIAny, value), 8);
    assert_eq!(size_of::<TVMFFIByteArray>(), 16);
    let dev = TVMFFIAny::pod(ffi_type_index::DEVICE, DLDevice { device_type: 1, device_id: 3 });
    assert_eq!(dev.value, 1 | (3 << 32));
}
