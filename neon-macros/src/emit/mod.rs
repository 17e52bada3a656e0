//! Phase 4: emit straight-line Rust. One call per operator into the runtime, slices carved
//! from one workspace at the planner's constant offsets, run-time dims and tensor lengths
//! validated before the first kernel, no heap, no dynamic dispatch, no `unsafe`.
//!
//! [`emit`] assembles the generated items from one function per part: the weights struct
//! ([`weights`]), run-time validation ([`validate`]), the steps ([`step`]: carve, then one
//! call per operator, by group: [`conv`], [`dense`], [`norm`], [`pointwise`],
//! [`sequence`], [`blocks`]), the memory map and the docs.

mod blocks;
mod conv;
mod dense;
mod norm;
mod operands;
mod pointwise;
mod sequence;
mod step;
mod tokens;
mod validate;
mod weights;

use neon_runtime::plan::MemoryPlan;
use neon_runtime::Dim;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use crate::ir::{Checked, Role};
use crate::schedule::ELEM;
use crate::sym::SymDim;

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
    let weights::Weights {
        strukt: weights_struct,
        consts,
        checks: weight_checks,
        params: weight_params,
        args: weight_args,
    } = weights::weights(c, &krate);
    let (tensor_params, dim_params, scalar_params) = params(c);
    let (len_fns, len_checks) = validate::lengths(c, &krate);
    let dim_checks = validate::dim_checks(c, &krate);
    let dim_lets = validate::dim_lets(c);
    let scalar_checks = validate::scalar_checks(c, &krate);
    let (body, reads_options) = step::steps(c, mp, &krate);
    let regions = memory_map(c, mp, &krate);
    let Docs { ws: ws_doc, run: run_doc, run_with: run_with_doc, max_workers: max_workers_doc } =
        Docs::new(c, ws_bytes);
    let (max_workers, workers_check) = workers(c, &krate);
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
    let workspace_struct = workspace_struct(c, &ws_name, ws_floats, &ws_doc);
    quote! {
        #(#attrs)*
        #vis struct #name;

        #weights_struct

        #workspace_struct

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
                <B as #krate::BackendType>::KIND.availability().map_err(#krate::Error::Backend)?;
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

/// The parameters of `run`: the caller's tensors (inputs, outputs, states), the dims and
/// the scalars.
fn params(c: &Checked) -> (Vec<TokenStream>, Vec<TokenStream>, Vec<TokenStream>) {
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
    (tensor_params, dim_params, scalar_params)
}

/// `MEMORY_MAP`: every value's region.
fn memory_map(c: &Checked, mp: &MemoryPlan, krate: &TokenStream) -> Vec<TokenStream> {
    c
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
        .collect()
}

/// The generated items' docs.
struct Docs {
    ws: String,
    run: String,
    run_with: String,
    max_workers: String,
}

impl Docs {
    fn new(c: &Checked, ws_bytes: usize) -> Self {
        let name = &c.name;
        let n_steps = c.steps.len();
        let ws_doc = format!(
        " Workspace of [`{name}`]: {ws_bytes} bytes, 16-byte aligned; `const`-constructible, so it can live in a `static` or on the stack."
    );
        let run_doc = format!(
        " Runs the plan with backend `B` and the default options: [`{name}::run_with`] with `RunOptions::new()`."
    );
        let run_with_doc = format!(
        " Runs the plan with backend `B` and `options` (the int8 path of `i8` linear layers; the execution context, e.g. a worker team, of linear, conv and attention steps: the same bits for any context). Before the first kernel it checks that `B` can run here (`Error::Backend` otherwise, e.g. `X86<Avx2>` in a build without feature `std` and without the AVX2 and FMA target features), then validates the dims against their bounds, every tensor's length and every weight's geometry; returns the first violation as an error and leaves the workspace reusable. Steps: {n_steps}."
    );
        let max_workers_doc = match c.workers {
        Some(n) => format!(" The largest execution context `run_with` accepts (`workers {n};`): a larger team is `Error::OutOfRange` named `workers`, before any kernel runs. The workspace has no per-worker part: its size is the same for any team."),
        None => " No `workers` bound was declared: any execution context. The workspace has no per-worker part: its size is the same for any team.".to_string(),
    };
        Docs { ws: ws_doc, run: run_doc, run_with: run_with_doc, max_workers: max_workers_doc }
    }
}

/// The team size bound: `workers N;`, else any. `MAX_WORKERS`, and its check.
fn workers(c: &Checked, krate: &TokenStream) -> (TokenStream, TokenStream) {
    match c.workers {
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
    }
}

/// The workspace struct: `[f32; ws_floats]`, 16-byte aligned, `const`-constructible.
fn workspace_struct(c: &Checked, ws_name: &Ident, ws_floats: usize, ws_doc: &str) -> TokenStream {
    let vis = &c.vis;
    quote! {
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
    }
}
