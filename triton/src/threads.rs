//! How an instance's threads run, from the parameters:
//!
//! - `intra_op_threads` / `inter_op_threads`: the executor's (see the runtime's executor options);
//! - `core_groups` / `threads_per_group`: the instance runs its requests on the runtime's request
//!   pipeline (plain graph models): a batch Triton hands it is split into rows, and the rows run
//!   at once over `core_groups` groups of `threads_per_group` threads each, over one copy of the
//!   weights;
//! - `pin` (`0` or `1`): the CPUs the process may use are split evenly among the model's
//!   instances and instance k's kernel threads are pinned to group k (with the pipeline, the
//!   instance's CPUs are split again among its core groups).
//!
//! Kernel thread pools come from the runtime's shared pools (one per distinct size and CPU set),
//! and the pipeline's streams from its shared stream workers (at most about one per core), so
//! instances do not multiply threads.

use crate::config::parameter;
use crate::error::{Failure, Result};
use std::sync::Arc;
use tvm_runtime::graph::options::{ExecutorOptions, PipelineOptions};
use tvm_runtime::runtime::threads::pool::{allowed_cpus, default_num_threads, shared_pool, PoolKey, ThreadPool};

/// The threading parameters of a model, as its configuration states them.
#[derive(Clone, Debug)]
pub struct Threads {
    pub executor: ExecutorOptions,
    pub pipeline: Option<PipelineOptions>,
    /// Each instance's CPUs when pinned: instance k runs on `pinned[k % len]`.
    pub pinned: Option<Vec<Vec<usize>>>,
    /// `intra_op_threads` when given.
    intra_given: Option<usize>,
    per_group_given: bool,
}

/// What one instance runs with.
pub struct InstanceThreads {
    pub executor: ExecutorOptions,
    pub pipeline: Option<PipelineOptions>,
    /// The pinned pool its kernels use (pinned, without the pipeline).
    pub pool: Option<Arc<ThreadPool>>,
}

impl Threads {
    /// The threading parameters of `config` (whose instances are counted for `pin`).
    pub fn from_config(config: &serde_json::Value) -> Result<Threads> {
        let mut executor = crate::config::executor_options(config)?;
        let pipeline = pipeline_options(config)?;
        let intra_given = parameter(config, "intra_op_threads").map(|_| executor.intra_op_threads);
        if pipeline.is_some() && (intra_given.is_some() || parameter(config, "inter_op_threads").is_some()) {
            return Err(Failure::invalid(
                "parameter `core_groups`: with the pipeline, kernels run on core_groups x threads_per_group \
                 threads; leave out intra_op_threads and inter_op_threads",
            ));
        }
        let pinned = match pin(config)? {
            true => Some(instance_cpus(config, &executor)?),
            false => None,
        };
        if pinned.is_some() {
            // The kernels run on the instance's pinned pool, which the frame makes current: the
            // executor runs ops one at a time on the current pool.
            executor.intra_op_threads = default_num_threads();
        }
        let per_group_given = parameter(config, "threads_per_group").is_some();
        Ok(Threads { executor, pipeline, pinned, intra_given, per_group_given })
    }

    /// The threads of the model's instance number `k` (0-based, in the order they start).
    pub fn for_instance(&self, k: usize) -> Result<InstanceThreads> {
        let cpus = self.pinned.as_ref().map(|groups| groups[k % groups.len()].clone());
        let mut out = InstanceThreads { executor: self.executor, pipeline: self.pipeline.clone(), pool: None };
        match (&mut out.pipeline, cpus) {
            (Some(p), Some(cpus)) => self.pin_pipeline(p, &cpus)?,
            (None, Some(cpus)) => {
                let threads = self.intra_given.unwrap_or(cpus.len());
                out.pool = Some(shared_pool(PoolKey { threads, cpus: Some(cpus), slot: 0 })?);
            }
            _ => {}
        }
        Ok(out)
    }

    /// The pipeline's core groups on the instance's `cpus`, split evenly among them.
    fn pin_pipeline(&self, p: &mut PipelineOptions, cpus: &[usize]) -> Result<()> {
        let groups = split(cpus, p.core_groups).map_err(|e| {
            Failure::invalid(format!(
                "parameter `pin`: core_groups {} on an instance's CPUs {cpus:?}: {e}",
                p.core_groups
            ))
        })?;
        if !self.per_group_given {
            p.threads_per_group = groups.iter().map(Vec::len).min().unwrap_or(1);
        }
        p.cpus = Some(groups);
        Ok(())
    }
}

/// `core_groups` / `threads_per_group` as the pipeline's options (None when neither is given).
fn pipeline_options(config: &serde_json::Value) -> Result<Option<PipelineOptions>> {
    let pairs: Vec<String> = ["core_groups", "threads_per_group"]
        .iter()
        .filter_map(|k| parameter(config, k).map(|v| format!("{k}={v}")))
        .collect();
    if pairs.is_empty() {
        return Ok(None);
    }
    let options = PipelineOptions::parse(Some(&pairs.join(",")))
        .map_err(|e| Failure::invalid(format!("parameters: {}", e.message().replace("option `", "parameter `"))))?;
    Ok(Some(options))
}

/// Parameter `pin`: `0` (default) or `1`.
fn pin(config: &serde_json::Value) -> Result<bool> {
    match parameter(config, "pin").as_deref().map(str::trim) {
        None | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(Failure::invalid(format!("parameter `pin`: `{other}` is not 0 or 1"))),
    }
}

/// The process's CPUs split among the model's CPU instances.
fn instance_cpus(config: &serde_json::Value, executor: &ExecutorOptions) -> Result<Vec<Vec<usize>>> {
    if executor.inter_op_threads > 1 {
        return Err(Failure::invalid(
            "parameter `pin`: pinned instances run ops one at a time (inter_op_threads 1); \
             use core_groups for requests in parallel",
        ));
    }
    let count = instance_count(config);
    split(&allowed_cpus(), count).map_err(|e| Failure::invalid(format!("parameter `pin`: {count} instances: {e}")))
}

/// The model's CPU instances (`instance_group`'s counts; 1 when it states none).
fn instance_count(config: &serde_json::Value) -> usize {
    let groups = config["instance_group"].as_array().cloned().unwrap_or_default();
    let count = |g: &serde_json::Value| {
        let c = &g["count"];
        c.as_u64().or_else(|| c.as_str().and_then(|s| s.parse().ok())).unwrap_or(1) as usize
    };
    groups.iter().filter(|g| g["kind"].as_str().map_or(true, |k| k == "KIND_CPU")).map(count).sum::<usize>().max(1)
}

/// `cpus` in `groups` contiguous groups as even as they divide (the first groups get the extra).
fn split(cpus: &[usize], groups: usize) -> std::result::Result<Vec<Vec<usize>>, String> {
    if groups == 0 || groups > cpus.len() {
        return Err(format!("{groups} groups of {} CPUs: each group needs a CPU", cpus.len()));
    }
    let (size, extra) = (cpus.len() / groups, cpus.len() % groups);
    let mut at = 0;
    Ok((0..groups)
        .map(|g| {
            let n = size + usize::from(g < extra);
            at += n;
            cpus[at - n..at].to_vec()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(pairs: &[(&str, &str)]) -> serde_json::Value {
        let map: serde_json::Map<String, serde_json::Value> =
            pairs.iter().map(|(k, v)| (k.to_string(), json!({ "string_value": v }))).collect();
        json!({ "parameters": map })
    }

    #[test]
    fn split_is_even_with_the_extra_first() {
        assert_eq!(split(&[0, 1, 2, 3, 4], 2).unwrap(), vec![vec![0, 1, 2], vec![3, 4]]);
        assert_eq!(split(&[4, 5], 2).unwrap(), vec![vec![4], vec![5]]);
        assert!(split(&[0], 2).unwrap_err().contains("each group needs a CPU"));
    }

    #[test]
    fn pipeline_parameters_and_their_errors_name_the_key() {
        let t = Threads::from_config(&params(&[("core_groups", "2"), ("threads_per_group", "1")])).unwrap();
        let p = t.pipeline.unwrap();
        assert_eq!((p.core_groups, p.threads_per_group), (2, 1));
        assert!(Threads::from_config(&params(&[])).unwrap().pipeline.is_none());
        let e = |pairs: &[(&str, &str)]| Threads::from_config(&params(pairs)).unwrap_err().message;
        assert!(e(&[("core_groups", "0")]).contains("parameter `core_groups`"), "{}", e(&[("core_groups", "0")]));
        assert!(e(&[("threads_per_group", "x")]).contains("parameter `threads_per_group`"));
        assert!(e(&[("core_groups", "1"), ("intra_op_threads", "2")]).starts_with("parameter `core_groups`"));
        assert_eq!(e(&[("pin", "yes")]), "parameter `pin`: `yes` is not 0 or 1");
        assert!(e(&[("pin", "1"), ("inter_op_threads", "2")]).starts_with("parameter `pin`"));
    }

    #[test]
    fn pinned_instances_get_their_own_cpus() {
        let cpus = allowed_cpus();
        let mut config = params(&[("pin", "1")]);
        config["instance_group"] = json!([{ "kind": "KIND_CPU", "count": cpus.len() }]);
        let t = Threads::from_config(&config).unwrap();
        assert_eq!(t.pinned.as_ref().unwrap().len(), cpus.len());
        let first = t.for_instance(0).unwrap();
        assert_eq!(first.pool.unwrap().num_threads(), 1);
        config["instance_group"] = json!([{ "kind": "KIND_CPU", "count": cpus.len() + 1 }]);
        let e = Threads::from_config(&config).unwrap_err().message;
        assert!(e.starts_with("parameter `pin`") && e.contains("each group needs a CPU"), "{e}");
    }
}
