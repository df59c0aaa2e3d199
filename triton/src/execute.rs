//! `TRITONBACKEND_ModelInstanceExecute`: the requests Triton hands an instance, checked, run
//! (with batching: concatenated along axis 0 and run once; each request gets its own rows), and
//! answered one response each, with statistics per request and per run. Requests whose shapes
//! differ past axis 0 (Triton batches them when an input allows ragged batches) are never joined:
//! the requests of each shape run as one batch of their own.

use crate::config::Layout;
use crate::dtype::{triton_code, wire_name};
use crate::error::{check, Failure, Result};
use crate::instance::Frame;
use crate::model::{cpu, TensorSpec};
use crate::sys::{self, Api, TRITONBACKEND_Input, TRITONBACKEND_ModelInstance, TRITONBACKEND_Request};
use std::ffi::{c_char, c_void, CString};
use tvm_runtime::runtime::tensor::ndarray::NDArray;

/// What one `execute` call works with.
pub struct Instance<'a> {
    pub api: &'a Api,
    pub raw: *mut TRITONBACKEND_ModelInstance,
    pub layout: &'a Layout,
    pub frame: &'a Frame,
}

/// A request that passed the checks: its inputs (in the model's order) and its rows.
struct Checked {
    raw: *mut TRITONBACKEND_Request,
    inputs: Vec<Input>,
    /// Rows on axis 0 (1 when the model does not batch: a request runs alone).
    rows: usize,
}

struct Input {
    raw: *mut TRITONBACKEND_Input,
    shape: Vec<i64>,
    buffers: u32,
}

/// Nanoseconds of the monotonic clock, Triton's clock for statistics.
pub fn now_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

impl Instance<'_> {
    /// Answer every request and release it; nothing is left for Triton to answer.
    pub fn execute(&self, requests: &[*mut TRITONBACKEND_Request]) {
        let start = now_ns();
        let mut good = Vec::new();
        for &raw in requests {
            match self.check_request(raw) {
                Ok(c) => good.push(c),
                Err(f) => self.finish(raw, Err(f), start, start, start),
            }
        }
        if self.layout.max_batch_size > 0 {
            for group in group_by(good, |c| row_shapes(&c.inputs)) {
                self.run_group(&group, start);
            }
        } else {
            for c in good {
                self.run_group(std::slice::from_ref(&c), start);
            }
        }
    }

    /// Run `group` as one batch and answer each request with its rows.
    fn run_group(&self, group: &[Checked], start: u64) {
        let compute_start = now_ns();
        let outputs = self.gather(group).and_then(|inputs| self.frame.run(&inputs));
        let compute_end = now_ns();
        let mut row = 0;
        for c in group {
            let answer = outputs.as_ref().map_err(Clone::clone).and_then(|outs| self.respond(c, outs, row));
            self.finish_answered(c.raw, answer, start, compute_start, compute_end);
            row += c.rows;
        }
        if outputs.is_ok() {
            let rows = group.iter().map(|c| c.rows).sum::<usize>() as u64;
            let end = now_ns();
            // SAFETY: the instance is the one Triton is executing on.
            let err = unsafe {
                (self.api.TRITONBACKEND_ModelInstanceReportBatchStatistics)(
                    self.raw,
                    rows,
                    start,
                    compute_start,
                    compute_end,
                    end,
                )
            };
            let _ = check(self.api, err);
        }
    }

    /// A request's inputs, checked against the configuration.
    fn check_request(&self, raw: *mut TRITONBACKEND_Request) -> Result<Checked> {
        let mut count = 0u32;
        // SAFETY: `raw` is a live request of this execute call; `count` is writable.
        check(self.api, unsafe { (self.api.TRITONBACKEND_RequestInputCount)(raw, &mut count) })?;
        if count as usize != self.layout.inputs.len() {
            let names: Vec<String> = self.layout.inputs.iter().map(|t| format!("'{}'", t.name)).collect();
            return Err(Failure::invalid(format!(
                "{count} inputs given, the model takes {}: {}",
                names.len(),
                names.join(", ")
            )));
        }
        let inputs = self.layout.inputs.iter().map(|t| self.check_input(raw, t)).collect::<Result<Vec<_>>>()?;
        let rows = match self.layout.max_batch_size {
            0 => 1,
            _ => batch_rows(&inputs, &self.layout.inputs)?,
        };
        Ok(Checked { raw, inputs, rows })
    }

    fn check_input(&self, raw: *mut TRITONBACKEND_Request, t: &TensorSpec) -> Result<Input> {
        let name = CString::new(t.name.as_str()).map_err(|_| Failure::internal("an input name holds NUL"))?;
        let mut input = std::ptr::null_mut();
        // SAFETY: live request, NUL-terminated name, writable out-pointer.
        let found = check(self.api, unsafe { (self.api.TRITONBACKEND_RequestInput)(raw, name.as_ptr(), &mut input) });
        found.map_err(|_| Failure::invalid(format!("input '{}' is missing", t.name)))?;
        let (mut dtype, mut shape, mut dims, mut bytes, mut buffers) = (0u32, std::ptr::null(), 0u32, 0u64, 0u32);
        let mut name_out: *const c_char = std::ptr::null();
        // SAFETY: `input` was just returned for this request; every out-pointer is writable.
        let err = unsafe {
            (self.api.TRITONBACKEND_InputProperties)(
                input,
                &mut name_out,
                &mut dtype,
                &mut shape,
                &mut dims,
                &mut bytes,
                &mut buffers,
            )
        };
        check(self.api, err)?;
        // SAFETY: Triton's shape array holds `dims` values and lives as long as the request.
        let shape: Vec<i64> =
            if dims == 0 { vec![] } else { unsafe { std::slice::from_raw_parts(shape, dims as usize) }.to_vec() };
        let want = triton_code(t.dtype).unwrap_or(0);
        if dtype != want {
            return Err(Failure::invalid(format!(
                "input '{}': datatype {}, the model takes {}",
                t.name,
                wire_name(dtype),
                wire_name(want)
            )));
        }
        let fits =
            shape.len() == t.shape.len() && shape.iter().zip(&t.shape).all(|(&s, &m)| s >= 0 && (m == -1 || s == m));
        if !fits {
            return Err(Failure::invalid(format!(
                "input '{}': shape {shape:?}, the model takes {:?}",
                t.name, t.shape
            )));
        }
        Ok(Input { raw: input, shape, buffers })
    }

    /// The inputs of `group` joined along axis 0 (for one request: its input as it is).
    fn gather(&self, group: &[Checked]) -> Result<Vec<NDArray>> {
        (0..self.layout.inputs.len())
            .map(|k| {
                let t = &self.layout.inputs[k];
                let mut shape = group[0].inputs[k].shape.clone();
                if group.len() > 1 {
                    shape[0] = group.iter().map(|c| c.inputs[k].shape[0]).sum();
                }
                let joined = NDArray::empty(&shape, t.dtype, cpu())?;
                // SAFETY: `joined` was just allocated, compact, `nbytes` long, and nothing else
                // refers to it while this slice lives.
                let dst = unsafe { std::slice::from_raw_parts_mut(joined.data_ptr() as *mut u8, joined.nbytes()) };
                let mut at = 0;
                for c in group {
                    at += self.copy_input(&c.inputs[k], &t.name, &mut dst[at..])?;
                }
                if at != dst.len() {
                    return Err(Failure::invalid(format!(
                        "input '{}': {at} bytes of data for shape {shape:?}",
                        t.name
                    )));
                }
                Ok(joined)
            })
            .collect()
    }

    /// Copy an input's buffers to the front of `dst`; the bytes copied.
    fn copy_input(&self, input: &Input, name: &str, dst: &mut [u8]) -> Result<usize> {
        let mut at = 0;
        for b in 0..input.buffers {
            let (mut p, mut n, mut mem, mut mem_id) = (std::ptr::null::<c_void>(), 0u64, 0u32, 0i64);
            // SAFETY: `input.raw` is live for this execute call; out-pointers are writable.
            check(self.api, unsafe {
                (self.api.TRITONBACKEND_InputBuffer)(input.raw, b, &mut p, &mut n, &mut mem, &mut mem_id)
            })?;
            if mem != sys::MEMORY_CPU && mem != sys::MEMORY_CPU_PINNED {
                return Err(Failure::unsupported(format!(
                    "input '{name}': its data is in GPU memory; this backend runs on the CPU"
                )));
            }
            let n = n as usize;
            if at + n > dst.len() {
                return Err(Failure::invalid(format!(
                    "input '{name}': more data than its shape {:?} holds",
                    input.shape
                )));
            }
            if n > 0 {
                // SAFETY: Triton's buffer holds `n` readable bytes for the request's lifetime.
                dst[at..at + n].copy_from_slice(unsafe { std::slice::from_raw_parts(p as *const u8, n) });
            }
            at += n;
        }
        Ok(at)
    }

    /// A response with the request's rows (from `row`) of each output it asked for.
    fn respond(&self, c: &Checked, outputs: &[NDArray], row: usize) -> Result<*mut sys::TRITONBACKEND_Response> {
        let mut response = std::ptr::null_mut();
        // SAFETY: live request; writable out-pointer.
        check(self.api, unsafe { (self.api.TRITONBACKEND_ResponseNew)(&mut response, c.raw) })?;
        let filled = self.requested(c.raw).and_then(|wanted| {
            for (o, t) in &self.layout.outputs {
                if wanted.as_ref().map_or(true, |w| w.contains(&t.name)) {
                    self.write_output(response, t, outputs, *o, c, row)?;
                }
            }
            Ok(())
        });
        match filled {
            Ok(()) => Ok(response),
            Err(f) => {
                // SAFETY: the response is ours and unsent; deleted once.
                unsafe { (self.api.TRITONBACKEND_ResponseDelete)(response) };
                Err(f)
            }
        }
    }

    /// The outputs the request names (None: all).
    fn requested(&self, raw: *mut TRITONBACKEND_Request) -> Result<Option<Vec<String>>> {
        let mut n = 0u32;
        // SAFETY: live request; writable out-pointer.
        check(self.api, unsafe { (self.api.TRITONBACKEND_RequestOutputCount)(raw, &mut n) })?;
        if n == 0 {
            return Ok(None);
        }
        let name = |i| {
            let mut p = std::ptr::null();
            // SAFETY: live request, index below the count; the name lives with the request.
            check(self.api, unsafe { (self.api.TRITONBACKEND_RequestOutputName)(raw, i, &mut p) })?;
            // SAFETY: a NUL-terminated string Triton owns, read at once.
            Ok(unsafe { sys::borrowed_str(p) }.to_string())
        };
        (0..n).map(name).collect::<Result<Vec<_>>>().map(Some)
    }

    fn write_output(
        &self,
        response: *mut sys::TRITONBACKEND_Response,
        t: &TensorSpec,
        outputs: &[NDArray],
        o: usize,
        c: &Checked,
        row: usize,
    ) -> Result<()> {
        let array = outputs.get(o).ok_or_else(|| {
            Failure::internal(format!("output '{}': the model gave {} outputs", t.name, outputs.len()))
        })?;
        let src = self.rows_of(array, &t.name, c, row)?;
        let mut shape = array.shape().to_vec();
        if self.layout.max_batch_size > 0 {
            shape[0] = c.rows as i64;
        }
        let dtype = triton_code(array.dtype()).ok_or_else(|| {
            Failure::unsupported(format!("output '{}': dtype {} has no Triton type", t.name, array.dtype()))
        })?;
        let name = CString::new(t.name.as_str()).map_err(|_| Failure::internal("an output name holds NUL"))?;
        let mut output = std::ptr::null_mut();
        // SAFETY: live response; the name and shape live for the call (Triton copies them).
        check(self.api, unsafe {
            (self.api.TRITONBACKEND_ResponseOutput)(
                response,
                &mut output,
                name.as_ptr(),
                dtype,
                shape.as_ptr(),
                shape.len() as u32,
            )
        })?;
        let (mut buf, mut mem, mut mem_id) = (std::ptr::null_mut::<c_void>(), sys::MEMORY_CPU, 0i64);
        // SAFETY: `output` was just made on this response; out-pointers are writable.
        check(self.api, unsafe {
            (self.api.TRITONBACKEND_OutputBuffer)(output, &mut buf, src.len() as u64, &mut mem, &mut mem_id)
        })?;
        if mem != sys::MEMORY_CPU && mem != sys::MEMORY_CPU_PINNED {
            return Err(Failure::unsupported(format!("output '{}': Triton gave GPU memory for it", t.name)));
        }
        if !src.is_empty() {
            // SAFETY: Triton's buffer is `src.len()` writable bytes of CPU memory, not `src`.
            unsafe { std::slice::from_raw_parts_mut(buf as *mut u8, src.len()) }.copy_from_slice(src);
        }
        Ok(())
    }

    /// The bytes of `c`'s rows of a batch's output (all of it when the model does not batch).
    fn rows_of<'o>(&self, array: &'o NDArray, name: &str, c: &Checked, row: usize) -> Result<&'o [u8]> {
        // SAFETY: the array is a compact host array the frame returned; it outlives the borrow.
        let all = unsafe { std::slice::from_raw_parts(array.data_ptr() as *const u8, array.nbytes()) };
        if self.layout.max_batch_size == 0 {
            return Ok(all);
        }
        let total = array.shape().first().copied().unwrap_or(0).max(0) as usize;
        if total < row + c.rows {
            return Err(Failure::internal(format!("output '{name}' has {total} rows, the batch {}", row + c.rows)));
        }
        let per_row = all.len() / total.max(1);
        Ok(&all[row * per_row..(row + c.rows) * per_row])
    }

    /// Send the response (or the error), report the request's statistics, release it.
    fn finish_answered(
        &self,
        raw: *mut TRITONBACKEND_Request,
        answer: Result<*mut sys::TRITONBACKEND_Response>,
        start: u64,
        compute_start: u64,
        compute_end: u64,
    ) {
        match answer {
            Ok(response) => {
                // SAFETY: our filled response, sent once (Triton takes it over).
                let err = unsafe {
                    (self.api.TRITONBACKEND_ResponseSend)(response, sys::RESPONSE_COMPLETE_FINAL, std::ptr::null_mut())
                };
                let sent = check(self.api, err);
                self.report_and_release(raw, sent.is_ok(), start, compute_start, compute_end);
            }
            Err(f) => self.finish(raw, Err(f), start, compute_start, compute_end),
        }
    }

    /// Answer `raw` with `failure`'s error, report, release.
    fn finish(
        &self,
        raw: *mut TRITONBACKEND_Request,
        failure: Result<()>,
        start: u64,
        compute_start: u64,
        compute_end: u64,
    ) {
        if let Err(f) = &failure {
            let mut response = std::ptr::null_mut();
            // SAFETY: live request; writable out-pointer.
            let made = check(self.api, unsafe { (self.api.TRITONBACKEND_ResponseNew)(&mut response, raw) });
            if made.is_ok() {
                // SAFETY: a new response, sent once with a new error object Triton takes over.
                let err = unsafe {
                    (self.api.TRITONBACKEND_ResponseSend)(response, sys::RESPONSE_COMPLETE_FINAL, f.to_triton(self.api))
                };
                let _ = check(self.api, err);
            }
        }
        self.report_and_release(raw, failure.is_ok(), start, compute_start, compute_end);
    }

    fn report_and_release(
        &self,
        raw: *mut TRITONBACKEND_Request,
        ok: bool,
        start: u64,
        compute_start: u64,
        compute_end: u64,
    ) {
        let end = now_ns();
        // SAFETY: live instance and request (released only below, once).
        unsafe {
            let err = (self.api.TRITONBACKEND_ModelInstanceReportStatistics)(
                self.raw,
                raw,
                ok,
                start,
                compute_start,
                compute_end,
                end,
            );
            let _ = check(self.api, err);
            let err = (self.api.TRITONBACKEND_RequestRelease)(raw, sys::REQUEST_RELEASE_ALL);
            let _ = check(self.api, err);
        }
    }
}

/// A request's input shapes past axis 0: requests that agree on them can be joined on axis 0.
fn row_shapes(inputs: &[Input]) -> Vec<Vec<i64>> {
    inputs.iter().map(|i| i.shape.get(1..).unwrap_or(&[]).to_vec()).collect()
}

/// `items` in groups of equal `key`, each group in the items' order, the groups in the order
/// of their first item.
fn group_by<T, K: PartialEq>(items: Vec<T>, key: impl Fn(&T) -> K) -> Vec<Vec<T>> {
    let mut groups: Vec<(K, Vec<T>)> = Vec::new();
    for item in items {
        let k = key(&item);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, members)) => members.push(item),
            None => groups.push((k, vec![item])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// A batching request's rows: axis 0 of its inputs, the same for each.
fn batch_rows(inputs: &[Input], specs: &[TensorSpec]) -> Result<usize> {
    let rows = inputs.first().and_then(|i| i.shape.first()).copied().unwrap_or(0);
    if let Some((i, t)) = inputs.iter().zip(specs).find(|(i, _)| i.shape.first() != Some(&rows)) {
        return Err(Failure::invalid(format!(
            "input '{}': batch {:?}, the request's first input has batch {rows}",
            t.name,
            i.shape.first()
        )));
    }
    usize::try_from(rows).map_err(|_| Failure::invalid("a negative batch"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_keep_the_order_of_their_first_member_and_of_their_members() {
        let items = vec![(3, 'a'), (5, 'b'), (3, 'c'), (7, 'd'), (5, 'e')];
        let groups = group_by(items, |&(len, _)| len);
        assert_eq!(groups, vec![vec![(3, 'a'), (3, 'c')], vec![(5, 'b'), (5, 'e')], vec![(7, 'd')]]);
        assert!(group_by(Vec::<u8>::new(), |&x| x).is_empty());
    }

    #[test]
    fn requests_join_only_when_every_input_agrees_past_the_batch_axis() {
        let input = |shape: &[i64]| Input { raw: std::ptr::null_mut(), shape: shape.to_vec(), buffers: 0 };
        let (a, b, c) =
            ([input(&[1, 3, 32]), input(&[2, 4])], [input(&[2, 3, 32]), input(&[1, 4])], [input(&[1, 5, 32])]);
        assert_eq!(row_shapes(&a), row_shapes(&b));
        assert_ne!(row_shapes(&a)[..1], row_shapes(&c)[..]);
        assert_eq!(row_shapes(&[input(&[])]), vec![Vec::<i64>::new()]);
    }
}
