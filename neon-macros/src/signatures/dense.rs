//! Resolving the dense layers (`linear` over f32, i8 or i8_block32 weights, and
//! `lstm_cell`) into their geometry.

use neon_runtime::ops::linear::LinearGeometry;
use neon_runtime::ops::lstm::LstmCellGeometry;
use neon_runtime::ops::quant::{BlockQ8LinearGeometry, QuantLinearGeometry};
use neon_runtime::Layout;

use super::{bias_len, weight_rank, TensorArg, WeightArg};
use super::{Call, Resolved};
use crate::ir::{Op, Storage};
use crate::options::Options;

/// The dense layers: `linear` (f32, i8 or i8_block32 weights) and `lstm_cell`.
pub(super) fn resolve(call: Call, opts: &mut Options) -> Resolved {
    let Call { op, w, b, tensors, .. } = call;
    Ok(Some(match op {
        "linear" => {
            let w = weight_rank(op, w, 2, "a weight [out_features, in_features]")?;
            let bias = bias_len(op, b, w.shape[0], "a bias")?;
            let (in_features, out_features) = (w.shape[1], w.shape[0]);
            match w.storage {
                Storage::F32 => Op::Linear(LinearGeometry { in_features, out_features, bias }),
                Storage::I8 => {
                    Op::QuantLinear(QuantLinearGeometry { in_features, out_features, bias })
                }
                Storage::I8Block32 => {
                    if in_features % 32 != 0 {
                        return Err(syn::Error::new(
                            w.name.span(),
                            format!("i8_block32 weights need in_features divisible by 32, `{}` has {in_features}", w.name),
                        ));
                    }
                    Op::BlockQ8Linear(BlockQ8LinearGeometry { in_features, out_features, bias })
                }
                Storage::Block(_) => unreachable!("block weights go to their block (rule above)"),
            }
        }
        "lstm_cell" => {
            let w = w.expect("signature has a weight");
            let g = lstm_cell(w, tensors, opts.layout("layout", Layout::ChannelFirst))?;
            bias_len(op, b, g.gates(), "a bias (b_ih + b_hh)")?;
            Op::LstmCell(g)
        }
        _ => unreachable!("dispatched by operator group"),
    }))
}

/// The geometry of `lstm_cell(s, x, w[, b])`. Rule: the weight is `[4 * hidden, input +
/// hidden]` for the hidden size of the state and the input size of `x` (the runtime's
/// `LstmCellGeometry::for_shapes`); a weight of another shape is reported on the weight,
/// naming the shape it needs and both tensors'. When the tensors give no geometry
/// (another rank, symbolic sizes) it comes from the weight, and the shape rule then
/// reports what is wrong with the tensors.
fn lstm_cell(
    w: &WeightArg,
    tensors: &[TensorArg],
    layout: Layout,
) -> Result<LstmCellGeometry, syn::Error> {
    let form = "a weight [4 * hidden, input + hidden] ([W_ih | W_hh], gates i, f, g, o)";
    weight_rank("lstm_cell", Some(w), 2, form)?;
    let (rows, cols) = (w.shape[0], w.shape[1]);
    let from_tensors = match tensors {
        [s, x] => LstmCellGeometry::for_shapes(layout, s.shape, x.shape).map(|g| (g, s, x)),
        _ => None,
    };
    if let Some((g, s, x)) = from_tensors {
        if g.weight_shape() == [rows, cols] {
            return Ok(g);
        }
        return Err(syn::Error::new(
            w.name.span(),
            format!(
                "lstm_cell expects a weight of shape {:?} ([4 * hidden, input + hidden] for state `{}` {} and input `{}` {}), `{}` has shape {:?}",
                g.weight_shape(),
                s.name,
                s.shape_text(),
                x.name,
                x.shape_text(),
                w.name,
                w.shape
            ),
        ));
    }
    let hidden = rows / 4;
    if rows % 4 != 0 || hidden == 0 || cols <= hidden {
        return Err(syn::Error::new(
            w.name.span(),
            format!("lstm_cell expects {form}, `{}` has shape {:?}", w.name, w.shape),
        ));
    }
    Ok(LstmCellGeometry::new(cols - hidden, hidden).layout(layout))
}
