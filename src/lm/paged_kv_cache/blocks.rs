//! Where each sequence's keys and values live: pages of `page_size` token slots, grouped into
//! blocks. A sequence is a chain of blocks (its last block, then each block's parent), so that
//! sequences forked from one another share their common prefix (the parent blocks) and write
//! only into their own last block. A block referred to by a child cannot grow; forking inside a
//! block splits it. Only host bookkeeping lives here: the page contents are moved by the model's
//! kernels, which [`Pool::fork`] and [`Pool::popn`] ask for through a page-copy callback.
//!
//! Sliding windows: a sequence may keep only its last `sliding_window_size` tokens, plus the
//! first `sink` tokens of its last block (attention sinks); pages slid past are freed.

use crate::runtime::base::error::{Error, Result};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Sequence ids hashed by a multiply-xorshift of the id: a decode step looks its sequences up
/// several times, and SipHash (HashMap's default, made for keys an attacker picks in bulk) cost
/// more than the lookups. Ids collide only if they are equal.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^ (h >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | self.0 >> 56) ^ b as u64;
        }
    }

    fn write_i64(&mut self, v: i64) {
        self.0 = v as u64;
    }
}

/// Sequences by id.
type Seqs = HashMap<i64, Sequence, BuildHasherDefault<IdHasher>>;

/// The id of a page borrowed while a sliding sequence grows past a full cache (swapped for a
/// real page once the window has slid).
const TEMP_PAGE: i32 = -1;

/// Pages of one block; only the last may be partly filled.
#[derive(Clone, Debug)]
pub(super) struct Block {
    pub pages: Vec<i32>,
    /// Tokens held.
    pub seq_length: i32,
    /// The position in the sequence of the block's first token (for rotary embeddings).
    pub start_pos: i32,
    /// Tokens pinned at the block's start while its window slides.
    pub sink_length: i32,
    /// Where the window starts in the block's slots (0 without sliding).
    pub sliding_window_offset: i32,
    /// The block this one continues, or -1.
    pub parent: i32,
    /// Holders: the sequence whose last block it is, and the blocks whose parent it is.
    pub refs: i32,
}

impl Block {
    fn new() -> Block {
        Block {
            pages: Vec::new(),
            seq_length: 0,
            start_pos: 0,
            sink_length: 0,
            sliding_window_offset: 0,
            parent: -1,
            refs: 0,
        }
    }

    /// The page slot of the block's `i`-th token.
    pub fn slot_of(&self, i: i32, page_size: i32) -> i32 {
        let offset = if i < self.sink_length { i } else { i - self.sink_length + self.sliding_window_offset };
        self.pages[(offset / page_size) as usize] * page_size + offset % page_size
    }
}

#[derive(Clone, Debug)]
pub(super) struct Sequence {
    pub last_block: i32,
    pub seq_length: i32,
    /// -1 when the sequence does not slide.
    pub sliding_window_size: i32,
    pub last_block_sink_size: i32,
    /// Whether the tokens of the last forward pass form a chain (not a token tree).
    pub is_chain: bool,
    /// The token tree of the last forward pass: parent of each node, depth of each node.
    pub tree_parents: Vec<i32>,
    pub tree_depths: Vec<i32>,
    /// Whether the accepted nodes of the last token tree were committed.
    pub committed: bool,
}

/// See [`Pool::checkpoint`].
pub(super) struct Checkpoint {
    seqs: Vec<(i64, Sequence)>,
    blocks: Vec<(i32, Block)>,
}

/// Every page, block and sequence of one cache.
#[derive(Clone)]
pub(super) struct Pool {
    pub page_size: i32,
    num_pages: i32,
    /// Whether sequences may slide (the cache's `support_sliding_window`).
    sliding: bool,
    free_pages: Vec<i32>,
    /// While a forward pass may be undone: the free pages it took (`Some`) and gave back
    /// (`None`), in order.
    journal: Option<Vec<Option<i32>>>,
    pub blocks: Vec<Block>,
    free_blocks: Vec<i32>,
    pub seqs: Seqs,
}

fn fail<T>(message: String) -> Result<T> {
    Err(Error::internal(message))
}

impl Pool {
    pub fn new(page_size: i32, num_pages: i32, sliding: bool) -> Pool {
        Pool {
            page_size,
            num_pages,
            sliding,
            free_pages: (0..num_pages).rev().collect(),
            journal: None,
            blocks: Vec::new(),
            free_blocks: Vec::new(),
            seqs: Seqs::default(),
        }
    }

    pub fn clear(&mut self) {
        *self = Pool::new(self.page_size, self.num_pages, self.sliding);
    }

    pub fn empty(&self) -> bool {
        self.seqs.is_empty()
            && self.free_blocks.len() == self.blocks.len()
            && self.free_pages.len() == self.num_pages as usize
    }

    pub fn available_pages(&self) -> usize {
        self.free_pages.len()
    }

    pub fn total_length(&self) -> i64 {
        self.seqs.values().map(|s| s.seq_length as i64).sum()
    }

    pub fn seq(&self, id: i64) -> Result<&Sequence> {
        self.seqs.get(&id).map_or_else(|| fail(format!("The sequence \"{id}\" cannot be found in KV cache.")), Ok)
    }

    pub fn seq_mut(&mut self, id: i64) -> Result<&mut Sequence> {
        self.seqs.get_mut(&id).map_or_else(|| fail(format!("The sequence \"{id}\" cannot be found in KV cache.")), Ok)
    }

    fn page(&mut self) -> Result<i32> {
        let page =
            self.free_pages.pop().map_or_else(|| fail("The KV cache is full. No page can be allocated.".into()), Ok)?;
        if let Some(j) = &mut self.journal {
            j.push(Some(page));
        }
        Ok(page)
    }

    fn block(&mut self) -> i32 {
        if let Some(i) = self.free_blocks.pop() {
            self.blocks[i as usize] = Block::new();
            return i;
        }
        self.blocks.push(Block::new());
        self.blocks.len() as i32 - 1
    }

    fn b(&mut self, i: i32) -> &mut Block {
        &mut self.blocks[i as usize]
    }

    /// A sequence ending at block `last`, which it now holds.
    fn insert_seq(&mut self, id: i64, last: i32) {
        self.b(last).refs += 1;
        let seq_length = self.chain(last).map(|b| self.blocks[b as usize].seq_length).sum();
        let seq = Sequence {
            last_block: last,
            seq_length,
            sliding_window_size: -1,
            last_block_sink_size: 0,
            is_chain: true,
            tree_parents: Vec::new(),
            tree_depths: Vec::new(),
            committed: true,
        };
        self.seqs.insert(id, seq);
    }

    /// Block `last`, its parent, and so on to the root.
    fn chain(&self, last: i32) -> impl Iterator<Item = i32> + '_ {
        std::iter::successors(Some(last).filter(|&b| b != -1), |&b| {
            Some(self.blocks[b as usize].parent).filter(|&p| p != -1)
        })
    }

    /// The blocks of a sequence from its root to its last block.
    pub fn trace(&self, seq: &Sequence) -> Vec<i32> {
        let mut t: Vec<i32> = self.chain(seq.last_block).collect();
        t.reverse();
        t
    }

    pub fn add(&mut self, id: i64) -> Result<()> {
        if self.seqs.contains_key(&id) {
            return fail(format!("The sequence \"{id}\" is already in the KV cache."));
        }
        let b = self.block();
        self.insert_seq(id, b);
        Ok(())
    }

    pub fn remove(&mut self, id: i64) -> Result<()> {
        let mut b = self.seq(id)?.last_block;
        while b != -1 && self.blocks[b as usize].refs == 1 {
            let block = &self.blocks[b as usize];
            self.free_pages.extend_from_slice(&block.pages);
            self.free_blocks.push(b);
            b = block.parent;
        }
        if b != -1 {
            self.b(b).refs -= 1;
        }
        self.seqs.remove(&id);
        Ok(())
    }

    /// `child` as a copy of `parent`'s first `pos` tokens (-1: all), sharing its full pages;
    /// `copy(src_page, dst_page, tokens)` copies a partly shared page into the child's own.
    pub fn fork(
        &mut self,
        parent: i64,
        child: i64,
        pos: i64,
        copy: &mut dyn FnMut(i32, i32, i32) -> Result<()>,
    ) -> Result<()> {
        let p = self
            .seqs
            .get(&parent)
            .cloned()
            .map_or_else(|| fail(format!("The parent sequence \"{parent}\" cannot be found in KV cache.")), Ok)?;
        if self.seqs.contains_key(&child) {
            return fail(format!("The child sequence \"{child}\" is already in the KV cache."));
        }
        if pos < -1 {
            return fail("The forked position should be non-negative, or -1 for last position as default.".into());
        }
        if pos > p.seq_length as i64 {
            return fail("The forked position should not exceed the total length of parent sequence.".into());
        }
        if !p.committed {
            return fail("The parent sequence's token tree computed in the last round of forward has not been committed with accepted nodes.".into());
        }
        let pos = if pos == -1 { p.seq_length } else { pos as i32 };
        if p.sliding_window_size != -1 {
            let sink = p.seq_length - self.blocks[p.last_block as usize].seq_length + p.last_block_sink_size;
            if pos > sink {
                return fail(format!("The parent sequence \"{parent}\" is enabled with sliding window and thus only can be forked within sink size = {sink}. But the forked position = {pos}."));
            }
        }
        if pos % self.page_size != 0 && self.free_pages.is_empty() {
            return fail("The KV cache is full. No page can be allocated.".into());
        }
        if pos == p.seq_length && pos % self.page_size == 0 && self.blocks[p.last_block as usize].seq_length > 0 {
            // The parent continues in a new, empty block, so the shared one stays as it is.
            let b = self.block();
            let blk = self.b(b);
            (blk.start_pos, blk.parent, blk.refs) = (p.seq_length, p.last_block, 1);
            self.seq_mut(parent)?.last_block = b;
        }
        let child_block = self.block();
        let trace = self.trace(self.seq(parent)?);
        self.link_fork(parent, &trace, child_block, pos, copy)?;
        self.insert_seq(child, child_block);
        Ok(())
    }

    /// Hangs `child_block` off the block of `trace` holding position `pos`, splitting that
    /// block when the fork is past its first page.
    fn link_fork(
        &mut self,
        parent: i64,
        trace: &[i32],
        child_block: i32,
        pos: i32,
        copy: &mut dyn FnMut(i32, i32, i32) -> Result<()>,
    ) -> Result<()> {
        let ps = self.page_size;
        let mut offset = pos;
        for &forked in trace {
            let len = self.blocks[forked as usize].seq_length;
            if forked != *trace.last().unwrap_or(&-1) {
                if len <= 0 || len % ps != 0 {
                    return fail(format!("a shared block of {len} tokens, not whole pages"));
                }
                if len <= offset {
                    offset -= len;
                    continue;
                }
            }
            let in_page = offset % ps;
            let moved = offset - in_page;
            if moved == 0 {
                let up = self.blocks[forked as usize].parent;
                if up != -1 {
                    self.b(up).refs += 1;
                }
                self.b(child_block).parent = up;
            } else {
                self.split(parent, forked, child_block, moved)?;
            }
            let blk = self.b(child_block);
            (blk.start_pos, blk.seq_length) = (pos - in_page, in_page);
            if in_page > 0 {
                let src = self.blocks[forked as usize].pages[0];
                let dst = self.page()?;
                self.b(child_block).pages.push(dst);
                copy(src, dst, in_page)?;
            }
            return Ok(());
        }
        Ok(())
    }

    /// A new block holding the first `moved` tokens (whole pages) of `forked`, parent of both
    /// `forked` and `child_block`.
    fn split(&mut self, parent: i64, forked: i32, child_block: i32, moved: i32) -> Result<()> {
        let up = self.block();
        let pages = (moved / self.page_size) as usize;
        let f = self.b(forked);
        let head: Vec<i32> = f.pages.drain(..pages).collect();
        let (f_parent, f_start) = (f.parent, f.start_pos);
        f.parent = up;
        f.start_pos += moved;
        f.seq_length -= moved;
        let u = self.b(up);
        (u.parent, u.refs, u.pages, u.start_pos, u.seq_length) = (f_parent, 2, head, f_start, moved);
        self.b(child_block).parent = up;
        let seq = self.seq_mut(parent)?;
        if seq.sliding_window_size != -1 && forked == seq.last_block {
            if moved > seq.last_block_sink_size {
                return fail(format!("moved {moved} tokens out of a sink of {}", seq.last_block_sink_size));
            }
            seq.last_block_sink_size -= moved;
        }
        Ok(())
    }

    pub fn enable_sliding_window(&mut self, id: i64, window: i32, sink: i32) -> Result<()> {
        let seq = self.seq(id)?;
        if sink < 0 {
            return fail("The specified attention sink size is expected to be non negative".into());
        }
        if window <= 0 {
            return fail("The specified sliding window size should be positive.".into());
        }
        if sink >= window {
            return fail("The attn sink size should be less than the sliding window size.".into());
        }
        if seq.sliding_window_size != -1 {
            return fail("A sequence cannot be enabled twice for sliding window.".into());
        }
        let prefix = seq.seq_length - self.blocks[seq.last_block as usize].seq_length;
        let seq = self.seq_mut(id)?;
        seq.last_block_sink_size = (sink - prefix).max(0);
        seq.sliding_window_size = window;
        Ok(())
    }

    /// Drops the last `n` tokens of a sequence; shared blocks are left to their other holders
    /// (the sequence is re-forked before them).
    pub fn popn(&mut self, id: i64, n: i64, copy: &mut dyn FnMut(i32, i32, i32) -> Result<()>) -> Result<()> {
        let len = self.seq(id)?.seq_length;
        if n < 0 {
            return fail(format!("The length of popping {n} cannot be negative."));
        }
        if n > len as i64 {
            return fail(format!("The sequence only has length {len}, while the length of pop is {n} which exceeds the whole sequence length."));
        }
        let mut n = n as i32;
        if n == 0 {
            return Ok(());
        }
        let mut b = self.seq(id)?.last_block;
        while b != -1 && self.blocks[b as usize].refs == 1 {
            let blk = &self.blocks[b as usize];
            if n > blk.seq_length {
                n -= blk.seq_length;
                let (parent, pages, len) = (blk.parent, blk.pages.clone(), blk.seq_length);
                self.free_pages.extend(pages);
                self.free_blocks.push(b);
                let seq = self.seq_mut(id)?;
                seq.seq_length -= len;
                seq.last_block = parent;
                b = parent;
                continue;
            }
            let keep = (blk.seq_length - n + self.page_size - 1) / self.page_size;
            let freed: Vec<i32> = self.b(b).pages.drain(keep as usize..).rev().collect();
            self.free_pages.extend(freed);
            self.b(b).seq_length -= n;
            self.seq_mut(id)?.seq_length -= n;
            n = 0;
            break;
        }
        if n > 0 {
            self.pop_into_shared(id, n, copy)?;
        }
        Ok(())
    }

    /// The rest of a pop reaching blocks other sequences share: the sequence becomes a fork of
    /// itself at its new length.
    fn pop_into_shared(&mut self, id: i64, n: i32, copy: &mut dyn FnMut(i32, i32, i32) -> Result<()>) -> Result<()> {
        let temp = -1 - id;
        if self.seqs.contains_key(&temp) {
            return fail(format!("sequence {temp} (used to pop {id}) exists"));
        }
        let at = (self.seq(id)?.seq_length - n) as i64;
        self.fork(id, temp, at, copy)?;
        self.remove(id)?;
        let seq = self.seqs.remove(&temp).expect("forked just above");
        self.seqs.insert(id, seq);
        Ok(())
    }

    /// Frees the pages a sliding sequence has slid past.
    fn slide(&mut self, id: i64) -> Result<()> {
        let ps = self.page_size;
        let seq = self.seq(id)?.clone();
        if seq.sliding_window_size == -1 || !self.sliding || seq.seq_length <= seq.sliding_window_size {
            return Ok(());
        }
        let to_slide = seq.seq_length - seq.sliding_window_size;
        let mut freed = Vec::new();
        let block = &mut self.blocks[seq.last_block as usize];
        if seq.last_block_sink_size > 0 && block.sink_length == 0 {
            // The first slide: the sink is pinned, the window starts after it.
            block.sink_length = seq.last_block_sink_size;
            block.sliding_window_offset = seq.last_block_sink_size;
        }
        let sink_pages = (block.sink_length + ps - 1) / ps;
        let mut first = (block.sliding_window_offset + to_slide) / ps;
        let in_page = (block.sliding_window_offset + to_slide) % ps;
        while first > sink_pages {
            let page = block.pages.remove(sink_pages as usize);
            if page != TEMP_PAGE {
                freed.push(page);
            }
            first -= 1;
        }
        block.seq_length -= to_slide;
        block.sliding_window_offset = first * ps + in_page;
        let pages = (block.sliding_window_offset + block.seq_length - block.sink_length + ps - 1) / ps;
        if block.seq_length < block.sink_length || pages as usize != block.pages.len() {
            return fail(format!("sliding sequence {id}: {pages} pages for its window, {} held", block.pages.len()));
        }
        self.give_back(freed);
        self.seq_mut(id)?.seq_length = seq.sliding_window_size;
        Ok(())
    }

    /// Room for `n` more tokens in the last block of a sequence (whose length already counts
    /// them), then the window slid.
    pub fn reserve(&mut self, id: i64, n: i64) -> Result<()> {
        let seq = self.seq(id)?.clone();
        let b = seq.last_block;
        let blk = &self.blocks[b as usize];
        if n <= 0 {
            return fail("Append with length 0 is not allowed.".into());
        }
        if blk.refs != 1 {
            return fail(format!(
                "The block is {}-time referenced by other blocks, thus cannot accept new KV values.",
                blk.refs - 1
            ));
        }
        let ps = self.page_size as i64;
        let have = blk.pages.len() as i64;
        let want =
            (blk.seq_length as i64 - blk.sink_length as i64 + blk.sliding_window_offset as i64 + n + ps - 1) / ps;
        let borrow = seq.sliding_window_size != -1 && self.sliding;
        for _ in have..want {
            let page = if self.free_pages.is_empty() && borrow { TEMP_PAGE } else { self.page()? };
            self.b(b).pages.push(page);
        }
        self.b(b).seq_length += n as i32;
        self.slide(id)?;
        if self.sliding {
            for i in 0..self.blocks[b as usize].pages.len() {
                if self.blocks[b as usize].pages[i] == TEMP_PAGE {
                    let page = self.page()?;
                    self.b(b).pages[i] = page;
                }
            }
        }
        Ok(())
    }

    /// Pages a slide frees (journaled while a forward pass may be undone).
    fn give_back(&mut self, pages: Vec<i32>) {
        if let Some(j) = &mut self.journal {
            j.extend(pages.iter().map(|_| None));
        }
        self.free_pages.extend(pages);
    }

    /// What a forward pass of sequences `ids` may change (the sequences and their last blocks;
    /// the free pages it takes and gives back are journaled from here on), to put back with
    /// [`Pool::restore`] if it fails, or to let go of with [`Pool::commit`].
    pub fn checkpoint(&mut self, ids: &[i64]) -> Result<Checkpoint> {
        let mut seqs = Vec::with_capacity(ids.len());
        let mut blocks = Vec::with_capacity(ids.len());
        for &id in ids {
            let seq = self.seq(id)?;
            blocks.push((seq.last_block, self.blocks[seq.last_block as usize].clone()));
            seqs.push((id, seq.clone()));
        }
        self.journal = Some(self.journal.take().unwrap_or_default());
        Ok(Checkpoint { seqs, blocks })
    }

    pub fn restore(&mut self, c: Checkpoint) {
        for (id, seq) in c.seqs {
            self.seqs.insert(id, seq);
        }
        for (b, block) in c.blocks {
            self.blocks[b as usize] = block;
        }
        let mut journal = self.journal.take().unwrap_or_default();
        while let Some(op) = journal.pop() {
            match op {
                Some(taken) => self.free_pages.push(taken),
                None => drop(self.free_pages.pop()),
            }
        }
        journal.clear();
        self.journal = None;
    }

    /// Ends what [`Pool::checkpoint`] began, keeping the changes.
    pub fn commit(&mut self) {
        self.journal = None;
    }

    /// The page slot of each of a sequence's tokens, first to last.
    pub fn slots(&self, seq: &Sequence) -> Vec<i32> {
        let mut slots = Vec::with_capacity(seq.seq_length.max(0) as usize);
        for b in self.trace(seq) {
            let blk = &self.blocks[b as usize];
            slots.extend((0..blk.seq_length).map(|i| blk.slot_of(i, self.page_size)));
        }
        slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_copy() -> impl FnMut(i32, i32, i32) -> Result<()> {
        |_, _, _| panic!("no page copy expected")
    }

    fn grow(p: &mut Pool, id: i64, n: i64) {
        p.seq_mut(id).unwrap().seq_length += n as i32;
        p.reserve(id, n).unwrap();
    }

    #[test]
    fn forks_share_whole_pages_and_copy_a_partial_one() {
        let mut p = Pool::new(4, 8, false);
        p.add(0).unwrap();
        grow(&mut p, 0, 10);
        let mut copies = Vec::new();
        p.fork(0, 1, 6, &mut |s, d, n| {
            copies.push((s, d, n));
            Ok(())
        })
        .unwrap();
        // Page 0 (tokens 0..4) splits off into a shared block; the child copies 2 tokens of
        // page 1 (tokens 4, 5) into a page of its own (page 3).
        assert_eq!(copies, vec![(1, 3, 2)]);
        assert_eq!(p.seq(1).unwrap().seq_length, 6);
        assert_eq!(p.slots(p.seq(1).unwrap()), vec![0, 1, 2, 3, 12, 13]);
        assert_eq!(p.slots(p.seq(0).unwrap()), (0..10).collect::<Vec<_>>());
        p.remove(0).unwrap();
        p.remove(1).unwrap();
        assert!(p.empty());
    }

    #[test]
    fn pops_free_pages_and_reach_into_shared_blocks() {
        let mut p = Pool::new(4, 8, false);
        p.add(0).unwrap();
        grow(&mut p, 0, 8);
        p.fork(0, 1, -1, &mut no_copy()).unwrap();
        grow(&mut p, 1, 3);
        assert_eq!(p.available_pages(), 5);
        p.popn(1, 7, &mut |_, _, _| Ok(())).unwrap();
        assert_eq!(p.seq(1).unwrap().seq_length, 4);
        assert!(p.popn(1, 5, &mut no_copy()).is_err());
        p.remove(1).unwrap();
        p.remove(0).unwrap();
        assert!(p.empty(), "every page back");
    }

    #[test]
    fn a_full_cache_refuses_without_a_change() {
        let mut p = Pool::new(4, 2, false);
        p.add(0).unwrap();
        grow(&mut p, 0, 8);
        let before = p.clone();
        assert!(p.fork(0, 1, 5, &mut no_copy()).unwrap_err().message().contains("full"));
        assert_eq!(p.seqs.len(), before.seqs.len());
        assert_eq!(p.blocks.len(), before.blocks.len());
    }

    #[test]
    fn sliding_windows_keep_the_sink_and_free_what_slid_past() {
        let mut p = Pool::new(4, 16, true);
        p.add(0).unwrap();
        p.enable_sliding_window(0, 8, 2).unwrap();
        grow(&mut p, 0, 20);
        let seq = p.seq(0).unwrap();
        assert_eq!(seq.seq_length, 8);
        let slots = p.slots(seq);
        assert_eq!(&slots[..2], &[0, 1], "the sink stays");
        assert_eq!(slots.len(), 8);
        assert_eq!(p.available_pages(), 16 - 3);
    }

    /// A seeded random walk of adds, removes, forks, pops and forward passes against a model of
    /// what each sequence holds: after every step each sequence's slots read back its tokens
    /// (page contents moved as the kernels would move them), and every page is either free or
    /// in exactly one live block. Changes that fail (a full cache) are undone, as the cache does.
    #[test]
    fn random_walks_keep_every_sequence_and_page_accounted_for() {
        use super::super::batch::{Batch, Shape};
        let ps = 4;
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n.max(1)
        };
        let shape = Shape { page_size: ps, sliding: false, layer_window: None, rope_inline: false };
        let mut pool = Pool::new(ps, 40, false);
        let mut batch = Batch::default();
        let mut model: std::collections::BTreeMap<i64, Vec<u64>> = Default::default();
        let mut store: HashMap<i32, u64> = HashMap::new();
        let (mut fresh_id, mut fresh_token, mut full) = (0i64, 0u64, 0);
        for step in 0..3000 {
            let ids: Vec<i64> = model.keys().copied().collect();
            let pick = |r: u64| ids[(r % ids.len() as u64) as usize];
            let saved = pool.clone();
            let copy_store = &mut store.clone();
            let mut copy = |src: i32, dst: i32, n: i32| {
                for i in 0..n {
                    if let Some(&t) = copy_store.get(&(src * ps + i)) {
                        copy_store.insert(dst * ps + i, t);
                    }
                }
                Ok(())
            };
            let out = match next(5) {
                0 if model.len() < 6 => pool.add(fresh_id).map(|_| {
                    model.insert(fresh_id, Vec::new());
                    fresh_id += 1;
                }),
                1 if !ids.is_empty() => {
                    let id = pick(next(100));
                    pool.remove(id).map(|_| drop(model.remove(&id)))
                }
                2 if !ids.is_empty() && model.len() < 6 => {
                    let parent = pick(next(100));
                    let len = model[&parent].len() as u64;
                    let pos = next(len + 2) as i64 - 1;
                    pool.fork(parent, fresh_id, pos, &mut copy).map(|_| {
                        let upto = if pos == -1 { len as usize } else { pos as usize };
                        model.insert(fresh_id, model[&parent][..upto].to_vec());
                        fresh_id += 1;
                    })
                }
                3 if !ids.is_empty() => {
                    let id = pick(next(100));
                    let n = next(model[&id].len() as u64 + 1) as i64;
                    pool.popn(id, n, &mut copy).map(|_| {
                        let keep = model[&id].len() - n as usize;
                        model.get_mut(&id).unwrap().truncate(keep);
                    })
                }
                _ if !ids.is_empty() => {
                    let mut chosen: Vec<i64> = ids.iter().copied().filter(|_| next(2) == 0).collect();
                    if chosen.is_empty() {
                        chosen.push(pick(next(100)));
                    }
                    let lengths: Vec<i64> = chosen
                        .iter()
                        .map(|_| {
                            let most = if next(2) == 0 { 1 } else { 9 };
                            1 + next(most) as i64
                        })
                        .collect();
                    let cp = pool.checkpoint(&chosen).unwrap();
                    match batch.begin(&mut pool, &shape, &chosen, &lengths, None) {
                        Ok(()) => {
                            pool.commit();
                            let mut at = 0;
                            for (&id, &n) in chosen.iter().zip(&lengths) {
                                for _ in 0..n {
                                    copy_store.insert(batch.append_position_map[at], fresh_token);
                                    model.get_mut(&id).unwrap().push(fresh_token);
                                    fresh_token += 1;
                                    at += 1;
                                }
                            }
                            Ok(())
                        }
                        Err(e) => {
                            pool.restore(cp);
                            assert_eq!(state(&pool), state(&saved), "step {step}: a failed pass undone whole");
                            Err(e)
                        }
                    }
                }
                _ => Ok(()),
            };
            match out {
                Ok(()) => store = copy_store.clone(),
                Err(e) => {
                    assert!(e.message().contains("full"), "step {step}: {e}");
                    full += 1;
                    pool = saved;
                }
            }
            check(&pool, &model, &store, step);
        }
        assert!(fresh_token > 1000 && fresh_id > 50 && full > 20, "the walk did a little of everything: {full} full");

        fn state(p: &Pool) -> String {
            let mut seqs: Vec<_> = p.seqs.iter().collect();
            seqs.sort_by_key(|(id, _)| **id);
            format!("{seqs:?} {:?} {:?} {:?}", p.blocks, p.free_blocks, p.free_pages)
        }

        fn check(
            pool: &Pool,
            model: &std::collections::BTreeMap<i64, Vec<u64>>,
            store: &HashMap<i32, u64>,
            step: usize,
        ) {
            assert_eq!(pool.seqs.len(), model.len(), "step {step}");
            for (id, tokens) in model {
                let seq = pool.seq(*id).unwrap();
                let got: Vec<u64> = pool.slots(seq).iter().map(|s| store[s]).collect();
                assert_eq!(&got, tokens, "step {step}: sequence {id}");
            }
            let mut owner = vec![0u32; pool.num_pages as usize];
            let free: std::collections::HashSet<i32> = pool.free_blocks.iter().copied().collect();
            for (b, block) in pool.blocks.iter().enumerate() {
                if !free.contains(&(b as i32)) {
                    block.pages.iter().for_each(|&p| owner[p as usize] += 1);
                    let want = (block.seq_length + pool.page_size - 1) / pool.page_size;
                    assert_eq!(block.pages.len() as i32, want, "step {step}: block {b} of {} tokens", block.seq_length);
                }
            }
            pool.free_pages.iter().for_each(|&p| owner[p as usize] += 1);
            assert!(owner.iter().all(|&n| n == 1), "step {step}: pages owned {owner:?}");
        }
    }
}
