//! Executor and pipeline options, one convention everywhere: NULL / empty, or
//! `"key=value,key=value"`. Unknown keys, repeated keys and bad values are errors naming the key.

use crate::abi::DLDevice;
use crate::runtime::base::error::{Error, Result};

/// Parsed `key=value` pairs, checked against the keys a caller accepts.
#[derive(Debug, Default)]
pub struct Options {
    pairs: Vec<(String, String)>,
}

impl Options {
    /// Parse `text` (None or empty: no options), accepting only `known` keys.
    pub fn parse(text: Option<&str>, known: &[&str]) -> Result<Options> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for item in text.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| Error::value(format!("option `{item}` is not key=value")))?;
            if !known.contains(&key) {
                return Err(Error::value(format!("unknown option `{key}` (known: {})", known.join(", "))));
            }
            if pairs.iter().any(|(k, _)| k == key) {
                return Err(Error::value(format!("option `{key}` is given twice")));
            }
            pairs.push((key.to_string(), value.to_string()));
        }
        Ok(Options { pairs })
    }

    /// The raw text of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// A whole number in `min..=max`, or `default` when absent.
    pub fn usize_in(&self, key: &str, default: usize, min: usize, max: usize) -> Result<usize> {
        let Some(v) = self.get(key) else { return Ok(default) };
        v.parse::<usize>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| Error::value(format!("option `{key}`: `{v}` is not a whole number in {min}..={max}")))
    }

    /// One of `choices`, or `default` when absent.
    pub fn choice<'a>(&self, key: &str, default: &'a str, choices: &[&'a str]) -> Result<&'a str> {
        let Some(v) = self.get(key) else { return Ok(default) };
        choices
            .iter()
            .copied()
            .find(|c| *c == v)
            .ok_or_else(|| Error::value(format!("option `{key}`: `{v}` is not one of {}", choices.join(", "))))
    }
}

/// Which storage plan an executor uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryPlan {
    /// The plan TVM compiled in (fewest bytes; may order independent branches).
    Tvm,
    /// Buffers shared only between data-ordered ops (`memory_plan.rs`).
    Parallel,
}

/// Options of `TVMGraphExecutorCreate*WithOptions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecutorOptions {
    /// Workers running independent ops (1: one op at a time, as TVM).
    pub inter_op_threads: usize,
    /// Threads each kernel's parallel launches use.
    pub intra_op_threads: usize,
    pub memory_plan: MemoryPlan,
    /// The device kernels and storage go on (`device=opencl:0`), instead of the call's devices.
    pub device: Option<DLDevice>,
}

const EXECUTOR_KEYS: &[&str] = &["inter_op_threads", "intra_op_threads", "memory_plan", "device"];
const MAX_THREADS: usize = 1024;

impl ExecutorOptions {
    /// Parse executor options. Defaults: one inter-op worker, the runtime's thread count for
    /// kernels, TVM's memory plan; with several workers, kernels get an equal share of the cores.
    pub fn parse(text: Option<&str>) -> Result<ExecutorOptions> {
        Self::from_options(&Options::parse(text, EXECUTOR_KEYS)?)
    }

    /// The executor options among parsed options (absent keys take their defaults).
    fn from_options(o: &Options) -> Result<ExecutorOptions> {
        let cores = crate::runtime::threads::pool::default_num_threads();
        let inter_op_threads = o.usize_in("inter_op_threads", 1, 1, MAX_THREADS)?;
        let intra_default = (cores / inter_op_threads).max(1);
        Ok(ExecutorOptions {
            inter_op_threads,
            intra_op_threads: o.usize_in("intra_op_threads", intra_default, 1, MAX_THREADS)?,
            memory_plan: match o.choice("memory_plan", "tvm", &["tvm", "parallel"])? {
                "parallel" => MemoryPlan::Parallel,
                _ => MemoryPlan::Tvm,
            },
            device: o
                .get("device")
                .map(|v| DLDevice::parse(v).map_err(|e| Error::value(format!("option `device`: {e}"))))
                .transpose()?,
        })
    }
}

impl ExecutorOptions {
    /// The devices an executor runs on: the `device` option's, else `given` (the call's). Both
    /// may name one only when they agree (or the call gives just the default CPU).
    pub fn devices(&self, given: &[DLDevice]) -> Result<Vec<DLDevice>> {
        match self.device {
            None => Ok(given.to_vec()),
            Some(d) if given == [DLDevice::cpu(0)] || given == [d] => Ok(vec![d]),
            Some(d) => Err(Error::value(format!(
                "option `device`: {d}, but the call's devices are {given:?}: give the device once, in either"
            ))),
        }
    }
}

/// Options of `TVMGraphExecutorCreateBucketed`: the executor options (every bucket runs with
/// them), plus `pad_value`, what fills an input beyond its true extent (default 0; converted to
/// the input's dtype, so it must be a whole number for integer inputs and fit in their range).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BucketOptions {
    pub executor: ExecutorOptions,
    pub pad_value: f64,
}

impl BucketOptions {
    pub fn parse(text: Option<&str>) -> Result<BucketOptions> {
        let keys: Vec<&str> = EXECUTOR_KEYS.iter().copied().chain(["pad_value"]).collect();
        let o = Options::parse(text, &keys)?;
        let pad_value = match o.get("pad_value") {
            None => 0.0,
            Some(v) => v
                .parse::<f64>()
                .ok()
                .filter(|x| !x.is_nan())
                .ok_or_else(|| Error::value(format!("option `pad_value`: `{v}` is not a number")))?,
        };
        Ok(BucketOptions { executor: ExecutorOptions::from_options(&o)?, pad_value })
    }
}

/// Options of `TVMPipelineCreate`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineOptions {
    /// Groups of cores, each running one request's compute at a time on a pool of its own.
    pub core_groups: usize,
    /// Threads of each group's pool (kernels' parallel loops).
    pub threads_per_group: usize,
    /// Requests being processed at once, over all groups (each holds an execution context:
    /// one set of activations); more are queued.
    pub in_flight: usize,
    /// Each group's CPUs; None: not pinned.
    pub cpus: Option<Vec<Vec<usize>>>,
    /// Record a Chrome trace of the stages.
    pub trace: bool,
}

const PIPELINE_KEYS: &[&str] = &["core_groups", "threads_per_group", "in_flight", "cpus", "trace"];

impl PipelineOptions {
    /// Parse pipeline options. Defaults: as many one-thread groups as the process may use
    /// cores (whole requests in parallel is what serves throughput best for batch-1 traffic),
    /// two requests in flight per group (one's copies overlap the other's compute), and each
    /// group pinned to its share of the process's CPUs when they divide evenly.
    pub fn parse(text: Option<&str>) -> Result<PipelineOptions> {
        let o = Options::parse(text, PIPELINE_KEYS)?;
        let given_cpus =
            o.get("cpus").map(|v| parse_cpu_groups(v).map_err(|e| e.context("option `cpus`"))).transpose()?;
        let allowed = crate::runtime::threads::pool::allowed_cpus();
        let groups_default = given_cpus.as_ref().map_or(allowed.len(), |g| g.len());
        let core_groups = o.usize_in("core_groups", groups_default, 1, MAX_THREADS)?;
        let threads_default = match &given_cpus {
            Some(g) => g[0].len(),
            None => (allowed.len() / core_groups).max(1),
        };
        let threads_per_group = o.usize_in("threads_per_group", threads_default, 1, MAX_THREADS)?;
        let in_flight = o.usize_in("in_flight", 2 * core_groups, 1, 64 * MAX_THREADS)?;
        if in_flight < core_groups {
            return Err(Error::value(format!(
                "option `in_flight`: {in_flight} is less than core_groups ({core_groups}): a group would never run"
            )));
        }
        let cpus = match given_cpus {
            Some(g) if g.len() != core_groups => {
                return Err(Error::value(format!(
                    "option `cpus`: {} groups of CPUs for {core_groups} core groups",
                    g.len()
                )))
            }
            Some(g) => Some(g),
            None if core_groups * threads_per_group <= allowed.len() => {
                Some(allowed.chunks(threads_per_group).take(core_groups).map(<[usize]>::to_vec).collect())
            }
            None => None,
        };
        let trace = o.choice("trace", "0", &["0", "1"])? == "1";
        Ok(PipelineOptions { core_groups, threads_per_group, in_flight, cpus, trace })
    }
}

/// `"0-7;8-15"`: groups separated by `;`, each a `+`-joined list of CPUs and ranges
/// (`"0-3+8-11;4-7+12-15"`).
fn parse_cpu_groups(text: &str) -> Result<Vec<Vec<usize>>> {
    let cpu = |s: &str| {
        s.trim()
            .parse::<usize>()
            .ok()
            .filter(|&c| c < 1024)
            .ok_or_else(|| Error::value(format!("`{s}` is not a CPU id (0..1024)")))
    };
    text.split(';')
        .map(|group| {
            let mut cpus = Vec::new();
            for item in group.split('+') {
                match item.split_once('-') {
                    Some((a, b)) => {
                        let (a, b) = (cpu(a)?, cpu(b)?);
                        if a > b {
                            return Err(Error::value(format!("range `{item}` is empty")));
                        }
                        cpus.extend(a..=b);
                    }
                    None => cpus.push(cpu(item)?),
                }
            }
            Ok(cpus)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_names_the_bad_key() {
        let known = ["a", "mode"];
        let o = Options::parse(Some(" a = 3 , mode=fast"), &known).unwrap();
        assert_eq!(o.usize_in("a", 1, 1, 8).unwrap(), 3);
        assert_eq!(o.choice("mode", "slow", &["slow", "fast"]).unwrap(), "fast");
        assert_eq!(Options::parse(None, &known).unwrap().usize_in("a", 7, 1, 8).unwrap(), 7);
        let e = |s: &str| Options::parse(Some(s), &known).unwrap_err().message().to_string();
        assert!(e("b=1").contains("unknown option `b`"), "{}", e("b=1"));
        assert!(e("a").contains("`a` is not key=value"));
        assert!(e("a=1,a=2").contains("`a` is given twice"));
        let o = Options::parse(Some("a=0,mode=x"), &known).unwrap();
        assert!(o.usize_in("a", 1, 1, 8).unwrap_err().message().contains("option `a`: `0`"));
        assert!(o.choice("mode", "slow", &["slow", "fast"]).unwrap_err().message().contains("option `mode`"));
    }

    #[test]
    fn executor_options() {
        let d = ExecutorOptions::parse(None).unwrap();
        assert_eq!((d.inter_op_threads, d.memory_plan), (1, MemoryPlan::Tvm));
        let o = ExecutorOptions::parse(Some("inter_op_threads=2,intra_op_threads=1,memory_plan=parallel")).unwrap();
        assert_eq!(
            o,
            ExecutorOptions {
                inter_op_threads: 2,
                intra_op_threads: 1,
                memory_plan: MemoryPlan::Parallel,
                device: None
            }
        );
        let cl = DLDevice { device_type: 4, device_id: 1 };
        let o = ExecutorOptions::parse(Some("device=opencl:1")).unwrap();
        assert_eq!((o.devices(&[DLDevice::cpu(0)]).unwrap(), o.devices(&[cl]).unwrap()), (vec![cl], vec![cl]));
        assert!(o.devices(&[DLDevice::cpu(1)]).unwrap_err().message().contains("give the device once"));
        let e = ExecutorOptions::parse(Some("device=gpu")).unwrap_err();
        assert!(e.message().contains("option `device`: unknown device kind `gpu`"), "{e}");
        assert!(ExecutorOptions::parse(Some("device=opencl:x")).unwrap_err().message().contains("device id `x`"));
        let e = ExecutorOptions::parse(Some("inter_op_threads=0")).unwrap_err();
        assert!(e.message().contains("option `inter_op_threads`"), "{e}");
        assert!(ExecutorOptions::parse(Some("memory_plan=magic")).unwrap_err().message().contains("`memory_plan`"));
        assert!(ExecutorOptions::parse(Some("threads=2")).unwrap_err().message().contains("unknown option `threads`"));
    }

    #[test]
    fn bucket_options() {
        let d = BucketOptions::parse(None).unwrap();
        assert_eq!((d.executor, d.pad_value), (ExecutorOptions::parse(None).unwrap(), 0.0));
        let o = BucketOptions::parse(Some("pad_value=-1.5,memory_plan=parallel")).unwrap();
        assert_eq!((o.pad_value, o.executor.memory_plan), (-1.5, MemoryPlan::Parallel));
        let e = |s: &str| BucketOptions::parse(Some(s)).unwrap_err().message().to_string();
        assert!(e("pad_value=zero").contains("option `pad_value`"), "{}", e("pad_value=zero"));
        assert!(e("pad_value=nan").contains("option `pad_value`"));
        assert!(e("inter_op_threads=0").contains("option `inter_op_threads`"));
        assert!(e("pad=1").contains("unknown option `pad`"));
    }

    #[test]
    fn pipeline_options() {
        let o = PipelineOptions::parse(Some("core_groups=2,threads_per_group=1,in_flight=4,trace=1")).unwrap();
        assert_eq!((o.core_groups, o.threads_per_group, o.in_flight, o.trace), (2, 1, 4, true));
        let o = PipelineOptions::parse(Some("cpus=0-7;8-15")).unwrap();
        assert_eq!((o.core_groups, o.threads_per_group, o.in_flight), (2, 8, 4));
        assert_eq!(o.cpus.unwrap(), vec![(0..8).collect::<Vec<_>>(), (8..16).collect()]);
        let o = PipelineOptions::parse(Some("cpus=0+2;1+3")).unwrap();
        assert_eq!(o.cpus.unwrap(), vec![vec![0, 2], vec![1, 3]]);
        let d = PipelineOptions::parse(None).unwrap();
        assert!(d.core_groups >= 1 && d.in_flight == 2 * d.core_groups && !d.trace);
        let e = |s: &str| PipelineOptions::parse(Some(s)).unwrap_err().message().to_string();
        for (bad, key) in [
            ("core_groups=0", "option `core_groups`"),
            ("in_flight=1,core_groups=2", "option `in_flight`"),
            ("cpus=0-3;x", "option `cpus`"),
            ("cpus=3-1", "option `cpus`"),
            ("cpus=0;1,core_groups=3", "option `cpus`"),
            ("trace=yes", "option `trace`"),
            ("groups=2", "unknown option `groups`"),
        ] {
            assert!(e(bad).contains(key), "{bad}: {}", e(bad));
        }
    }
}
