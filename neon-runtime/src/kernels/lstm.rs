//! One step of an LSTM cell (PyTorch's `nn.LSTMCell`): the arch-neutral driver, written once
//! over the backends' own GEMV ([`GemmKernels::gemv_packed_b_in`]), sigmoid and tanh
//! ([`ActivationKernels::activate`]) and elementwise products and sums
//! ([`ElementwiseKernels`]). No backend has LSTM code of its own: the step is one GEMV of
//! `4 * hidden` outputs (nearly all of the work) and a few passes over `hidden` values.
//!
//! # Definition
//! PyTorch's `torch.nn.LSTMCell` documentation, gate order `i, f, g, o`:
//!
//! ```text
//! z = W [x; h] + b              W = [W_ih | W_hh]  [4H, In + H],  b = b_ih + b_hh  [4H]
//! i = sigmoid(z[0H..1H])        input gate
//! f = sigmoid(z[1H..2H])        forget gate
//! g = tanh(z[2H..3H])           cell candidate
//! o = sigmoid(z[3H..4H])        output gate
//! c' = f * c + i * g
//! h' = o * tanh(c')
//! ```
//!
//! # Memory
//! The state is one `[2, H]` buffer, updated in place: row 0 is the cell `c`, row 1 the
//! hidden state `h`. The scratch ([`LstmDims::scratch_len`], `In + 5H` values) holds the
//! GEMV operand `[x; h]` (`In + H`: the weights are one packed `[4H, In + H]` matrix, so
//! the product is a single GEMV streaming every weight once, and `h` is copied out of the
//! state before the state is overwritten) and the `4H` gate values.
//!
//! # Order of operations (every backend)
//! 1. `scratch[..In + H] = [x; h]`;
//! 2. `z = W [x; h] + b`: GEMV over the packed weights, the bias as the accumulators'
//!    initial value (one sum per output, the backend's GEMV order);
//! 3. sigmoid over `i` and `f` (one call over `2H`), tanh over `g`, sigmoid over `o`;
//! 4. `c = c * f`, `g = g * i`, `c = c + g` (three rounded operations, no fused
//!    multiply-add: the same bits on every backend given the same gates);
//! 5. `g = tanh(c)`, `h = o * g`.
//!
//! Backends differ only where their GEMV and activation kernels do (fused multiply-adds and
//! summation order; see [`gemm`](super::gemm) and [`activation`](super::activation)).

use super::activation::Activation;
use super::gemm::packed_b_len;
use super::parallel::Parallel;
use super::{ActivationKernels, ElementwiseKernels, GemmKernels};
use crate::error::Error;

/// The sizes of one LSTM cell step: `input` features in, `hidden` units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LstmDims {
    /// Input features `In` (`>= 1`).
    pub input: usize,
    /// Hidden units `H` (`>= 1`).
    pub hidden: usize,
}

impl LstmDims {
    /// Gate pre-activations per step, `4 * hidden` (`None` on overflow).
    pub const fn gates(&self) -> Option<usize> {
        self.hidden.checked_mul(4)
    }

    /// GEMV reduction length, `input + hidden` (`None` on overflow).
    pub const fn reduction(&self) -> Option<usize> {
        self.input.checked_add(self.hidden)
    }

    /// Elements of the weight `[4 * hidden, input + hidden]` (`None` on overflow).
    pub const fn weight_len(&self) -> Option<usize> {
        match (self.gates(), self.reduction()) {
            (Some(n), Some(k)) => n.checked_mul(k),
            _ => None,
        }
    }

    /// Elements of the packed weight ([`pack_b`](super::gemm::pack_b) of the
    /// `[4 * hidden, input + hidden]` weight; `None` on overflow).
    pub const fn packed_len(&self) -> Option<usize> {
        match (self.gates(), self.reduction()) {
            // The packed length rounds the rows up to a panel: check that product first.
            (Some(n), Some(k)) => match n.checked_add(super::gemm::PACK_NR) {
                Some(n16) if n16.checked_mul(k).is_some() => Some(packed_b_len(n, k)),
                _ => None,
            },
            _ => None,
        }
    }

    /// Scratch elements of one step: `input + 5 * hidden` (`[x; h]`, then the `4H` gates;
    /// `None` on overflow).
    pub const fn scratch_len(&self) -> Option<usize> {
        match (self.reduction(), self.gates()) {
            (Some(k), Some(n)) => k.checked_add(n),
            _ => None,
        }
    }
}

/// One LSTM cell step with backend `B` (see the [module docs](self)): reads `x` (`input`
/// values) and `state` (`[2, hidden]`: `c` then `h`), writes the new `c` and `h` into
/// `state`. `packed` is [`pack_b`](super::gemm::pack_b) of the `[4H, In + H]` weight,
/// `bias` `4H` values or `None`, `scratch` at least [`LstmDims::scratch_len`] values
/// (contents ignored, overwritten). The GEMV runs on `par` (blocks of output panels: the
/// same bits for any context); the rest runs on the calling thread.
///
/// # Errors
/// The context's ([`Parallel::dispatch`]); `state` is then unchanged (the GEMV writes only
/// scratch).
///
/// # Panics
/// When a length does not match `dims` (the operator [`LstmCell`] checks every length
/// first and returns an error instead), or `dims` has a zero size.
///
/// [`LstmCell`]: crate::ops::lstm::LstmCell
pub fn lstm_cell_in<B: GemmKernels + ActivationKernels + ElementwiseKernels>(
    par: &dyn Parallel,
    dims: LstmDims,
    (packed, bias): (&[f32], Option<&[f32]>),
    x: &[f32],
    state: &mut [f32],
    scratch: &mut [f32],
) -> Result<(), Error> {
    let (inp, h) = (dims.input, dims.hidden);
    assert!(inp >= 1 && h >= 1, "lstm_cell: zero input or hidden size");
    let (n, k, need) = match (dims.gates(), dims.reduction(), dims.scratch_len()) {
        (Some(n), Some(k), Some(s)) => (n, k, s),
        _ => panic!("lstm_cell: sizes overflow usize"),
    };
    assert_eq!(x.len(), inp, "lstm_cell: input length");
    assert_eq!(state.len(), 2 * h, "lstm_cell: state length is not 2 * hidden");
    assert!(scratch.len() >= need, "lstm_cell: scratch shorter than input + 5 * hidden");
    let (xh, rest) = scratch.split_at_mut(k);
    let z = &mut rest[..n];
    let (c, hs) = state.split_at_mut(h);

    // 1-2. z = W [x; h] + b.
    xh[..inp].copy_from_slice(x);
    xh[inp..].copy_from_slice(hs);
    B::gemv_packed_b_in(par, (n, k), xh, packed, bias, z)?;

    // 3. Gates.
    let (i_f, g_o) = z.split_at_mut(2 * h);
    let (g, o) = g_o.split_at_mut(h);
    B::activate(Activation::Sigmoid, i_f);
    B::activate(Activation::Tanh, g);
    B::activate(Activation::Sigmoid, o);
    let (i, f) = i_f.split_at(h);

    // 4. c' = f * c + i * g.
    B::mul_assign(c, f);
    B::mul_assign(g, i);
    B::add_assign(c, g);

    // 5. h' = o * tanh(c').
    B::activate_to(Activation::Tanh, c, g);
    B::mul(o, g, hs);
    Ok(())
}
