//! The declaration checks: dims, weights, caller-owned tensors and scalars.

use std::rc::Rc;

use syn::Ident;

use neon_runtime::Dim;

use super::shapes::{max_elems, MAX_ELEMS};
use super::{Binding, Checker};
use crate::ir::{BlockKind, DimInfo, Home, Role, Storage, TensorInfo, Value, WeightInfo};
use crate::suggest;
use crate::sym::Bounds;

impl Checker<'_> {
    /// Rule: a name is declared once, and never one the generated code uses itself
    /// (`weights`, `workspace`, anything starting with `__`).
    fn declare(&mut self, id: &Ident) {
        let n = id.to_string();
        if n == "weights" || n == "workspace" || n.starts_with("__") {
            self.cx.error(
                id.span(),
                format!("`{id}` is reserved by the generated code; choose another name"),
            );
        }
        if self.names.insert(n, id.span()).is_some() {
            self.cx.error(id.span(), format!("`{id}` is declared twice"));
        }
    }

    /// Rule: a dim has a bounded, non-empty range of sizes >= 1 (the workspace is sized
    /// for its upper bound). A dim that breaks the rule is reported once and stays
    /// resolvable (clamped: an unbounded one at its lower bound) so its uses report
    /// nothing more.
    pub(super) fn declare_dims(&mut self) {
        let mut bounds = Bounds::new();
        for d in &self.plan.dims {
            self.declare(&d.name);
            let Some((hi, _)) = d.hi else {
                self.cx.error(
                    d.name.span(),
                    format!("symbolic dim `{}` needs an upper bound (`{} in {}..=N`): the workspace is sized for it", d.name, d.name, d.lo.0),
                );
                let lo = d.lo.0.max(1);
                bounds.insert(d.name.to_string(), (lo, lo));
                self.dims.push(DimInfo { name: d.name.clone(), lo, hi: lo });
                continue;
            };
            // A reported range is declared clamped to sizes >= 1 and to its lower bound.
            if d.lo.0 < 1 {
                self.cx.error(d.lo.1, format!("dim `{}` must be at least 1", d.name));
            } else if hi < d.lo.0 {
                self.cx.error(d.name.span(), format!("dim `{}` has an empty range", d.name));
            }
            let lo = d.lo.0.max(1);
            let hi = hi.max(lo);
            bounds.insert(d.name.to_string(), (lo, hi));
            self.dims.push(DimInfo { name: d.name.clone(), lo, hi });
        }
        self.bounds = Rc::new(bounds);
    }

    /// Rule: a weight has a known storage (f32, i8, i8_block32) or is a block's
    /// (residual_conv, convnext), and a constant shape; a block lists the sizes its
    /// declaration takes.
    pub(super) fn declare_weights(&mut self) {
        for w in &self.plan.weights {
            self.declare(&w.name);
            let storage = match w.storage.to_string().as_str() {
                "f32" => Storage::F32,
                "i8" => Storage::I8,
                "i8_block32" => Storage::I8Block32,
                other => match BlockKind::from_name(other) {
                    Some(kind) => Storage::Block(kind),
                    None => {
                        let dym = suggest::did_you_mean(
                            other,
                            &["f32", "i8", "i8_block32", "residual_conv", "convnext"],
                        );
                        let msg = format!(
                            "unknown weight storage `{other}`{dym} (storages: f32, i8 (per-tensor scale and offset), i8_block32 (32 weights per scale), or a block: residual_conv, convnext)"
                        );
                        self.cx.error(w.storage.span(), msg);
                        self.bind.insert(w.name.to_string(), Binding::Poisoned);
                        continue;
                    }
                },
            };
            let Some(shape) = self.shape_exprs(&w.shape, w.shape_span) else { continue };
            let Some(shape) = shape.iter().map(|d| d.as_constant()).collect::<Option<Vec<_>>>()
            else {
                let msg = format!("weight `{}` must have a constant shape", w.name);
                self.cx.error(w.shape_span, msg);
                continue;
            };
            if let Storage::Block(kind) = storage {
                if !kind.takes_sizes(shape.len()) {
                    let msg = format!(
                        "a {} block is declared {}, `{}` lists {} sizes",
                        kind.name(),
                        kind.form(),
                        w.name,
                        shape.len()
                    );
                    self.cx.error(w.shape_span, msg);
                    self.bind.insert(w.name.to_string(), Binding::Poisoned);
                    continue;
                }
            }
            self.bind.insert(w.name.to_string(), Binding::Weight(self.weights.len()));
            self.weights.push(WeightInfo {
                name: w.name.clone(),
                storage,
                shape,
                decl: w.shape_span,
                used: None,
            });
        }
    }

    /// Rule: a caller's tensor has a valid shape of at most 2^40 elements at the dims'
    /// bounds. Inputs and states are values from the start; an output becomes one when a
    /// statement writes it.
    pub(super) fn declare_tensors(&mut self) {
        for t in &self.plan.tensors {
            self.declare(&t.name);
            let Some(shape) = self.shape_exprs(&t.shape, t.shape_span) else {
                self.bind.insert(t.name.to_string(), Binding::Poisoned);
                continue;
            };
            if max_elems(&shape) > MAX_ELEMS {
                self.cx.error(
                    t.shape_span,
                    format!(
                        "`{}` can hold more than 2^40 elements; lower the dims' bounds",
                        t.name
                    ),
                );
                self.bind.insert(t.name.to_string(), Binding::Poisoned);
                continue;
            }
            let ti = self.tensors.len();
            let info = TensorInfo {
                role: t.role,
                name: t.name.clone(),
                shape: shape.clone(),
                written: false,
            };
            self.tensors.push(info);
            if t.role == Role::Output {
                self.bind.insert(t.name.to_string(), Binding::Unwritten(ti));
            } else {
                self.values.push(Value {
                    label: t.name.to_string(),
                    name: t.name.to_string(),
                    span: t.name.span(),
                    max_elems: max_elems(&shape),
                    shape,
                    home: Home::Tensor(ti),
                });
                self.bind.insert(t.name.to_string(), Binding::Value(self.values.len() - 1));
            }
        }
    }

    /// Rule: scalars are declared names like any other.
    pub(super) fn declare_scalars(&mut self) {
        for s in &self.plan.scalars {
            self.declare(s);
            self.bind.insert(s.to_string(), Binding::Scalar);
        }
    }
}
