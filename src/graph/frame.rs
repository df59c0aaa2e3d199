//! [`Frame`]: what every executor answers, whatever its kind: a plain [`Executor`] runs one
//! graph, a bucketed context (`buckets::BucketContext`) dispatches each request to a bucket.
//! Callers that several threads may reach hold either in a `Front` (`front.rs`).

use super::executor::Executor;
use super::plan::{Key, TensorInfo};
use super::runner::{run_profiled, OpTiming, Runner};
use crate::runtime::base::error::Result;
use crate::runtime::dlpack::tensor_ref::TensorRef;
use std::any::Any;

/// The calls an executor answers the same way whatever its kind.
pub trait Frame: Send + 'static {
    fn num_inputs(&self) -> usize;
    fn num_outputs(&self) -> usize;
    /// The input named or numbered by `key`.
    fn input(&self, key: Key<'_>) -> Result<usize>;
    /// The output named (`node` or `node:k`) or numbered by `key`.
    fn output(&self, key: Key<'_>) -> Result<usize>;
    fn input_info(&self, index: usize) -> Result<TensorInfo<'_>>;
    fn output_info(&self, index: usize) -> Result<TensorInfo<'_>>;
    /// Copy `src` into input `index`.
    fn set_input(&mut self, index: usize, src: TensorRef<'_>) -> Result<()>;
    /// Copy output `index` into `out`.
    fn get_output_into(&self, index: usize, out: TensorRef<'_>) -> Result<()>;
    fn load_params(&mut self, blob: &[u8]) -> Result<()>;
    /// Run once with `runner`, its front's. A bucketed context runs the bucket its inputs
    /// picked with the runner that bucket was made with (each bucket's plan has its own).
    fn run_with(&mut self, runner: &dyn Runner) -> Result<()>;
    /// Run once timing every op, as [`Frame::run_with`] runs.
    fn run_profiled_with(&mut self, runner: &dyn Runner) -> Result<Vec<OpTiming>>;
    /// The frame itself, for the calls only its kind has (see `Front::lock_as`).
    fn as_any(&mut self) -> &mut dyn Any;
}

impl Frame for Executor {
    fn num_inputs(&self) -> usize {
        self.plan().num_inputs()
    }
    fn num_outputs(&self) -> usize {
        self.plan().num_outputs()
    }
    fn input(&self, key: Key<'_>) -> Result<usize> {
        Executor::input(self, key)
    }
    fn output(&self, key: Key<'_>) -> Result<usize> {
        Executor::output(self, key)
    }
    fn input_info(&self, index: usize) -> Result<TensorInfo<'_>> {
        Executor::input_info(self, index)
    }
    fn output_info(&self, index: usize) -> Result<TensorInfo<'_>> {
        Executor::output_info(self, index)
    }
    fn set_input(&mut self, index: usize, src: TensorRef<'_>) -> Result<()> {
        Executor::set_input(self, index, src)
    }
    fn get_output_into(&self, index: usize, out: TensorRef<'_>) -> Result<()> {
        Executor::get_output_into(self, index, out)
    }
    fn load_params(&mut self, blob: &[u8]) -> Result<()> {
        Executor::load_params(self, blob)
    }
    fn run_with(&mut self, runner: &dyn Runner) -> Result<()> {
        runner.run(self, None)
    }
    fn run_profiled_with(&mut self, runner: &dyn Runner) -> Result<Vec<OpTiming>> {
        run_profiled(runner, self)
    }
    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
}
