//! The per-operator rules of `main`: operand types, constants, options (slots of
//! `schema.fbs`) and the output shape inferred again and compared with the file's.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::{
    activation, axis, opts, same_shape, same_type, shape_str, want, Conv2d, DType, Filter,
    FullyConnected, FusedActivation, Padding, Reader, StreamOp, TensorSpec,
};
use crate::tflite::{ints, options, Operator};

/// Output length of a convolution along one dimension (TFLite `ComputeOutSize`).
fn conv_out(len: usize, k: usize, stride: usize, dilation: usize, p: Padding) -> Option<usize> {
    let eff = k.checked_sub(1)?.checked_mul(dilation)?.checked_add(1)?;
    match p {
        Padding::Same => Some(len.div_ceil(stride)),
        Padding::Valid => Some((len.checked_add(1)?.checked_sub(eff)?).div_ceil(stride)),
    }
}

impl<'m, 'a> Reader<'m, 'a> {
    /// Weights `t` (int8, zero points 0) with one scale per output channel along `axis`,
    /// and bias `b` (int32 `[channels]`).
    fn filter(&self, t: i32, b: i32, axis: usize) -> Result<Filter, String> {
        let spec = self.spec(t)?;
        want(&spec, &[DType::I8], "the weights")?;
        let data = self.constant(self.main, &spec, "the weights")?;
        let channels = *spec.shape.get(axis).ok_or("the weights have too few dimensions")?;
        let q = spec.quant.as_ref().ok_or("the weights are not quantised")?;
        if q.zero_point.iter().any(|&z| z != 0) {
            return Err("the weights have a zero point other than 0".into());
        }
        let scales = match q.scale.len() {
            1 => vec![q.scale[0]; channels],
            n if n == channels && usize::try_from(q.axis).ok() == Some(axis) => q.scale.clone(),
            n => {
                return Err(format!(
                    "the weights have {n} scales on axis {} (1, or {channels} on axis {axis})",
                    q.axis
                ))
            }
        };
        let bias_spec = self.spec(b).map_err(|m| format!("the bias: {m}"))?;
        want(&bias_spec, &[DType::I32], "the bias")?;
        same_shape(&bias_spec, &[channels], "the bias")?;
        let bias = self.const_i32s(b, "the bias")?;
        let weights = data.iter().map(|&v| v as i8).collect();
        Ok(Filter { spec, weights, scales, bias, bias_spec })
    }

    pub(super) fn conv(&self, op: &Operator<'a>, depthwise: bool) -> Result<Conv2d, String> {
        let [x, w, b] = op.inputs[..] else { return Err("not 3 inputs".into()) };
        let [y] = op.outputs[..] else { return Err("not 1 output".into()) };
        let (input, output) =
            (self.activation_spec(x, "the input")?, self.activation_spec(y, "the output")?);
        want(&input, &[DType::I8], "the input")?;
        want(&output, &[DType::I8], "the output")?;
        let kind = if depthwise { options::DEPTHWISE_CONV_2D } else { options::CONV_2D };
        // Slots (schema.fbs): padding 0, stride_w 1, stride_h 2, then conv: activation 3,
        // dilation_w 4, dilation_h 5; depthwise: depth_multiplier 3, activation 4,
        // dilation_w 5, dilation_h 6.
        let o = opts(op, kind)?;
        let get = |slot: usize, default: i32| o.map_or(Ok(default), |t| t.i32(slot, default));
        let get_u8 = |slot: usize| o.map_or(Ok(0), |t| t.u8(slot, 0));
        let padding = match get_u8(0)? {
            0 => Padding::Same,
            1 => Padding::Valid,
            p => return Err(format!("padding {p} is not SAME or VALID")),
        };
        let d = usize::from(depthwise);
        let pos = |v: i32, name: &str| {
            usize::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| format!("{name} {v}"))
        };
        let stride = [pos(get(2, 0)?, "stride")?, pos(get(1, 0)?, "stride")?];
        let dilation = [pos(get(5 + d, 1)?, "dilation")?, pos(get(4 + d, 1)?, "dilation")?];
        let activation = activation(get_u8(3 + d)?)?;
        let depth_multiplier = if depthwise { pos(get(3, 1)?, "depth multiplier")? } else { 1 };
        let &[1, h, wd, c_in] = &input.shape[..] else {
            return Err(format!(
                "the input has shape {} (not [1, H, W, C])",
                shape_str(&input.shape)
            ));
        };
        let filter = self.filter(w, b, if depthwise { 3 } else { 0 })?;
        let &[k0, kh, kw, k3] = &filter.spec.shape[..] else {
            return Err("the weights are not 4-D".into());
        };
        let c_out = if depthwise {
            if k0 != 1 || c_in.checked_mul(depth_multiplier) != Some(k3) {
                return Err(format!(
                    "weights {} for {c_in} channels × depth multiplier {depth_multiplier}",
                    shape_str(&filter.spec.shape)
                ));
            }
            k3
        } else {
            if k3 != c_in {
                return Err(format!(
                    "weights {} for {c_in} input channels",
                    shape_str(&filter.spec.shape)
                ));
            }
            k0
        };
        let oh = conv_out(h, kh, stride[0], dilation[0], padding);
        let ow = conv_out(wd, kw, stride[1], dilation[1], padding);
        let (Some(oh), Some(ow)) = (oh, ow) else {
            return Err("the kernel is larger than the input".into());
        };
        same_shape(&output, &[1, oh, ow, c_out], "the output")?;
        Ok(Conv2d {
            input,
            filter,
            output,
            padding,
            stride,
            dilation,
            depth_multiplier,
            activation,
        })
    }

    pub(super) fn fully_connected(&self, op: &Operator<'a>) -> Result<FullyConnected, String> {
        let (x, w, b) = match op.inputs[..] {
            [x, w, b] => (x, w, b),
            _ => return Err("not 3 inputs (input, weights, bias)".into()),
        };
        let [y] = op.outputs[..] else { return Err("not 1 output".into()) };
        let (input, output) =
            (self.activation_spec(x, "the input")?, self.activation_spec(y, "the output")?);
        want(&input, &[DType::I8], "the input")?;
        want(&output, &[DType::I8], "the output")?;
        // Slots: activation 0, weights_format 1, keep_num_dims 2.
        let o = opts(op, options::FULLY_CONNECTED)?;
        let get = |slot: usize| o.map_or(Ok(0), |t| t.u8(slot, 0));
        let activation = activation(get(0)?)?;
        if get(1)? != 0 {
            return Err("shuffled weights are not supported".into());
        }
        let keep = get(2)? != 0;
        let filter = self.filter(w, b, 0)?;
        let &[units, k] = &filter.spec.shape[..] else {
            return Err("the weights are not [units, K]".into());
        };
        if filter.spec.quant.as_ref().is_some_and(|q| q.scale.len() != 1) {
            return Err("the weights are not quantised per tensor".into());
        }
        let inferred = match input.shape.split_last() {
            Some((&last, lead)) if keep && last == k => [lead, &[units]].concat(),
            _ if !keep && k > 0 && input.len() % k == 0 => vec![input.len() / k, units],
            _ => {
                return Err(format!("input {} does not hold rows of {k}", shape_str(&input.shape)))
            }
        };
        same_shape(&output, &inferred, "the output")?;
        Ok(FullyConnected { input, filter, output, activation })
    }

    pub(super) fn strided_slice(&self, op: &Operator<'a>) -> Result<StreamOp, String> {
        let [x, b, e, s] = op.inputs[..] else { return Err("not 4 inputs".into()) };
        let [y] = op.outputs[..] else { return Err("not 1 output".into()) };
        let (input, output) = (self.spec(x)?, self.spec(y)?);
        same_type(&input, &output)?;
        let rank = input.shape.len();
        let (begin, end, strides) = (
            self.const_i32s(b, "begin")?,
            self.const_i32s(e, "end")?,
            self.const_i32s(s, "strides")?,
        );
        if begin.len() != rank || end.len() != rank || strides.len() != rank {
            return Err(format!("begin, end and strides are not {rank} values"));
        }
        if strides.iter().any(|&s| s != 1) {
            return Err(format!("strides {strides:?} (only 1 is supported)"));
        }
        // Slots: begin_mask 0, end_mask 1, ellipsis 2, new_axis 3, shrink_axis 4, offset 5.
        let o = opts(op, options::STRIDED_SLICE)?;
        let get = |slot: usize| o.map_or(Ok(0), |t| t.i32(slot, 0));
        let (begin_mask, end_mask) = (get(0)?, get(1)?);
        if get(2)? != 0 || get(3)? != 0 || get(4)? != 0 || o.map_or(Ok(0), |t| t.u8(5, 0))? != 0 {
            return Err("ellipsis, new-axis or shrink masks, or offset (not supported)".into());
        }
        let resolve = |v: i32, dim: usize| -> usize {
            let v = i64::from(v);
            let v = if v < 0 { v + dim as i64 } else { v };
            v.clamp(0, dim as i64) as usize
        };
        let mut lo = Vec::with_capacity(rank);
        let mut hi = Vec::with_capacity(rank);
        let mut shape = Vec::with_capacity(rank);
        for (d, &dim) in input.shape.iter().enumerate() {
            let masked = |m: i32| d < 32 && m >> d & 1 != 0;
            let a = if masked(begin_mask) { 0 } else { resolve(begin[d], dim) };
            let z = if masked(end_mask) { dim } else { resolve(end[d], dim) };
            lo.push(a);
            hi.push(z.max(a));
            shape.push(z.saturating_sub(a));
        }
        same_shape(&output, &shape, "the output")?;
        Ok(StreamOp::StridedSlice {
            input,
            output,
            begin: lo,
            end: hi,
            strides,
            begin_mask,
            end_mask,
        })
    }

    pub(super) fn split_v(&self, op: &Operator<'a>) -> Result<StreamOp, String> {
        let [x, s, a] = op.inputs[..] else { return Err("not 3 inputs".into()) };
        let input = self.spec(x)?;
        // Slot: num_splits 0.
        let o = opts(op, options::SPLIT_V)?;
        let n = o.map_or(Ok(0), |t| t.i32(0, 0))?;
        if usize::try_from(n).ok() != Some(op.outputs.len()) {
            return Err(format!("num_splits {n} for {} outputs", op.outputs.len()));
        }
        let outputs = op.outputs.iter().map(|&t| self.spec(t)).collect::<Result<Vec<_>, _>>()?;
        let axes = self.const_i32s(a, "the axis")?;
        let [a] = axes[..] else { return Err("the axis is not one value".into()) };
        let axis = axis(a, input.shape.len())?;
        let raw = self.const_i32s(s, "the sizes")?;
        if raw.len() != outputs.len() {
            return Err(format!("{} sizes for {} outputs", raw.len(), outputs.len()));
        }
        let dim = input.shape[axis];
        let known: i64 = raw.iter().filter(|&&v| v >= 0).map(|&v| i64::from(v)).sum();
        let free = raw.iter().filter(|&&v| v < 0).count();
        let mut sizes = Vec::with_capacity(raw.len());
        for &v in &raw {
            let n = match v {
                -1 if free == 1 => dim as i64 - known,
                v => i64::from(v),
            };
            sizes.push(usize::try_from(n).map_err(|_| format!("sizes {raw:?}"))?);
        }
        if sizes.iter().try_fold(0usize, |a, &n| a.checked_add(n)) != Some(dim) {
            return Err(format!("sizes {raw:?} do not add up to {dim}"));
        }
        for (out, &n) in outputs.iter().zip(&sizes) {
            same_type(&input, out)?;
            let mut shape = input.shape.clone();
            shape[axis] = n;
            same_shape(out, &shape, "an output")?;
        }
        Ok(StreamOp::SplitV { input, outputs, sizes, axis })
    }

    pub(super) fn concatenation(&self, op: &Operator<'a>) -> Result<StreamOp, String> {
        let [y] = op.outputs[..] else { return Err("not 1 output".into()) };
        let output = self.spec(y)?;
        let inputs = op.inputs.iter().map(|&t| self.spec(t)).collect::<Result<Vec<_>, _>>()?;
        if inputs.is_empty() {
            return Err("no inputs".into());
        }
        // Slots: axis 0, activation 1.
        let o = opts(op, options::CONCATENATION)?;
        if activation(o.map_or(Ok(0), |t| t.u8(1, 0))?)? != FusedActivation::None {
            return Err("a fused activation (not supported)".into());
        }
        let axis = axis(o.map_or(Ok(0), |t| t.i32(0, 0))?, output.shape.len())?;
        let mut shape = output.shape.clone();
        shape[axis] = 0;
        for x in &inputs {
            if x.quant != output.quant {
                return Err("an input is quantised otherwise than the output (rescaling)".into());
            }
            same_type(x, &output)?;
            let ok = x.shape.len() == shape.len()
                && (0..shape.len()).all(|d| d == axis || x.shape[d] == shape[d]);
            if !ok {
                return Err(format!("input {} does not fit", shape_str(&x.shape)));
            }
            shape[axis] = shape[axis].saturating_add(x.shape[axis]);
        }
        same_shape(&output, &shape, "the output")?;
        Ok(StreamOp::Concatenation { inputs, output, axis })
    }

    pub(super) fn reshape(&self, op: &Operator<'a>) -> Result<StreamOp, String> {
        let (&x, &[y]) = (op.inputs.first().ok_or("no input")?, &op.outputs[..]) else {
            return Err("not 1 output".into());
        };
        let (input, output) = (self.spec(x)?, self.spec(y)?);
        same_type(&input, &output)?;
        let raw = match op.inputs.get(1).filter(|&&s| s >= 0) {
            Some(&s) => self.const_i32s(s, "the shape")?,
            None => match opts(op, options::RESHAPE)? {
                Some(t) => ints(&t, 0)?,
                None => output.shape.iter().map(|&d| d as i32).collect(),
            },
        };
        let known = raw
            .iter()
            .filter(|&&d| d >= 0)
            .try_fold(1usize, |a, &d| a.checked_mul(d as usize))
            .ok_or_else(|| format!("new shape {raw:?} overflows"))?;
        let mut shape = Vec::with_capacity(raw.len());
        for &d in &raw {
            shape.push(match d {
                -1 if known > 0 && raw.iter().filter(|&&d| d < 0).count() == 1 => {
                    input.len() / known
                }
                d => usize::try_from(d).map_err(|_| format!("new shape {raw:?}"))?,
            });
        }
        if shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) != Some(input.len()) {
            return Err(format!("new shape {raw:?} for {} elements", input.len()));
        }
        same_shape(&output, &shape, "the output")?;
        Ok(StreamOp::Reshape { input, output, shape })
    }

    /// An operator with one input and one output of the same shape.
    pub(super) fn unary(
        &self,
        op: &Operator<'a>,
        from: &[DType],
        to: &[DType],
    ) -> Result<[TensorSpec; 2], String> {
        let (&[x], &[y]) = (&op.inputs[..], &op.outputs[..]) else {
            return Err("not 1 input and 1 output".into());
        };
        let (input, output) =
            (self.activation_spec(x, "the input")?, self.activation_spec(y, "the output")?);
        want(&input, from, "the input")?;
        want(&output, to, "the output")?;
        same_shape(&output, &input.shape, "the output")?;
        Ok([input, output])
    }
}
