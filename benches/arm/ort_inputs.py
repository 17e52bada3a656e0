#!/usr/bin/env python3
"""Inputs and expected outputs of the Moonshine workloads of benches/arm/ort.sh, for its peer
program benches/arm/ort_peer.c (`ort_peer LIB run MODEL SPEC`): one folder per workload with a
`spec` file and the raw little-endian tensors it names.

Usage:
    target/py/moonshine/bin/python benches/arm/ort_inputs.py moonshine OUT_DIR
        (tools/moonshine's venv, after tools/moonshine/fetch.sh and setup.sh --bench)
    target/py/sanotts/bin/python benches/arm/ort_inputs.py sanotts OUT_DIR
        (tools/sanotts's venv, tools/sanotts/setup.sh)

Moonshine workloads (the inputs of benches/src/bin/insn_moonshine.rs; beckett.wav as int16 /
32768):
  ms_encoder_2       encoder graph, input_values [1, 32000] (the first 2 s); expected: ONNX
                     Runtime's encoder output on the host (shipped int8 encoder_model.ort)
  ms_encoder_beckett encoder graph, the whole clip [1, 159414]; expected: the golden encoder
                     output (models/moonshine/goldens/beckett.safetensors)
  ms_step            merged decoder, cached branch at position 7: token 4383 (beckett's 8th),
                     the self-attention cache of tokens 0..6 [1, 8, 7, 52] and the first
                     step's cross-attention K/V [1, 8, 413, 52] per layer, computed by ONNX
                     Runtime on the host from the golden encoder output; expected: the golden
                     logits of step 7 (every present.* output fetched, not checked)

Tolerances (models/tests/moonshine_golden.rs): encoder output 5e-4, logits 1e-3.

sanoTTS workload (the input of benches/src/bin/insn_sanotts.rs `decode 125`):
  sanotts_125        the decoder graph of tools/sanotts/onnx_peer.py for the synthetic voice
                     (seed 0x5A70), written unfolded (sanotts.onnx) and folded
                     (sanotts_folded.onnx), on the seeded test hidden states [1, 192, 125]
                     (1 s of audio); expected: the numpy f64 reference waveform
                     (tools/sanotts/reference.py, as the goldens' `reference`), relative L2
                     within 1e-4 (issue 12's bound for every independent check of the decoder)
"""
import os
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

SHORT_SAMPLES = 32_000  # neon_benches::moonshine::SHORT_SAMPLES
STEP_POSITION = 7  # neon_benches::moonshine::STEP_POSITION
ENCODER_TOL = 5e-4
LOGITS_TOL = 1e-3


def write(out, name, lines, arrays):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    for file, a in arrays.items():
        np.ascontiguousarray(a).tofile(os.path.join(d, file))
    with open(os.path.join(d, "spec"), "w") as f:
        f.write("".join(line + "\n" for line in lines))


def moonshine(out):
    sys.path.insert(0, os.path.join(ROOT, "tools", "moonshine"))
    import ms_env
    from safetensors.numpy import load_file

    golden = load_file(os.path.join(ms_env.MODELS_DIR, "goldens", "beckett.safetensors"))
    _, audio = ms_env.read_wav(os.path.join(ms_env.MODELS_DIR, "beckett.wav"))
    if not np.array_equal(audio, golden["audio"]):
        raise SystemExit("beckett.wav is not the golden's audio")
    ort = ms_env.OrtMoonshine(ms_env.source_dir())
    enc = golden["encoder"]

    for name, x, want in [("ms_encoder_2", audio[:SHORT_SAMPLES], None),
                          ("ms_encoder_beckett", audio, enc)]:
        if want is None:
            want = ort.encode(x)
        write(out, name, [f"in input_values f32 input_values.bin 1 {len(x)}",
                          f"out last_hidden_state expected.bin {ENCODER_TOL}"],
              {"input_values.bin": x.astype("<f4"), "expected.bin": want.astype("<f4")})

    tokens = [int(t) for t in golden["tokens"]]
    cache = None
    for token in tokens[:STEP_POSITION]:
        _, cache = ort.step(token, enc, cache)
    lines = ["in input_ids i64 input_ids.bin 1 1",
             f"in encoder_hidden_states f32 encoder_hidden_states.bin 1 {enc.shape[0]} 416"]
    arrays = {"input_ids.bin": np.array([tokens[STEP_POSITION]], "<i8"),
              "encoder_hidden_states.bin": enc.astype("<f4")}
    for past, present in ms_env.decoder_cache_names():
        v = cache[present]
        lines.append(f"in {past} f32 {past}.bin {' '.join(map(str, v.shape))}")
        arrays[f"{past}.bin"] = v.astype("<f4")
    lines.append("in use_cache_branch bool use_cache_branch.bin 1")
    arrays["use_cache_branch.bin"] = np.array([1], np.uint8)
    lines.append(f"out logits expected_logits.bin {LOGITS_TOL}")
    arrays["expected_logits.bin"] = golden["logits"][STEP_POSITION].astype("<f4")
    for _, present in ms_env.decoder_cache_names():
        lines.append(f"out {present} - -")
    write(out, "ms_step", lines, arrays)
    print(f"ort_inputs: wrote {out}/ms_encoder_2, ms_encoder_beckett, ms_step "
          f"(ONNX Runtime {ort.version} on the host)", file=sys.stderr)


SANO_FRAMES = 125  # 1 s of audio: insn_sanotts decode 125
SANO_TOL = 1e-4


def sanotts(out):
    sys.path.insert(0, os.path.join(ROOT, "tools", "sanotts"))
    import onnx
    import onnx_peer
    import reference
    import voice

    v = {k: np.asarray(a, np.float32) for k, a in voice.voice().items()}
    h = np.asarray(voice.hidden(SANO_FRAMES), np.float32)
    want = reference.decode(v, h)  # as tools/sanotts/goldens.py
    d = os.path.join(out, "sanotts_125")
    os.makedirs(d, exist_ok=True)
    onnx.save(onnx_peer.build_model(v), os.path.join(d, "sanotts.onnx"))
    onnx.save(onnx_peer.build_model(v, folded=True), os.path.join(d, "sanotts_folded.onnx"))
    write(out, "sanotts_125", [f"in hidden f32 hidden.bin 1 192 {SANO_FRAMES}",
                               f"out audio reference.bin {SANO_TOL} l2"],
          {"hidden.bin": h.astype("<f4"), "reference.bin": np.asarray(want).astype("<f4")})
    print(f"ort_inputs: wrote {d}", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("moonshine", "sanotts"):
        raise SystemExit(__doc__)
    {"moonshine": moonshine, "sanotts": sanotts}[sys.argv[1]](sys.argv[2])
