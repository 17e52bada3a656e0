"""Shared helpers of the Python tools under tools/: a deterministic safetensors writer, a reader,
and a file hash.

Import with `sys.path.insert(0, <this directory>)` (the tools are scripts, not a package).
"""
import hashlib
import json
import os

import numpy as np

# numpy dtype (little endian) -> safetensors dtype name.
DTYPES = {
    np.dtype("<f4"): "F32",
    np.dtype("<f8"): "F64",
    np.dtype("<i4"): "I32",
    np.dtype("<u2"): "U16",
    np.dtype("i1"): "I8",
    np.dtype("u1"): "U8",
}


def sha256_file(path):
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_safetensors(path, tensors, metadata):
    """Writes a safetensors file deterministically (same inputs -> same bytes).

    `tensors`: dict name -> numpy array (f32, f64, i32, u16, i8 or u8), written in the dict's order, little
    endian, C order. `metadata`: dict str -> str, written with sorted keys. The header is padded
    with spaces to a multiple of 8 bytes. (The safetensors package writes its metadata map in a
    per-process random order, so its files are not byte-reproducible; reading uses it.)
    """
    header = {"__metadata__": {k: metadata[k] for k in sorted(metadata)}}
    blobs = []
    offset = 0
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        if array.dtype.newbyteorder("<") not in DTYPES:
            raise ValueError(f"{name}: unsupported dtype {array.dtype}")
        array = array.astype(array.dtype.newbyteorder("<"), copy=False)
        data = array.tobytes(order="C")
        header[name] = {
            "dtype": DTYPES[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for data in blobs:
            f.write(data)


def read_safetensors(path):
    """Reads a safetensors file with the safetensors package: (dict of arrays, metadata)."""
    from safetensors import safe_open

    with safe_open(path, framework="numpy") as f:
        metadata = f.metadata() or {}
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    return tensors, metadata


def read_safetensors_metadata(path):
    """The `__metadata__` map of a safetensors file, read from its header alone (no package)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    return header.get("__metadata__", {})
