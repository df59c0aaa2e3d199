//! The model's data inputs: from `.npy` files named on the command line, or filled.

use crate::fail::Failure;
use crate::tensors::{describe, random_bytes, read_npy, SUPPORTED};
use clap::ValueEnum;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::path::PathBuf;
use tvm_runtime::abi::DLDevice;
use tvm_runtime::graph::{Executor, Front, Plan};
use tvm_runtime::runtime::tensor::ndarray::NDArray;

/// `NAME=FILE` of `--input`, `--output`, `--compare` and `params pack`.
pub fn name_and_path(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => Ok((name.to_string(), PathBuf::from(path))),
        _ => Err(format!("`{text}` is not NAME=FILE")),
    }
}

/// How to fill inputs no `--input` gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Fill {
    /// Integers in [0, 10), floats in [-1, 1), from --seed
    Random,
    /// All zeros
    Zeros,
}

#[derive(clap::Args, Debug)]
pub struct InputArgs {
    /// An input from a .npy file (repeatable)
    #[arg(long = "input", short = 'i', value_name = "NAME=FILE.npy", value_parser = name_and_path)]
    pub inputs: Vec<(String, PathBuf)>,
    /// Fill the inputs no --input gives
    #[arg(long, value_enum)]
    pub fill: Option<Fill>,
    /// Seed of --fill random
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
}

/// Indices of the inputs a caller feeds (not weights), in input order.
pub fn data_inputs(plan: &Plan) -> Vec<usize> {
    (0..plan.num_inputs()).filter(|&i| !plan.is_param_input(i)).collect()
}

fn input_list(plan: &Plan) -> String {
    let names: Vec<String> = data_inputs(plan).iter().map(|&i| format!("`{}`", plan.input_name(i))).collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

fn entry_of_input(plan: &Plan, i: usize) -> (tvm_runtime::abi::DLDataType, &[i64]) {
    let eid = plan.input_entry(i);
    (plan.entry_dtype(eid), plan.entry_shape(eid))
}

impl InputArgs {
    /// One array per data input, in input order: from its file, else filled as `--fill` says
    /// (or `default_fill` when it says nothing).
    pub fn arrays(&self, plan: &Plan, default_fill: Option<Fill>) -> Result<Vec<(usize, NDArray)>, Failure> {
        self.arrays_of(plan, default_fill, Shapes::Exact)
    }

    /// As [`InputArgs::arrays`]; with `Shapes::Any`, files may hold any shape (a bucketed
    /// executor checks them) and filled inputs take the plan's.
    pub fn arrays_of(
        &self,
        plan: &Plan,
        default_fill: Option<Fill>,
        shapes: Shapes,
    ) -> Result<Vec<(usize, NDArray)>, Failure> {
        self.check_names(plan)?;
        let mut rng = StdRng::seed_from_u64(self.seed);
        let fill = self.fill.or(default_fill);
        data_inputs(plan)
            .into_iter()
            .map(|i| {
                let name = plan.input_name(i);
                let array = match (self.inputs.iter().find(|(n, _)| n == name), fill) {
                    (Some((_, path)), _) => from_file(plan, i, path, shapes)?,
                    (None, Some(fill)) => filled(plan, i, fill, &mut rng)?,
                    (None, None) => {
                        let (dtype, shape) = entry_of_input(plan, i);
                        return Err(Failure::usage(format!(
                            "missing input `{name}` ({}): give --input {name}=FILE.npy, or --fill random|zeros",
                            describe(dtype, shape)
                        )));
                    }
                };
                Ok((i, array))
            })
            .collect()
    }

    fn check_names(&self, plan: &Plan) -> Result<(), Failure> {
        for (k, (name, path)) in self.inputs.iter().enumerate() {
            let known = plan.input_index(name);
            if known.is_some_and(|i| plan.is_param_input(i)) {
                return Err(Failure::usage(format!(
                    "--input {name}={}: `{name}` is a weight of the model, not a data input (data inputs: {})",
                    path.display(),
                    input_list(plan)
                )));
            }
            if known.is_none() {
                return Err(Failure::usage(format!(
                    "--input {name}={}: the model has no input named `{name}` (data inputs: {})",
                    path.display(),
                    input_list(plan)
                )));
            }
            if self.inputs[..k].iter().any(|(n, _)| n == name) {
                return Err(Failure::usage(format!("--input {name}: given twice")));
            }
        }
        Ok(())
    }
}

/// Whether an input file must have the plan's shape.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shapes {
    Exact,
    Any,
}

fn from_file(plan: &Plan, i: usize, path: &std::path::Path, shapes: Shapes) -> Result<NDArray, Failure> {
    let array = read_npy(path)?;
    let (dtype, shape) = entry_of_input(plan, i);
    if array.dtype() != dtype || (shapes == Shapes::Exact && array.shape() != shape) {
        return Err(Failure::file(
            path,
            format!(
                "input `{}` is {}, the file holds {}",
                plan.input_name(i),
                describe(dtype, shape),
                describe(array.dtype(), array.shape())
            ),
        ));
    }
    Ok(array)
}

fn filled(plan: &Plan, i: usize, fill: Fill, rng: &mut StdRng) -> Result<NDArray, Failure> {
    let (dtype, shape) = entry_of_input(plan, i);
    let array = NDArray::empty(shape, dtype, DLDevice::cpu(0))?;
    let n = shape.iter().product::<i64>().max(0) as usize;
    let bytes = match fill {
        Fill::Zeros => vec![0u8; array.nbytes()],
        Fill::Random => random_bytes(dtype, n, rng).ok_or_else(|| {
            Failure::usage(format!(
                "input `{}` is {dtype}, which --fill random cannot make (it makes {SUPPORTED}): give --input or --fill zeros",
                plan.input_name(i)
            ))
        })?,
    };
    array.copy_from_bytes(&bytes)?;
    Ok(array)
}

/// Copy the arrays into the executor's inputs.
pub fn feed(front: &Front<Executor>, arrays: &[(usize, NDArray)]) -> Result<(), Failure> {
    let mut exec = front.lock()?;
    for (i, array) in arrays {
        exec.set_input(*i, array.tensor())?;
    }
    Ok(())
}
