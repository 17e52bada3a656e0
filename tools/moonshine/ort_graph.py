"""Reads an ONNX Runtime `.ort` model (flatbuffer) with the readers shipped in the pinned
onnxruntime package (`onnxruntime/tools/ort_format_model/ort_flatbuffers_py`) and offers the small
graph queries convert.py walks the network with.

A `Scope` is one graph (the main graph or an `If` branch): its initializers as numpy arrays, its
nodes in stored order, and which node produces / consumes each value. Look-ups of producers and
initializers fall back to the enclosing scope (If branches read the main graph's weights as
outer-scope values).
"""
from collections import Counter, defaultdict

import numpy as np
import onnxruntime.tools.ort_format_model  # noqa: F401 (puts ort_flatbuffers_py on sys.path)
import ort_flatbuffers_py.fbs as fbs

_DTYPES = {
    fbs.TensorDataType.TensorDataType.FLOAT: "<f4",
    fbs.TensorDataType.TensorDataType.INT8: "i1",
    fbs.TensorDataType.TensorDataType.UINT8: "u1",
    fbs.TensorDataType.TensorDataType.INT32: "<i4",
    fbs.TensorDataType.TensorDataType.INT64: "<i8",
    fbs.TensorDataType.TensorDataType.BOOL: "?",
}
_ATTR = fbs.AttributeType.AttributeType


class GraphError(SystemExit):
    """The graph is not what the converter expects (raised by `expect`)."""


def expect(cond, what):
    if not cond:
        raise GraphError(f"unexpected graph: {what}")


def tensor_to_numpy(t):
    """An fbs.Tensor's value (raw data, little endian) as a numpy array of its dims."""
    expect(t.DataType() in _DTYPES, f"initializer {t.Name()} has data type {t.DataType()}")
    expect(t.RawDataIsNone() is False or t.DimsLength() == 0 or 0 in t.DimsAsNumpy().tolist(),
           f"initializer {t.Name()} has no raw data (external data offset {t.ExternalDataOffset()})")
    dims = tuple(int(d) for d in t.DimsAsNumpy()) if not t.DimsIsNone() else ()
    raw = t.RawDataAsNumpy() if not t.RawDataIsNone() else np.zeros(0, np.uint8)
    return np.frombuffer(raw.tobytes(), dtype=_DTYPES[t.DataType()]).reshape(dims).copy()


class Node:
    def __init__(self, fb_node, scope):
        self.op = fb_node.OpType().decode()
        self.domain = fb_node.Domain().decode()
        self.name = fb_node.Name().decode()
        self.inputs = [fb_node.Inputs(j).decode() for j in range(fb_node.InputsLength())]
        self.outputs = [fb_node.Outputs(j).decode() for j in range(fb_node.OutputsLength())]
        self.attrs = {}
        self.subgraphs = {}
        for j in range(fb_node.AttributesLength()):
            a = fb_node.Attributes(j)
            name, kind = a.Name().decode(), a.Type()
            if kind == _ATTR.INT:
                self.attrs[name] = int(a.I())
            elif kind == _ATTR.FLOAT:
                self.attrs[name] = float(a.F())
            elif kind == _ATTR.INTS:
                self.attrs[name] = [int(v) for v in a.IntsAsNumpy()]
            elif kind == _ATTR.FLOATS:
                self.attrs[name] = [float(v) for v in a.FloatsAsNumpy()]
            elif kind == _ATTR.STRING:
                self.attrs[name] = a.S().decode()
            elif kind == _ATTR.TENSOR:
                self.attrs[name] = tensor_to_numpy(a.T())
            elif kind == _ATTR.GRAPH:
                self.subgraphs[name] = Scope(a.G(), parent=scope, name=f"{scope.name}/{name}")
            else:
                expect(False, f"node {self.name}: attribute {name} of type {kind}")

    @property
    def out(self):
        expect(len(self.outputs) == 1, f"{self.op} {self.name} has one output")
        return self.outputs[0]

    def __repr__(self):
        return f"{self.op}({self.name})"


class Scope:
    def __init__(self, fb_graph, parent=None, name="main"):
        self.parent = parent
        self.name = name
        self.inputs = [fb_graph.Inputs(i).decode() for i in range(fb_graph.InputsLength())]
        self.outputs = [fb_graph.Outputs(i).decode() for i in range(fb_graph.OutputsLength())]
        expect(fb_graph.SparseInitializersLength() == 0, f"{name}: no sparse initializers")
        self.inits = {}
        for i in range(fb_graph.InitializersLength()):
            t = fb_graph.Initializers(i)
            self.inits[t.Name().decode()] = tensor_to_numpy(t)
        self.nodes = []
        self.producer = {}
        self.consumers = defaultdict(list)
        for i in range(fb_graph.NodesLength()):
            node = Node(fb_graph.Nodes(i), self)
            self.nodes.append(node)
            for v in node.outputs:
                expect(v not in self.producer, f"{name}: value {v} produced twice")
                self.producer[v] = node
            for v in node.inputs:
                if v:
                    self.consumers[v].append(node)

    def op_counts(self):
        return Counter(n.op for n in self.nodes)

    def prod(self, value):
        """The node producing `value` here or in an enclosing scope (None for inputs/initializers)."""
        if value in self.producer:
            return self.producer[value]
        return self.parent.prod(value) if self.parent is not None else None

    def init(self, value):
        """The initializer `value` here or in an enclosing scope, or None."""
        if value in self.inits:
            return self.inits[value]
        return self.parent.init(value) if self.parent is not None else None

    def const(self, value, shape=None, dtype=None):
        arr = self.init(value)
        expect(arr is not None, f"{value} is a constant")
        if shape is not None:
            expect(arr.shape == tuple(shape), f"{value} has shape {arr.shape}, expected {shape}")
        if dtype is not None:
            expect(arr.dtype == np.dtype(dtype), f"{value} has dtype {arr.dtype}, expected {dtype}")
        return arr

    def scalar(self, value):
        arr = self.const(value)
        expect(arr.size == 1, f"{value} is a scalar (shape {arr.shape})")
        return arr.reshape(()).item()

    def cons(self, value, op=None):
        """Nodes of this scope consuming `value` (optionally only those of type `op`)."""
        return [n for n in self.consumers.get(value, []) if op is None or n.op == op]

    def one_cons(self, value, op, where=None):
        """The single consumer of `value` of type `op` (optionally satisfying `where`)."""
        found = [n for n in self.cons(value, op) if where is None or where(n)]
        expect(len(found) == 1, f"{self.name}: {value} has one {op} consumer (found {found})")
        return found[0]

    def other_input(self, node, value):
        """For a binary node with `value` as one input: the other input."""
        expect(len(node.inputs) == 2 and value in node.inputs, f"{node} is binary with input {value}")
        return node.inputs[1] if node.inputs[0] == value else node.inputs[0]

    def upstream(self, value, stop):
        """Backward walk over the data flow from `value`: follows producers (here and in enclosing
        scopes) but never through `Shape` (shape-only flow) and not past nodes for which
        `stop(node)` is true. Returns (stopped nodes, graph inputs reached, ops seen,
        initializers seen)."""
        stopped, inputs, ops, inits = [], set(), Counter(), set()
        seen, todo = set(), [value]
        while todo:
            v = todo.pop()
            if v in seen or not v:
                continue
            seen.add(v)
            node = self.prod(v)
            if node is None:
                if self.init(v) is not None:
                    inits.add(v)
                else:
                    inputs.add(v)
                continue
            if stop(node):
                if node not in stopped:
                    stopped.append(node)
                continue
            ops[node.op] += 1
            if node.op == "Shape":
                continue
            todo.extend(node.inputs)
        return stopped, inputs, ops, inits


class OrtModel:
    """An .ort file: version fields, opsets and the main graph as a Scope."""

    def __init__(self, path):
        with open(path, "rb") as f:
            buf = bytearray(f.read())
        session = fbs.InferenceSession.InferenceSession
        expect(session.InferenceSessionBufferHasIdentifier(buf, 0), f"{path} is an ORT model")
        root = session.GetRootAsInferenceSession(buf, 0)
        self.ort_version = root.OrtVersion().decode()
        model = root.Model()
        self.ir_version = model.IrVersion()
        self.producer = f"{model.ProducerName().decode()} {model.ProducerVersion().decode()}".strip()
        self.opsets = {model.OpsetImport(i).Domain().decode(): model.OpsetImport(i).Version()
                       for i in range(model.OpsetImportLength())}
        self.graph = Scope(model.Graph())
