//! What every front end (our C API, tools) does with an executor, whether it runs one graph
//! ([`ExecutorFront`]) or dispatches each request to a bucket ([`BucketedFront`]): one
//! [`GraphSession`] interface, and the [`Engine`] that holds either kind.

use super::buckets::{BucketContext, BucketGuard, BucketedFront};
use super::executor::Executor;
use super::front::{ExecutorFront, FrontGuard};
use super::plan::{Key, TensorInfo};
use super::runner::OpTiming;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::TensorRef;
use std::ops::{Deref, DerefMut};

/// The calls an executor answers the same way whatever its kind.
pub trait GraphSession {
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
}

impl GraphSession for Executor {
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
}

impl GraphSession for BucketContext {
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
}

/// An executor of either kind, as a C handle holds it.
pub enum Engine {
    Plain(ExecutorFront),
    Bucketed(BucketedFront),
}

/// Exclusive use of an engine for one call.
pub enum SessionGuard<'a> {
    Plain(FrontGuard<'a>),
    Bucketed(BucketGuard<'a>),
}

impl<'a> Deref for SessionGuard<'a> {
    type Target = dyn GraphSession + 'a;
    fn deref(&self) -> &Self::Target {
        match self {
            SessionGuard::Plain(g) => &**g,
            SessionGuard::Bucketed(g) => &**g,
        }
    }
}

impl DerefMut for SessionGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            SessionGuard::Plain(g) => &mut **g,
            SessionGuard::Bucketed(g) => &mut **g,
        }
    }
}

impl Engine {
    /// Exclusive use for a synchronous call (see [`ExecutorFront::lock`]).
    pub fn lock(&self) -> Result<SessionGuard<'_>> {
        Ok(match self {
            Engine::Plain(f) => SessionGuard::Plain(f.lock()?),
            Engine::Bucketed(f) => SessionGuard::Bucketed(f.lock()?),
        })
    }

    /// Run once (a bucketed engine runs the bucket its inputs picked).
    pub fn run(&self) -> Result<()> {
        match self {
            Engine::Plain(f) => f.run(),
            Engine::Bucketed(f) => f.lock()?.run(),
        }
    }

    /// Run once timing every op.
    pub fn run_profiled(&self) -> Result<Vec<OpTiming>> {
        match self {
            Engine::Plain(f) => f.run_profiled(),
            Engine::Bucketed(f) => f.lock()?.run_profiled(),
        }
    }

    /// The plain executor, for the calls only it has; `call` names the call in the error a
    /// bucketed one gives.
    pub fn plain(&self, call: &str) -> Result<&ExecutorFront> {
        match self {
            Engine::Plain(f) => Ok(f),
            Engine::Bucketed(_) => Err(Error::unsupported(format!(
                "{call} is not supported on a bucketed executor (its buffers change with each request's bucket)"
            ))),
        }
    }
}
