#!/usr/bin/env python3
"""Records what ONNX Runtime computes with the shipped Moonshine base-en models on our clips.

Usage: goldens.py OUT_DIR [--check] [--if-needed]

For every committed clip in models/moonshine/clips/ and the package's beckett.wav: the WAV is
loaded as a user would (16 kHz mono s16, samples / 32768 as f32, nothing else), the encoder runs
on the whole clip, then greedy decoding with the merged decoder and its KV cache
(ms_env.OrtMoonshine: 1 thread, sequential, deterministic compute) from BOS (1) until EOS (2) or
a budget of ceil(6.5 * seconds) generated tokens.

Writes OUT_DIR/goldens/<clip>.safetensors (not committed; fetch.sh recreates them):

* `audio` f32 [N]: the exact samples fed to the encoder.
* `encoder` f32 [T, 416]: the full encoder output.
* `tokens` i32 [S]: BOS, the generated ids, and EOS if it was reached within the budget.
* `logits` f32 [S - 1, 32768]: step s was fed tokens[0..=s] (the cached run, so this is also
  teacher forcing on these tokens); argmax(logits[s]) = tokens[s + 1].
* `top2_gap` f32 [S - 1]: top-1 minus top-2 logit per step (how close greedy was to a tie).

Metadata: clip, clip_sha256, text (tokens decoded with tokenizer.bin, ms_env.Tokenizer),
onnxruntime version, stop reason, budget, the model files' sha256.

Also writes models/moonshine/goldens/<clip>.json (committed, for reviewers): text, tokens,
encoder_mean, encoder_std (float64 over all of `encoder`, rounded to 6 decimals), encoder_shape.
beckett.wav must reproduce the reference transcript, tokens and step-0 top logits (constants below).

`--check` regenerates into a temporary directory and compares with OUT_DIR (tokens and text
exact, tensors within 1e-4 * max(1, |value|): see CHECK_TOL). `--if-needed` does nothing when
every output exists with matching metadata (clip sha256, model sha256s, onnxruntime version, format).
"""
import json
import os

import numpy as np

import ms_env  # puts tools/common on sys.path (regen_check below)
from regen_check import regen_arguments, regen_parser

GENERATOR = "tools/moonshine/goldens.py"
FORMAT = "1"  # bump when the content of the golden files changes
CLIPS_DIR = os.path.join(ms_env.MODELS_DIR, "clips")
JSON_DIR = os.path.join(ms_env.MODELS_DIR, "goldens")

# The reference behaviour recorded when the port was planned (transcript, tokens, step-0 logits).
BECKETT_TEXT = "Ever tried ever failed, no matter try again fail again fail better."
BECKETT_TOKENS = [1, 18274, 1898, 3926, 5229, 29892, 694, 4383, 1018, 1449, 4418, 1449, 4418,
                  2253, 29889, 2]
BECKETT_TOP5 = [(18274, 15.7611), (12391, 11.1897), (2, 10.4146), (382, 9.6726), (3926, 9.1539)]
BECKETT_ENCODER = ((413, 416), -0.00287, 0.4766)


def clips(pkg):
    """(name, path) of every clip: the committed ones (sorted) and beckett (path None without
    the unpacked wheel `pkg`)."""
    out = [(n[:-4], os.path.join(CLIPS_DIR, n)) for n in sorted(os.listdir(CLIPS_DIR))
           if n.endswith(".wav")]
    return out + [("beckett", os.path.join(pkg, ms_env.BECKETT) if pkg else None)]


def model_sha256():
    return json.dumps({k: ms_env.FILE_SHA256[k] for k in
                       (ms_env.ENCODER, ms_env.DECODER, ms_env.TOKENIZER)}, sort_keys=True)


def expected_meta(name, path, ort_version):
    digest = (ms_env.FILE_SHA256[ms_env.BECKETT] if name == "beckett"  # checked by source_dir()
              else ms_env.sha256_file(path))
    return {"clip": name, "clip_sha256": digest, "format": FORMAT,
            "onnxruntime": ort_version, "models_sha256": model_sha256()}


def run_clip(ort, tok, name, path):
    _, audio = ms_env.read_wav(path)
    enc = ort.encode(audio)
    if enc.shape != (ms_env.encoder_frames(len(audio)), 416):
        raise SystemExit(f"{name}: encoder shape {enc.shape} for {len(audio)} samples")
    budget = ms_env.token_budget(len(audio))
    tokens, logits = ort.greedy(enc, budget)
    top2 = np.sort(logits, axis=-1)[:, -2:]
    gap = (top2[:, 1] - top2[:, 0]).astype(np.float32)
    if not (logits.argmax(-1) == tokens[1:]).all():
        raise SystemExit(f"{name}: tokens are not the argmax of the logits")
    text = tok.decode(tokens.tolist())
    stop = "eos" if tokens[-1] == ms_env.EOS else "budget"
    tensors = {"audio": audio, "encoder": enc, "tokens": tokens, "logits": logits,
               "top2_gap": gap}
    summary = {"text": text, "tokens": tokens.tolist(),
               "encoder_mean": round(float(enc.astype(np.float64).mean()), 6),
               "encoder_std": round(float(enc.astype(np.float64).std()), 6),
               "encoder_shape": list(enc.shape)}
    meta = {"text": text, "stop": stop, "budget": str(budget),
            "audio_scaling": "int16 / 32768 as f32 (16 kHz mono s16 WAV, no other processing)",
            "decoding": "greedy from BOS 1 until EOS 2 or ceil(6.5 * seconds) generated tokens; "
                        "merged decoder with KV cache, ONNX Runtime 1 thread, deterministic",
            "generator": GENERATOR, "samples": str(len(audio))}
    return tensors, summary, meta


def check_beckett(tensors, summary):
    problems = []
    if summary["text"] != BECKETT_TEXT:
        problems.append(f"text {summary['text']!r}")
    if summary["tokens"] != BECKETT_TOKENS:
        problems.append(f"tokens {summary['tokens']}")
    step0 = tensors["logits"][0]
    top = np.argsort(-step0)[:5]
    got = [(int(i), float(step0[i])) for i in top]
    for (i, v), (j, w) in zip(got, BECKETT_TOP5):
        if i != j or abs(v - w) > 1e-3:
            problems.append(f"step-0 top-5 {got}")
            break
    shape, mean, std = BECKETT_ENCODER
    if (tuple(summary["encoder_shape"]) != shape or abs(summary["encoder_mean"] - mean) > 1e-5
            or abs(summary["encoder_std"] - std) > 1e-4):
        problems.append(f"encoder {summary['encoder_shape']} mean {summary['encoder_mean']} "
                        f"std {summary['encoder_std']}")
    if problems:
        raise SystemExit("beckett.wav does not reproduce the recorded reference: " + "; ".join(problems))
    return got


def generate(out_dir, json_dir, verbose=True):
    pkg = ms_env.source_dir()
    ort = ms_env.OrtMoonshine(pkg)
    tok = ms_env.Tokenizer(os.path.join(pkg, ms_env.TOKENIZER))
    written = []
    for name, path in clips(pkg):
        tensors, summary, meta = run_clip(ort, tok, name, path)
        meta.update(expected_meta(name, path, ort.version))
        if name == "beckett":
            top = check_beckett(tensors, summary)
        st = os.path.join(out_dir, "goldens", f"{name}.safetensors")
        ms_env.write_safetensors(st, tensors, meta)
        os.makedirs(json_dir, exist_ok=True)
        js = os.path.join(json_dir, f"{name}.json")
        with open(js, "w", encoding="utf-8") as f:
            f.write("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}"
                                        for k, v in summary.items()) + "\n}\n")
        written.append((st, js))
        if verbose:
            print(f"{name}: {len(tensors['audio'])} samples, encoder {tensors['encoder'].shape} "
                  f"mean {summary['encoder_mean']} std {summary['encoder_std']}; "
                  f"{len(tensors['tokens'])} tokens ({meta['stop']}, budget {meta['budget']}); "
                  f"min top-2 gap {tensors['top2_gap'].min():.3g}")
            print(f"  {summary['text']!r}")
            if name == "beckett":
                print(f"  beckett reproduces the recorded reference: transcript, tokens, encoder stats, "
                      f"step-0 top-5 {[(i, round(v, 4)) for i, v in top]}")
    return written


def up_to_date(out_dir):
    """True when every golden exists with the metadata this run would write."""
    import onnxruntime

    for name, path in clips(None):
        st = os.path.join(out_dir, "goldens", f"{name}.safetensors")
        js = os.path.join(JSON_DIR, f"{name}.json")
        if not (os.path.exists(st) and os.path.exists(js)):
            return False
        meta = ms_env.read_safetensors_metadata(st)
        want = expected_meta(name, path, onnxruntime.__version__)
        if any(meta.get(k) != v for k, v in want.items()):
            return False
    return True


# Tolerance of `--check` on regenerated tensors, times max(1, |value|). ONNX Runtime (MLAS)
# chooses its GEMM kernels, hence summation order, by the CPU's vector extensions, so another
# x86_64 CPU regenerates slightly different goldens: the openWakeWord goldens (TFLite/XNNPACK)
# moved by up to 5.9e-6 relative on one CI machine while bit-identical here. 1e-4 is a tenth
# of the Rust tests' tolerance on these goldens (logits within 1e-3,
# models/tests/moonshine_golden.rs); tokens and text must still agree exactly.
CHECK_TOL = 1e-4


def close(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False, float("inf")
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    d = np.abs(a64 - b64)
    ok = bool(np.all(d <= CHECK_TOL * np.maximum(1.0, np.abs(b64))))
    return ok, float(d.max()) if d.size else 0.0


def check(out_dir):
    def compare(_tmp, written):
        st, js = written
        name = os.path.basename(st)
        mine = os.path.join(out_dir, "goldens", name)
        mine_js = os.path.join(JSON_DIR, os.path.basename(js))
        if not (os.path.exists(mine) and os.path.exists(mine_js)):
            return name, None, ""
        new, meta_new = ms_env.read_safetensors(st)
        old, meta_old = ms_env.read_safetensors(mine)
        ok = set(new) == set(old) and meta_new == meta_old
        worst = 0.0
        for k in sorted(set(new) & set(old)):
            if k == "tokens":
                same = new[k].tobytes() == old[k].tobytes()
            else:
                same, d = close(new[k], old[k])
                worst = max(worst, d)
            if not same:
                print(f"  {name}: {k} differs")
                ok = False
        with open(js) as f1, open(mine_js) as f2:
            j_new, j_old = json.load(f1), json.load(f2)
        if (j_new["text"], j_new["tokens"], j_new["encoder_shape"]) != \
                (j_old["text"], j_old["tokens"], j_old["encoder_shape"]) or \
                abs(j_new["encoder_mean"] - j_old["encoder_mean"]) > CHECK_TOL or \
                abs(j_new["encoder_std"] - j_old["encoder_std"]) > CHECK_TOL:
            print(f"  {os.path.basename(js)} differs")
            ok = False
        with open(st, "rb") as f1, open(mine, "rb") as f2:
            identical = f1.read() == f2.read()
        return f"goldens/{name}", ok, \
            f": {'bit-identical' if identical else f'max abs diff {worst:.3g}'}"

    return ms_env.check_regenerated(
        "moonshine-goldens-", lambda tmp: generate(tmp, os.path.join(tmp, "json"), verbose=False),
        compare, "within tolerance")


def main():
    ap = regen_parser(
        __doc__, ms_env.MODELS_DIR, "regenerate",
        "do nothing when all outputs exist with matching metadata",
        out_help="output directory (goldens/ below)")
    args = regen_arguments(ap, check)
    if args.if_needed and up_to_date(args.out_dir):
        print("goldens: up to date")
        return
    for st, js in generate(args.out_dir, JSON_DIR):
        for p in (st, js):
            print(f"wrote {os.path.relpath(p, ms_env.REPO_ROOT)} ({os.path.getsize(p)} bytes)")


if __name__ == "__main__":
    main()
