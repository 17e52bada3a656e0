"""Shared by the tools that write ONNX models for ONNX Runtime peers (tools/openwakeword/
onnx_heads.py, tools/sanotts/onnx_peer.py): wrap built nodes into a checked model.

Import with `sys.path.insert(0, <this directory>)` (the tools are scripts, not a package).
"""
import onnx
from onnx import TensorProto, helper


def checked_model(nodes, name, inputs, outputs, initializers, opset, producer):
    """The ModelProto of graph `name`: `nodes`, f32 `inputs` and `outputs` (lists of
    (name, shape), a dimension an int or a symbolic name) and `initializers`, default domain
    opset `opset`, IR version 8 (what ONNX Runtime 1.x reads), producer name `producer`.
    Passes `onnx.checker.check_model(full_check=True)`, which raises on an invalid model."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in outputs],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name=producer)
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model
