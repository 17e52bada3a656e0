//! One step of the run: the workspace slices it carves (reads, its output, its scratch)
//! and the operator call, dispatched by operator group as the resolver groups them.

use neon_runtime::ops::InPlace;
use neon_runtime::plan::MemoryPlan;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::operands::Step;
use super::tokens::layout_tokens;
use super::{blocks, conv, dense, dims_ident, norm, pointwise, sequence};
use crate::ir::{Checked, Home, Op, StepInfo};
use crate::schedule::ELEM;

/// Every step in order, and whether some emitted call passes `options` on.
pub(super) fn steps(c: &Checked, mp: &MemoryPlan, krate: &TokenStream) -> (Vec<TokenStream>, bool) {
    let mut body = Vec::new();
    let mut reads_options = false;
    for s in &c.steps {
        let (step, reads) = step(c, mp, krate, s);
        body.push(step);
        reads_options |= reads;
    }
    (body, reads_options)
}

/// One step: its carve of the workspace, then its call.
fn step(c: &Checked, mp: &MemoryPlan, krate: &TokenStream, s: &StepInfo) -> (TokenStream, bool) {
    let (in_layouts, out_layout) = s.op.layouts(s.inputs.len());
    let out = &c.values[s.output];
    let aliased = mp.placements[s.output].aliases.is_some()
        && mp.placements[s.output].aliases
            == Some(mp.placements[s.inputs[0]].aliases.unwrap_or(s.inputs[0]));
    let state_in_place = s.op.in_place() == InPlace::Always
        || matches!((c.values[s.inputs[0]].home, out.home), (Home::Tensor(a), Home::Tensor(b)) if a == b);
    let in_place = aliased || state_in_place;

    let mut reads = Vec::new(); // (offset, len) of workspace reads
    let mut read_names = Vec::new();
    let mut writes = Vec::new();
    let mut write_names = Vec::new();
    let mut input_exprs = Vec::new();
    for (k, &v) in s.inputs.iter().enumerate() {
        let val = &c.values[v];
        let dims = dims_ident(c, v);
        let len = quote!(#dims.iter().product::<usize>());
        if k == 0 && in_place {
            input_exprs.push(quote!());
            continue;
        }
        match val.home {
            Home::Tensor(t) => {
                let n = &c.tensors[t].name;
                input_exprs.push(quote!(&#n[..]));
            }
            _ => {
                let off = mp.placements[v].offset.unwrap_or(0) / ELEM;
                let id = format_ident!("__in{}", k);
                reads.push(quote!((#off, #len)));
                read_names.push(id.clone());
                input_exprs.push(quote!(#id));
            }
        }
    }
    let out_dims = dims_ident(c, s.output);
    let out_len = quote!(#out_dims.iter().product::<usize>());
    let out_expr = match out.home {
        Home::Tensor(t) => {
            let n = &c.tensors[t].name;
            quote!(&mut #n[..])
        }
        _ => {
            let off = mp.placements[s.output].offset.unwrap_or(0) / ELEM;
            writes.push(quote!((#off, #out_len)));
            write_names.push(format_ident!("__out"));
            quote!(__out)
        }
    };
    let scratch_expr = s.scratch.map(|v| {
        let off = mp.placements[v].offset.unwrap_or(0) / ELEM;
        let len = c.values[v].max_elems;
        writes.push(quote!((#off, #len)));
        write_names.push(format_ident!("__scratch"));
        quote!(__scratch)
    });
    let carve = if reads.is_empty() && writes.is_empty() {
        quote!()
    } else {
        quote! {
            let ([#(#read_names),*], [#(#write_names),*]) =
                #krate::workspace::carve(&mut workspace.0[..], [#(#reads),*], [#(#writes),*])?;
        }
    };
    let out_layout_t = layout_tokens(krate, out_layout);
    let out_view = quote!(&mut #krate::TensorViewMut::new(#out_expr, &#out_dims, #out_layout_t)?);
    let step = Step { c, s, krate, in_place, in_layouts, input_exprs, scratch_expr, out_view };
    let (call, reads_options) = call(&step);
    let tokens = quote! {
        {
            #carve
            #call
        }
    };
    (tokens, reads_options)
}

/// The call of a step's operator, by operator group; and whether it passes `options` on.
fn call(st: &Step) -> (TokenStream, bool) {
    match &st.s.op {
        Op::Conv1d(_)
        | Op::DepthwiseConv1d(_)
        | Op::Conv2d(_)
        | Op::MaxPool2d(_)
        | Op::Pool1d(_)
        | Op::GlobalPool(_) => conv::call(st),
        Op::Linear(_) | Op::QuantLinear(_) | Op::BlockQ8Linear(_) | Op::LstmCell(_) => {
            dense::call(st)
        }
        Op::LayerNorm(_) | Op::RmsNorm(_) | Op::GroupNorm(_) | Op::PerChannel(_) => norm::call(st),
        Op::Act(_) | Op::Add(_) | Op::Mul(_) | Op::Softmax(_) | Op::ComplexMagnitude(_) => {
            pointwise::call(st)
        }
        Op::ScaleShift(_) => pointwise::call(st),
        Op::Reshape(_) => sequence::call(st),
        Op::Transpose(_)
        | Op::ConcatFrames(_)
        | Op::LastFrames(_)
        | Op::WriteFrames(..)
        | Op::ReflectPad(_)
        | Op::Rotary(..)
        | Op::Attention(..) => sequence::call(st),
        Op::ResidualConv(_) | Op::ConvNeXt(_) | Op::StftMagnitude(_) => blocks::call(st),
    }
}
