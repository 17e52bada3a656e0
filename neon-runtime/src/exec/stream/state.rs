//! The caller's side of a stream plan: the state variables ([`StreamState`]) and the
//! workspace ([`StreamScratch`]). The plan itself stays immutable, so one
//! `Arc<StreamPlan>` serves any number of streams, each with its own state and scratch.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use super::elem::words_bytes;
use crate::error::Error;

/// The state variables of one stream of a [`StreamPlan`](super::StreamPlan), made by
/// [`StreamPlan::state`](super::StreamPlan::state): every variable's bytes at its 16-byte
/// aligned offset in one buffer, and the plan's initial values (shared by `Arc`, one copy
/// for all the plan's states) for [`reset`](Self::reset).
#[derive(Clone, Debug)]
pub struct StreamState {
    /// The plan that made it.
    pub(super) plan: u32,
    /// The variables' current values.
    pub(super) words: Vec<u128>,
    /// Their initial values, as laid out in `words`.
    pub(super) init: Arc<[u128]>,
}

impl StreamState {
    /// A state at the initial values `init`.
    pub(super) fn new(plan: u32, init: Arc<[u128]>) -> Self {
        StreamState { plan, words: init.to_vec(), init }
    }

    /// Puts every variable back to its initial value (one copy, no allocation).
    pub fn reset(&mut self) {
        self.words.copy_from_slice(&self.init);
    }

    /// Bytes of all variables (each padded to 16 bytes).
    pub fn bytes(&self) -> usize {
        core::mem::size_of_val(&self.words[..])
    }

    /// The variables' bytes, read-only.
    pub(super) fn as_bytes(&self) -> &[u8] {
        words_bytes(&self.words)
    }

    /// Checks that this state belongs to plan `plan`.
    pub(super) fn check(&self, plan: u32) -> Result<(), Error> {
        if self.plan == plan {
            Ok(())
        } else {
            Err(Error::Plan { reason: "the stream state belongs to another plan" })
        }
    }
}

/// The workspace of one stream of a [`StreamPlan`](super::StreamPlan) (16-byte aligned,
/// [`StreamPlan::workspace_bytes`](super::StreamPlan::workspace_bytes) long), made by
/// [`StreamPlan::scratch`](super::StreamPlan::scratch). It holds nothing between runs but
/// the last output; a scratch may serve several plans if it is large enough for each.
#[derive(Clone, Debug, Default)]
pub struct StreamScratch {
    words: Vec<u128>,
}

impl StreamScratch {
    /// A zeroed workspace of at least `bytes` bytes.
    pub fn new(bytes: usize) -> Self {
        StreamScratch { words: vec![0; bytes.div_ceil(16)] }
    }

    /// Its size in bytes.
    pub fn bytes(&self) -> usize {
        core::mem::size_of_val(&self.words[..])
    }

    /// Its words, writable, after checking that they hold `len` bytes.
    ///
    /// # Errors
    /// [`Error::Length`] when the workspace is shorter.
    pub(super) fn words(&mut self, len: usize) -> Result<&mut [u128], Error> {
        let got = self.bytes();
        if got < len {
            return Err(Error::Length { what: "stream plan workspace", expected: len, got });
        }
        Ok(&mut self.words)
    }
}
