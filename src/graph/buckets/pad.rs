//! Copies between a tensor of its true shape and a bucket's larger buffer: the leading region
//! of one compact array into another, with what lies beyond the region filled with a pad
//! element. Each destination byte is written once.

use crate::abi::{dtype_code, DLDataType};
use crate::runtime::base::error::{Error, Result};

/// One element of `dtype` holding `value`, as bytes; an error when the dtype cannot hold it.
pub fn pad_element(value: f64, dtype: DLDataType) -> Result<Vec<u8>> {
    let bits = dtype.bits as usize;
    let lane: Vec<u8> = match (dtype.code, bits) {
        _ if value == 0.0 && bits % 8 == 0 => vec![0; bits / 8],
        (dtype_code::FLOAT, 32) => (value as f32).to_ne_bytes().to_vec(),
        (dtype_code::FLOAT, 64) => value.to_ne_bytes().to_vec(),
        (dtype_code::INT, 8 | 16 | 32 | 64) => {
            whole(value, dtype, -(2f64.powi(bits as i32 - 1)), 2f64.powi(bits as i32 - 1))?.to_ne_bytes()[..bits / 8]
                .to_vec()
        }
        (dtype_code::UINT, 8 | 16 | 32 | 64) => {
            (whole(value, dtype, 0.0, 2f64.powi(bits as i32))? as u64).to_ne_bytes()[..bits / 8].to_vec()
        }
        _ => {
            return Err(Error::value(format!(
                "option `pad_value`: {value} cannot be written as {dtype} (only 0 can, for this dtype)"
            )))
        }
    };
    // Native byte order keeps the low bytes first on little-endian machines only.
    if cfg!(target_endian = "big") && lane.len() < 8 && dtype.code != dtype_code::FLOAT {
        return Err(Error::unsupported("option `pad_value`: non-zero integer pads on big-endian machines"));
    }
    Ok(lane.repeat(dtype.lanes.max(1) as usize))
}

/// `value` as a whole number in `[lo, hi)`, for an integer dtype.
fn whole(value: f64, dtype: DLDataType, lo: f64, hi: f64) -> Result<i64> {
    if value.fract() != 0.0 || value < lo || value >= hi {
        return Err(Error::value(format!("option `pad_value`: {value} is not a whole number that {dtype} can hold")));
    }
    Ok(if value >= 2f64.powi(63) { (value as u64) as i64 } else { value as i64 })
}

/// Byte strides of a compact array of `shape` with `elem`-byte elements.
fn byte_strides(shape: &[i64], elem: usize) -> Vec<usize> {
    let mut strides = vec![elem; shape.len()];
    for a in (0..shape.len().saturating_sub(1)).rev() {
        strides[a] = strides[a + 1] * shape[a + 1] as usize;
    }
    strides
}

/// A copy of the leading `region` of a compact source into a compact destination.
pub struct RegionCopy<'a> {
    pub src_shape: &'a [i64],
    pub dst_shape: &'a [i64],
    /// At most both shapes on every axis.
    pub region: &'a [i64],
    /// Bytes of one element (all lanes).
    pub elem: usize,
    /// Written where the destination lies beyond the region; None when it does not.
    pub pad: Option<&'a [u8]>,
}

impl RegionCopy<'_> {
    /// Run the copy.
    ///
    /// # Safety
    /// `src` must be valid for reads of a compact array of `src_shape`, `dst` for writes of one
    /// of `dst_shape`, both of `elem`-byte elements, and they must not overlap. `region` must be
    /// within both shapes, and `pad` must be `elem` bytes, given whenever `region` is smaller
    /// than `dst_shape`.
    pub unsafe fn run(&self, src: *const u8, dst: *mut u8) {
        debug_assert!(self.region.iter().zip(self.src_shape).zip(self.dst_shape).all(|((r, s), d)| r <= s && r <= d));
        // Axes after `last` are whole in all three shapes: rows of them are contiguous.
        let last = (0..self.region.len())
            .rev()
            .find(|&a| self.region[a] != self.src_shape[a] || self.region[a] != self.dst_shape[a]);
        let Some(last) = last else {
            let bytes = self.region.iter().product::<i64>() as usize * self.elem;
            // SAFETY: the shapes are equal, so both arrays hold `bytes` (caller contract).
            unsafe { std::ptr::copy_nonoverlapping(src, dst, bytes) };
            return;
        };
        let walk = Walk {
            copy: self,
            src_strides: byte_strides(self.src_shape, self.elem),
            dst_strides: byte_strides(self.dst_shape, self.elem),
            last,
        };
        // SAFETY: forwarded contract.
        unsafe { walk.axis(0, src, dst) };
    }
}

struct Walk<'a> {
    copy: &'a RegionCopy<'a>,
    src_strides: Vec<usize>,
    dst_strides: Vec<usize>,
    last: usize,
}

impl Walk<'_> {
    /// Copy the region's part at `src`/`dst` from axis `a` on, padding what follows it.
    ///
    /// # Safety
    /// `src` and `dst` address the same index of axes `..a` in their arrays (`RegionCopy::run`).
    unsafe fn axis(&self, a: usize, src: *const u8, dst: *mut u8) {
        let c = self.copy;
        let (n, dst_n) = (c.region[a] as usize, c.dst_shape[a] as usize);
        if a == self.last {
            // The rows from here on are contiguous in both arrays.
            let run = n * self.dst_strides[a];
            // SAFETY: `n` rows of axis `a` lie inside both arrays at this index.
            unsafe { std::ptr::copy_nonoverlapping(src, dst, run) };
            // SAFETY: rows `n..dst_n` of axis `a` lie inside the destination.
            unsafe { self.fill(dst.add(run), (dst_n - n) * self.dst_strides[a]) };
            return;
        }
        for i in 0..n {
            // SAFETY: index `i < region[a]` stays inside both arrays.
            unsafe { self.axis(a + 1, src.add(i * self.src_strides[a]), dst.add(i * self.dst_strides[a])) };
        }
        // SAFETY: indices `n..dst_n` of axis `a` lie inside the destination.
        unsafe { self.fill(dst.add(n * self.dst_strides[a]), (dst_n - n) * self.dst_strides[a]) };
    }

    /// Write the pad element over `bytes` bytes at `dst`.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `bytes` bytes, a whole number of elements.
    unsafe fn fill(&self, dst: *mut u8, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let pad = self.copy.pad.expect("a pad element wherever the destination is larger");
        if pad.iter().all(|&b| b == 0) {
            // SAFETY: caller contract.
            unsafe { std::ptr::write_bytes(dst, 0, bytes) };
            return;
        }
        // SAFETY: caller contract: the element, then doubling copies of what is written so far.
        unsafe {
            std::ptr::copy_nonoverlapping(pad.as_ptr(), dst, pad.len());
            let mut done = pad.len();
            while done < bytes {
                let n = done.min(bytes - done);
                std::ptr::copy_nonoverlapping(dst, dst.add(done), n);
                done += n;
            }
        }
    }
}

/// Whether the leading `region` of a compact array of `shape` is itself one compact block at its
/// start (so a view can present it): axes before the first cut one have extent 1 and axes after
/// it are whole.
pub fn is_leading_block(shape: &[i64], region: &[i64]) -> bool {
    if region.contains(&0) {
        return true;
    }
    match (0..shape.len()).find(|&a| region[a] != shape[a]) {
        None => true,
        Some(k) => region[..k].iter().all(|&e| e == 1) && region[k + 1..] == shape[k + 1..],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pad `src` (of `region`) into `dst_shape` with `pad`, through RegionCopy, as f32.
    fn pad_f32(src: &[f32], region: &[i64], dst_shape: &[i64], pad: f32) -> Vec<f32> {
        let n: i64 = dst_shape.iter().product();
        let mut dst = vec![f32::NAN; n as usize];
        let pad = pad.to_ne_bytes();
        let c = RegionCopy { src_shape: region, dst_shape, region, elem: 4, pad: Some(&pad) };
        // SAFETY: sizes match the shapes.
        unsafe { c.run(src.as_ptr() as *const u8, dst.as_mut_ptr() as *mut u8) };
        dst
    }

    /// The same by index arithmetic.
    fn pad_reference(src: &[f32], region: &[i64], dst_shape: &[i64], pad: f32) -> Vec<f32> {
        let n: i64 = dst_shape.iter().product();
        (0..n)
            .map(|flat| {
                let mut rest = flat;
                let mut idx = vec![0; dst_shape.len()];
                for a in (0..dst_shape.len()).rev() {
                    idx[a] = rest % dst_shape[a];
                    rest /= dst_shape[a];
                }
                if idx.iter().zip(region).any(|(i, r)| i >= r) {
                    return pad;
                }
                let at = idx.iter().zip(region).fold(0, |acc, (i, r)| acc * r + i);
                src[at as usize]
            })
            .collect()
    }

    #[test]
    fn pads_every_shape_pair_like_index_arithmetic() {
        let dst_shape = [3, 4, 2];
        for r0 in 0..=3 {
            for r1 in 0..=4 {
                for r2 in 0..=2 {
                    let region = [r0, r1, r2];
                    let n = (r0 * r1 * r2) as usize;
                    let src: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
                    for pad in [0.0, -7.0] {
                        let got = pad_f32(&src, &region, &dst_shape, pad);
                        assert_eq!(got, pad_reference(&src, &region, &dst_shape, pad), "{region:?} pad {pad}");
                    }
                }
            }
        }
    }

    #[test]
    fn copies_a_region_out_and_between_buckets() {
        let big = [4i64, 6];
        let src: Vec<f32> = (0..24).map(|i| i as f32).collect();
        let region = [2i64, 3];
        let mut out = vec![0f32; 6];
        let c = RegionCopy { src_shape: &big, dst_shape: &region, region: &region, elem: 4, pad: None };
        // SAFETY: sizes match the shapes.
        unsafe { c.run(src.as_ptr() as *const u8, out.as_mut_ptr() as *mut u8) };
        assert_eq!(out, [0.0, 1.0, 2.0, 6.0, 7.0, 8.0]);
        let other = [3i64, 4];
        let mut moved = vec![9f32; 12];
        let pad = 0f32.to_ne_bytes();
        let c = RegionCopy { src_shape: &big, dst_shape: &other, region: &region, elem: 4, pad: Some(&pad) };
        // SAFETY: sizes match the shapes.
        unsafe { c.run(src.as_ptr() as *const u8, moved.as_mut_ptr() as *mut u8) };
        assert_eq!(moved, [0.0, 1.0, 2.0, 0.0, 6.0, 7.0, 8.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn pad_elements_per_dtype() {
        assert_eq!(pad_element(0.0, DLDataType::new(2, 16, 1)).unwrap(), vec![0, 0]);
        assert_eq!(pad_element(1.5, DLDataType::FLOAT32).unwrap(), 1.5f32.to_ne_bytes());
        assert_eq!(pad_element(-1.0, DLDataType::new(0, 64, 1)).unwrap(), (-1i64).to_ne_bytes());
        assert_eq!(pad_element(255.0, DLDataType::new(1, 8, 1)).unwrap(), vec![255]);
        assert_eq!(pad_element(2.0, DLDataType::new(2, 32, 2)).unwrap().len(), 8);
        for (v, dt) in
            [(1.5, DLDataType::new(0, 32, 1)), (256.0, DLDataType::new(1, 8, 1)), (-1.0, DLDataType::new(1, 8, 1))]
        {
            let e = pad_element(v, dt).unwrap_err();
            assert!(e.message().contains("option `pad_value`"), "{e}");
        }
        assert!(pad_element(1.0, DLDataType::new(2, 16, 1)).is_err());
    }

    #[test]
    fn leading_blocks() {
        assert!(is_leading_block(&[8, 3, 4], &[5, 3, 4]));
        assert!(is_leading_block(&[1, 16, 32], &[1, 5, 32]));
        assert!(!is_leading_block(&[2, 16, 32], &[2, 5, 32]));
        assert!(!is_leading_block(&[1, 16, 16], &[1, 5, 5]));
        assert!(is_leading_block(&[4, 4], &[4, 4]));
    }
}
