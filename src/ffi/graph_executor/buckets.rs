//! Bucketed executors in C (`TVMGraphExecutorCreateBucketed*`): one model compiled at several
//! shapes, loaded as one ordinary `TVMGraphExecutor*` that takes inputs of any shape the
//! buckets cover. The query calls list the buckets; `TVMBucketExtents` chooses the extents to
//! compile.

use crate::abi::DLDevice;
use crate::ffi::graph_executor::pipeline::TVMModuleHandle;
use crate::ffi::graph_executor::{device_list, handle, publish, TVMGraphExecutor};
use crate::ffi::ptr::{out_param, slice, slice_mut};
use crate::graph::buckets::manifest::load_manifest;
use crate::graph::buckets::{policy, BucketContext, BucketSet};
use crate::graph::options::BucketOptions;
use crate::graph::{Front, FrontGuard};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::Module;
use std::ffi::{c_char, c_int};
use std::path::Path;
use std::sync::Arc;

/// Bucket options from a C string (NULL: the defaults).
///
/// # Safety
/// `options` must be NULL or a NUL-terminated string.
unsafe fn bucket_options(options: *const c_char) -> Result<BucketOptions> {
    // SAFETY: forwarded contract.
    let text = unsafe { crate::ffi::options_arg(options)? };
    BucketOptions::parse(text).map_err(|e| e.context("bucketed executor options"))
}

/// Publish an executor over the buckets of `versions`.
fn create(
    versions: &[(Module, String)],
    devices: &[DLDevice],
    options: BucketOptions,
) -> Result<*mut TVMGraphExecutor> {
    let set = BucketSet::from_factories(versions, &options.executor.devices(devices)?, options)?;
    publish(Front::new(BucketContext::new(set)?).into())
}

/// Create one executor over `num_factories` versions of a model compiled at different shapes
/// (the `GraphExecutorFactory` modules `TVMModLoadFromFile` returns for each version's
/// `export_library` file, in any order). The input axes whose extents differ between versions
/// are the dynamic ones; versions that differ in anything else (input names, dtypes, static
/// extents, weights) are refused with a message naming the difference. Weights with the same
/// name and bytes are kept once; one activation arena, sized for the largest bucket, serves every
/// bucket. The factories may be freed afterwards.
///
/// The result is an ordinary executor: `TVMGraphExecutorSetInput` takes any shape the buckets
/// cover (padded into the smallest bucket covering the request on every dynamic axis, ties to the
/// smallest padded volume), `TVMGraphExecutorRun` runs that bucket, and `GetOutputInfo` /
/// `GetOutput` give the last run's true output shapes. The zero-copy and asynchronous calls
/// are not supported on it (its buffers change with the bucket).
///
/// `options`: NULL or `"key=value,..."`: those of `TVMGraphExecutorCreateWithOptions` (every
/// bucket runs with them), plus `pad_value` (what fills an input beyond its true extent; default
/// 0, converted to the input's dtype). Only CPU devices are supported.
///
/// # Safety
/// `factories` must point to `num_factories` handles, each NULL (an error) or a live object handle
/// of this runtime (its type is checked); `devices` must point to `num_devices` devices;
/// `options` must be NULL or a NUL-terminated string; `out` must be NULL (an error) or valid for
/// writing one handle.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorCreateBucketed(
    factories: *const TVMModuleHandle,
    num_factories: u32,
    devices: *const DLDevice,
    num_devices: u32,
    options: *const c_char,
    out: *mut *mut TVMGraphExecutor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorCreateBucketed", {
        // SAFETY: C arguments per the contract above.
        let out = unsafe { out_param(out, "out")? };
        let handles = unsafe { slice(factories, num_factories as usize, "factories")? };
        let devices = unsafe { device_list(devices, num_devices)? };
        let options = unsafe { bucket_options(options)? };
        let versions = handles
            .iter()
            .enumerate()
            .map(|(i, &h)| {
                let label = format!("factory {i}");
                // SAFETY: each handle is NULL or a live object (caller contract).
                let m = unsafe { crate::ffi::legacy::module::module_arg(h, &format!("factories[{i}]"))? };
                Ok((m, label))
            })
            .collect::<Result<Vec<_>>>()?;
        *out = create(&versions, devices, options)?;
        Ok(0)
    })
}

/// As `TVMGraphExecutorCreateBucketed`, over the artifacts a manifest file lists: one
/// `export_library` path per line, relative to the manifest's directory; blank lines and `#`
/// comments are skipped. Messages name the versions by path.
///
/// # Safety
/// `manifest_path` must be NULL (an error) or a NUL-terminated string; the other arguments as
/// for `TVMGraphExecutorCreateBucketed`.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorCreateBucketedFromManifest(
    manifest_path: *const c_char,
    devices: *const DLDevice,
    num_devices: u32,
    options: *const c_char,
    out: *mut *mut TVMGraphExecutor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorCreateBucketedFromManifest", {
        // SAFETY: C arguments per the contract above.
        let out = unsafe { out_param(out, "out")? };
        let path = unsafe { c_str!(manifest_path)? };
        let devices = unsafe { device_list(devices, num_devices)? };
        let options = unsafe { bucket_options(options)? };
        *out = create(&load_manifest(Path::new(path))?, devices, options)?;
        Ok(0)
    })
}

/// Exclusive use of a bucketed executor's context, or an error naming a plain one.
fn bucketed(g: &TVMGraphExecutor) -> Result<FrontGuard<'_, BucketContext>> {
    if !g.front.is::<BucketContext>() {
        return Err(Error::value("graph executor is not bucketed (create it with TVMGraphExecutorCreateBucketed)"));
    }
    g.front.lock_as::<BucketContext>()
}

/// The bucket set behind a bucketed executor.
fn buckets_of(g: &TVMGraphExecutor) -> Result<Arc<BucketSet>> {
    Ok(bucketed(g)?.bucket_set().clone())
}

/// Number of buckets of a bucketed executor (an error for a plain one). Buckets are numbered
/// from the smallest padded input volume up.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetNumBuckets(g: *const TVMGraphExecutor, out: *mut u32) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetNumBuckets", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        *out = buckets_of(&g)?.buckets().len() as u32;
        Ok(0)
    })
}

/// The shape input `input_index` has in bucket `bucket`: `*shape` points to `*ndim` extents,
/// valid as long as the executor.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `shape` and `ndim` must
/// be NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetBucketInputShape(
    g: *const TVMGraphExecutor,
    bucket: u32,
    input_index: i32,
    shape: *mut *const i64,
    ndim: *mut i32,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetBucketInputShape", {
        // SAFETY: out-pointers (caller contract).
        let (shape, ndim) = unsafe { (out_param(shape, "shape")?, out_param(ndim, "ndim")?) };
        let g = handle(g)?;
        let set = buckets_of(&g)?;
        let n = set.buckets().len();
        let b = set
            .buckets()
            .get(bucket as usize)
            .ok_or_else(|| Error::index(format!("bucket {bucket} out of range (the executor has {n} buckets)")))?;
        let plan = &b.plan;
        let i = crate::graph::plan::index_in_range(input_index.into(), plan.num_inputs(), "input")?;
        // The plan lives as long as the executor's bucket set, which the executor keeps.
        let s = plan.entry_shape(plan.input_entry(i));
        *shape = crate::runtime::base::cptr::dims_ptr(s);
        *ndim = s.len() as i32;
        Ok(0)
    })
}

/// The bucket the inputs set so far picked: the one the next `TVMGraphExecutorRun` runs.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetCurrentBucket(g: *const TVMGraphExecutor, out: *mut u32) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetCurrentBucket", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        *out = bucketed(&g)?.current_bucket() as u32;
        Ok(0)
    })
}

/// The extents to compile a version of a model for, for one dynamic axis whose requests range
/// over `min_extent..=max_extent`. `options`: NULL or `"key=value,..."`: `policy=log` (default;
/// `min`, the powers of `base` between, `max`; `base` default 2) or `policy=uniform` (every
/// `step`: `step, 2·step, …`, then `max`; `step` required). `*num_out` receives the count; the
/// extents are written to `out` when `capacity` is enough (`out` NULL with `capacity` 0 only
/// counts), otherwise it is an error.
///
/// # Safety
/// `out` must be NULL or point to `capacity` writable values; `num_out` NULL (an error) or
/// writable; `options` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn TVMBucketExtents(
    min_extent: i64,
    max_extent: i64,
    options: *const c_char,
    out: *mut i64,
    capacity: u32,
    num_out: *mut u32,
) -> c_int {
    ffi_boundary!("TVMBucketExtents", {
        // SAFETY: C arguments per the contract above.
        let num_out = unsafe { out_param(num_out, "num_out")? };
        let text = unsafe { crate::ffi::options_arg(options)? };
        let extents = policy::extents(min_extent, max_extent, text)?;
        *num_out = extents.len() as u32;
        if out.is_null() && capacity == 0 {
            return Ok(0);
        }
        if (capacity as usize) < extents.len() {
            return Err(Error::value(format!(
                "argument `capacity` is {capacity}, less than the {} extents",
                extents.len()
            )));
        }
        // SAFETY: `out` holds `capacity` values (caller contract).
        let out = unsafe { slice_mut(out, extents.len(), "out")? };
        out.copy_from_slice(&extents);
        Ok(0)
    })
}
