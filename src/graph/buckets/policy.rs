//! Choosing buckets: the extents of one dynamic axis to compile a version for, given the range
//! of extents requests will have. A request of extent `e` runs in the smallest bucket `>= e`.

use super::super::options::Options;
use crate::runtime::base::error::{Error, Result};

/// At most this many extents from one policy (a model is compiled once per extent).
pub const MAX_BUCKETS: usize = 4096;

fn check_range(min: i64, max: i64) -> Result<()> {
    if min < 1 || max < min {
        return Err(Error::value(format!("bucket range {min}..={max} is empty or starts below 1")));
    }
    Ok(())
}

fn checked(extents: Vec<i64>) -> Result<Vec<i64>> {
    if extents.len() > MAX_BUCKETS {
        return Err(Error::value(format!(
            "{} buckets are more than {MAX_BUCKETS}: use a coarser policy",
            extents.len()
        )));
    }
    Ok(extents)
}

/// Buckets every `step`: `step, 2·step, …` from the first multiple `>= min`, then `max` (the
/// seed's uniform split: `(0, step], (step, 2·step], …`).
pub fn uniform(min: i64, max: i64, step: i64) -> Result<Vec<i64>> {
    check_range(min, max)?;
    if step < 1 {
        return Err(Error::value(format!("uniform buckets: step {step} is below 1")));
    }
    if (max - min) / step >= MAX_BUCKETS as i64 {
        return checked(vec![0; MAX_BUCKETS + 1]);
    }
    // The first multiple of `step` at or above `min` (none below `max` when it overflows).
    let first = (min / step + i64::from(min % step != 0)).checked_mul(step).unwrap_or(max);
    let mut v: Vec<i64> =
        std::iter::successors(Some(first), |e| e.checked_add(step)).take_while(|&e| e < max).collect();
    v.push(max);
    checked(v)
}

/// Buckets at `min`, then the powers of `base` between `min` and `max`, then `max` (the seed's
/// logarithmic split: `(1, 2], (2, 4], (4, 8], …`).
pub fn logarithmic(min: i64, max: i64, base: i64) -> Result<Vec<i64>> {
    check_range(min, max)?;
    if base < 2 {
        return Err(Error::value(format!("logarithmic buckets: base {base} is below 2")));
    }
    let mut v = vec![min];
    let mut p: i64 = 1;
    while let Some(next) = p.checked_mul(base) {
        p = next;
        if p >= max {
            break;
        }
        if p > min {
            v.push(p);
        }
    }
    if max > min {
        v.push(max);
    }
    checked(v)
}

/// The extents for an axis of range `min..=max` under a policy given as options:
/// `policy=log` (with `base`, default 2) or `policy=uniform` (with `step`, required).
pub fn extents(min: i64, max: i64, options: Option<&str>) -> Result<Vec<i64>> {
    let o = Options::parse(options, &["policy", "base", "step"])?;
    let number = |key: &str, default: Option<i64>| -> Result<i64> {
        match (o.get(key), default) {
            (None, Some(d)) => Ok(d),
            (None, None) => Err(Error::value(format!("option `{key}` is required by this policy"))),
            (Some(v), _) => v.parse().map_err(|_| Error::value(format!("option `{key}`: `{v}` is not a whole number"))),
        }
    };
    match o.choice("policy", "log", &["log", "uniform"])? {
        "uniform" => {
            if o.get("base").is_some() {
                return Err(Error::value("option `base` belongs to policy=log"));
            }
            uniform(min, max, number("step", None)?).map_err(|e| e.context("option `step`"))
        }
        _ => {
            if o.get("step").is_some() {
                return Err(Error::value("option `step` belongs to policy=uniform"));
            }
            logarithmic(min, max, number("base", Some(2))?).map_err(|e| e.context("option `base`"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every extent in range has a bucket, and the bucket chosen is the smallest `>= e`.
    fn covers(extents: &[i64], min: i64, max: i64) {
        assert!(extents.windows(2).all(|w| w[0] < w[1]), "{extents:?}");
        assert_eq!(*extents.last().unwrap(), max);
        assert!(extents[0] >= min);
    }

    #[test]
    fn logarithmic_splits() {
        assert_eq!(logarithmic(1, 8, 2).unwrap(), [1, 2, 4, 8]);
        assert_eq!(logarithmic(1, 100, 2).unwrap(), [1, 2, 4, 8, 16, 32, 64, 100]);
        assert_eq!(logarithmic(3, 20, 2).unwrap(), [3, 4, 8, 16, 20]);
        assert_eq!(logarithmic(5, 5, 2).unwrap(), [5]);
        assert_eq!(logarithmic(1, 1000, 10).unwrap(), [1, 10, 100, 1000]);
        covers(&logarithmic(7, i64::MAX, 2).unwrap(), 7, i64::MAX);
    }

    #[test]
    fn uniform_splits() {
        assert_eq!(uniform(1, 100, 32).unwrap(), [32, 64, 96, 100]);
        assert_eq!(uniform(1, 4, 1).unwrap(), [1, 2, 3, 4]);
        assert_eq!(uniform(33, 64, 32).unwrap(), [64]);
        assert_eq!(uniform(1, 10, 16).unwrap(), [10]);
        covers(&uniform(5, 77, 8).unwrap(), 5, 77);
        assert!(uniform(1, 1 << 40, 1).unwrap_err().message().contains("more than 4096"));
    }

    #[test]
    fn policies_from_options() {
        assert_eq!(extents(1, 8, None).unwrap(), [1, 2, 4, 8]);
        assert_eq!(extents(1, 27, Some("policy=log,base=3")).unwrap(), [1, 3, 9, 27]);
        assert_eq!(extents(1, 10, Some("policy=uniform,step=5")).unwrap(), [5, 10]);
        let e = |o: &str| extents(1, 8, Some(o)).unwrap_err().message().to_string();
        assert!(e("policy=uniform").contains("option `step` is required"), "{}", e("policy=uniform"));
        assert!(e("policy=cubic").contains("option `policy`"));
        assert!(e("policy=log,base=1").contains("option `base`"));
        assert!(e("policy=log,step=2").contains("option `step`"));
        assert!(e("policy=uniform,step=x").contains("option `step`"));
        assert!(e("size=3").contains("unknown option `size`"));
        assert!(extents(0, 8, None).unwrap_err().message().contains("range 0..=8"));
        assert!(extents(9, 8, None).is_err());
    }
}
