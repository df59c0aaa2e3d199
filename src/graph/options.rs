//! Executor and pipeline options, one convention everywhere: NULL / empty, or
//! `"key=value,key=value"`. Unknown keys, repeated keys and bad values are errors naming the key.

use crate::runtime::error::{Error, Result};

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

    fn get(&self, key: &str) -> Option<&str> {
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
}

const EXECUTOR_KEYS: &[&str] = &["inter_op_threads", "intra_op_threads", "memory_plan"];
const MAX_THREADS: usize = 1024;

impl ExecutorOptions {
    /// Parse executor options. Defaults: one inter-op worker, the runtime's thread count for
    /// kernels, TVM's memory plan; with several workers, kernels get an equal share of the cores.
    pub fn parse(text: Option<&str>) -> Result<ExecutorOptions> {
        let o = Options::parse(text, EXECUTOR_KEYS)?;
        let cores = crate::runtime::threading::default_num_threads();
        let inter_op_threads = o.usize_in("inter_op_threads", 1, 1, MAX_THREADS)?;
        let intra_default = (cores / inter_op_threads).max(1);
        Ok(ExecutorOptions {
            inter_op_threads,
            intra_op_threads: o.usize_in("intra_op_threads", intra_default, 1, MAX_THREADS)?,
            memory_plan: match o.choice("memory_plan", "tvm", &["tvm", "parallel"])? {
                "parallel" => MemoryPlan::Parallel,
                _ => MemoryPlan::Tvm,
            },
        })
    }
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
        assert_eq!(o, ExecutorOptions { inter_op_threads: 2, intra_op_threads: 1, memory_plan: MemoryPlan::Parallel });
        let e = ExecutorOptions::parse(Some("inter_op_threads=0")).unwrap_err();
        assert!(e.message().contains("option `inter_op_threads`"), "{e}");
        assert!(ExecutorOptions::parse(Some("memory_plan=magic")).unwrap_err().message().contains("`memory_plan`"));
        assert!(ExecutorOptions::parse(Some("threads=2")).unwrap_err().message().contains("unknown option `threads`"));
    }
}
