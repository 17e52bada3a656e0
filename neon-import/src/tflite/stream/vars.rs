//! Resource variables: the init subgraph that `CALL_ONCE` runs (`VAR_HANDLE` and
//! `ASSIGN_VARIABLE` of constants), and `main`'s handles, reads and writes.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::{at, opts, shape_str, DType, Reader, StreamOp, VarSpec};
use crate::tflite::{code, options, type_name, Operator, Subgraph, RESOURCE};

/// The variables met so far in `main`.
#[derive(Default)]
pub(super) struct Vars {
    /// The variables the init subgraph assigns, in its order.
    pub(super) specs: Vec<VarSpec>,
    /// Whether `CALL_ONCE` ran.
    initialised: bool,
    /// (resource tensor of `main`, variable) for each `VAR_HANDLE`.
    handles: Vec<(usize, usize)>,
    /// Whether each variable was assigned earlier in this step.
    assigned: Vec<bool>,
}

impl Vars {
    /// `CALL_ONCE`: once, with an init subgraph that assigns constants.
    pub(super) fn call_once(
        &mut self,
        r: &Reader<'_, '_>,
        op: &Operator<'_>,
    ) -> Result<(), String> {
        if self.initialised {
            return Err("a second CALL_ONCE".into());
        }
        // Slot: init_subgraph_index 0.
        let sg = opts(op, options::CALL_ONCE)?.map_or(Ok(0), |t| t.i32(0, 0))?;
        self.specs = r.init(sg)?;
        self.assigned = vec![false; self.specs.len()];
        self.initialised = true;
        Ok(())
    }

    /// `VAR_HANDLE`: a resource tensor naming a variable the init subgraph assigned.
    pub(super) fn handle(&mut self, r: &Reader<'_, '_>, op: &Operator<'_>) -> Result<(), String> {
        let [h] = op.outputs[..] else { return Err("not 1 output".into()) };
        let key = var_key(op)?;
        let var = self
            .specs
            .iter()
            .position(|v| (v.container.as_str(), v.shared_name.as_str()) == key)
            .ok_or_else(|| {
                format!("variable `{}` is not initialised by CALL_ONCE", crate::onnx::short(key.1))
            })?;
        r.resource(r.main, h)?;
        self.handles.push((h as usize, var));
        Ok(())
    }

    /// `READ_VARIABLE` / `ASSIGN_VARIABLE` of a handle: the variable's type, shape and
    /// quantisation; no read after the assign of the same variable.
    pub(super) fn access(
        &mut self,
        r: &Reader<'_, '_>,
        op: &Operator<'_>,
    ) -> Result<StreamOp, String> {
        let read = op.code == code::READ_VARIABLE;
        let (&h, &v) = match (read, &op.inputs[..], &op.outputs[..]) {
            (true, [h], [v]) | (false, [h, v], []) => (h, v),
            _ => return Err("unexpected inputs or outputs".into()),
        };
        let var = self
            .handles
            .iter()
            .find(|&&(t, _)| i64::from(h) == t as i64)
            .map(|&(_, v)| v)
            .ok_or_else(|| format!("tensor {h} is not a VAR_HANDLE"))?;
        let spec = r.spec(v)?;
        let vs = &self.specs[var];
        if spec.dtype != vs.dtype || spec.shape != vs.shape || spec.quant != vs.quant {
            return Err(format!(
                "tensor {v} ({:?} {}) is not typed, shaped and quantised as variable `{}` ({:?} {})",
                spec.dtype,
                shape_str(&spec.shape),
                vs.shared_name,
                vs.dtype,
                shape_str(&vs.shape)
            ));
        }
        if !read {
            self.assigned[var] = true;
            return Ok(StreamOp::AssignVariable { var, value: spec });
        }
        if self.assigned[var] {
            return Err(format!(
                "reads variable `{}` after its ASSIGN_VARIABLE in the same step",
                vs.shared_name
            ));
        }
        Ok(StreamOp::ReadVariable { var, output: spec })
    }
}

impl<'m, 'a> Reader<'m, 'a> {
    /// Checks that tensor `t` of `sg` is a resource handle.
    fn resource(&self, sg: &Subgraph<'a>, t: i32) -> Result<(), String> {
        let tensor = usize::try_from(t).ok().and_then(|t| sg.tensors.get(t));
        match tensor {
            Some(tensor) if tensor.dtype == RESOURCE => Ok(()),
            Some(tensor) => {
                Err(format!("tensor {t} is {}, not a resource", type_name(tensor.dtype)))
            }
            None => Err(format!("no tensor {t}")),
        }
    }

    /// Runs the init subgraph `sg` symbolically: each VAR_HANDLE names a variable, each
    /// ASSIGN_VARIABLE gives it a constant.
    fn init(&self, sg: i32) -> Result<Vec<VarSpec>, String> {
        let index = usize::try_from(sg)
            .ok()
            .filter(|&s| s > 0 && s < self.model.subgraphs.len())
            .ok_or_else(|| format!("init subgraph {sg} does not exist"))?;
        let sub = &self.model.subgraphs[index];
        let mut vars: Vec<VarSpec> = Vec::new();
        for (k, op) in sub.ops.iter().enumerate() {
            let here = at("init", k, op);
            match op.code {
                code::VAR_HANDLE => {
                    let [h] = op.outputs[..] else { return Err(here("not 1 output".into())) };
                    self.resource(sub, h).map_err(&here)?;
                    var_key(op).map_err(&here)?;
                }
                code::ASSIGN_VARIABLE => {
                    let [h, v] = op.inputs[..] else { return Err(here("not 2 inputs".into())) };
                    let producer = sub
                        .ops
                        .iter()
                        .take(k)
                        .find(|o| o.code == code::VAR_HANDLE && o.outputs[..] == [h])
                        .ok_or_else(|| here(format!("tensor {h} is not a VAR_HANDLE")))?;
                    let (container, shared_name) = var_key(producer).map_err(&here)?;
                    if vars.iter().any(|v| v.container == container && v.shared_name == shared_name)
                    {
                        return Err(here(format!("variable `{shared_name}` assigned twice")));
                    }
                    let spec = self.spec_in(sub, v).map_err(&here)?;
                    if !matches!(spec.dtype, DType::I8 | DType::F32) {
                        return Err(here(format!("variable `{shared_name}` is {:?}", spec.dtype)));
                    }
                    let init = self.constant(sub, &spec, "the value").map_err(&here)?.to_vec();
                    vars.push(VarSpec {
                        container: container.into(),
                        shared_name: shared_name.into(),
                        dtype: spec.dtype,
                        shape: spec.shape,
                        quant: spec.quant,
                        init,
                    });
                }
                _ => return Err(here(
                    "the init subgraph may hold only VAR_HANDLE and ASSIGN_VARIABLE of constants"
                        .into(),
                )),
            }
        }
        Ok(vars)
    }
}

/// A VAR_HANDLE's (container, shared_name) (VarHandleOptions slots 0 and 1).
fn var_key<'a>(op: &Operator<'a>) -> Result<(&'a str, &'a str), String> {
    let o = opts(op, options::VAR_HANDLE)?.ok_or("no variable name")?;
    let container = o.string(0)?.unwrap_or("");
    let name = o.string(1)?.unwrap_or("");
    Ok((container, name))
}
