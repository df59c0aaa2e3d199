//! `runtime.RPCTimeEvaluator`: TVM's timing harness, which its Python `Module.time_evaluator`
//! and `GraphModule.benchmark` call. Given a module function (or a global one, for a NULL
//! module) and the measurement settings, it returns a function that takes the timed function's
//! arguments and returns `repeat` doubles (seconds per call, native byte order) as bytes.

use crate::abi::{type_code as tc, DLDataType, DLDevice};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::device::device_api;
use crate::runtime::function::packed::{Args, Module, PackedFunc, Value};
use crate::runtime::function::registry;
use crate::runtime::tensor::ndarray::NDArray;
use std::time::{Duration, Instant};

/// How to measure (TVM's arguments, in its order after the function's name).
#[derive(Clone, Copy)]
struct Settings {
    timing: TimingPlan,
    cache_flush_bytes: i64,
}

fn non_negative(args: &Args<'_>, i: usize, what: &str) -> Result<u64> {
    let v = args.int(i)?;
    u64::try_from(v).map_err(|_| Error::value(format!("runtime.RPCTimeEvaluator: {what} is {v}, below 0")))
}

fn settings(args: &Args<'_>) -> Result<Settings> {
    let dev = DLDevice { device_type: args.int(2)? as i32, device_id: args.int(3)? as i32 };
    let timing = TimingPlan {
        dev,
        number: non_negative(args, 4, "number")?.max(1),
        repeat: non_negative(args, 5, "repeat")?,
        min_repeat_ms: non_negative(args, 6, "min_repeat_ms")? as f64,
        limit_zero_time_iterations: non_negative(args, 7, "limit_zero_time_iterations")?,
        cooldown_interval_ms: non_negative(args, 8, "cooldown_interval_ms")?,
        repeats_to_cooldown: non_negative(args, 9, "repeats_to_cooldown")?.max(1),
    };
    device_api(dev.device_type)?;
    Ok(Settings { timing, cache_flush_bytes: args.int(10)? })
}

/// A global function by name, or an error naming it.
fn global(name: &str) -> Result<PackedFunc> {
    registry::get(name).ok_or_else(|| Error::attribute(format!("Cannot find `{name}` in the global functions")))
}

/// The function to time: `name` in the module (or its imports), or the global `name`.
fn timed_function(args: &Args<'_>, name: &str) -> Result<PackedFunc> {
    if args.code(0)? == tc::NULLPTR {
        return global(name);
    }
    let m: Module = args.module(0)?;
    m.get_function(name, true)?.ok_or_else(|| Error::attribute(format!("Cannot find `{name}` in the module")))
}

fn create(args: Args<'_>) -> Result<Value> {
    if args.len() != 12 {
        return Err(Error::value(format!(
            "runtime.RPCTimeEvaluator expects 12 arguments (module, name, device type and id, number, repeat, \
             min_repeat_ms, limit_zero_time_iterations, cooldown_interval_ms, repeats_to_cooldown, \
             cache_flush_bytes, f_preproc), got {}",
            args.len()
        )));
    }
    let name = args.string(1)?;
    let f = timed_function(&args, &name)?;
    let s = settings(&args)?;
    let preproc = match args.string(11)? {
        p if p.is_empty() => None,
        p => Some(global(&p)?),
    };
    Ok(Value::Func(PackedFunc::from_typed(move |call| evaluate(&f, preproc.as_ref(), s, call))))
}

/// Two arrays copied into each other before each repeat, pushing the timed data out of cache.
fn cache_flusher(s: &Settings) -> Result<Option<(NDArray, NDArray)>> {
    if s.cache_flush_bytes <= 0 {
        return Ok(None);
    }
    let n = s.cache_flush_bytes / 4;
    let make = || NDArray::empty(&[n], DLDataType::new(0, 32, 1), s.timing.dev);
    Ok(Some((make()?, make()?)))
}

/// Time `f` on `call`'s arguments: one warm-up call, then [`measure`].
fn evaluate(f: &PackedFunc, preproc: Option<&PackedFunc>, s: Settings, call: Args<'_>) -> Result<Value> {
    f.call_args(call)?;
    let flusher = cache_flusher(&s)?;
    let before = || -> Result<()> {
        if let Some(p) = preproc {
            p.call_args(call)?;
        }
        Ok(())
    };
    let flush = || -> Result<()> {
        match &flusher {
            Some((a, b)) => crate::runtime::tensor::ndarray::copy_from_to(b.tensor(), a.tensor()),
            None => Ok(()),
        }
    };
    let secs = measure(&s.timing, &mut || f.call_args(call).map(drop), &before, &flush)?;
    Ok(Value::Bytes(secs.iter().flat_map(|x| x.to_ne_bytes()).collect()))
}

/// How TVM's timers repeat a measurement (`time_evaluator`, the debug executor's
/// `run_individual_node`).
#[derive(Clone, Copy, Debug)]
pub struct TimingPlan {
    pub dev: DLDevice,
    /// Calls per measurement (raised when one is shorter than `min_repeat_ms`).
    pub number: u64,
    /// Measurements.
    pub repeat: u64,
    pub min_repeat_ms: f64,
    /// Measurements of zero time tolerated before taking one anyway.
    pub limit_zero_time_iterations: u64,
    pub cooldown_interval_ms: u64,
    pub repeats_to_cooldown: u64,
}

/// `repeat` measurements of seconds per call of `f`: before each, `before` runs (untimed);
/// each times `number` calls, after `flush`, raising `number` (by the golden ratio at least,
/// or to what reaches `min_repeat_ms`) until a measurement lasts `min_repeat_ms`.
pub fn measure(
    plan: &TimingPlan,
    f: &mut dyn FnMut() -> Result<()>,
    before: &dyn Fn() -> Result<()>,
    flush: &dyn Fn() -> Result<()>,
) -> Result<Vec<f64>> {
    let api = device_api(plan.dev.device_type)?;
    let sync = || api.stream_sync(plan.dev, std::ptr::null_mut());
    let mut number = plan.number.max(1);
    let mut out = Vec::with_capacity(plan.repeat as usize);
    sync()?;
    for i in 0..plan.repeat {
        before()?;
        let mut elapsed = Duration::ZERO;
        let mut zero_times = 0;
        loop {
            if !elapsed.is_zero() {
                let per_call_ms = elapsed.as_secs_f64() * 1e3 / number as f64;
                number = ((plan.min_repeat_ms / per_call_ms + 1.0).max(number as f64 * 1.618)) as u64;
            }
            flush()?;
            sync()?;
            let t = Instant::now();
            for _ in 0..number {
                f()?;
            }
            sync()?;
            elapsed = t.elapsed();
            zero_times += u64::from(elapsed.is_zero());
            if elapsed.as_secs_f64() * 1e3 >= plan.min_repeat_ms || zero_times >= plan.limit_zero_time_iterations {
                break;
            }
        }
        out.push(elapsed.as_secs_f64() / number as f64);
        if plan.cooldown_interval_ms > 0 && i % plan.repeats_to_cooldown.max(1) == 0 {
            std::thread::sleep(Duration::from_millis(plan.cooldown_interval_ms));
        }
    }
    Ok(out)
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![("runtime.RPCTimeEvaluator", PackedFunc::from_typed(create))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    fn evaluator(name: &str, number: i64, repeat: i64, min_repeat_ms: i64) -> Result<Value> {
        let create = PackedFunc::from_typed(create);
        let args: Vec<Value> = vec![
            Value::Null,
            name.into(),
            Value::Int(1),
            Value::Int(0),
            Value::Int(number),
            Value::Int(repeat),
            Value::Int(min_repeat_ms),
            Value::Int(100),
            Value::Int(0),
            Value::Int(1),
            Value::Int(0),
            "".into(),
        ];
        create.call(&args)
    }

    #[test]
    fn times_a_global_function_repeat_times() {
        let calls = Arc::new(AtomicU64::new(0));
        let counted = calls.clone();
        let f = PackedFunc::from_typed(move |args| {
            counted.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_micros(200));
            Ok(Value::Int(args.int(0)?))
        });
        registry::register("test.time_evaluator.sleep", f, true).unwrap();
        let Value::Func(eval) = evaluator("test.time_evaluator.sleep", 3, 4, 0).unwrap() else { panic!("a function") };
        let Value::Bytes(blob) = eval.call(&[Value::Int(7)]).unwrap() else { panic!("bytes") };
        let secs: Vec<f64> = blob.chunks_exact(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect();
        assert_eq!(secs.len(), 4);
        assert!(secs.iter().all(|&s| (200e-6..0.05).contains(&s)), "{secs:?}");
        assert_eq!(calls.load(Ordering::Relaxed), 1 + 3 * 4, "a warm-up call, then number x repeat");
        // min_repeat_ms raises the number of calls per measurement until they last 5 ms (how many
        // that takes depends on how long the machine's sleeps of 0.2 ms really are).
        let Value::Func(eval) = evaluator("test.time_evaluator.sleep", 1, 1, 5).unwrap() else { panic!("a function") };
        let before = calls.load(Ordering::Relaxed);
        let Value::Bytes(blob) = eval.call(&[Value::Int(7)]).unwrap() else { panic!("bytes") };
        let mean = f64::from_ne_bytes(blob[..8].try_into().unwrap());
        let measured = calls.load(Ordering::Relaxed) - before - 1; // after the warm-up call
        assert!(mean * measured as f64 >= 0.005, "{measured} calls of {mean} s: at least 5 ms");
    }

    #[test]
    fn names_what_is_missing() {
        let e = evaluator("no.such.function", 1, 1, 0).unwrap_err();
        assert!(e.message().contains("no.such.function"), "{e}");
        let e = PackedFunc::from_typed(create).call(&[Value::Null]).unwrap_err();
        assert!(e.message().contains("expects 12 arguments"), "{e}");
    }
}
