#!/usr/bin/env python3
"""Records ONNX Runtime's greedy tokens for the real speech clips of models/speech/clips.

Usage: corpus_tokens.py [OUT_JSON]   (default: models/speech/moonshine_ort_tokens.json)

For every clip (sorted by name): the WAV read as goldens.py reads it (s16 / 32768 as f32), the
shipped base-en encoder and merged decoder (ms_env.OrtMoonshine: 1 thread, deterministic),
greedy from BOS until EOS or ceil(6.5 * seconds) generated tokens, as goldens.py decodes.
Writes one JSON object {clip stem: {"tokens": [BOS, ids..., EOS], "text": transcript,
"min_top2_gap": smallest top-1 minus top-2 logit over the steps}} with the onnxruntime
version under "_onnxruntime". models/tests/moonshine_corpus.rs reads it (token agreement of
our decoder paths with ONNX Runtime on these clips).
"""
import json
import os
import sys

import numpy as np

import ms_env

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CLIPS = os.path.join(ROOT, "models", "speech", "clips")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "models", "speech",
                                                            "moonshine_ort_tokens.json")
    pkg = ms_env.source_dir()
    ort = ms_env.OrtMoonshine(pkg)
    tok = ms_env.Tokenizer(os.path.join(pkg, ms_env.TOKENIZER))
    result = {"_onnxruntime": ort.version}
    for name in sorted(n for n in os.listdir(CLIPS) if n.endswith(".wav")):
        _, audio = ms_env.read_wav(os.path.join(CLIPS, name))
        tokens, logits = ort.greedy(ort.encode(audio), ms_env.token_budget(len(audio)))
        top2 = np.sort(logits, axis=-1)[:, -2:]
        gap = float((top2[:, 1] - top2[:, 0]).min())
        text = tok.decode(tokens.tolist())
        result[name[:-4]] = {"tokens": [int(t) for t in tokens], "text": text,
                             "min_top2_gap": round(gap, 4)}
        print(f"{name[:-4]}: {len(tokens)} tokens, min top-2 gap {gap:.3g}: {text!r}")
    with open(out, "w", encoding="utf-8") as f:
        f.write("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}"
                                    for k, v in result.items()) + "\n}\n")


if __name__ == "__main__":
    main()
