//! The speech-embedding CNN computed incrementally: each 80 ms chunk computes only the
//! rows of every layer that its 8 new mel frames add, instead of the whole 76-frame window.
//!
//! # Why it is exact
//! Along time (the image rows) the CNN ([`embedding`](super::embedding)) has only "valid"
//! convs (kernel height 3 or 1, stride 1, no padding along time) and 2-row pools, so a row
//! of any layer depends only on the mel frames of its receptive field, never on where the
//! window starts; and consecutive windows are 8 frames apart, a multiple of the three 2x
//! pools' total stride, so the pools pair the same rows in every window. The window of
//! chunk `n + 1` therefore shares all but its newest rows with the window of chunk `n` at
//! every layer: 8 rows at the input, halving after each 2x2 pool (8, 4, 2, 1).
//!
//! [`EmbeddingStep`] is one step: the 10 newest mel rows (2 of context for the first
//! conv's 3 taps, 8 new) in, the embedding out, and for every conv whose kernel spans 3
//! rows the 2 rows before the new ones as a `state` (`concat_frames` prepends them,
//! `last_frames` keeps the last 2 for the next step). It runs the same 20 convs and 5
//! pools as the whole-window plan (both plans are written by `embedding_plan!` from one
//! layer table), on the same prepared operators ([`EmbeddingNetWeights`], shared through
//! `weights = EmbeddingNetWeights;`), on 8, 4, 2 and 1 rows per level.
//!
//! [`IncrementalEmbedding`] is the stream's [`EmbeddingStage`](super::stream::EmbeddingStage):
//! for a window whose first 68 frames are the previous window's last 68 (checked, bit for bit),
//! one step; for any other window (the first one, after a reset, after an error) it *primes*:
//! 10 steps through the window itself, ending 4, 12, .., 76 frames into it, from zero state.
//! Every row a step computes at a position inside the window then depends only on the window's
//! frames (the zeros feed only rows before its start, which no later row inside the window
//! reads), so the primed embedding is the whole-window one, and every later embedding too. So
//! the stage is exact for any sequence of windows; it is fast for the stream's.
//!
//! # Same bits as the whole-window plan
//! Each output value of a conv is one dot product over its taps, accumulated in the same
//! order whatever the image height, and the pools and copies are exact; so the embeddings
//! are bitwise those of [`Embedding`](super::embedding::Embedding) on every backend
//! (`models/tests/oww_incremental.rs` checks it over long random streams, on the host and
//! under qemu with NEON).
//!
//! # Cost
//! A step is 5,612,544 multiply-adds, against the whole-window plan's 41,955,840 (7.5x
//! fewer: per level 8, 4, 2 and 1 new rows instead of up to 74, 36, 14 and 3). Priming is 10
//! steps, about 1.6 whole windows. Instruction counts: BENCHMARKS.md ("the incremental
//! embedding").
//!
//! # Memory
//! All mutable memory is one [`IncrementalWorkspace`] ([`IncrementalWorkspace::BYTES`]:
//! the step plan's workspace, the states and the previous window's last 68 frames),
//! `const`-constructible so it can be a `static` on bare metal.

use core::borrow::BorrowMut;
use core::marker::PhantomData;

use neon_runtime::{Backend, RunOptions};

use super::embedding::{embedding_plan, EmbeddingNetWeights};
use super::stream::{embedding_stage, EMBEDDING_DIM, EMBEDDING_WINDOW, FRAMES_PER_CHUNK, MEL_BINS};
use crate::error::Error;

embedding_plan! {
    step,
    /// One step of the streaming embedding: the newest 10 mel rows `[1, 10, 32]` (2 of
    /// context, 8 new) and the rows kept from the previous step (the states) → the
    /// embedding `[96, 1, 1]` of the window ending at the newest row, and the states for
    /// the next step. Runs on the whole-window plan's weights. The states, `s2`, `s4`, ..,
    /// `s18`, `s19` in this order, come from the layer table of `embedding_plan!`.
    pub plan EmbeddingStep {
        weights = EmbeddingNetWeights;
        input x: [1, 10, 32];
        output y: [96, 1, 1];
    }
}

/// Mel rows one step reads: 2 of context and the [`FRAMES_PER_CHUNK`] new ones.
pub const STEP_ROWS: usize = FRAMES_PER_CHUNK + 2;
/// Steps of a priming pass (the window's end and the 9 points 8 frames apart before it
/// whose first step still ends inside the window: 4, 12, .., 76 frames into it).
pub const PRIMING_STEPS: usize = EMBEDDING_WINDOW.div_ceil(FRAMES_PER_CHUNK);
/// Frames two consecutive windows share.
const SHARED: usize = EMBEDDING_WINDOW - FRAMES_PER_CHUNK;

/// Values of every state of [`EmbeddingStep`] (`s2`, `s4`, .., `s18`, `s19`), in
/// declaration order: `channels x 2 rows x width`.
const STATE_LENS: [usize; 10] = [
    24 * 2 * 32,
    48 * 2 * 16,
    48 * 2 * 16,
    72 * 2 * 8,
    72 * 2 * 8,
    96 * 2 * 4,
    96 * 2 * 4,
    96 * 2 * 2,
    96 * 2 * 2,
    96 * 2,
];
const STATE_TOTAL: usize = {
    let mut total = 0;
    let mut i = 0;
    while i < STATE_LENS.len() {
        total += STATE_LENS[i];
        i += 1;
    }
    total
};

/// All mutable memory of an [`IncrementalEmbedding`]: the step plan's workspace, its
/// states, and the previous window's last 68 frames (to recognise a consecutive window).
/// `const`-constructible (a `static` on bare metal); on hosts, [`boxed_workspace`].
#[repr(C)]
pub struct IncrementalWorkspace {
    plan: EmbeddingStepWorkspace,
    states: [f32; STATE_TOTAL],
    previous: [f32; SHARED * MEL_BINS],
    /// Whether `states` and `previous` belong to the last window embedded.
    primed: bool,
}

impl IncrementalWorkspace {
    /// Bytes of the workspace (plan workspace, states, previous frames, flag).
    pub const BYTES: usize = core::mem::size_of::<Self>();

    /// A workspace that primes on its first window.
    pub const fn new() -> Self {
        Self {
            plan: EmbeddingStepWorkspace::new(),
            states: [0.0; STATE_TOTAL],
            previous: [0.0; SHARED * MEL_BINS],
            primed: false,
        }
    }

    /// One [`EmbeddingStep`] over the 10 newest mel rows `x` (`[10, 32]`), writing the
    /// embedding (`[96]`) to `y` and advancing the states, without the window check of
    /// [`IncrementalEmbedding`] (the embedding is exact only when the states belong to the
    /// window ending 8 frames earlier).
    ///
    /// # Errors
    /// The plan's: wrong lengths of `x` or `y`, weights of another geometry, the context's.
    pub fn step<B: Backend, S: AsRef<[f32]>>(
        &mut self,
        weights: &EmbeddingNetWeights<S>,
        x: &[f32],
        y: &mut [f32],
        options: RunOptions<'_>,
    ) -> Result<(), Error> {
        let rest = &mut self.states[..];
        let (s2, rest) = rest.split_at_mut(STATE_LENS[0]);
        let (s4, rest) = rest.split_at_mut(STATE_LENS[1]);
        let (s6, rest) = rest.split_at_mut(STATE_LENS[2]);
        let (s8, rest) = rest.split_at_mut(STATE_LENS[3]);
        let (s10, rest) = rest.split_at_mut(STATE_LENS[4]);
        let (s12, rest) = rest.split_at_mut(STATE_LENS[5]);
        let (s14, rest) = rest.split_at_mut(STATE_LENS[6]);
        let (s16, rest) = rest.split_at_mut(STATE_LENS[7]);
        let (s18, s19) = rest.split_at_mut(STATE_LENS[8]);
        EmbeddingStep::run_with::<B, S>(
            weights,
            x,
            y,
            s2,
            s4,
            s6,
            s8,
            s10,
            s12,
            s14,
            s16,
            s18,
            s19,
            &mut self.plan,
            options,
        )?;
        Ok(())
    }

    /// The embedding `[96]` of `window` (`[76, 32]` mel frames) into `out`: one step when
    /// it follows the previous window, else a priming pass (module docs), over `weights`
    /// (held once, e.g. shared among detectors). On error the next window primes.
    ///
    /// # Errors
    /// [`Error::Input`] for a window of another length; the plan's errors (wrong `out`
    /// length, weights of another geometry, the context's).
    pub fn embed<B: Backend, S: AsRef<[f32]>>(
        &mut self,
        weights: &EmbeddingNetWeights<S>,
        window: &[f32],
        out: &mut [f32],
        options: RunOptions<'_>,
    ) -> Result<(), Error> {
        if window.len() != EMBEDDING_WINDOW * MEL_BINS {
            return Err(Error::Input {
                what: "embedding window",
                expected: "76 x 32 values",
                got: window.len(),
            });
        }
        // Bit for bit (`==` would take -0.0 for 0.0, and the states for another input).
        let shared = &window[..SHARED * MEL_BINS];
        let follows = self.primed
            && shared.iter().zip(&self.previous).all(|(a, b)| a.to_bits() == b.to_bits());
        self.primed = false;
        if !follows {
            self.states.fill(0.0);
            // Steps ending 4, 12, .., 68 frames into the window; the first reads 6 rows
            // before it, as zeros.
            let mut first = [0.0f32; STEP_ROWS * MEL_BINS];
            let end0 = EMBEDDING_WINDOW - FRAMES_PER_CHUNK * (PRIMING_STEPS - 1);
            first[(STEP_ROWS - end0) * MEL_BINS..].copy_from_slice(&window[..end0 * MEL_BINS]);
            let mut scratch = [0.0f32; EMBEDDING_DIM];
            self.step::<B, S>(weights, &first, &mut scratch, options)?;
            for s in 1..PRIMING_STEPS - 1 {
                let end = end0 + FRAMES_PER_CHUNK * s;
                let x = &window[(end - STEP_ROWS) * MEL_BINS..end * MEL_BINS];
                self.step::<B, S>(weights, x, &mut scratch, options)?;
            }
        }
        let x = &window[(EMBEDDING_WINDOW - STEP_ROWS) * MEL_BINS..];
        self.step::<B, S>(weights, x, out, options)?;
        self.previous.copy_from_slice(&window[FRAMES_PER_CHUNK * MEL_BINS..]);
        self.primed = true;
        Ok(())
    }
}

impl Default for IncrementalWorkspace {
    fn default() -> Self {
        Self::new()
    }
}

/// The speech-embedding CNN as the stream's [`EmbeddingStage`](super::stream::EmbeddingStage),
/// computed incrementally (module docs): the whole-window plan's prepared weights, an
/// [`IncrementalWorkspace`] and the backend `B`. Bitwise the embeddings of
/// [`Embedding`](super::embedding::Embedding).
///
/// `W` owns or borrows the workspace: a `Box` on hosts ([`boxed_workspace`]), a
/// `&'static mut` from a `static` on bare metal.
pub struct IncrementalEmbedding<B, S: AsRef<[f32]>, W> {
    weights: EmbeddingNetWeights<S>,
    workspace: W,
    backend: PhantomData<B>,
}

impl<B: Backend, S: AsRef<[f32]>, W: BorrowMut<IncrementalWorkspace>>
    IncrementalEmbedding<B, S, W>
{
    /// The network with its weights and workspace (which primes on the first window).
    pub fn new(weights: EmbeddingNetWeights<S>, mut workspace: W) -> Self {
        workspace.borrow_mut().primed = false;
        Self { weights, workspace, backend: PhantomData }
    }

    /// Forgets the previous window: the next one primes (the stream's reset does not need
    /// this; the window check finds a non-consecutive window by itself).
    pub fn restart(&mut self) {
        self.workspace.borrow_mut().primed = false;
    }
}

embedding_stage!(
    [B: Backend, S: AsRef<[f32]>, W: BorrowMut<IncrementalWorkspace>] IncrementalEmbedding<B, S, W>,
    |this, window, out, options| {
        this.workspace.borrow_mut().embed::<B, S>(&this.weights, window, out, options)
    }
);

/// A zeroed [`IncrementalWorkspace`] on the heap, without building it on the stack first.
#[cfg(feature = "alloc")]
pub fn boxed_workspace() -> alloc::boxed::Box<IncrementalWorkspace> {
    // SAFETY: the workspace holds f32 arrays and a bool; all-zero bytes are valid values
    // of them (0.0 and `false`: the workspace primes on its first window).
    unsafe { neon_runtime::workspace::boxed_zeroed() }
}
