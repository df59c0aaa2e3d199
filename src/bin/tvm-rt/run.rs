//! `tvm-rt run`: run a model once on real or filled inputs; write its outputs, or compare them
//! with expected arrays (exit code 1 on a mismatch, for scripts and CI).

use crate::fail::{Failure, FileContext};
use crate::inputs::{feed, name_and_path, InputArgs, Shapes};
use crate::model::{is_manifest, load_buckets, ExecArgs, Model, ModelArgs};
use crate::tensors::{copy_to, describe, read_npy, values_f64, write_npy};
use crate::vm::{self, flatten, no_executor_options, VmArgs, VmModel};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tvm_runtime::abi::{dtype_code, DLDataType, DLDevice};
use tvm_runtime::graph::buckets::{BucketContext, BucketSet};
use tvm_runtime::graph::Plan;
use tvm_runtime::runtime::tensor::ndarray::NDArray;

/// Run the model once: inputs from .npy files (or filled), outputs to .npy files or compared
#[derive(clap::Args, Debug)]
#[command(after_help = crate::EXIT_CODES)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    pub(crate) vm: VmArgs,
    #[command(flatten)]
    pub(crate) inputs: InputArgs,
    /// Write every output to DIR/<output name>.npy (a Relax VM function's: DIR/<function>_<index>.npy)
    #[arg(long, value_name = "DIR")]
    pub(crate) output_dir: Option<PathBuf>,
    /// Write one output (by name or index) to a .npy file (repeatable)
    #[arg(long = "output", short = 'o', value_name = "NAME=FILE.npy", value_parser = name_and_path)]
    pub(crate) outputs: Vec<(String, PathBuf)>,
    /// Compare an output (by name or index) with the array in a .npy file (repeatable); exit code 1
    /// when an element differs by more than atol + rtol * |expected|
    #[arg(long = "compare", short = 'c', value_name = "NAME=FILE.npy", value_parser = name_and_path)]
    pub(crate) compares: Vec<(String, PathBuf)>,
    /// Relative tolerance of --compare
    #[arg(long, default_value_t = 1e-5)]
    pub(crate) rtol: f64,
    /// Absolute tolerance of --compare
    #[arg(long, default_value_t = 1e-8)]
    pub(crate) atol: f64,
    #[command(flatten)]
    pub(crate) exec: ExecArgs,
}

pub fn main(args: Args) -> Result<(), Failure> {
    if let Some(model) = vm::open(&args.model)? {
        return run_vm(&args, &model);
    }
    args.vm.graph_only()?;
    let (model, buckets) = match args.model.model.as_deref().filter(|p| is_manifest(p)) {
        Some(manifest) => {
            let set = load_buckets(manifest, args.exec.options()?, args.model.device)?;
            let plan = set.largest().plan.clone();
            (Model { plan, source: manifest.display().to_string() }, Some(set))
        }
        None => (args.model.load(args.exec.memory_plan())?, None),
    };
    let plan = &model.plan;
    let writes = resolve(plan, &args.outputs)?;
    let compares = resolve(plan, &args.compares)?;
    let expected: Vec<NDArray> = compares.iter().map(|(_, path)| read_npy(path)).collect::<Result<_, _>>()?;
    let outputs = match buckets {
        Some(set) => run_in_bucket(&args, set)?,
        None => run_once(&args, &model)?,
    };
    println!("ran {}", model.source);
    for (i, out) in outputs.iter().enumerate() {
        println!("output {i} `{}`: {}", plan.output_name(i), summary(out)?);
    }
    if let Some(dir) = &args.output_dir {
        write_all(plan, &outputs, dir)?;
    }
    for (i, path) in &writes {
        write_npy(path, &outputs[*i])?;
        println!("wrote output `{}` to {}", plan.output_name(*i), path.display());
    }
    compare_all(plan, &outputs, compares.iter().zip(&expected), (args.rtol, args.atol))
}

/// Feed the inputs, run once, and copy every output out.
fn run_once(args: &Args, model: &Model) -> Result<Vec<NDArray>, Failure> {
    let arrays = args.inputs.arrays(&model.plan, None)?;
    let front = args.exec.executor(model)?;
    feed(&front, &arrays)?;
    front.run()?;
    let exec = front.lock()?;
    let host = |i| copy_to(exec.get_output(i)?, DLDevice::cpu(0));
    (0..model.plan.num_outputs()).map(host).collect()
}

/// Feed the inputs (of any shape the buckets cover) to a bucketed executor, run the bucket they
/// pick once, and copy every output out with its true shape.
fn run_in_bucket(args: &Args, set: Arc<BucketSet>) -> Result<Vec<NDArray>, Failure> {
    let arrays = args.inputs.arrays_of(&set.largest().plan, None, Shapes::Any)?;
    let mut ctx = BucketContext::new(set)?;
    for (i, array) in &arrays {
        // A shape no bucket covers is the user's input error, not the runtime's.
        ctx.set_input(*i, array.tensor()).map_err(Failure::usage)?;
    }
    let bucket = &ctx.bucket_set().buckets()[ctx.current_bucket()];
    println!("bucket {} ({}, extents {:?})", ctx.current_bucket(), bucket.label, bucket.extents);
    ctx.run()?;
    Ok((0..ctx.num_outputs()).map(|i| copy_of(&ctx.get_output(i)?)).collect::<Result<_, _>>()?)
}

/// A compact copy of `a` (a bucketed output may be a view the next run overwrites).
fn copy_of(a: &NDArray) -> tvm_runtime::runtime::base::error::Result<NDArray> {
    NDArray::from_bytes(a.shape(), a.dtype(), &a.to_vec_u8()?)
}

/// Compare each output with its expected array; one failure naming every output that differs.
fn compare_all<'a>(
    plan: &Plan,
    outputs: &[NDArray],
    pairs: impl Iterator<Item = (&'a (usize, PathBuf), &'a NDArray)>,
    tolerances: (f64, f64),
) -> Result<(), Failure> {
    let mut failed = Vec::new();
    for ((i, path), want) in pairs {
        let name = plan.output_name(*i);
        if !compare(&name, &outputs[*i], want, path, tolerances)? {
            failed.push(format!("`{name}`"));
        }
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(Failure::mismatch(format!("output {} differs from the expected array", failed.join(", ")))),
    }
}

/// The output index of each `NAME=FILE` (a name, `node:k`, or an index).
fn resolve(plan: &Plan, pairs: &[(String, PathBuf)]) -> Result<Vec<(usize, PathBuf)>, Failure> {
    pairs.iter().map(|(name, path)| Ok((output_named(plan, name)?, path.clone()))).collect()
}

fn output_named(plan: &Plan, name: &str) -> Result<usize, Failure> {
    let by_index = name.parse::<usize>().ok().filter(|&i| i < plan.num_outputs());
    plan.output_index(name).or(by_index).ok_or_else(|| {
        let names: Vec<String> = (0..plan.num_outputs()).map(|i| format!("`{}`", plan.output_name(i))).collect();
        Failure::usage(format!("the model has no output named `{name}` (outputs: {})", names.join(", ")))
    })
}

/// "float32 [1, 10]: 0.1 0.2 ... (min 0.01, max 0.3)"
pub(crate) fn summary(a: &NDArray) -> Result<String, Failure> {
    let head = describe(a.dtype(), a.shape());
    let Some(values) = values_f64(a)? else { return Ok(head) };
    let shown: Vec<String> = values.iter().take(8).map(|v| format!("{v:.6}")).collect();
    let more = if values.len() > 8 { " ..." } else { "" };
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Ok(format!("{head}: [{}{more}] (min {min:.6}, max {max:.6})", shown.join(", ")))
}

/// Output file names: the output's name with path separators replaced.
pub(crate) fn file_name(name: &str) -> String {
    name.chars().map(|c| if matches!(c, '/' | '\\' | ':') { '_' } else { c }).collect::<String>() + ".npy"
}

fn write_all(plan: &Plan, outputs: &[NDArray], dir: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).in_file(dir)?;
    for (i, out) in outputs.iter().enumerate() {
        let path = dir.join(file_name(&plan.output_name(i)));
        write_npy(&path, out)?;
        println!("wrote output `{}` to {}", plan.output_name(i), path.display());
    }
    Ok(())
}

/// Compare `got` with `want` element by element, numpy's `allclose` rule; print the result.
pub(crate) fn compare(
    name: &str,
    got: &NDArray,
    want: &NDArray,
    path: &Path,
    (rtol, atol): (f64, f64),
) -> Result<bool, Failure> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(Failure::file(
            path,
            format!(
                "output `{name}` is {}, the file holds {}",
                describe(got.dtype(), got.shape()),
                describe(want.dtype(), want.shape())
            ),
        ));
    }
    let (g, w) = match (values_f64(got)?, values_f64(want)?) {
        (Some(g), Some(w)) => (g, w),
        _ => return Err(Failure::file(path, format!("dtype {} cannot be compared", got.dtype()))),
    };
    let d = Differences::of(&g, &w, rtol, atol);
    let errors = format!("max abs error {:.3e}, max rel error {:.3e}", d.max_abs, d.max_rel);
    let Some(first) = d.first_mismatch else {
        println!("compare `{name}` with {}: OK ({errors}; rtol {rtol:e}, atol {atol:e})", path.display());
        return Ok(true);
    };
    println!(
        "compare `{name}` with {}: MISMATCH: {} of {} elements differ ({errors}; rtol {rtol:e}, atol {atol:e}); \
         first at index {:?}: got {}, expected {}",
        path.display(),
        d.mismatches,
        g.len(),
        unravel(first, got.shape()),
        shown(g[first], got.dtype()),
        shown(w[first], got.dtype())
    );
    Ok(false)
}

/// A value as its element type prints it (f32's shortest form, not f64's).
fn shown(v: f64, dtype: DLDataType) -> String {
    match dtype.code == dtype_code::FLOAT && dtype.bits <= 32 {
        true => (v as f32).to_string(),
        false => v.to_string(),
    }
}

struct Differences {
    max_abs: f64,
    max_rel: f64,
    mismatches: usize,
    first_mismatch: Option<usize>,
}

impl Differences {
    /// NaN equals nothing, as in numpy's default; equal infinities match.
    fn of(got: &[f64], want: &[f64], rtol: f64, atol: f64) -> Differences {
        let mut d = Differences { max_abs: 0.0, max_rel: 0.0, mismatches: 0, first_mismatch: None };
        for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
            let abs = if g == w { 0.0 } else { (g - w).abs() };
            let ok = abs <= atol + rtol * w.abs();
            d.max_abs = d.max_abs.max(abs);
            if w != 0.0 {
                d.max_rel = d.max_rel.max(abs / w.abs());
            }
            if !ok {
                d.mismatches += 1;
                d.first_mismatch.get_or_insert(k);
            }
        }
        d
    }
}

/// The multi-dimensional index of flat index `k` in a C-order array of `shape`.
fn unravel(mut k: usize, shape: &[i64]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (slot, &dim) in index.iter_mut().zip(shape).rev() {
        let dim = dim.max(1) as usize;
        *slot = k % dim;
        k /= dim;
    }
    index
}

// --- a VM executable ------------------------------------------------------------------------------------

/// `tvm-rt run` on a VM executable: call the function once; print, write and compare every
/// array of its result (named by index: `0`, or a tuple's `0`, `1`, ...).
fn run_vm(args: &Args, model: &VmModel) -> Result<(), Failure> {
    no_executor_options(&args.exec)?;
    let arrays = model.arrays(&args.vm, &args.inputs, None)?;
    let expected: Vec<NDArray> = args.compares.iter().map(|(_, path)| read_npy(path)).collect::<Result<_, _>>()?;
    let outputs = flatten(model.call(&args.vm, arrays)?()?)?;
    let outputs: Vec<(String, NDArray)> =
        outputs.into_iter().map(|(n, a)| Ok((n, copy_to(a, DLDevice::cpu(0))?))).collect::<Result<_, Failure>>()?;
    let function = args.vm.name();
    println!("ran {} (function {function})", model.source);
    for (name, out) in &outputs {
        println!("output {name}: {}", summary(out)?);
    }
    let named = |name: &str| -> Result<&NDArray, Failure> {
        outputs.iter().find(|(n, _)| n == name).map(|(_, a)| a).ok_or_else(|| {
            let names: Vec<String> = outputs.iter().map(|(n, _)| format!("`{n}`")).collect();
            Failure::usage(format!("`{function}` has no output `{name}` (outputs: {})", names.join(", ")))
        })
    };
    let writes: Vec<(&NDArray, &Path)> =
        args.outputs.iter().map(|(n, p)| Ok((named(n)?, p.as_path()))).collect::<Result<_, Failure>>()?;
    if let Some(dir) = &args.output_dir {
        std::fs::create_dir_all(dir).in_file(dir)?;
        for (name, out) in &outputs {
            let path = dir.join(file_name(&format!("{function}_{}", name.replace('.', "_"))));
            crate::tensors::write_npy(&path, out)?;
            println!("wrote output {name} to {}", path.display());
        }
    }
    for (out, path) in writes {
        crate::tensors::write_npy(path, out)?;
        println!("wrote output to {}", path.display());
    }
    let mut failed = Vec::new();
    for ((name, path), want) in args.compares.iter().zip(&expected) {
        if !compare(name, named(name)?, want, path, (args.rtol, args.atol))? {
            failed.push(format!("`{name}`"));
        }
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(Failure::mismatch(format!("output {} differs from the expected array", failed.join(", ")))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unravels_c_order() {
        assert_eq!(unravel(0, &[2, 3]), vec![0, 0]);
        assert_eq!(unravel(4, &[2, 3]), vec![1, 1]);
        assert_eq!(unravel(23, &[2, 3, 4]), vec![1, 2, 3]);
        assert_eq!(unravel(0, &[]), Vec::<usize>::new());
    }

    #[test]
    fn differences_follow_allclose() {
        let d = Differences::of(&[1.0, 2.0, f64::NAN], &[1.0, 2.1, 1.0], 0.0, 0.05);
        assert_eq!((d.mismatches, d.first_mismatch), (2, Some(1)));
        assert!((d.max_abs - 0.1).abs() < 1e-12);
        let d = Differences::of(&[100.0, f64::INFINITY], &[100.001, f64::INFINITY], 1e-4, 0.0);
        assert_eq!(d.mismatches, 0);
    }
}
