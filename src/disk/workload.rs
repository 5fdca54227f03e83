//! What the disk engines do: the access pattern (random or sequential, reads, writes
//! or a mix) and the generator that picks each I/O's direction and offset. Every
//! offset is a multiple of the block size inside the test region, so reads only
//! touch blocks that the layout wrote.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The access pattern, as fio names it (`--pattern`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Pattern {
    /// Random reads.
    #[value(name = "randread")]
    RandRead,
    /// Random writes.
    #[value(name = "randwrite")]
    RandWrite,
    /// Random reads and writes, `--mix` percent reads.
    #[value(name = "randrw")]
    RandRw,
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
}

impl Pattern {
    /// fio's name for the pattern (`randread`, …).
    pub fn name(self) -> &'static str {
        match self {
            Pattern::RandRead => "randread",
            Pattern::RandWrite => "randwrite",
            Pattern::RandRw => "randrw",
            Pattern::Read => "read",
            Pattern::Write => "write",
        }
    }

    /// Whether the pattern issues reads.
    pub fn reads(self) -> bool {
        matches!(self, Pattern::RandRead | Pattern::RandRw | Pattern::Read)
    }

    /// Whether the pattern issues writes.
    pub fn writes(self) -> bool {
        matches!(self, Pattern::RandWrite | Pattern::RandRw | Pattern::Write)
    }

    /// Whether offsets are random.
    pub fn random(self) -> bool {
        matches!(
            self,
            Pattern::RandRead | Pattern::RandWrite | Pattern::RandRw
        )
    }
}

/// The direction of one I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
}

/// Picks the next I/O of one worker. Random patterns draw uniformly over the blocks;
/// sequential ones share one cursor between all workers (so a queue depth above one
/// still walks the file in order) and wrap at the end.
pub(crate) struct OpGen {
    pattern: Pattern,
    read_pct: u8,
    bs: u64,
    blocks: u64,
    cursor: Arc<AtomicU64>,
    rng: SmallRng,
}

impl OpGen {
    /// A generator over `blocks` blocks of `bs` bytes; `seed` makes workers differ.
    pub(crate) fn new(
        pattern: Pattern,
        read_pct: u8,
        bs: u64,
        blocks: u64,
        cursor: Arc<AtomicU64>,
        seed: u64,
    ) -> OpGen {
        OpGen {
            pattern,
            read_pct,
            bs,
            blocks: blocks.max(1),
            cursor,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// The next I/O: its direction and byte offset.
    pub(crate) fn next_op(&mut self) -> (Op, u64) {
        let op = match self.pattern {
            Pattern::RandRead | Pattern::Read => Op::Read,
            Pattern::RandWrite | Pattern::Write => Op::Write,
            Pattern::RandRw => {
                if self.rng.random_range(0..100u8) < self.read_pct {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        };
        let block = if self.pattern.random() {
            self.rng.random_range(0..self.blocks)
        } else {
            self.cursor.fetch_add(1, Ordering::Relaxed) % self.blocks
        };
        (op, block * self.bs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen(pattern: Pattern, pct: u8) -> OpGen {
        OpGen::new(pattern, pct, 4096, 100, Arc::new(AtomicU64::new(0)), 7)
    }

    /// Random offsets are block-aligned and stay inside the region.
    #[test]
    fn random_offsets_aligned_and_in_range() {
        let mut g = gen(Pattern::RandRead, 100);
        for _ in 0..10_000 {
            let (op, off) = g.next_op();
            assert_eq!(op, Op::Read);
            assert_eq!(off % 4096, 0);
            assert!(off < 100 * 4096);
        }
    }

    /// randrw honours the mix roughly (70 % reads ± 3 %).
    #[test]
    fn mix_is_honoured() {
        let mut g = gen(Pattern::RandRw, 70);
        let reads = (0..10_000).filter(|_| g.next_op().0 == Op::Read).count();
        assert!((6_700..=7_300).contains(&reads), "{reads}");
        let mut g = gen(Pattern::RandRw, 0);
        assert!((0..1000).all(|_| g.next_op().0 == Op::Write));
    }

    /// Sequential patterns walk the blocks in order and wrap.
    #[test]
    fn sequential_walks_and_wraps() {
        let mut g = gen(Pattern::Write, 0);
        let offs: Vec<u64> = (0..102).map(|_| g.next_op().1).collect();
        assert_eq!(offs[0], 0);
        assert_eq!(offs[1], 4096);
        assert_eq!(offs[99], 99 * 4096);
        assert_eq!(offs[100], 0);
        assert!(Pattern::Write.writes() && !Pattern::Write.reads());
        assert!(Pattern::RandRw.writes() && Pattern::RandRw.reads());
    }
}
