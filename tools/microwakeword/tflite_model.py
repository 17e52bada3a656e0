"""Reads a .tflite file into plain Python data for dump_ops.py and op_facts.py.

Uses the FlatBuffers schema module that ships in ai-edge-litert (schema_py_generated, the
object API of TFLite's schema.fbs). Import with `sys.path.insert(0, <this directory>)`.
"""
import numpy as np
from ai_edge_litert import schema_py_generated as schema

# schema TensorType value -> numpy dtype (only the types these models use; others -> None).
NP_TYPES = {
    schema.TensorType.FLOAT32: np.float32,
    schema.TensorType.INT32: np.int32,
    schema.TensorType.UINT8: np.uint8,
    schema.TensorType.INT64: np.int64,
    schema.TensorType.INT8: np.int8,
    schema.TensorType.INT16: np.int16,
}


def _names(cls):
    return {v: k for k, v in vars(cls).items() if not k.startswith("_")}


OP_NAMES = _names(schema.BuiltinOperator)
TYPE_NAMES = _names(schema.TensorType)
PADDING_NAMES = _names(schema.Padding)
ACTIVATION_NAMES = _names(schema.ActivationFunctionType)


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def _options(op):
    """The op's builtin options as a dict with readable enum values (empty when it has none)."""
    if op.builtinOptions is None:
        return {}
    out = {}
    for k, v in vars(op.builtinOptions).items():
        if k == "padding":
            v = PADDING_NAMES.get(v, v)
        elif k == "fusedActivationFunction":
            v = ACTIVATION_NAMES.get(v, v)
        elif isinstance(v, np.ndarray):
            v = v.tolist()
        out[k] = _text(v)
    return out


def load(path):
    """The model at `path`: {"subgraphs": [{"name", "inputs", "outputs", "tensors", "ops"}]}.

    A tensor is {"name", "type" (schema name), "shape", "is_variable", "data" (numpy array of
    its constant buffer, or None), "scale", "zero_point" (lists, empty when unquantised),
    "axis"}. An op is {"op" (builtin name), "inputs", "outputs", "options" (dict)}.
    """
    buf = open(path, "rb").read()
    model = schema.ModelT.InitFromPackedBuf(buf, 0)
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in model.operatorCodes]
    subgraphs = []
    for sg in model.subgraphs:
        tensors = []
        for t in sg.tensors:
            b = model.buffers[t.buffer] if t.buffer < len(model.buffers) else None
            data = None
            shape = [] if t.shape is None else [int(x) for x in t.shape]
            if b is not None and b.data is not None and len(b.data) and t.type in NP_TYPES:
                raw = np.asarray(b.data, dtype=np.uint8).tobytes()
                data = np.frombuffer(raw, dtype=NP_TYPES[t.type]).reshape(shape)
            q = t.quantization
            tensors.append({
                "name": _text(t.name),
                "type": TYPE_NAMES.get(t.type, t.type),
                "shape": shape,
                "is_variable": bool(t.isVariable),
                "data": data,
                "scale": [] if q is None or q.scale is None else [float(s) for s in q.scale],
                "zero_point": [] if q is None or q.zeroPoint is None
                else [int(z) for z in q.zeroPoint],
                "axis": 0 if q is None else int(q.quantizedDimension),
            })
        ops = [{
            "op": OP_NAMES.get(codes[op.opcodeIndex], codes[op.opcodeIndex]),
            "inputs": [int(i) for i in (op.inputs if op.inputs is not None else [])],
            "outputs": [int(i) for i in (op.outputs if op.outputs is not None else [])],
            "options": _options(op),
        } for op in sg.operators]
        subgraphs.append({
            "name": _text(sg.name),
            "inputs": [int(i) for i in sg.inputs],
            "outputs": [int(i) for i in sg.outputs],
            "tensors": tensors,
            "ops": ops,
        })
    return {"subgraphs": subgraphs}


def variable_names(sg):
    """Handle tensor index -> shared_name of every VAR_HANDLE in subgraph `sg`."""
    return {op["outputs"][0]: op["options"].get("sharedName")
            for op in sg["ops"] if op["op"] == "VAR_HANDLE"}
