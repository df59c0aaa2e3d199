//! One forward pass: the sequences of the batch and the tokens each appends, and the host
//! arrays the attention kernels read, computed when the pass begins. Blocks are grouped by
//! depth: a sequence's root block is at depth 0, its next at depth 1, and blocks past the
//! second are read together with the second (two depths, as TVM's kernels are called). At each
//! depth, sequences sharing a block may be coalesced into one prefill over it.

use super::blocks::{Block, Pool};
use crate::runtime::base::error::{Error, Result};

/// The depths of blocks attention is computed over, one kernel call each.
pub(super) const MAX_DEPTH: usize = 2;
/// The largest token tree of one sequence.
pub(super) const MAX_TREE: usize = 256;

/// What the cache's configuration tells the batch.
pub(super) struct Shape {
    pub page_size: i32,
    /// Sequences may slide (`support_sliding_window`, off when some layer slides by itself).
    pub sliding: bool,
    /// Some layers attend to a fixed window of this many tokens (`MHA_SLIDING`).
    pub layer_window: Option<i64>,
    pub rope_inline: bool,
}

/// The arrays of one depth, host side.
#[derive(Default)]
pub(super) struct Depth {
    pub qo_indptr: Vec<i32>,
    pub page_indptr: Vec<i32>,
    pub page_indices: Vec<i32>,
    pub page_indptr_sw: Vec<i32>,
    pub page_indices_sw: Vec<i32>,
    pub last_page_len: Vec<i32>,
    pub sliding_window_offset: Vec<i32>,
    pub sink_size: Vec<i32>,
    pub k_rope_pos_offset: Vec<i32>,
    pub k_rope_pos_offset_sw: Vec<i32>,
    pub tree_mask: Vec<i32>,
    pub tree_mn_indptr: Vec<i32>,
}

#[derive(Default)]
pub(super) struct Batch {
    pub seq_ids: Vec<i64>,
    pub append_lengths: Vec<i64>,
    pub num_depths: usize,
    pub use_decode_kernel: Vec<bool>,
    /// New keys and values go into the pages before attention (decode), not after (prefill).
    pub append_before_attn: bool,
    pub is_chain: [bool; MAX_DEPTH],
    pub depths: [Depth; MAX_DEPTH],
    pub k_ragged_rope_pos_offset: Vec<i32>,
    pub q_rope_position_map: Vec<i32>,
    pub append_position_map: Vec<i32>,
    pub append_indptr: Vec<i32>,
}

fn fail<T>(message: String) -> Result<T> {
    Err(Error::internal(message))
}

/// Block ids per depth (each a block per sequence), or per sequence.
type BlockIds = Vec<Vec<i32>>;

/// Each sequence's blocks at the two depths (-1 where it has none), and the blocks past them.
fn blocks_on_depths(pool: &Pool, ids: &[i64]) -> Result<(BlockIds, BlockIds)> {
    let mut traces = Vec::with_capacity(ids.len());
    for &id in ids {
        traces.push(pool.trace(pool.seq(id)?));
    }
    let depths = traces.iter().map(|t| t.len().min(MAX_DEPTH)).max().unwrap_or(0);
    let on = (0..depths).map(|d| traces.iter().map(|t| if d < t.len() { t[d] } else { -1 }).collect()).collect();
    let trailing = traces.iter().map(|t| t.get(MAX_DEPTH..).unwrap_or(&[]).to_vec()).collect();
    Ok((on, trailing))
}

/// The (block, tokens) chunks of one depth: one per sequence, or neighbours on one block
/// merged; and whether the decode kernel reads them.
fn chunks(
    block_ids: &[i32],
    coalesce: bool,
    lengths: &[i64],
    blocks: &[Block],
    decode: bool,
) -> (Vec<(i32, i64)>, bool) {
    let pages = |b: i32| if b == -1 { 0 } else { blocks[b as usize].pages.len() };
    let separate: Vec<(i32, i64)> = block_ids.iter().copied().zip(lengths.iter().copied()).collect();
    let mut merged: Vec<(i32, i64)> = Vec::new();
    for &(b, n) in &separate {
        match merged.last_mut() {
            Some(last) if last.0 == b => last.1 += n,
            _ => merged.push((b, n)),
        }
    }
    let (before, after): (usize, usize) =
        (block_ids.iter().map(|&b| pages(b)).sum(), merged.iter().map(|&(b, _)| pages(b)).sum());
    let ratio = if after > 0 { before as f64 / after as f64 } else { 0.0 };
    let use_decode = decode && ratio < 32.0;
    (if use_decode || !coalesce { separate } else { merged }, use_decode)
}

impl Batch {
    /// Begins a pass of `lengths[i]` tokens for sequence `ids[i]` (a token tree when `tree` gives
    /// each new token's parent): grows the sequences and computes the arrays. On error the pool
    /// may be half changed; the caller restores it.
    pub fn begin(
        &mut self,
        pool: &mut Pool,
        shape: &Shape,
        ids: &[i64],
        lengths: &[i64],
        tree: Option<&[i64]>,
    ) -> Result<()> {
        if ids.len() != lengths.len() {
            return fail(format!(
                "The seq_ids size ({}) and append_lengths size ({}) mismatch.",
                ids.len(),
                lengths.len()
            ));
        }
        for (i, id) in ids.iter().enumerate() {
            if ids[..i].contains(id) {
                return fail(format!("sequence {id} appears twice in the batch"));
            }
        }
        self.seq_ids = ids.to_vec();
        self.append_lengths = lengths.to_vec();
        let last_length_before = self.grow(pool, ids, lengths)?;
        let (on_depths, trailing) = blocks_on_depths(pool, ids)?;
        self.num_depths = on_depths.len().min(MAX_DEPTH);
        let decode = lengths.iter().all(|&n| n == 1);
        let mut chunked = Vec::with_capacity(self.num_depths);
        self.use_decode_kernel.clear();
        for (d, block_ids) in on_depths.iter().enumerate().take(self.num_depths) {
            let (c, use_decode) = chunks(block_ids, d != MAX_DEPTH - 1, lengths, &pool.blocks, decode);
            chunked.push(c);
            self.use_decode_kernel.push(use_decode);
        }
        self.append_before_attn = !shape.sliding && self.use_decode_kernel.last().copied().unwrap_or(false);
        if ids.iter().any(|&id| pool.seqs.get(&id).is_some_and(|s| !s.committed)) {
            self.append_before_attn = true;
        }
        match tree {
            Some(parents) => {
                if shape.sliding {
                    return fail("Tree attention does not support sliding window.".into());
                }
                if shape.rope_inline {
                    return fail("Tree attention does not support inline RoPE mode.".into());
                }
                self.tree_masks(pool, parents, &on_depths, &trailing)?;
            }
            None => self.chains(pool, ids)?,
        }
        if self.append_before_attn {
            reserve(pool, ids, lengths)?;
        }
        for (d, chunks) in chunked.iter().enumerate() {
            self.depth_arrays(pool, shape, d, chunks, &trailing);
        }
        if !self.append_before_attn {
            reserve(pool, ids, lengths)?;
        }
        self.positions(pool, ids, lengths, &last_length_before)
    }

    /// Lengthens each sequence by its tokens; the length of its last block before that.
    fn grow(&mut self, pool: &mut Pool, ids: &[i64], lengths: &[i64]) -> Result<Vec<i32>> {
        let mut before = Vec::with_capacity(ids.len());
        self.k_ragged_rope_pos_offset.clear();
        for (&id, &n) in ids.iter().zip(lengths) {
            let last = pool.seq(id)?.last_block;
            before.push(pool.blocks[last as usize].seq_length);
            let seq = pool.seq_mut(id)?;
            let pending = if seq.committed { 0 } else { seq.tree_parents.len() as i32 };
            self.k_ragged_rope_pos_offset.push(seq.seq_length - pending);
            seq.seq_length +=
                i32::try_from(n).map_err(|_| Error::internal(format!("append length {n} is too large")))?;
        }
        Ok(before)
    }

    /// A pass without a token tree: each sequence's earlier tree must have been committed.
    fn chains(&mut self, pool: &mut Pool, ids: &[i64]) -> Result<()> {
        for &id in ids {
            let seq = pool.seq_mut(id)?;
            if !seq.committed {
                return fail(format!("The input batch does not form a tree, in which case the sequences in the input batch are expected to have their accepted tokens token tree nodes committed. Please invoke CommitAcceptedTokenTreeNodes for sequence {id}"));
            }
            seq.is_chain = true;
            seq.tree_parents.clear();
            seq.tree_depths.clear();
        }
        self.is_chain = [true; MAX_DEPTH];
        Ok(())
    }

    fn depth_arrays(&mut self, pool: &Pool, shape: &Shape, d: usize, chunks: &[(i32, i64)], trailing: &[Vec<i32>]) {
        let ps = shape.page_size;
        let window = shape.layer_window.unwrap_or(1024);
        let window_offset = |len: i64| if len <= window { 0 } else { ((len - window) % ps as i64) as i32 };
        let window_pages = |len: i64| {
            if len == 0 {
                return 0;
            }
            ((window_offset(len) as i64 + len.min(window) + ps as i64 - 1) / ps as i64) as i32
        };
        let a = &mut self.depths[d];
        for v in [
            &mut a.page_indices,
            &mut a.page_indices_sw,
            &mut a.last_page_len,
            &mut a.sliding_window_offset,
            &mut a.sink_size,
        ] {
            v.clear();
        }
        a.k_rope_pos_offset.clear();
        a.k_rope_pos_offset_sw.clear();
        for v in [&mut a.qo_indptr, &mut a.page_indptr, &mut a.page_indptr_sw] {
            v.clear();
            v.push(0);
        }
        for (i, &(block_id, n)) in chunks.iter().enumerate() {
            a.qo_indptr.push(a.qo_indptr.last().unwrap() + n as i32);
            if block_id == -1 {
                a.page_indptr.push(*a.page_indptr.last().unwrap());
                a.page_indptr_sw.push(*a.page_indptr_sw.last().unwrap());
                for v in [
                    &mut a.last_page_len,
                    &mut a.sliding_window_offset,
                    &mut a.sink_size,
                    &mut a.k_rope_pos_offset,
                    &mut a.k_rope_pos_offset_sw,
                ] {
                    v.push(0);
                }
                continue;
            }
            // Past the last depth, the sequence's further blocks are read with this one.
            let extra = if d == MAX_DEPTH - 1 { trailing[i].as_slice() } else { &[] };
            let first = &pool.blocks[block_id as usize];
            let (mut pages, mut length, mut last) = (0usize, 0i64, first);
            for &b in std::iter::once(&block_id).chain(extra) {
                let blk = &pool.blocks[b as usize];
                a.page_indices.extend_from_slice(&blk.pages);
                pages += blk.pages.len();
                length += blk.seq_length as i64;
                last = blk;
            }
            a.page_indptr.push(a.page_indptr.last().unwrap() + pages as i32);
            let sw = (pages as i32).min(window_pages(length)) as usize;
            a.page_indptr_sw.push(a.page_indptr_sw.last().unwrap() + sw as i32);
            let tail = a.page_indices.len() - sw;
            a.page_indices_sw.extend_from_slice(&a.page_indices[tail..]);
            let last_len = if length == 0 {
                0
            } else {
                (length as i32 - last.sink_length + last.sliding_window_offset - 1) % ps + 1
            };
            a.last_page_len.push(last_len);
            a.sliding_window_offset.push(if shape.layer_window.is_some() {
                window_offset(length)
            } else {
                last.sliding_window_offset
            });
            a.sink_size.push(last.sink_length);
            a.k_rope_pos_offset.push(first.start_pos);
            if shape.layer_window.is_some() {
                a.k_rope_pos_offset_sw.push((first.start_pos as i64 + length - window).max(0) as i32);
            }
        }
    }

    /// Where each new token is written (a page slot, -1 for one pinned by an attention sink)
    /// and the rotary position of each query.
    fn positions(&mut self, pool: &Pool, ids: &[i64], lengths: &[i64], last_length_before: &[i32]) -> Result<()> {
        let ps = pool.page_size;
        self.q_rope_position_map.clear();
        self.append_position_map.clear();
        for (i, (&id, &n)) in ids.iter().zip(lengths).enumerate() {
            let seq = pool.seq(id)?;
            let block = &pool.blocks[seq.last_block as usize];
            for pos in 0..n as i32 {
                let q = if seq.tree_depths.is_empty() {
                    self.k_ragged_rope_pos_offset[i] + pos
                } else {
                    let in_tree = seq.tree_parents.len() as i32 - n as i32;
                    if in_tree < 0 {
                        return fail(format!("a token tree of {} nodes for {n} new tokens", seq.tree_parents.len()));
                    }
                    self.k_ragged_rope_pos_offset[i] + seq.tree_depths[(in_tree + pos) as usize]
                };
                self.q_rope_position_map.push(q);
                let in_block = block.seq_length - n as i32 + pos;
                let slot = if last_length_before[i] + pos < block.sink_length {
                    block.slot_of(last_length_before[i] + pos, ps)
                } else if in_block < block.sink_length {
                    // Pinned by the attention sink before this pass: not written.
                    -1
                } else {
                    block.slot_of(in_block, ps)
                };
                self.append_position_map.push(slot);
            }
        }
        self.append_indptr.clear();
        self.append_indptr.push(0);
        for &n in lengths {
            self.append_indptr.push(self.append_indptr.last().unwrap() + n as i32);
        }
        Ok(())
    }

    /// The token trees of the batch: each sequence's tree grows by its new tokens (`parents`,
    /// all sequences' concatenated), and each node gets its depth-first order and the end of its
    /// subtree in that order (the mask the tree kernels read).
    fn tree_masks(
        &mut self,
        pool: &mut Pool,
        parents: &[i64],
        on_depths: &[Vec<i32>],
        trailing: &[Vec<i32>],
    ) -> Result<()> {
        let lengths = self.append_lengths.clone();
        for (d, on_depth) in on_depths.iter().enumerate().take(self.num_depths) {
            let a = &mut self.depths[d];
            a.tree_mn_indptr.clear();
            a.tree_mask.clear();
            a.tree_mn_indptr.push(0);
            self.is_chain = [true; MAX_DEPTH];
            let mut here = vec![false; self.seq_ids.len()];
            let mut offset = 0usize;
            for (i, &id) in self.seq_ids.iter().enumerate() {
                let n = lengths[i] as usize;
                let seq = pool.seqs.get_mut(&id).expect("checked by grow");
                here[i] = !self.append_before_attn
                    || on_depth[i] == seq.last_block
                    || (d + 1 == MAX_DEPTH && !trailing[i].is_empty());
                if !here[i] {
                    a.tree_mn_indptr.push(*a.tree_mn_indptr.last().unwrap());
                    offset += n;
                    continue;
                }
                let Some(new) = parents.get(offset..offset + n) else {
                    return fail(format!(
                        "Invalid token tree size: {} parents for more appended tokens",
                        parents.len()
                    ));
                };
                seq.tree_parents.extend(new.iter().map(|&p| p as i32));
                offset += n;
                if seq.tree_parents.len() > MAX_TREE {
                    return fail(format!("The tree size is {n} which exceeds the maximum tree size limit {MAX_TREE}"));
                }
                a.tree_mn_indptr.push(a.tree_mn_indptr.last().unwrap() + seq.tree_parents.len() as i32);
            }
            if parents.len() != offset {
                return fail(format!("Invalid token tree size. The sum of \"append_lengths\" is {offset} while there are {} elements in \"token_tree_parent_ptr\".", parents.len()));
            }
            let mut chain = true;
            for (i, &id) in self.seq_ids.iter().enumerate() {
                if here[i] {
                    let seq = pool.seqs.get_mut(&id).expect("checked by grow");
                    chain &= tree_order(i, &seq.tree_parents, &mut a.tree_mask, &mut seq.tree_depths)?;
                    seq.is_chain = chain_of(&seq.tree_parents);
                    seq.committed = false;
                }
            }
            self.is_chain[d] = chain;
            if !self.append_before_attn {
                break;
            }
        }
        Ok(())
    }
}

fn chain_of(parents: &[i32]) -> bool {
    parents.iter().enumerate().all(|(n, &p)| p == n as i32 - 1)
}

/// Checks tree `i`'s parents, appends each node's (order, subtree end) to `mask` and writes
/// the nodes' depths; whether the tree is a chain.
fn tree_order(i: usize, parents: &[i32], mask: &mut Vec<i32>, depths: &mut Vec<i32>) -> Result<bool> {
    let n = parents.len();
    let mut children = vec![Vec::new(); n + 1];
    depths.clear();
    for (node, &p) in parents.iter().enumerate() {
        if p >= node as i32 || p < -1 {
            return fail(format!(
                "Invalid token tree. The parent of node {node} in tree {i} is {p}, which is not smaller than {node}"
            ));
        }
        // Slot 0 holds the roots, slot p + 1 the children of p.
        children[(p + 1) as usize].push(node);
        depths.push(if p == -1 { 0 } else { depths[p as usize] + 1 });
    }
    let mut order = vec![(0i32, 0i32); n];
    let mut next = 0;
    fn visit(node: usize, children: &[Vec<usize>], order: &mut [(i32, i32)], next: &mut i32) -> i32 {
        order[node].0 = *next;
        *next += 1;
        let mut end = order[node].0 + 1;
        for &c in &children[node + 1] {
            end = end.max(visit(c, children, order, next));
        }
        order[node].1 = end;
        end
    }
    for &root in &children[0] {
        visit(root, &children, &mut order, &mut next);
    }
    mask.extend(order.iter().flat_map(|&(a, b)| [a, b]));
    Ok(chain_of(parents))
}

fn reserve(pool: &mut Pool, ids: &[i64], lengths: &[i64]) -> Result<()> {
    for (&id, &n) in ids.iter().zip(lengths) {
        pool.reserve(id, n)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_order_numbers_nodes_depth_first_with_subtree_ends() {
        let (mut mask, mut depths) = (Vec::new(), Vec::new());
        assert!(!tree_order(0, &[-1, 0, 0, 1], &mut mask, &mut depths).unwrap());
        assert_eq!(mask, vec![0, 4, 1, 3, 3, 4, 2, 3]);
        assert_eq!(depths, vec![0, 1, 1, 2]);
        assert!(tree_order(0, &[-1, 1], &mut mask, &mut depths).is_err());
    }

    #[test]
    fn decode_batches_sharing_a_prefix_read_it_per_sequence() {
        let mut pool = Pool::new(4, 64, false);
        pool.add(0).unwrap();
        let shape = Shape { page_size: 4, sliding: false, layer_window: None, rope_inline: false };
        let mut b = Batch::default();
        b.begin(&mut pool, &shape, &[0], &[9], None).unwrap();
        assert_eq!(b.append_position_map, (0..9).collect::<Vec<_>>(), "pages 0, 1, 2 in order");
        pool.fork(0, 1, -1, &mut |_, _, _| Ok(())).unwrap();
        b.begin(&mut pool, &shape, &[0, 1], &[1, 1], None).unwrap();
        assert_eq!(b.num_depths, 2);
        assert!(b.append_before_attn);
        assert_eq!(b.depths[0].qo_indptr, vec![0, 1, 2], "decode: one chunk per sequence");
        assert_eq!(b.depths[0].page_indices, vec![0, 1, 0, 1], "the two shared pages, once per sequence");
        assert_eq!(b.q_rope_position_map, vec![9, 9]);
    }
}
