//! Token sampling and logit processing, as a language model's generation loop calls them between
//! steps (`vm.builtin.sample_top_p_from_logits`, `sample_top_p_from_prob`,
//! `multinomial_from_uniform`, `apply_repetition_penalty`,
//! `apply_presence_and_frequency_penalty`, `apply_softmax_with_temperature`), with apache-tvm's
//! names, argument order and arithmetic: single-precision sums in the same order, C's `expf`,
//! comparisons against the caller's double-precision numbers, and equal values ordered as
//! TVM's C++ sort orders them ([`super::sort`]), so that the same inputs pick the same token.
//!
//! Where TVM reads past a tensor or misreads it (an unchecked token id, a probability tensor of
//! another dtype, an empty one), these refuse with an error naming the argument.

use super::sort::sort;
use crate::abi::{dtype_code, DLDataType, DLDevice};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::tensor::ndarray::NDArray;

pub(super) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        ("vm.builtin.sample_top_p_from_logits", PackedFunc::from_typed(top_p_from_logits_global)),
        ("vm.builtin.sample_top_p_from_prob", PackedFunc::from_typed(top_p_from_prob_global)),
        ("vm.builtin.multinomial_from_uniform", PackedFunc::from_typed(multinomial_global)),
        ("vm.builtin.apply_repetition_penalty", PackedFunc::from_typed(repetition_penalty_global)),
        ("vm.builtin.apply_presence_and_frequency_penalty", PackedFunc::from_typed(presence_frequency_global)),
        ("vm.builtin.apply_softmax_with_temperature", PackedFunc::from_typed(softmax_global)),
    ]
}

/// The values of a contiguous float32 tensor (`what` names it in errors).
fn f32s<'a>(t: &'a NDArray, what: &str) -> Result<&'a [f32]> {
    elements(t, what, DLDataType { code: dtype_code::FLOAT, bits: 32, lanes: 1 })
}

fn i32s<'a>(t: &'a NDArray, what: &str) -> Result<&'a [i32]> {
    elements(t, what, DLDataType { code: dtype_code::INT, bits: 32, lanes: 1 })
}

fn elements<'a, T>(t: &'a NDArray, what: &str, dtype: DLDataType) -> Result<&'a [T]> {
    let r = t.tensor();
    r.check_contiguous(what)?;
    if t.dtype() != dtype {
        return Err(Error::type_error(format!("{what} must be {dtype}, got {}", t.dtype())));
    }
    if t.device().device_type != DLDevice::cpu(0).device_type {
        return Err(Error::internal(format!("{what} must be on the CPU, got {}", t.device())));
    }
    let n = t.shape().iter().product::<i64>() as usize;
    // SAFETY: a contiguous host tensor of `n` elements of `T`'s size (dtype checked above),
    // alive while `t` is.
    Ok(unsafe { std::slice::from_raw_parts(r.data_addr() as *const T, n) })
}

/// As [`f32s`], to change in place.
///
/// # Safety
/// No other slice of the tensor's data is alive while the returned one is (the callers hold
/// the only one, and read their other tensors, of other dtypes, separately).
#[allow(clippy::mut_from_ref)]
unsafe fn f32s_mut<'a>(t: &'a NDArray, what: &str) -> Result<&'a mut [f32]> {
    let n = f32s(t, what)?.len();
    // SAFETY: as in `f32s`, and the only slice of it (contract above).
    Ok(unsafe { std::slice::from_raw_parts_mut(t.tensor().data_addr() as *mut f32, n) })
}

/// A tensor on the host: itself, or a copy of it there.
fn on_host(t: NDArray) -> Result<NDArray> {
    if t.device().device_type == DLDevice::cpu(0).device_type {
        return Ok(t);
    }
    t.copy_to(DLDevice::cpu(0))
}

/// The last axis of a tensor whose other axes are all 1 (one row of logits or probabilities).
fn one_row(t: &NDArray, what: &str) -> Result<NDArray> {
    let t = on_host(t.clone())?;
    let shape = t.shape();
    if shape.is_empty() || shape[..shape.len() - 1].iter().any(|&d| d != 1) {
        return Err(Error::internal(format!("the leading dimensions of {what} must be 1, got shape {shape:?}")));
    }
    Ok(t)
}

/// Descending by value, each with its index.
fn ranked(values: impl Iterator<Item = (usize, f32)>) -> Vec<(f32, i32)> {
    let mut data: Vec<(f32, i32)> = values.map(|(i, v)| (v, i as i32)).collect();
    sort(&mut data, |l, r| l.0 > r.0);
    data
}

fn top_p_from_logits_global(args: Args<'_>) -> Result<Value> {
    args.expect_len(4, "vm.builtin.sample_top_p_from_logits(logits, temperature, top_p, uniform_sample)")?;
    let logits = one_row(&args.ndarray(0)?, "logits")?;
    let x = f32s(&logits, "logits")?;
    top_p_from_logits(x, args.float(1)?, args.float(2)?, args.float(3)?).map(Value::Int)
}

/// The token of `logits` that `u` picks from the smallest set of the likeliest tokens whose
/// probabilities (softmax at `temperature`) add up to `top_p`; the likeliest one when the
/// temperature is (about) 0.
pub fn top_p_from_logits(logits: &[f32], temperature: f64, top_p: f64, u: f64) -> Result<i64> {
    if logits.is_empty() {
        return Err(Error::internal("cannot sample from empty logits"));
    }
    let mut data = ranked(logits.iter().copied().enumerate());
    if temperature < 1e-6f32 as f64 {
        return Ok(data[0].1 as i64);
    }
    let (scale, max) = ((1.0 / temperature) as f32, data[0].0);
    let mut sum = 0f32;
    for d in data.iter_mut() {
        d.0 = ((d.0 - max) * scale).exp();
        sum += d.0;
    }
    let (mut cum, mut nucleus) = (0f32, 0f32);
    for d in data.iter_mut() {
        let p = d.0 / sum;
        if (cum as f64) < top_p {
            nucleus += p;
        }
        cum += p;
        d.0 = cum;
    }
    if let Some(d) = data.iter().find(|d| u < (d.0 / nucleus) as f64) {
        return Ok(d.1 as i64);
    }
    if !(u <= data[0].0 as f64) {
        return Err(Error::internal(format!(
            "uniform_sample {u} is past the cumulative probability {} of the likeliest token",
            data[0].0
        )));
    }
    Ok(data[0].1 as i64)
}

fn top_p_from_prob_global(args: Args<'_>) -> Result<Value> {
    args.expect_len(3, "vm.builtin.sample_top_p_from_prob(prob, top_p, uniform_sample)")?;
    let prob = one_row(&args.ndarray(0)?, "prob")?;
    let p = f32s(&prob, "prob")?;
    top_p_from_prob(p, args.float(1)?, args.float(2)?).map(Value::Int)
}

/// As [`top_p_from_logits`], from probabilities (taken as they are, not normalized). Tokens
/// below `top_p / 1024` are left out first when `top_p < 1`, unless that leaves too few.
pub fn top_p_from_prob(prob: &[f32], top_p: f64, u: f64) -> Result<i64> {
    if top_p < 1.0 {
        if let Some(token) = nucleus(prob, (top_p / 1024.0) as f32, top_p, u) {
            return Ok(token);
        }
    }
    match nucleus(prob, 0.0, top_p, u) {
        Some(token) => Ok(token),
        None if prob.iter().all(|p| p.is_nan()) => {
            Err(Error::internal("The output probabilities are all NaNs, can not sample from it"))
        }
        None => Err(Error::internal("Cannot sample from the given probability distribution due to unknown reason")),
    }
}

/// The token `u` picks among those of probability `cutoff` or more; `None` when there are
/// none, or (with a cutoff) when they do not add up to `top_p`.
fn nucleus(prob: &[f32], cutoff: f32, top_p: f64, u: f64) -> Option<i64> {
    let mut data = ranked(prob.iter().copied().enumerate().filter(|&(_, p)| p >= cutoff));
    let first = *data.first()?;
    if u < first.0 as f64 / top_p {
        return Some(first.1 as i64);
    }
    let (mut cum, mut sum) = (0f32, 0f32);
    for d in data.iter_mut() {
        if (cum as f64) >= top_p {
            break;
        }
        sum += d.0;
        cum += d.0;
        d.0 = cum;
    }
    if (cum as f64) < top_p && cutoff != 0.0 {
        return None;
    }
    let picked = data.iter().find(|d| u < (d.0 / sum) as f64).or(data.last());
    picked.map(|d| d.1 as i64)
}

fn multinomial_global(args: Args<'_>) -> Result<Value> {
    args.expect_len(2, "vm.builtin.multinomial_from_uniform(prob, uniform_sample)")?;
    let prob = on_host(args.ndarray(0)?)?;
    let uniform = on_host(args.ndarray(1)?)?;
    let (p, u) = (f32s(&prob, "prob")?, f32s(&uniform, "uniform_sample")?);
    let shape = prob.shape();
    let (batch, vocab) = match shape {
        [batch, .., vocab] if shape.len() >= 2 => (*batch as usize, *vocab as usize),
        _ => return Err(Error::internal(format!("prob must be (batch, vocab), got shape {shape:?}"))),
    };
    if p.len() < batch * vocab || u.len() < batch {
        return Err(Error::internal(format!(
            "prob of shape {shape:?} and uniform_sample of shape {:?}: need {batch} rows of {vocab} and {batch} samples",
            uniform.shape()
        )));
    }
    let tokens: Vec<i64> = (0..batch).map(|i| multinomial(&p[i * vocab..(i + 1) * vocab], u[i])).collect();
    let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_ne_bytes()).collect();
    NDArray::from_bytes(&[batch as i64, 1], DLDataType::parse("int64")?, &bytes).map(Value::NDArray)
}

/// The first token where the running sum of `row` passes `u` (the last when none does).
pub fn multinomial(row: &[f32], u: f32) -> i64 {
    let mut cum = 0f32;
    for (j, p) in row.iter().enumerate() {
        cum += p;
        if cum > u {
            return j as i64;
        }
    }
    row.len().saturating_sub(1) as i64
}

/// The token ids of argument `i` (int32), each checked against the vocabulary.
fn token_ids<'a>(t: &'a NDArray, vocab: usize) -> Result<&'a [i32]> {
    let ids = i32s(t, "token_ids")?;
    let count = t.shape().last().copied().unwrap_or(0) as usize;
    let ids = &ids[..count.min(ids.len())];
    if let Some(bad) = ids.iter().find(|&&id| id < 0 || id as usize >= vocab) {
        return Err(Error::index(format!("token id {bad} is out of the vocabulary of {vocab} logits")));
    }
    Ok(ids)
}

/// The logits a penalty changes: the first row (the last axis's length) of argument 0.
///
/// # Safety
/// As [`f32s_mut`].
unsafe fn logits_row(t: &NDArray) -> Result<&mut [f32]> {
    let vocab = t.shape().last().copied().unwrap_or(0) as usize;
    // SAFETY: the caller's contract.
    let all = unsafe { f32s_mut(t, "logits")? };
    Ok(&mut all[..vocab])
}

fn repetition_penalty_global(args: Args<'_>) -> Result<Value> {
    args.expect_len(3, "vm.builtin.apply_repetition_penalty(logits, token_ids, penalty)")?;
    let (logits, ids) = (args.ndarray(0)?, args.ndarray(1)?);
    // SAFETY: the only slice of the logits (the ids are another, int32, tensor).
    let row = unsafe { logits_row(&logits)? };
    let ids = token_ids(&ids, row.len())?;
    let penalty = args.float(2)?;
    for &id in ids {
        let l = &mut row[id as usize];
        *l = if *l <= 0.0 { (*l as f64 * penalty) as f32 } else { (*l as f64 / penalty) as f32 };
    }
    Ok(Value::Null)
}

fn presence_frequency_global(args: Args<'_>) -> Result<Value> {
    args.expect_len(
        5,
        "vm.builtin.apply_presence_and_frequency_penalty(logits, token_ids, token_freqs, presence_penalty, frequency_penalty)",
    )?;
    let (logits, ids, freqs) = (args.ndarray(0)?, args.ndarray(1)?, args.ndarray(2)?);
    // SAFETY: the only slice of the logits (ids and frequencies are other, int32, tensors).
    let row = unsafe { logits_row(&logits)? };
    let ids = token_ids(&ids, row.len())?;
    let freqs = i32s(&freqs, "token_freqs")?;
    if freqs.len() < ids.len() {
        return Err(Error::internal(format!("{} token ids but {} token_freqs", ids.len(), freqs.len())));
    }
    let (presence, frequency) = (args.float(3)?, args.float(4)?);
    for (&id, &f) in ids.iter().zip(freqs) {
        let l = &mut row[id as usize];
        *l = (*l as f64 - (f as f64 * frequency + presence)) as f32;
    }
    Ok(Value::Null)
}

fn softmax_global(args: Args<'_>) -> Result<Value> {
    args.expect_len(2, "vm.builtin.apply_softmax_with_temperature(logits, temperature)")?;
    let logits = args.ndarray(0)?;
    // SAFETY: the only slice of the logits.
    softmax_with_temperature(unsafe { logits_row(&logits)? }, args.float(1)?);
    Ok(Value::Null)
}

/// Softmax of `logits / temperature` in place, in one pass for the maximum and the sum (the sum
/// in double precision) and one for the results. As TVM's, the running maximum starts at the
/// smallest positive float, so all-negative logits are not shifted.
pub fn softmax_with_temperature(logits: &mut [f32], temperature: f64) {
    let inv = (1.0 / temperature) as f32;
    let (mut max, mut sum) = (f32::MIN_POSITIVE, 0f64);
    for &l in logits.iter() {
        let (x, before) = (l * inv, max);
        if max < x {
            max = x;
        }
        sum = sum * (before - max).exp() as f64 + (x - max).exp() as f64;
    }
    for l in logits.iter_mut() {
        *l = ((*l * inv - max).exp() as f64 / sum) as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every expected value below is what apache-tvm 0.27's own runtime returned for the same
    // call (its libtvm_runtime.so, TVM_USE_RUNTIME_LIB=1).

    #[test]
    fn top_p_from_logits_picks_as_apache_tvm() {
        let logits = [1.0, 3.0, 2.0, 0.5];
        let cases = [
            (0.0, 1.0, 0.5, 1),
            (1.0, 1.0, 0.3, 1),
            (1.0, 1.0, 0.7, 2),
            (1.0, 1.0, 0.9, 0),
            (1.0, 1.0, 0.99, 3),
            (1.0, 0.9, 0.99, 0),
            (1.0, 0.9, 1.0, 3),
            (1.0, 0.5, 0.99, 1),
            (1.0, 0.5, 1.0, 2),
            (0.5, 1.0, 0.9, 2),
            (2.0, 1.0, 0.9, 3),
            (2.0, 0.5, 0.99, 2),
        ];
        for (t, p, u, want) in cases {
            assert_eq!(top_p_from_logits(&logits, t, p, u).unwrap(), want, "T={t} top_p={p} u={u}");
        }
        let e = top_p_from_logits(&logits, 1.0, 1.0, 1.0).unwrap_err();
        assert!(e.message().contains("past the cumulative probability 0.6307"), "{e}");
        assert_eq!(top_p_from_logits(&[0.25; 100], 0.0, 1.0, 0.5).unwrap(), 62, "ties in C++'s order");
    }

    #[test]
    fn top_p_from_prob_picks_as_apache_tvm() {
        let p = [0.1, 0.4, 0.2, 0.3];
        let cases: [(f64, &[f64], i64); 14] = [
            (1.0, &[0.0, 0.1, 0.2, 0.35], 1),
            (1.0, &[0.5, 0.6], 3),
            (1.0, &[0.8], 2),
            (1.0, &[0.95, 0.9999, 1.0], 0),
            (0.9, &[0.1, 0.35], 1),
            (0.9, &[0.5, 0.6], 3),
            (0.9, &[0.8, 0.95, 0.9999], 2),
            (0.9, &[1.0], 0),
            (0.5, &[0.1, 0.8], 1),
            (0.5, &[0.95, 0.9999], 3),
            (0.5, &[1.0], 0),
            (0.3, &[0.0, 0.5, 0.99], 1),
            (0.9, &[-0.5], 1),
            (0.9, &[2.0], 0),
        ];
        for (top_p, us, want) in cases {
            for &u in us {
                assert_eq!(top_p_from_prob(&p, top_p, u).unwrap(), want, "top_p={top_p} u={u}");
            }
        }
        assert_eq!(top_p_from_prob(&[0.0; 4], 0.9, 0.5).unwrap(), 3);
        assert_eq!(top_p_from_prob(&[0.25; 4], 1.0, 0.3).unwrap(), 1);
        assert_eq!(top_p_from_prob(&[1.0, 2.0, 3.0], 1.0, 0.5).unwrap(), 2);
        assert_eq!(top_p_from_prob(&[f32::NAN, 0.3, 0.7], 0.9, 0.5).unwrap(), 2);
        let e = top_p_from_prob(&[-1.0, -2.0], 0.9, 0.5).unwrap_err();
        assert!(e.message().contains("due to unknown reason"), "{e}");
        let e = top_p_from_prob(&[f32::NAN; 3], 0.9, 0.5).unwrap_err();
        assert!(e.message().contains("all NaNs"), "{e}");
    }

    #[test]
    fn multinomial_and_softmax_as_apache_tvm() {
        let rows: [&[f32]; 3] = [&[0.1, 0.4, 0.2, 0.3], &[0.25; 4], &[0.0, 0.0, 0.5, 0.5]];
        for (us, want) in [
            ([0.0, 0.0, 0.0], [0, 0, 2]),
            ([0.1, 0.5, 0.5], [1, 2, 3]),
            ([0.09999, 0.25, 0.4999], [0, 1, 2]),
            ([1.0, 1.0, 1.0], [3, 3, 3]),
        ] {
            let got: Vec<i64> = rows.iter().zip(us).map(|(r, u)| multinomial(r, u)).collect();
            assert_eq!(got, want, "u = {us:?}");
        }
        let bits = |t: f64| {
            let mut x = [1.0f32, 2.0, 3.0, 4.0];
            softmax_with_temperature(&mut x, t);
            x.map(f32::to_bits)
        };
        assert_eq!(bits(1.0), [0x3d034fe1, 0x3db278b8, 0x3e729169, 0x3f24d790]);
        assert_eq!(bits(0.5), [0x3b0c8280, 0x3c81c781, 0x3defbc95, 0x3f5d6daf]);
        let mut x = [-100.0f32, -200.0, -300.0];
        softmax_with_temperature(&mut x, 1.0);
        assert_eq!(x, [1.0, 0.0, 0.0], "all negative: not shifted, as TVM");
        let mut x = [1.0f32, 2.0];
        softmax_with_temperature(&mut x, 0.0);
        assert!(x.iter().all(|v| v.is_nan()), "temperature 0 gives NaN, as TVM");
    }
}
