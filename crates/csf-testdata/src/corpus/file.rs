//! Building files: [`Cases`] collects the corpus, [`File`] is a descriptor
//! and its buffers before encoding, with the edits the cases make to them.

use hurray_format::{BufferEntry, BufferTable, Descriptor, DeviceTag, ElementType};

use super::elements::values_bytes;
use super::{Case, Expect, STRUCTURAL_RULES};
use crate::CsfArrays;

pub(super) struct Cases(pub(super) Vec<Case>);

impl Cases {
    pub(super) fn push(
        &mut self,
        name: &'static str,
        expect: Expect,
        description: &'static str,
        bytes: Vec<u8>,
    ) {
        assert!(
            !description.contains(['\t', '\n'])
                && !name.contains(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')),
            "case {name}: bad name or description"
        );
        assert!(self.0.iter().all(|c| c.name != name), "case {name} is defined twice");
        self.0.push(Case { name, description, bytes, expect, warnings: &[] });
    }

    pub(super) fn valid(&mut self, name: &'static str, description: &'static str, file: &File) {
        self.push(name, Expect::Valid, description, file.encode());
    }

    pub(super) fn strict(
        &mut self,
        name: &'static str,
        rule: &'static str,
        description: &'static str,
        file: &File,
    ) {
        let permissive_ok = !STRUCTURAL_RULES.contains(&rule);
        self.push(name, Expect::Strict { rule, permissive_ok }, description, file.encode());
    }

    pub(super) fn decode(
        &mut self,
        name: &'static str,
        variant: &'static str,
        description: &'static str,
        bytes: Vec<u8>,
    ) {
        self.push(name, Expect::Decode(variant), description, bytes);
    }
}

pub(super) const HOST: DeviceTag = DeviceTag::HOST;
pub(super) const CUDA: DeviceTag = DeviceTag::CUDA;

/// A descriptor and its buffers, before encoding. The buffer table's rows are
/// made from `buffers` at encoding time (the encoder computes offsets and
/// lengths; only the device tags are ours).
#[derive(Clone, Debug)]
pub(super) struct File {
    pub(super) desc: Descriptor,
    pub(super) buffers: Vec<(Vec<u8>, DeviceTag)>,
}

pub(super) fn le(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

pub(super) fn pos_buffer(level: usize) -> usize {
    hurray_format::csf::pos_buffer(level)
}

pub(super) fn crd_buffer(level: usize) -> usize {
    hurray_format::csf::crd_buffer(level)
}

impl File {
    pub(super) fn new(
        ty: ElementType,
        shape: &[u64],
        mode_order: &[u32],
        nnz: u64,
        levels: &[(Vec<u64>, Vec<u64>)],
        values: Vec<u8>,
    ) -> Self {
        let desc = Descriptor::csf_unchecked(ty, shape, mode_order, nnz).expect("rank <= 64");
        let mut buffers = vec![(values, HOST)];
        for (pos, crd) in levels {
            buffers.push((le(pos), HOST));
            buffers.push((le(crd), HOST));
        }
        Self { desc, buffers }
    }

    /// The tree `reference_csf` builds, values encoded as `ty`.
    pub(super) fn from_arrays(a: &CsfArrays, ty: ElementType) -> Self {
        Self::new(ty, &a.shape, &a.mode_order, a.nnz() as u64, &a.levels, values_bytes(ty, &a.values))
    }

    pub(super) fn encode(&self) -> Vec<u8> {
        let mut d = self.desc;
        d.buffers = BufferTable::new();
        for (_, tag) in &self.buffers {
            d.buffers
                .push(BufferEntry { offset: 0, length: 0, device_tag: *tag })
                .expect("at most 137 buffers");
        }
        let slices: Vec<&[u8]> = self.buffers.iter().map(|(b, _)| b.as_slice()).collect();
        hurray_format::encode_to_vec(&d, &slices).expect("the corpus encodes")
    }

    pub(super) fn words(&self, buffer: usize) -> Vec<u64> {
        self.buffers[buffer]
            .0
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect()
    }

    pub(super) fn set_words(&mut self, buffer: usize, words: &[u64]) {
        self.buffers[buffer].0 = le(words);
    }

    /// Checks that buffer `buffer` holds `was`, then replaces it with `now`:
    /// each hand-made breakage states the array it starts from.
    pub(super) fn replace(mut self, buffer: usize, was: &[u64], now: &[u64]) -> Self {
        assert_eq!(self.words(buffer), was, "buffer {buffer} is not what the breakage expects");
        self.set_words(buffer, now);
        self
    }

    pub(super) fn with(mut self, f: impl FnOnce(&mut Self)) -> Self {
        f(&mut self);
        self
    }

    /// `shape[mode_order[level]]`.
    pub(super) fn extent(&self, level: usize) -> u64 {
        self.desc.shape[self.desc.mode_order[level] as usize]
    }

    /// The node ranges of the parents of `level`, from `pos_level`.
    pub(super) fn slices(&self, level: usize) -> Vec<(usize, usize)> {
        let pos = self.words(pos_buffer(level));
        pos.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect()
    }

    /// Swaps the first two children of the first parent at `level` with two
    /// or more: breaks invariant 4 and nothing else.
    pub(super) fn swap_siblings(mut self, level: usize) -> Self {
        let (start, _) =
            *self.slices(level).iter().find(|(s, e)| e - s >= 2).expect("a parent with two children");
        let mut crd = self.words(crd_buffer(level));
        crd.swap(start, start + 1);
        self.set_words(crd_buffer(level), &crd);
        self
    }

    /// Sets the last child of the first non-empty parent at `level` to the
    /// level's bound: still sorted, but breaks invariant 5.
    pub(super) fn past_bound(mut self, level: usize) -> Self {
        let (_, end) = *self.slices(level).iter().find(|(s, e)| e > s).expect("a non-empty parent");
        let mut crd = self.words(crd_buffer(level));
        crd[end - 1] = self.extent(level);
        self.set_words(crd_buffer(level), &crd);
        self
    }

    /// Sets `pos_level[0]` to 1 (the first parent must have a child, so that
    /// `pos` stays non-decreasing): breaks invariant 1 and nothing else.
    pub(super) fn pos_start(mut self, level: usize) -> Self {
        let mut pos = self.words(pos_buffer(level));
        assert!(pos[0] == 0 && pos[1] >= 1, "the first parent of level {level} has a child");
        pos[0] = 1;
        self.set_words(pos_buffer(level), &pos);
        self
    }

    /// Lowers the terminal `pos_level` entry by one (the last parent must have
    /// a child): breaks invariant 3 and nothing else.
    pub(super) fn short_terminal(mut self, level: usize) -> Self {
        let mut pos = self.words(pos_buffer(level));
        let n = pos.len();
        assert!(pos[n - 1] > pos[n - 2], "the last parent of level {level} has a child");
        pos[n - 1] -= 1;
        self.set_words(pos_buffer(level), &pos);
        self
    }

    /// Appends a copy of the terminal `pos_level` entry: one entry too many,
    /// every invariant still holds.
    pub(super) fn extra_pos_entry(mut self, level: usize) -> Self {
        let mut pos = self.words(pos_buffer(level));
        pos.push(*pos.last().expect("pos is not empty"));
        self.set_words(pos_buffer(level), &pos);
        self
    }
}
