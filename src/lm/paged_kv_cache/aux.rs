//! The batch's int32 arrays on the cache's device: staged on the host one after another (each
//! start 16-byte aligned), copied over in one transfer, and handed to the kernels as views of one
//! device buffer (with their offset in `byte_offset`, which the kernels' buffers declare). The
//! buffer is allocated at creation for the usual sizes and grows (doubling) only when a batch of
//! many sequences reading long shared prefixes needs more.

use crate::abi::{DLDataType, DLDevice};
use crate::runtime::base::error::Result;
use crate::runtime::tensor::ndarray::NDArray;

/// Array starts are aligned to this many int32 elements (16 bytes).
const ALIGN: usize = 4;

pub(super) struct Aux {
    host: Vec<i32>,
    device: NDArray,
    /// The views handed out for the last copy and for this one: a decode step's arrays are
    /// mostly where the last step's were, and their views are reused.
    previous: Vec<(Staged, NDArray)>,
    current: Vec<(Staged, NDArray)>,
}

/// Where an array was staged: its start and its shape.
#[derive(Clone, PartialEq)]
pub(super) struct Staged {
    at: usize,
    shape: [i64; 2],
    /// 1 or 2: how many of `shape` are the array's.
    ndim: usize,
}

impl Aux {
    pub fn new(capacity: usize, device: DLDevice) -> Result<Aux> {
        let device = NDArray::empty(&[capacity.max(ALIGN) as i64], DLDataType::INT32, device)?;
        Ok(Aux { host: Vec::with_capacity(capacity), device, previous: Vec::new(), current: Vec::new() })
    }

    pub fn reset(&mut self) {
        self.host.clear();
        self.previous = std::mem::take(&mut self.current);
    }

    /// Stages `data` as an array of `shape` (rows, columns), or of its length when `None`.
    pub fn put(&mut self, data: &[i32], shape: Option<[i64; 2]>) -> Staged {
        let at = self.host.len();
        self.host.extend_from_slice(data);
        self.host.resize(self.host.len().next_multiple_of(ALIGN), 0);
        match shape {
            Some(shape) => Staged { at, shape, ndim: 2 },
            None => Staged { at, shape: [data.len() as i64, 0], ndim: 1 },
        }
    }

    /// Stages the concatenation of `parts`, each of `n` elements, as an array of (parts, n).
    pub fn put_rows(&mut self, parts: &[&[i32]]) -> Staged {
        let n = parts.first().map_or(0, |p| p.len());
        let at = self.host.len();
        for p in parts {
            self.host.extend_from_slice(p);
        }
        self.host.resize(self.host.len().next_multiple_of(ALIGN), 0);
        Staged { at, shape: [parts.len() as i64, n as i64], ndim: 2 }
    }

    /// Copies what was staged to the device (growing the buffer if it must).
    pub fn commit(&mut self) -> Result<()> {
        let have = self.device.shape()[0] as usize;
        if self.host.len() > have {
            let grown = self.host.len().max(2 * have);
            self.device = NDArray::empty(&[grown as i64], DLDataType::INT32, self.device.device())?;
            self.previous.clear();
        }
        if self.host.is_empty() {
            return Ok(());
        }
        let bytes: &[u8] = bytemuck_i32(&self.host);
        self.device.create_view(&[self.host.len() as i64], DLDataType::INT32)?.copy_from_bytes(bytes)
    }

    /// The device view of a staged array (after [`Aux::commit`]).
    pub fn view(&mut self, s: &Staged) -> Result<NDArray> {
        if let Some((_, v)) = self.current.iter().find(|(k, _)| k == s) {
            return Ok(v.clone());
        }
        let view = match self.previous.iter().find(|(k, _)| k == s) {
            Some((_, v)) => v.clone(),
            None => self.device.create_view_by_offset(s.at * 4, &s.shape[..s.ndim], DLDataType::INT32)?,
        };
        self.current.push((s.clone(), view.clone()));
        Ok(view)
    }

    /// The views of `staged`.
    pub fn views(&mut self, staged: &[Staged]) -> Result<Vec<NDArray>> {
        staged.iter().map(|s| self.view(s)).collect()
    }
}

fn bytemuck_i32(v: &[i32]) -> &[u8] {
    // SAFETY: i32 has no padding and every byte pattern is a valid u8; the slice covers exactly
    // the vector's initialised elements and borrows it.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(aux: &mut Aux, s: &Staged) -> Vec<i32> {
        let v = aux.view(s).unwrap();
        v.to_vec_u8().unwrap().chunks(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect()
    }

    #[test]
    fn staged_arrays_come_back_from_their_views_and_the_buffer_grows() {
        let mut aux = Aux::new(4, DLDevice::cpu(0)).unwrap();
        let a = aux.put(&[1, 2, 3], None);
        let b = aux.put_rows(&[&[4, 5], &[6, 7], &[8, 9]]);
        aux.commit().unwrap();
        assert_eq!(read(&mut aux, &a), vec![1, 2, 3]);
        assert_eq!(read(&mut aux, &b), vec![4, 5, 6, 7, 8, 9]);
        let v = aux.view(&b).unwrap();
        assert_eq!(v.shape(), &[3, 2]);
        assert_eq!(v.tensor().raw().byte_offset, 16, "the second array starts 16 bytes in");
        let first = aux.view(&a).unwrap();
        aux.reset();
        let a2 = aux.put(&[7, 8, 9], None);
        aux.commit().unwrap();
        assert!(a2 == a, "staged where the last copy had it");
        assert_eq!(aux.view(&a2).unwrap().as_header(), first.as_header(), "the same view object");
        assert_eq!(read(&mut aux, &a2), vec![7, 8, 9], "which reads the new values");
        aux.reset();
        let moved = aux.put_rows(&[&[1, 2]]);
        aux.commit().unwrap();
        assert!(moved != b);
        assert_eq!(read(&mut aux, &moved), vec![1, 2]);
    }
}
