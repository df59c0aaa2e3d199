//! Dynamic shapes by bucketed graph dispatch (seed 002): one model compiled at several shapes
//! (its *buckets*, e.g. batch 1, 2, 4, 8), loaded together. A request of any shape in range runs
//! in the smallest bucket that covers it, its inputs padded into that bucket's buffers, and its
//! outputs presented with their true extents.
//!
//! * [`layout`] reads from the versions themselves which input axes vary (the *dims*) and which
//!   output axes follow them, and refuses versions that differ in anything else.
//! * [`BucketSet`] (this file) holds the buckets, shared by every execution context: one plan
//!   per bucket over one copy of the weights (same name and bytes in every version: one array),
//!   and the layout of one activation arena sized for the largest bucket.
//! * [`context::BucketContext`] is one caller's execution context: an executor per bucket, all
//!   over one arena (a context runs one bucket at a time), and the request's true shapes.
//! * [`pad`] does the copies in and out; [`policy`] turns an axis range into buckets to compile;
//!   [`manifest`] loads the versions listed in a file.

pub mod context;
pub mod layout;
pub mod manifest;
pub mod pad;
pub mod policy;

pub use context::BucketContext;

use super::factory::GraphExecutorFactory;
use super::memory_plan::build_plan;
use super::options::BucketOptions;
use super::plan::Plan;
use super::Graph;
use crate::abi::{device_type, DLDataType, DLDevice};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::device::ALLOC_ALIGNMENT;
use crate::runtime::function::packed::Module;
use crate::runtime::tensor::ndarray::NDArray;
use layout::{analyze, Dim, Layout, OutputAxis, Signature};
use std::sync::Arc;

/// One compiled version of the model.
pub struct Bucket {
    pub plan: Arc<Plan>,
    /// The extent of each dim (`BucketSet::dims`) this version was compiled for.
    pub extents: Vec<i64>,
    /// Names the version in messages (`factory 2`, or its file).
    pub label: String,
    /// Where each storage slot lives in the arena; None for weights and data inputs, which
    /// have memory of their own (a request's inputs stay put while it changes bucket).
    arena_offsets: Vec<Option<usize>>,
}

/// A model's buckets, shared by every execution context.
pub struct BucketSet {
    /// Smallest padded input volume first, so the first bucket that covers a request is the one
    /// to run it in.
    buckets: Vec<Bucket>,
    dims: Vec<Dim>,
    output_axes: Vec<Vec<OutputAxis>>,
    /// Per input, the pad element (bytes of its dtype; empty for weights).
    pads: Vec<Vec<u8>>,
    arena_bytes: usize,
    device: DLDevice,
    options: BucketOptions,
}

impl BucketSet {
    /// The buckets of `versions` (factory modules, each with a label for messages), on `devices`.
    pub fn from_factories(
        versions: &[(Module, String)],
        devices: &[DLDevice],
        options: BucketOptions,
    ) -> Result<Arc<BucketSet>> {
        let devices = host_devices(devices)?;
        let params = shared_params(versions)?;
        let mut plans = Vec::with_capacity(versions.len());
        for ((m, label), params) in versions.iter().zip(&params) {
            plans.push(Arc::new(version_plan(m, devices, &options, params).map_err(|e| e.context(label.clone()))?));
        }
        let sigs: Vec<Signature> = plans.iter().zip(versions).map(|(p, (_, l))| Signature::of(p, l.clone())).collect();
        let layout = analyze(&sigs)?;
        let pads = pad_elements(&sigs[0], options.pad_value)?;
        Ok(Arc::new(Self::assemble(plans, versions, layout, pads, devices[0], options)))
    }

    fn assemble(
        plans: Vec<Arc<Plan>>,
        versions: &[(Module, String)],
        layout: Layout,
        pads: Vec<Vec<u8>>,
        device: DLDevice,
        options: BucketOptions,
    ) -> BucketSet {
        let mut buckets: Vec<Bucket> = plans
            .into_iter()
            .zip(layout.extents)
            .zip(versions)
            .map(|((plan, extents), (_, label))| {
                let arena_offsets = arena_offsets(&plan);
                Bucket { plan, extents, label: label.clone(), arena_offsets }
            })
            .collect();
        buckets.sort_by_key(|b| (input_volume(&b.plan), b.extents.clone()));
        let arena_bytes = buckets.iter().map(arena_end).max().unwrap_or(0);
        BucketSet { buckets, dims: layout.dims, output_axes: layout.output_axes, pads, arena_bytes, device, options }
    }

    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// The dynamic input axes.
    pub fn dims(&self) -> &[Dim] {
        &self.dims
    }

    /// Bytes of the activation arena every context allocates once.
    pub fn arena_bytes(&self) -> usize {
        self.arena_bytes
    }

    pub fn options(&self) -> &BucketOptions {
        &self.options
    }

    /// The largest bucket (last in volume order).
    pub fn largest(&self) -> &Bucket {
        self.buckets.last().expect("a bucket set has at least one bucket")
    }

    /// The first (smallest) bucket covering `shapes` (per input: the true shape set, if any)
    /// on every dim.
    pub fn select(&self, shapes: &[Option<Box<[i64]>>]) -> Option<usize> {
        self.buckets.iter().position(|b| {
            self.dims.iter().zip(&b.extents).all(|(d, &e)| shapes[d.input].as_ref().map_or(true, |s| s[d.axis] <= e))
        })
    }

    /// The dim of axis `axis` of input `input`, if it is dynamic.
    pub fn dim_of(&self, input: usize, axis: usize) -> Option<usize> {
        self.dims.iter().position(|d| d.input == input && d.axis == axis)
    }

    /// The largest extent any bucket has for dim `d`.
    pub fn max_extent(&self, d: usize) -> i64 {
        self.buckets.iter().map(|b| b.extents[d]).max().unwrap_or(0)
    }
}

/// The devices, which must be one host (CPU) device: inputs are padded and outputs cut by the
/// host, in place.
fn host_devices(devices: &[DLDevice]) -> Result<&[DLDevice]> {
    let Some(first) = devices.first() else {
        return Err(Error::value("bucketed executor: at least one device is required"));
    };
    if let Some(d) = devices.iter().find(|d| d.device_type != device_type::CPU || **d != *first) {
        return Err(Error::unsupported(format!(
            "bucketed executor: device {d} is not supported (one CPU device: inputs are padded by the host)"
        )));
    }
    Ok(&devices[..1])
}

fn factory_of<'a>(m: &'a Module, label: &str) -> Result<&'a GraphExecutorFactory> {
    GraphExecutorFactory::of(m).map_err(|e| e.context(label))
}

/// Each version's params, where every array with the name and bytes of the first version's is
/// that very array (one copy of the weights); versions whose weights differ are refused.
fn shared_params(versions: &[(Module, String)]) -> Result<Vec<Vec<(String, NDArray)>>> {
    let Some((m0, label0)) = versions.first() else {
        return Err(Error::value("bucketed executor: no versions of the model were given (num_factories is 0)"));
    };
    let reference = &factory_of(m0, label0)?.params;
    let mut all = vec![reference.clone()];
    for (m, label) in &versions[1..] {
        let params = &factory_of(m, label)?.params;
        let differ = |what: String| Error::value(format!("bucketed executor: {label0} and {label} differ: {what}"));
        if let Some((name, _)) = reference.iter().find(|(n, _)| !params.iter().any(|(p, _)| p == n)) {
            return Err(differ(format!("weight `{name}` is only in {label0}")));
        }
        let mut shared = Vec::with_capacity(params.len());
        for (name, arr) in params {
            let Some((_, r)) = reference.iter().find(|(n, _)| n == name) else {
                return Err(differ(format!("weight `{name}` is only in {label}")));
            };
            if !same_array(r, arr)? {
                return Err(differ(format!(
                    "weight `{name}` has other values (weights must be the same in every version)"
                )));
            }
            shared.push((name.clone(), r.clone()));
        }
        all.push(shared);
    }
    Ok(all)
}

/// Whether two arrays have the same shape, dtype and bytes (compared a MiB at a time, so a large
/// model's weights are not copied whole to compare them).
fn same_array(a: &NDArray, b: &NDArray) -> Result<bool> {
    const CHUNK: usize = 1 << 20;
    if a.shape() != b.shape() || a.dtype() != b.dtype() {
        return Ok(false);
    }
    let bytes = DLDataType::new(1, 8, 1);
    for at in (0..a.nbytes()).step_by(CHUNK) {
        let n = CHUNK.min(a.nbytes() - at) as i64;
        if a.create_view_at(at, &[n], bytes)?.to_vec_u8()? != b.create_view_at(at, &[n], bytes)?.to_vec_u8()? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The plan of one version over `params`.
fn version_plan(
    m: &Module,
    devices: &[DLDevice],
    options: &BucketOptions,
    params: &[(String, NDArray)],
) -> Result<Plan> {
    let factory = factory_of(m, "module")?;
    let lib = m
        .imports()
        .into_iter()
        .next()
        .ok_or_else(|| Error::value("GraphExecutorFactory has no imported kernel module"))?;
    let mut plan = build_plan(Graph::parse(&factory.graph_json)?, lib, devices, options.executor.memory_plan)?;
    plan.set_params(params)?;
    Ok(plan)
}

/// Per input, the pad element of its dtype (none for weights).
fn pad_elements(sig: &Signature, value: f64) -> Result<Vec<Vec<u8>>> {
    sig.inputs
        .iter()
        .map(|t| match t.is_param {
            true => Ok(Vec::new()),
            false => pad::pad_element(value, t.dtype).map_err(|e| e.context(format!("input `{}`", t.name))),
        })
        .collect()
}

/// Elements of the data inputs in a bucket: what padding into it costs.
fn input_volume(plan: &Plan) -> u128 {
    (0..plan.num_inputs())
        .filter(|&i| !plan.is_param_input(i))
        .map(|i| plan.entry_shape(plan.input_entry(i)).iter().map(|&e| e.max(0) as u128).product::<u128>())
        .sum()
}

/// Storage ids of the plan's data inputs.
fn data_input_slots(plan: &Plan) -> Vec<usize> {
    (0..plan.num_inputs())
        .filter(|&i| !plan.is_param_input(i))
        .map(|i| plan.graph.attrs.storage_id[plan.input_entry(i)] as usize)
        .collect()
}

/// Arena offsets of the slots that are neither weights nor data inputs, one after another.
fn arena_offsets(plan: &Plan) -> Vec<Option<usize>> {
    let inputs = data_input_slots(plan);
    let mut end = 0;
    (0..plan.storage.len())
        .map(|sid| {
            if plan.shared_storage[sid].is_some() || inputs.contains(&sid) {
                return None;
            }
            let at = end;
            end += plan.storage[sid].bytes.div_ceil(ALLOC_ALIGNMENT) * ALLOC_ALIGNMENT;
            Some(at)
        })
        .collect()
}

fn arena_end(b: &Bucket) -> usize {
    let spec = &b.plan.storage;
    b.arena_offsets
        .iter()
        .zip(spec)
        .filter_map(|(o, s)| o.map(|o| o + s.bytes.div_ceil(ALLOC_ALIGNMENT) * ALLOC_ALIGNMENT))
        .max()
        .unwrap_or(0)
}
