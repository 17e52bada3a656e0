//! Phase 4: emit straight-line Rust. One call per operator into the runtime, slices carved
//! from one workspace at the planner's constant offsets, run-time dims and tensor lengths
//! validated before the first kernel, no heap, no dynamic dispatch, no `unsafe`.

mod tokens;

use neon_runtime::ops::InPlace;
use neon_runtime::plan::MemoryPlan;
use neon_runtime::{Dim, Layout};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use crate::ir::{Checked, Home, Op, Role, Storage};
use crate::schedule::ELEM;
use crate::sym::SymDim;
use tokens::{geometry_tokens, layout_tokens, unit_tokens, weight_type};

/// Name of the local holding a value's run-time dims (the value's label, made unique by
/// its index, behind a `__` prefix that user names cannot take).
fn dims_ident(c: &Checked, v: usize) -> Ident {
    let label = c.values[v].label.replace('#', "_").replace('\'', "_next");
    format_ident!("__dims{}_{}", v, label)
}

fn dims_array(shape: &[SymDim]) -> TokenStream {
    let d: Vec<TokenStream> = shape
        .iter()
        .map(|d| {
            let e = d.to_tokens();
            if d.as_constant().is_some()
                || d.symbols().len() == 1 && d.to_string() == d.symbols()[0]
            {
                e
            } else {
                quote!((#e))
            }
        })
        .collect();
    quote!([#(#d),*])
}

/// The dims (by name) a shape mentions, in declaration order.
fn dims_used(c: &Checked, shape: &[SymDim]) -> Vec<Ident> {
    let syms: Vec<String> = shape.iter().flat_map(SymDim::symbols).collect();
    c.dims.iter().filter(|d| syms.contains(&d.name.to_string())).map(|d| d.name.clone()).collect()
}

pub fn emit(c: &Checked, mp: &MemoryPlan) -> TokenStream {
    let krate = c.krate.as_ref().map_or_else(|| quote!(::neon_runtime), |p| quote!(#p));
    let name = &c.name;
    let vis = &c.vis;
    let attrs = &c.attrs;
    // The weights struct: this plan's own, or another plan's (`weights = Path;`).
    let own_weights = format_ident!("{}Weights", name);
    let weights_name =
        c.shared_weights.as_ref().map_or_else(|| quote!(#own_weights), |p| quote!(#p));
    let ws_name = format_ident!("{}Workspace", name);
    let ws_floats = mp.workspace_bytes / ELEM;
    let ws_bytes = mp.workspace_bytes;
    let lb_bytes = mp.lower_bound_bytes;
    let n_steps = c.steps.len();

    // Weights struct: one prepared operator per main weight.
    let mut fields = Vec::new();
    let mut consts = Vec::new();
    let mut weight_checks = Vec::new();
    for s in &c.steps {
        let (Some(w), Some(ty), Some((geom, geom_ty))) =
            (s.weight, weight_type(&s.op, &krate), geometry_tokens(&s.op, &krate))
        else {
            continue;
        };
        let field = &c.weights[w].name;
        let cname = format_ident!("{}", field.to_string().to_uppercase());
        let doc = match c.weights[w].storage {
            Storage::Block(kind) => format!(
                " Geometry the prepared block `{field}` must have ({} declared `{kind}{:?}`).",
                s.callee, c.weights[w].shape
            ),
            _ => format!(
                " Geometry the prepared operator `{field}` must have ({} over weight shape {:?}{}).",
                s.callee,
                c.weights[w].shape,
                s.bias.map_or(String::new(), |b| format!(" with bias `{}`", c.weights[b].name))
            ),
        };
        let fdoc =
            format!(" `{}` ({}): build it with geometry [`{name}::{cname}`].", field, s.callee);
        let ty = if s.op.int8() { quote!(#ty<Q, S>) } else { quote!(#ty<S>) };
        fields.push(quote!(#[doc = #fdoc] pub #field: #ty,));
        consts.push(quote!(#[doc = #doc] pub const #cname: #geom_ty = #geom;));
        let fname = field.to_string();
        let has_bias = s.bias.is_some();
        let geom_check = quote!(weights.#field.geometry() != Self::#cname);
        let bias_check = match s.op {
            Op::Conv1d(_) | Op::DepthwiseConv1d(_) | Op::Conv2d(_) | Op::LstmCell(_)
                if has_bias =>
            {
                quote!(|| weights.#field.bias().is_none())
            }
            Op::Conv1d(_) | Op::DepthwiseConv1d(_) | Op::Conv2d(_) | Op::LstmCell(_) => {
                quote!(|| weights.#field.bias().is_some())
            }
            _ => quote!(),
        };
        weight_checks.push(quote! {
            if #geom_check #bias_check {
                return Err(#krate::Error::Weight { name: #fname });
            }
        });
    }

    // Weight storage type parameters: `S` for f32 data, `Q` for int8 data when used.
    let has_int8 = c.steps.iter().any(|s| s.op.int8());
    let (weight_params, weight_args) = if fields.is_empty() {
        // A plan without weights: a unit weights struct, no storage parameter.
        (quote!(), quote!())
    } else if has_int8 {
        (quote!(S: AsRef<[f32]>, Q: AsRef<[i8]>), quote!(S, Q))
    } else {
        (quote!(S: AsRef<[f32]>), quote!(S))
    };

    // Parameters.
    let tensor_params: Vec<TokenStream> = [Role::Input, Role::Output, Role::State]
        .iter()
        .flat_map(|role| {
            c.tensors.iter().filter(move |t| t.role == *role).map(|t| {
                let n = &t.name;
                if t.role == Role::Input {
                    quote!(#n: &[f32])
                } else {
                    quote!(#n: &mut [f32])
                }
            })
        })
        .collect();
    let dim_params: Vec<TokenStream> = c
        .dims
        .iter()
        .map(|d| {
            let n = &d.name;
            quote!(#n: usize)
        })
        .collect();
    let scalar_params: Vec<TokenStream> = c.scalars.iter().map(|s| quote!(#s: usize)).collect();

    // Length functions and validation.
    let mut len_fns = Vec::new();
    let mut len_checks = Vec::new();
    for t in &c.tensors {
        let f = format_ident!("{}_len", t.name);
        let used = dims_used(c, &t.shape);
        let numel = t
            .shape
            .iter()
            .map(|d| {
                let e = d.to_tokens();
                quote!((#e))
            })
            .reduce(|a, b| quote!(#a * #b));
        let role = match t.role {
            Role::Input => "input",
            Role::Output => "output",
            Role::State => "state",
        };
        let shape_doc: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
        let doc = format!(" Elements of {role} `{}`, shape `[{}]`.", t.name, shape_doc.join(", "));
        len_fns.push(quote! {
            #[doc = #doc]
            #[allow(clippy::identity_op, clippy::erasing_op, clippy::manual_div_ceil, unused_parens)]
            pub const fn #f(#(#used: usize),*) -> usize { #numel }
        });
        let n = &t.name;
        let what = format!("{role} `{}`", t.name);
        len_checks.push(quote! {
            if #n.len() != Self::#f(#(#used),*) {
                return Err(#krate::Error::Length { what: #what, expected: Self::#f(#(#used),*), got: #n.len() });
            }
        });
    }
    let dim_checks: Vec<TokenStream> = c.dims.iter().map(|d| {
        let n = &d.name;
        let (lo, hi) = (d.lo as usize, d.hi as usize);
        let s = n.to_string();
        quote! {
            if !(#lo..=#hi).contains(&#n) {
                return Err(#krate::Error::OutOfRange { name: #s, value: #n, min: #lo, max: #hi });
            }
        }
    }).collect();

    // Run-time dims of every tensor value, computed once after validation.
    let dim_lets: Vec<TokenStream> = c
        .values
        .iter()
        .enumerate()
        .filter(|(_, v)| v.home != Home::Scratch)
        .map(|(i, v)| {
            let id = dims_ident(c, i);
            let arr = dims_array(&v.shape);
            let r = v.shape.len();
            quote!(let #id: [usize; #r] = #arr;)
        })
        .collect();

    // Scalars that index into states (write_frames' `at`) are range-checked up front too.
    let scalar_checks: Vec<TokenStream> = c
        .steps
        .iter()
        .filter_map(|s| match &s.op {
            Op::WriteFrames(g, at) => {
                let axis = usize::from(g.layout == Layout::ChannelFirst);
                let cap = dims_ident(c, s.inputs[0]);
                let x = dims_ident(c, s.inputs[1]);
                let name = at.to_string();
                Some(quote! {
                    if #x[#axis] > #cap[#axis] || #at > #cap[#axis] - #x[#axis] {
                        return Err(#krate::Error::OutOfRange {
                            name: #name,
                            value: #at,
                            min: 0,
                            max: #cap[#axis].saturating_sub(#x[#axis]),
                        });
                    }
                })
            }
            Op::Rotary(_, Some(at)) => {
                // Frame-major input: frames on axis 0; positions up to MAX_POSITION.
                let x = dims_ident(c, s.inputs[0]);
                let name = at.to_string();
                Some(quote! {
                    {
                        let max = (#krate::kernels::rotary::MAX_POSITION + 1).saturating_sub(#x[0]);
                        if #at > max {
                            return Err(#krate::Error::OutOfRange { name: #name, value: #at, min: 0, max });
                        }
                    }
                })
            }
            Op::Attention(a, len) if len.is_some() || a.causal => {
                // 1 <= len <= kv frames; causal: q frames <= len.
                let q = dims_ident(c, s.inputs[0]);
                let k = dims_ident(c, s.inputs[1]);
                let (value, name) = match len {
                    Some(n) => (quote!(#n), n.to_string()),
                    None => (quote!(#k[0]), "len".to_string()),
                };
                let min = if a.causal { quote!(#q[0]) } else { quote!(1usize) };
                Some(quote! {
                    if #value < #min || #value > #k[0] {
                        return Err(#krate::Error::OutOfRange { name: #name, value: #value, min: #min, max: #k[0] });
                    }
                })
            }
            _ => None,
        })
        .collect();

    // Steps. `reads_options`: some emitted call passes `options` on.
    let mut body = Vec::new();
    let mut reads_options = false;
    for s in &c.steps {
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
        let view = |k: usize| {
            let e = &input_exprs[k];
            let dims = dims_ident(c, s.inputs[k]);
            let l = layout_tokens(&krate, in_layouts[k]);
            quote!(&#krate::TensorView::new(#e, &#dims, #l)?)
        };
        let out_layout_t = layout_tokens(&krate, out_layout);
        let out_view =
            quote!(&mut #krate::TensorViewMut::new(#out_expr, &#out_dims, #out_layout_t)?);
        let call = match &s.op {
            Op::Conv1d(_) | Op::Conv2d(_) | Op::ResidualConv(_) | Op::ConvNeXt(_) => {
                let f = &c.weights[s.weight.unwrap_or(0)].name;
                let x = view(0);
                let scr = scratch_expr.clone().unwrap_or_else(|| quote!(&mut []));
                reads_options = true;
                quote!(weights.#f.run_with::<B>(#x, #out_view, #scr, options)?;)
            }
            Op::MaxPool2d(_) => {
                let unit = unit_tokens(&s.op, &krate).unwrap_or_default();
                let x = view(0);
                quote!(#unit.run::<B>(#x, #out_view)?;)
            }
            Op::QuantLinear(_) => {
                let f = &c.weights[s.weight.unwrap_or(0)].name;
                let x = view(0);
                reads_options = true;
                quote!(weights.#f.run_with::<B>(#x, #out_view, options)?;)
            }
            Op::DepthwiseConv1d(_) | Op::Linear(_) | Op::BlockQ8Linear(_) => {
                let f = &c.weights[s.weight.unwrap_or(0)].name;
                let x = view(0);
                reads_options = true;
                quote!(weights.#f.run_with::<B>(#x, #out_view, options)?;)
            }
            Op::LayerNorm(_) | Op::RmsNorm(_) | Op::GroupNorm(_) => {
                let f = &c.weights[s.weight.unwrap_or(0)].name;
                let x = view(0);
                reads_options = true;
                quote!(weights.#f.run_with::<B>(#x, #out_view, options)?;)
            }
            Op::Transpose(t) => {
                let to = layout_tokens(&krate, t.to);
                let x = view(0);
                quote!(#krate::ops::layout::Transpose { to: #to }.run::<B>(#x, #out_view)?;)
            }
            Op::ConcatFrames(g) => {
                let l = layout_tokens(&krate, g.layout);
                let (a, b) = (view(0), view(1));
                quote!(#krate::ops::sequence::ConcatFrames { layout: #l }.run(#a, #b, #out_view)?;)
            }
            Op::LastFrames(g) => {
                let l = layout_tokens(&krate, g.layout);
                let fr = g.frames;
                let x = view(0);
                quote!(#krate::ops::sequence::LastFrames { frames: #fr, layout: #l }.run(#x, #out_view)?;)
            }
            Op::ReflectPad(_) => {
                let unit = unit_tokens(&s.op, &krate).unwrap_or_default();
                let x = view(0);
                quote!(#unit.run(#x, #out_view)?;)
            }
            Op::ComplexMagnitude(_) => {
                let unit = unit_tokens(&s.op, &krate).unwrap_or_default();
                let x = view(0);
                quote!(#unit.run::<B>(#x, #out_view)?;)
            }
            Op::StftMagnitude(_) => {
                let f = &c.weights[s.weight.unwrap_or(0)].name;
                let x = view(0);
                let scr = scratch_expr.clone().unwrap_or_else(|| quote!(&mut []));
                quote!(weights.#f.run::<B>(#x, #out_view, #scr)?;)
            }
            Op::WriteFrames(g, at) => {
                let l = layout_tokens(&krate, g.layout);
                let x = view(1);
                quote!(#krate::ops::sequence::WriteFrames { layout: #l }.run(#out_view, #x, #at)?;)
            }
            Op::LstmCell(_) => {
                // The state is the output view (updated in place); `x` is input 1.
                let f = &c.weights[s.weight.unwrap_or(0)].name;
                let x = view(1);
                let scr = scratch_expr.clone().unwrap_or_else(|| quote!(&mut []));
                reads_options = true;
                quote!(weights.#f.run_with::<B>(#out_view, #x, #scr, options)?;)
            }
            Op::Act(_) => {
                reads_options = true;
                let unit = unit_tokens(&s.op, &krate).unwrap_or_default();
                if in_place {
                    quote!(#unit.run_in_place_with::<B>(#out_view, options)?;)
                } else {
                    let x = view(0);
                    quote!(#unit.run_with::<B>(#x, #out_view, options)?;)
                }
            }
            Op::Add(_) | Op::Mul(_) => {
                let unit = unit_tokens(&s.op, &krate).unwrap_or_default();
                let rest: Vec<TokenStream> = (1..s.inputs.len()).map(view).collect();
                reads_options = true;
                if in_place {
                    quote!(#unit.run_in_place_with::<B>(#out_view #(, #rest)*, options)?;)
                } else {
                    let x = view(0);
                    quote!(#unit.run_with::<B>(#x #(, #rest)*, #out_view, options)?;)
                }
            }
            Op::Softmax(_) => {
                let unit = unit_tokens(&s.op, &krate).unwrap_or_default();
                let rest: Vec<TokenStream> = (1..s.inputs.len()).map(view).collect();
                if in_place {
                    quote!(#unit.run_in_place::<B>(#out_view #(, #rest)*)?;)
                } else {
                    let x = view(0);
                    quote!(#unit.run::<B>(#x #(, #rest)*, #out_view)?;)
                }
            }
            Op::Rotary(_, at) => {
                let geom = unit_tokens(&s.op, &krate).unwrap_or_default();
                let at = at.as_ref().map_or_else(|| quote!(0), |a| quote!(#a));
                let rope = quote!(#krate::ops::rotary::Rotary);
                reads_options = true;
                if in_place {
                    quote! {
                        const ROTARY: #rope = #rope::new(#geom);
                        ROTARY.run_in_place_with::<B>(#out_view, #at, options)?;
                    }
                } else {
                    let x = view(0);
                    quote! {
                        const ROTARY: #rope = #rope::new(#geom);
                        ROTARY.run_with::<B>(#x, #out_view, #at, options)?;
                    }
                }
            }
            Op::Attention(_, len) => {
                let unit = unit_tokens(&s.op, &krate).unwrap_or_default();
                let (q, k, v) = (view(0), view(1), view(2));
                let kd = dims_ident(c, s.inputs[1]);
                let len = len.as_ref().map_or_else(|| quote!(#kd[0]), |n| quote!(#n));
                reads_options = true;
                quote!(#unit.run_with::<B>((#q, #k, #v), #out_view, #len, options)?;)
            }
            Op::PerChannel(_) => {
                let f = &c.weights[s.weight.unwrap_or(0)].name;
                if in_place {
                    quote!(weights.#f.run_in_place::<B>(#out_view)?;)
                } else {
                    let x = view(0);
                    quote!(weights.#f.run::<B>(#x, #out_view)?;)
                }
            }
        };
        body.push(quote! {
            {
                #carve
                #call
            }
        });
    }

    // Memory map.
    let regions: Vec<TokenStream> = c
        .values
        .iter()
        .enumerate()
        .map(|(v, val)| {
            let label = &val.label;
            let p = mp.placements[v];
            let off = match p.offset {
                Some(o) => quote!(Some(#o)),
                None => quote!(None),
            };
            let bytes = val.max_elems * ELEM;
            let (first, last) = (p.first, p.last);
            quote!(#krate::workspace::MemoryRegion { name: #label, offset: #off, bytes: #bytes, first_step: #first, last_step: #last })
        })
        .collect();

    let ws_doc = format!(
        " Workspace of [`{name}`]: {ws_bytes} bytes, 16-byte aligned; `const`-constructible, so it can live in a `static` or on the stack."
    );
    let weights_doc = if has_int8 {
        format!(
            " Prepared operators of [`{name}`]; `S` is their f32 storage, `Q` their int8 storage."
        )
    } else {
        format!(" Prepared operators of [`{name}`]; `S` is their weight storage.")
    };
    let run_doc = format!(
        " Runs the plan with backend `B` and the default options: [`{name}::run_with`] with `RunOptions::new()`."
    );
    let run_with_doc = format!(
        " Runs the plan with backend `B` and `options` (the int8 path of `i8` linear layers; the execution context, e.g. a worker team, of linear, conv and attention steps: the same bits for any context). Validates the dims against their bounds, every tensor's length and every weight's geometry before the first kernel; returns the first violation as an error and leaves the workspace reusable. Steps: {n_steps}."
    );
    // The team size bound: `workers N;`, else any.
    let (max_workers, workers_check) = match c.workers {
        Some(n) => (
            quote!(#n),
            quote! {
                let workers = options.parallel().workers();
                if workers > #n {
                    return Err(#krate::Error::OutOfRange { name: "workers", value: workers, min: 1, max: #n });
                }
            },
        ),
        None => (quote!(usize::MAX), quote!()),
    };
    let max_workers_doc = match c.workers {
        Some(n) => format!(" The largest execution context `run_with` accepts (`workers {n};`): a larger team is `Error::OutOfRange` named `workers`, before any kernel runs. The workspace has no per-worker part: its size is the same for any team."),
        None => " No `workers` bound was declared: any execution context. The workspace has no per-worker part: its size is the same for any team.".to_string(),
    };
    // Plans without an operator that reads an option take it for a uniform signature.
    let options = if reads_options || c.workers.is_some() {
        format_ident!("options")
    } else {
        format_ident!("_options")
    };
    let tensor_args: Vec<&Ident> = [Role::Input, Role::Output, Role::State]
        .iter()
        .flat_map(|role| c.tensors.iter().filter(move |t| t.role == *role).map(|t| &t.name))
        .collect();
    let dim_args: Vec<&Ident> = c.dims.iter().map(|d| &d.name).collect();
    let scalar_args: Vec<&Ident> = c.scalars.iter().collect();
    let weights_struct = if c.shared_weights.is_some() {
        quote!()
    } else {
        quote! {
            #[doc = #weights_doc]
            #vis struct #own_weights<#weight_params> {
                #(#fields)*
            }
        }
    };
    quote! {
        #(#attrs)*
        #vis struct #name;

        #weights_struct

        #[doc = #ws_doc]
        #[repr(C, align(16))]
        #vis struct #ws_name(pub [f32; #ws_floats]);

        impl #ws_name {
            /// A zeroed workspace.
            pub const fn new() -> Self {
                Self([0.0; #ws_floats])
            }
        }

        impl ::core::default::Default for #ws_name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl #name {
            /// Workspace size in bytes (at the upper bound of every dim).
            pub const WORKSPACE_BYTES: usize = #ws_bytes;
            #[doc = #max_workers_doc]
            pub const MAX_WORKERS: usize = #max_workers;
            /// Lower bound in bytes: the largest total of simultaneously live intermediates.
            pub const LOWER_BOUND_BYTES: usize = #lb_bytes;
            /// Operator calls in the plan.
            pub const STEPS: usize = #n_steps;
            /// Every value: workspace offset (None for caller-owned tensors), size, and live steps.
            pub const MEMORY_MAP: &'static [#krate::workspace::MemoryRegion] = &[#(#regions),*];
            #(#consts)*
            #(#len_fns)*

            #[doc = #run_doc]
            #[allow(clippy::too_many_arguments)]
            pub fn run<B: #krate::Backend, #weight_params>(
                weights: &#weights_name<#weight_args>,
                #(#tensor_params,)*
                #(#dim_params,)*
                #(#scalar_params,)*
                workspace: &mut #ws_name,
            ) -> ::core::result::Result<(), #krate::Error> {
                Self::run_with::<B, #weight_args>(
                    weights,
                    #(#tensor_args,)*
                    #(#dim_args,)*
                    #(#scalar_args,)*
                    workspace,
                    #krate::RunOptions::new(),
                )
            }

            #[doc = #run_with_doc]
            #[allow(
                clippy::too_many_arguments,
                clippy::identity_op,
                clippy::erasing_op,
                clippy::manual_div_ceil,
                clippy::possible_missing_comma,
                unused_parens,
                unused_mut
            )]
            pub fn run_with<B: #krate::Backend, #weight_params>(
                weights: &#weights_name<#weight_args>,
                #(#tensor_params,)*
                #(#dim_params,)*
                #(#scalar_params,)*
                workspace: &mut #ws_name,
                #options: #krate::RunOptions<'_>,
            ) -> ::core::result::Result<(), #krate::Error> {
                #workers_check
                #(#dim_checks)*
                #(#len_checks)*
                #(#weight_checks)*
                #(#dim_lets)*
                #(#scalar_checks)*
                #(#body)*
                Ok(())
            }
        }
    }
}
