#!/usr/bin/env python3
"""Inputs and golden checks of the TFLite peer (benches/arm/tflite.sh, tflite_peer.c).

Python's standard library only (the goldens are safetensors files: an 8-byte header length, a
JSON header, raw little-endian tensors), so the harness needs no virtual environment.

  tflite_golden.py micro-inputs MODEL STEPS IN
      writes `input.MODEL` [:STEPS] of models/microwakeword/goldens/okay_nabu.safetensors (the
      int8 model input of each 30 ms step, [3, 40], as pymicro-wakeword quantises the clip's
      features; the same steps insn_micro feeds ours) to IN
  tflite_golden.py micro-check MODEL STEPS OUT
      exit status 1 unless OUT (one uint8 output per step) equals `output.MODEL` [:STEPS]
      byte for byte: the golden is this library's own output (x86-64 build;
      tools/microwakeword/arm64_check.sh found the aarch64 build's int8 results identical),
      so the tolerance is zero
  tflite_golden.py oww-inputs DIR STEPS
      writes the openWakeWord chunk inputs of insn_oww's `chunk` (STEPS copies of each) into DIR:
      mel.in (the first 1760 samples of models/openwakeword/clips/hey_jarvis.wav as f32),
      embedding.in (mel_db[0:76] / 10 + 2 of goldens/hey_jarvis.safetensors), head.in
      (features[5:21] of the same golden, the window scored at chunk 20)
  tflite_golden.py oww-check DIR STEPS HEAD...
      checks the peer's outputs in DIR: mel.out against `mel_db_window` (within MEL_TOLERANCE
      dB), every HEAD's HEAD.out against `scores.HEAD` [20] (within SCORE_TOLERANCE),
      embedding.out finite and of the embedding's size; exit status 1 on a mismatch
"""
import array
import json
import math
import os
import struct
import sys
import wave

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MICRO_GOLDEN = os.path.join(ROOT, "models/microwakeword/goldens/okay_nabu.safetensors")
OWW = os.path.join(ROOT, "models/openwakeword")
OWW_GOLDEN = os.path.join(OWW, "goldens/hey_jarvis.safetensors")
OWW_CLIP = os.path.join(OWW, "clips/hey_jarvis.wav")

# insn_oww's inputs: one streaming mel call (1280 samples + 480 of context), the embedding's
# 76 x 32 window, the head's 16 x 96 window of chunk 20.
MEL_SAMPLES = 1760
HEAD_CHUNK = 20
# insn_oww's own tolerances against the same goldens: the hey_jarvis score tolerance of the
# model tests (TFLite's own rounding) and the mel sanity bound (dB). The goldens were written by
# the x86-64 TFLite of ai-edge-litert 2.3.0; the aarch64 library's f32 kernels may round
# differently (other vector widths, FMA), which these bounds leave room for.
SCORE_TOLERANCE = 1e-5
MEL_TOLERANCE = 0.05

DTYPES = {"F32": "f", "F64": "d", "I8": "b", "U8": "B", "I32": "i", "U16": "H"}


def read_tensor(path, name):
    """(values as an array.array, shape) of tensor `name` of the safetensors file `path`."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        meta = header[name]
        start, end = meta["data_offsets"]
        f.seek(8 + n + start)
        values = array.array(DTYPES[meta["dtype"]])
        values.frombytes(f.read(end - start))
    if sys.byteorder != "little":
        values.byteswap()
    return values, meta["shape"]


def write(path, values, copies):
    with open(path, "wb") as f:
        for _ in range(copies):
            f.write(values.tobytes())


def micro_inputs(model, steps, path):
    x, shape = read_tensor(MICRO_GOLDEN, f"input.{model}")
    per = shape[1] * shape[2]
    if shape[0] < steps:
        sys.exit(f"tflite_golden.py: the golden has {shape[0]} steps, not {steps}")
    write(path, x[: steps * per], 1)


def micro_check(model, steps, path):
    want, _ = read_tensor(MICRO_GOLDEN, f"output.{model}")
    with open(path, "rb") as f:
        got = f.read()
    if got != want[:steps].tobytes():
        bad = [i for i in range(min(len(got), steps)) if got[i] != want[i]]
        sys.exit(f"tflite_golden.py: {model}: {len(got)} outputs, steps {bad[:5]} differ "
                 f"from the golden output.{model}")


def oww_inputs(out, steps):
    with wave.open(OWW_CLIP) as w:
        frames = w.readframes(MEL_SAMPLES)
    pcm = array.array("h", frames)
    if sys.byteorder != "little":
        pcm.byteswap()
    write(os.path.join(out, "mel.in"), array.array("f", [float(v) for v in pcm]), steps)
    mel, _ = read_tensor(OWW_GOLDEN, "mel_db")
    window = array.array("f", [v / 10.0 + 2.0 for v in mel[: 76 * 32]])
    write(os.path.join(out, "embedding.in"), window, steps)
    features, _ = read_tensor(OWW_GOLDEN, "features")
    head = features[(HEAD_CHUNK - 15) * 96 : (HEAD_CHUNK + 1) * 96]
    write(os.path.join(out, "head.in"), head, steps)


def read_f32(path):
    values = array.array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    return values


def oww_check(out, steps, heads):
    mel = read_f32(os.path.join(out, "mel.out"))
    want, _ = read_tensor(OWW_GOLDEN, "mel_db_window")
    per = len(want)
    # The melspectrogram's own output in dB (the golden's too: openwakeword scales it by
    # / 10 + 2 afterwards).
    if len(mel) != steps * per:
        sys.exit(f"tflite_golden.py: {len(mel)} mel values, not {steps} x {per}")
    for s in range(steps):
        diff = max(abs(a - b) for a, b in zip(mel[s * per : (s + 1) * per], want))
        if not diff <= MEL_TOLERANCE:
            sys.exit(f"tflite_golden.py: mel differs from mel_db_window by {diff} dB")
    emb = read_f32(os.path.join(out, "embedding.out"))
    if len(emb) != 96 * steps or not all(math.isfinite(v) for v in emb):
        sys.exit("tflite_golden.py: the embedding is not 96 finite values per step")
    for head in heads:
        score = read_f32(os.path.join(out, f"{head}.out"))
        want = read_tensor(OWW_GOLDEN, f"scores.{head}")[0][HEAD_CHUNK]
        for s in range(steps):
            if not abs(score[s] - want) <= SCORE_TOLERANCE:
                sys.exit(f"tflite_golden.py: {head} scores {score[s]}, golden {want}")


def main(argv):
    cmd = argv[0] if argv else ""
    if cmd == "micro-inputs" and len(argv) == 4:
        micro_inputs(argv[1], int(argv[2]), argv[3])
    elif cmd == "micro-check" and len(argv) == 4:
        micro_check(argv[1], int(argv[2]), argv[3])
    elif cmd == "oww-inputs" and len(argv) == 3:
        oww_inputs(argv[1], int(argv[2]))
    elif cmd == "oww-check" and len(argv) >= 3:
        oww_check(argv[1], int(argv[2]), argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
