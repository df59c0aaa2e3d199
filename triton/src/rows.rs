//! A batch on the request pipeline: a model of batch one runs a batch of R rows as R pipeline
//! requests at once (over the pipeline's core groups), each reading its row of the joined inputs
//! and writing its row of the joined outputs.

use crate::error::{Failure, Result};
use crate::model::cpu;
use tvm_runtime::graph::pipeline::Pipeline;
use tvm_runtime::runtime::dlpack::tensor_ref::TensorRef;
use tvm_runtime::runtime::tensor::ndarray::NDArray;

/// Run `inputs` (the model's data inputs, in order; R rows each, or exactly the model's shapes)
/// and return the outputs with R rows (or the model's shapes).
pub fn run_rows(p: &Pipeline, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
    let plan = p.plan();
    let units: Vec<&[i64]> = p.data_inputs().iter().map(|&i| plan.entry_shape(plan.input_entry(i))).collect();
    let rows = rows(inputs, &units)?;
    let outputs = (0..plan.num_outputs())
        .map(|o| {
            let eid = plan.output_entry(o);
            let mut shape = plan.entry_shape(eid).to_vec();
            shape[0] *= rows as i64;
            NDArray::empty(&shape, plan.entry_dtype(eid), cpu())
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let row_inputs = (0..rows).map(|r| row_views(inputs, r, rows)).collect::<Result<Vec<_>>>()?;
    let row_outputs = (0..rows).map(|r| row_views(&outputs, r, rows)).collect::<Result<Vec<_>>>()?;
    submit_and_wait(p, &row_inputs, &row_outputs)?;
    Ok(outputs)
}

/// The batch's rows: 1 when the inputs have the model's shapes, else their axis 0 (the model
/// takes one row: its shapes start with 1).
fn rows(inputs: &[NDArray], units: &[&[i64]]) -> Result<usize> {
    if inputs.iter().zip(units).all(|(a, u)| a.shape() == *u) {
        return Ok(1);
    }
    let rows = inputs.first().and_then(|a| a.shape().first()).copied().unwrap_or(0);
    let fits = |(a, u): (&NDArray, &&[i64])| {
        u.first() == Some(&1) && a.shape().first() == Some(&rows) && a.shape()[1..] == u[1..]
    };
    if rows < 1 || !inputs.iter().zip(units).all(fits) {
        let given: Vec<&[i64]> = inputs.iter().map(|a| a.shape()).collect();
        return Err(Failure::invalid(format!("inputs of shapes {given:?} for a model taking {units:?}")));
    }
    Ok(rows as usize)
}

/// Row `r` of each of `arrays` (of `rows` rows each), sharing their memory.
fn row_views(arrays: &[NDArray], r: usize, rows: usize) -> Result<Vec<NDArray>> {
    arrays
        .iter()
        .map(|a| {
            if rows == 1 {
                return Ok(a.clone());
            }
            let mut shape = a.shape().to_vec();
            shape[0] = 1;
            let bytes = a.nbytes() / rows;
            Ok(a.create_view_at(r * bytes, &shape, a.dtype())?)
        })
        .collect()
}

/// Submit every row, then wait for every row submitted (also when a later submit failed: the
/// requests borrow the arrays until they are done); the first error.
fn submit_and_wait(p: &Pipeline, inputs: &[Vec<NDArray>], outputs: &[Vec<NDArray>]) -> Result<()> {
    let mut ids = Vec::with_capacity(inputs.len());
    let mut first_error = None;
    for (ins, outs) in inputs.iter().zip(outputs) {
        let ins: Vec<TensorRef<'_>> = ins.iter().map(|a| a.tensor()).collect();
        let outs: Vec<TensorRef<'_>> = outs.iter().map(|a| a.tensor()).collect();
        // SAFETY: the arrays behind these tensors are owned by the caller and outlive this
        // function, which waits below for every request it submitted; each row's outputs are
        // its own bytes, read by nobody until then.
        match unsafe { p.submit(&ins, &outs, None) } {
            Ok(id) => ids.push(id),
            Err(e) => {
                first_error = Some(Failure::from(e));
                break;
            }
        }
    }
    for id in ids {
        if let Err(e) = p.wait(id) {
            first_error.get_or_insert(Failure::from(e));
        }
    }
    first_error.map_or(Ok(()), Err)
}
