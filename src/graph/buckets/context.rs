//! One caller's execution context over a [`BucketSet`]: an executor per bucket, all over one
//! activation arena, and the request's true shapes. `set_input` picks the bucket and pads the
//! input straight into its buffer (the one copy `set_input` always makes); `run` runs that
//! bucket; outputs come out with their true extents.

use super::layout::OutputAxis;
use super::pad::{is_leading_block, RegionCopy};
use super::BucketSet;
use crate::abi::{device_type, DLDataType};
use crate::graph::executor::Executor;
use crate::graph::frame::Frame;
use crate::graph::front::Front;
use crate::graph::plan::{Key, TensorInfo};
use crate::graph::runner::{OpTiming, Runner};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::dlpack::dtype::data_size;
use crate::runtime::dlpack::tensor_ref::TensorRef;
use crate::runtime::tensor::ndarray::NDArray;
use std::any::Any;
use std::sync::Arc;

/// An execution context: use one per thread (several over one `Arc<BucketSet>` share the
/// weights and plans; each has its own arena).
pub struct BucketContext {
    set: Arc<BucketSet>,
    /// One executor per bucket, in the set's order.
    fronts: Vec<Front<Executor>>,
    /// Per input, the true shape last set (None: never set; weights stay None).
    shapes: Vec<Option<Box<[i64]>>>,
    /// Shapes the info calls report: the true shape last set, or the largest bucket's. The
    /// boxes never move, so pointers handed out stay valid.
    input_shapes: Vec<Box<[i64]>>,
    /// True output shapes of the last run (the largest bucket's before any).
    output_shapes: Vec<Box<[i64]>>,
    /// The bucket holding the request's inputs.
    current: usize,
    /// The bucket of the last run, whose outputs are read.
    ran: usize,
}

fn entry_shape(set: &BucketSet, bucket: usize, eid: usize) -> &[i64] {
    set.buckets[bucket].plan.entry_shape(eid)
}

impl BucketContext {
    pub fn new(set: Arc<BucketSet>) -> Result<BucketContext> {
        let arena = NDArray::empty_bytes(set.arena_bytes, set.device)?;
        let fronts = set.buckets.iter().map(|b| {
            let exec = Executor::with_slots(b.plan.clone(), &mut |sid, spec| match b.arena_offsets[sid] {
                Some(at) => arena.create_view_at(at, &[(spec.bytes / 4) as i64], DLDataType::FLOAT32),
                None => NDArray::empty_bytes(spec.bytes, spec.device),
            })?;
            Front::create_over(exec, &set.options.executor)
        });
        let fronts = fronts.collect::<Result<Vec<_>>>()?;
        let largest = set.largest();
        let plan = &largest.plan;
        let input_shapes = (0..plan.num_inputs()).map(|i| plan.entry_shape(plan.input_entry(i)).into()).collect();
        let output_shapes = (0..plan.num_outputs()).map(|o| plan.entry_shape(plan.output_entry(o)).into()).collect();
        let last = set.buckets.len() - 1;
        let shapes = vec![None; plan.num_inputs()];
        Ok(BucketContext { set, fronts, shapes, input_shapes, output_shapes, current: last, ran: last })
    }

    pub fn bucket_set(&self) -> &Arc<BucketSet> {
        &self.set
    }

    /// The bucket the request's inputs are in (the next run's).
    pub fn current_bucket(&self) -> usize {
        self.current
    }

    fn plan(&self) -> &crate::graph::Plan {
        &self.set.largest().plan
    }

    pub fn num_inputs(&self) -> usize {
        self.plan().num_inputs()
    }

    pub fn num_outputs(&self) -> usize {
        self.plan().num_outputs()
    }

    pub fn input(&self, key: Key<'_>) -> Result<usize> {
        self.plan().input_key(key)
    }

    pub fn output(&self, key: Key<'_>) -> Result<usize> {
        self.plan().output_key(key)
    }

    fn is_weight(&self, i: usize) -> bool {
        self.plan().is_param_input(i)
    }

    /// Set input `i` from `src`, of any shape the buckets cover. A weight is set in every bucket
    /// (each then has a copy of its own).
    pub fn set_input(&mut self, i: usize, src: TensorRef<'_>) -> Result<()> {
        let i = self.input(Key::Index(i as i64))?;
        if self.is_weight(i) {
            return self.fronts.iter().try_for_each(|f| f.lock()?.set_input(i, src));
        }
        let shape = self.check_input(i, src)?;
        let previous = self.shapes[i].replace(shape);
        let Some(bucket) = self.set.select(&self.shapes) else {
            let e = self.uncovered(i);
            self.shapes[i] = previous;
            return Err(e);
        };
        if bucket != self.current {
            self.move_inputs(bucket, i)?;
        }
        self.pad_into(i, src)?;
        // In place: pointers the info calls handed out stay valid.
        self.input_shapes[i].copy_from_slice(self.shapes[i].as_deref().expect("set above"));
        Ok(())
    }

    /// Check `src` for input `i`: dtype, rank, static extents, dynamic extents within the
    /// largest bucket's, compact host memory. Returns its shape. The input's name is formatted
    /// only for an error (this is on every request's path).
    fn check_input(&self, i: usize, src: TensorRef<'_>) -> Result<Box<[i64]>> {
        let plan = self.plan();
        let what = || format!("set_input `{}`", plan.input_name(i));
        let want = plan.entry_dtype(plan.input_entry(i));
        if src.dtype() != want {
            return Err(Error::value(format!("{}: expected dtype {want}, got {}", what(), src.dtype())));
        }
        let shape = src.shape()?;
        let limit = plan.entry_shape(plan.input_entry(i));
        if shape.len() != limit.len() {
            return Err(Error::value(format!("{}: expected {} axes, got shape {shape:?}", what(), limit.len())));
        }
        for (axis, (&e, &max)) in shape.iter().zip(limit).enumerate() {
            self.check_extent(&what, i, axis, e, max)?;
        }
        if !src.is_contiguous() {
            src.check_contiguous(&what())?;
        }
        if src.device().device_type != device_type::CPU {
            return Err(Error::value(format!("{}: expected a CPU tensor, got device {}", what(), src.device())));
        }
        if src.raw().data.is_null() && shape.iter().product::<i64>() > 0 {
            return Err(Error::value(format!("{}: data pointer is NULL", what())));
        }
        Ok(shape.into())
    }

    fn check_extent(&self, what: &dyn Fn() -> String, i: usize, axis: usize, e: i64, largest: i64) -> Result<()> {
        match self.set.dim_of(i, axis) {
            Some(d) if e < 0 || e > self.set.max_extent(d) => Err(Error::value(format!(
                "{} axis {axis}: extent {e} is beyond the largest bucket's {}",
                what(),
                self.set.max_extent(d)
            ))),
            None if e != largest => Err(Error::value(format!(
                "{} axis {axis}: extent {e}, but this axis is static: {largest} in every bucket",
                what()
            ))),
            _ => Ok(()),
        }
    }

    /// The error for a request no bucket covers (each extent is within range, but no bucket has
    /// all of them).
    fn uncovered(&self, i: usize) -> Error {
        let plan = self.plan();
        let request: Vec<String> = (0..self.shapes.len())
            .filter_map(|j| self.shapes[j].as_ref().map(|s| format!("`{}` {s:?}", plan.input_name(j))))
            .collect();
        let axes: Vec<String> =
            self.set.dims.iter().map(|d| format!("`{}` axis {}", plan.input_name(d.input), d.axis)).collect();
        let buckets: Vec<String> = self.set.buckets.iter().map(|b| format!("{:?}", b.extents)).collect();
        Error::value(format!(
            "set_input `{}`: no bucket covers the request ({}); buckets over ({}): {}",
            plan.input_name(i),
            request.join(", "),
            axes.join(", "),
            buckets.join(", ")
        ))
    }

    /// Move the request's other inputs from the current bucket's buffers into `to`'s.
    fn move_inputs(&mut self, to: usize, except: usize) -> Result<()> {
        for j in 0..self.shapes.len() {
            let Some(region) = self.shapes[j].as_deref().filter(|_| j != except) else { continue };
            let eid = self.plan().input_entry(j);
            let src = self.fronts[self.current].lock()?.owned_input_tensor(j)?;
            let dst = self.fronts[to].lock()?.owned_input_tensor(j)?;
            let copy = RegionCopy {
                src_shape: entry_shape(&self.set, self.current, eid),
                dst_shape: entry_shape(&self.set, to, eid),
                region,
                elem: src.dtype.element_bytes(),
                pad: Some(&self.set.pads[j]),
            };
            // SAFETY: both are input buffers of their executors, compact arrays of the bucket
            // shapes (distinct allocations); `region` was checked within every bucket's shape.
            unsafe { copy.run(src.data as *const u8, dst.data as *mut u8) };
        }
        self.current = to;
        Ok(())
    }

    /// Pad `src` (checked, of the request's shape) into input `i` of the current bucket.
    fn pad_into(&self, i: usize, src: TensorRef<'_>) -> Result<()> {
        let eid = self.plan().input_entry(i);
        let dst = self.fronts[self.current].lock()?.owned_input_tensor(i)?;
        let region = self.shapes[i].as_deref().expect("set by the caller");
        let copy = RegionCopy {
            src_shape: region,
            dst_shape: entry_shape(&self.set, self.current, eid),
            region,
            elem: src.dtype().element_bytes(),
            pad: Some(&self.set.pads[i]),
        };
        // SAFETY: `src` is a compact host tensor of `region` (checked); `dst` is the bucket's own
        // input buffer of its shape, which covers `region` (the bucket was selected for it).
        unsafe { copy.run(src.data_addr() as *const u8, dst.data as *mut u8) };
        Ok(())
    }

    /// Run the current bucket once.
    pub fn run(&mut self) -> Result<()> {
        let shapes = self.output_shapes_now()?;
        self.fronts[self.current].run()?;
        self.finish_run(shapes);
        Ok(())
    }

    /// Run the current bucket once, timing every op.
    pub fn run_profiled(&mut self) -> Result<Vec<OpTiming>> {
        let shapes = self.output_shapes_now()?;
        let timings = self.fronts[self.current].run_profiled()?;
        self.finish_run(shapes);
        Ok(timings)
    }

    fn finish_run(&mut self, shapes: Vec<Vec<i64>>) {
        for (slot, s) in self.output_shapes.iter_mut().zip(shapes) {
            slot.copy_from_slice(&s);
        }
        self.ran = self.current;
    }

    /// The true output shapes a run of the current request gives.
    fn output_shapes_now(&self) -> Result<Vec<Vec<i64>>> {
        let b = self.current;
        let plan = &self.set.buckets[b].plan;
        (0..plan.num_outputs())
            .map(|o| {
                let mut shape = plan.entry_shape(plan.output_entry(o)).to_vec();
                for axis in &self.set.output_axes[o] {
                    shape[axis.axis] = self.followed_extent(o, axis)?;
                }
                Ok(shape)
            })
            .collect()
    }

    /// The true extent of an output axis: that of the dims it follows, which must agree.
    fn followed_extent(&self, o: usize, axis: &OutputAxis) -> Result<i64> {
        let value = |d: usize| {
            let dim = self.set.dims[d];
            self.shapes[dim.input].as_ref().map_or(self.set.buckets[self.current].extents[d], |s| s[dim.axis])
        };
        let first = value(axis.dims[0]);
        if let Some(&d) = axis.dims.iter().find(|&&d| value(d) != first) {
            let plan = self.plan();
            let name = |d: usize| {
                format!("input `{}` axis {}", plan.input_name(self.set.dims[d].input), self.set.dims[d].axis)
            };
            return Err(Error::value(format!(
                "run: output `{}` axis {} follows {} ({first}) and {} ({}), which differ in this request",
                plan.output_name(o),
                axis.axis,
                name(axis.dims[0]),
                name(d),
                value(d)
            )));
        }
        Ok(first)
    }

    /// Copy output `o` of the last run, of its true shape, into `out`.
    pub fn get_output_into(&self, o: usize, out: TensorRef<'_>) -> Result<()> {
        let o = self.output(Key::Index(o as i64))?;
        let plan = self.plan();
        // Formatted only for an error (this is on every request's path).
        let what = || format!("get_output `{}`", plan.output_name(o));
        let shape = &self.output_shapes[o];
        let dtype = plan.entry_dtype(plan.output_entry(o));
        if out.dtype() != dtype || out.shape()? != &shape[..] {
            return Err(Error::value(format!(
                "{}: expected dtype {dtype} and shape {shape:?} (the last run's), got {} {:?}",
                what(),
                out.dtype(),
                out.shape()?
            )));
        }
        if !out.is_contiguous() {
            out.check_contiguous(&what())?;
        }
        if out.device().device_type != device_type::CPU || (out.raw().data.is_null() && out.byte_size()? > 0) {
            return Err(Error::value(format!(
                "{}: expected CPU memory, got device {} data {:p}",
                what(),
                out.device(),
                out.raw().data
            )));
        }
        let src = self.fronts[self.ran].lock()?.output_tensor(o)?;
        let eid = plan.output_entry(o);
        let copy = RegionCopy {
            src_shape: entry_shape(&self.set, self.ran, eid),
            dst_shape: shape,
            region: shape,
            elem: dtype.element_bytes(),
            pad: None,
        };
        // SAFETY: `src` is the output buffer of the bucket that ran (its shape); `out` is a
        // compact host tensor of the true shape (checked), which lies within it.
        unsafe { copy.run(src.data as *const u8, out.data_addr() as *mut u8) };
        Ok(())
    }

    /// Output `o` of the last run with its true shape: a view of the executor's memory when the
    /// true part is one block at its start (a cut batch axis, or any cut axis after extent-1
    /// ones), a compact copy otherwise.
    pub fn get_output(&self, o: usize) -> Result<NDArray> {
        let o = self.output(Key::Index(o as i64))?;
        let padded = self.fronts[self.ran].lock()?.get_output(o)?;
        let shape = &self.output_shapes[o];
        if is_leading_block(padded.shape(), shape) {
            return padded.create_view(shape, padded.dtype());
        }
        let out = NDArray::empty(shape, padded.dtype(), padded.device())?;
        self.get_output_into(o, out.tensor())?;
        Ok(out)
    }

    /// Name, shape (the true one last set, or the largest bucket's), dtype and size of input `i`.
    pub fn input_info(&self, i: usize) -> Result<TensorInfo<'_>> {
        let i = self.input(Key::Index(i as i64))?;
        let plan = self.plan();
        Ok(self.info(plan.input_name(i).to_string(), plan.input_entry(i), &self.input_shapes[i], self.is_weight(i)))
    }

    /// Name, shape (the last run's true one, or the largest bucket's), dtype and size of output `o`.
    pub fn output_info(&self, o: usize) -> Result<TensorInfo<'_>> {
        let o = self.output(Key::Index(o as i64))?;
        let plan = self.plan();
        Ok(self.info(plan.output_name(o), plan.output_entry(o), &self.output_shapes[o], false))
    }

    fn info<'a>(&'a self, name: String, eid: usize, shape: &'a [i64], is_param: bool) -> TensorInfo<'a> {
        let dtype = self.plan().entry_dtype(eid);
        TensorInfo { name, shape, dtype, nbytes: data_size(shape, dtype).unwrap_or(0), is_param }
    }

    /// `load_params` on every bucket (weights named in the blob get a copy per bucket).
    pub fn load_params(&mut self, blob: &[u8]) -> Result<()> {
        self.fronts.iter().try_for_each(|f| f.lock()?.load_params(blob))
    }

    /// The executor front of bucket `b` (for profiling and schedules of one bucket).
    pub fn bucket_front(&self, b: usize) -> Option<&Front<Executor>> {
        self.fronts.get(b)
    }
}

impl Frame for BucketContext {
    fn num_inputs(&self) -> usize {
        BucketContext::num_inputs(self)
    }
    fn num_outputs(&self) -> usize {
        BucketContext::num_outputs(self)
    }
    fn input(&self, key: Key<'_>) -> Result<usize> {
        BucketContext::input(self, key)
    }
    fn output(&self, key: Key<'_>) -> Result<usize> {
        BucketContext::output(self, key)
    }
    fn input_info(&self, index: usize) -> Result<TensorInfo<'_>> {
        BucketContext::input_info(self, index)
    }
    fn output_info(&self, index: usize) -> Result<TensorInfo<'_>> {
        BucketContext::output_info(self, index)
    }
    fn set_input(&mut self, index: usize, src: TensorRef<'_>) -> Result<()> {
        BucketContext::set_input(self, index, src)
    }
    fn get_output_into(&self, index: usize, out: TensorRef<'_>) -> Result<()> {
        BucketContext::get_output_into(self, index, out)
    }
    fn load_params(&mut self, blob: &[u8]) -> Result<()> {
        BucketContext::load_params(self, blob)
    }
    /// Runs the current bucket with its own runner (`_runner`, the front's, is not used).
    fn run_with(&mut self, _runner: &dyn Runner) -> Result<()> {
        BucketContext::run(self)
    }
    fn run_profiled_with(&mut self, _runner: &dyn Runner) -> Result<Vec<OpTiming>> {
        BucketContext::run_profiled(self)
    }
    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
}
