#!/usr/bin/env python3
"""Golden outputs of the unmodified openwakeword 0.6.0 pipeline for neon's tests.

Runs `openwakeword.Model(inference_framework="tflite")` with the five pretrained heads and the
feature models from the wyoming-openwakeword 1.8.2 wheel (explicit paths), on TFLite through
ai-edge-litert, on every clip in models/openwakeword/clips/. Writes (f32 unless stated):

goldens/init.safetensors
  init_features [41, 96]   the feature buffer right after `Model()` with `np.random.seed(0)`
                           just before it (embeddings of 4 s of numpy-random int16 noise); the
                           mel buffer starts as 76 rows of ones. Every run below starts here.

goldens/<clip>.safetensors
  mel_db [F, 32]           melspectrogram model output in dB (before openwakeword's /10 + 2) for
                           ONE call on the whole clip, unpadded; F = (N - 512) // 160 + 1
  mel_db_window [8, 32]    the same for one call on the clip's first 1760 samples
  features [E, 96]         every embedding appended to the feature buffer while streaming the
                           padded clip in 1280-sample chunks (one per chunk, in order)
  scores.<head> [C]        `predict()` return values, one per call, for 1280-sample chunks
  scores_640.<head>, scores_1000.<head>, scores_4000.<head>   the same for other chunk sizes
  mix_sizes [M] (i32)      a seeded random sequence of chunk sizes covering the whole padded
                           clip (sizes 0..=4000; the 11th is always 0, an empty array)
  scores_mix.<head> [M]    `predict()` return values for those chunks, one per call

"Padded clip" = 1 s of zeros + clip + 1 s of zeros (as `Model.predict_clip` pads). Fixed-size
runs feed chunks exactly as `predict_clip` does: `data[i:i + size]` for
`i in range(0, len(data) - size, size)` (so a final chunk of exactly `size` samples is dropped
too). Each run uses a fresh Model built after `np.random.seed(0)`; its initial features are
compared with init_features.

What one `predict(x)` call returns (openwakeword 0.6.0, no VAD/patience/debounce/verifier):
samples join a pending buffer; if, with them, k >= 1 whole 1280-sample chunks are pending, ONE
mel call covers the last k*1280 + 480 samples, k embeddings are appended (each on the last 76
mel rows as of its chunk), and for each head the call returns the MAX over k head evaluations
(on the 16 feature rows ending at each new embedding). Leftover samples (< 1280) wait for the
next call. With k = 0 the call returns the head's previous return value (0 if none). Whatever
the case, the first 5 calls of a Model return 0 (the count is of calls, not chunks). This file
re-derives every saved score from the recorded features with exactly these rules, once with the
TFLite heads (must agree exactly) and once with convert.py's float64 numpy heads on the
committed weights (prints the largest difference).

`--check` regenerates into a temporary directory and compares with the committed files
(mel and features within 1e-6 relative, scores within 2e-6 absolute: see `check`; reports
whether they are bit-identical).
"""
import argparse
import os
import sys
import wave

import numpy as np

import oww_env

SEED = 0
PAD = 16000
CHUNK_SIZES = [1280, 640, 1000, 4000]
MIX_SEED = 20240301


def build_model(oww, src):
    """A fresh Model with all five heads; numpy's global RNG seeded first (the noise)."""
    np.random.seed(SEED)
    model = oww.Model(
        wakeword_models=[os.path.join(src, f"{h}.tflite") for h in oww_env.HEADS],
        inference_framework="tflite",
        melspec_model_path=os.path.join(src, "melspectrogram.tflite"),
        embedding_model_path=os.path.join(src, "embedding_model.tflite"),
    )
    if list(model.models) != oww_env.HEADS:
        raise SystemExit(f"unexpected model names {list(model.models)}")
    return model


def record_embeddings(model):
    """Wraps the preprocessor's embedding call (an instance attribute) to log its outputs."""
    log = []
    inner = model.preprocessor.embedding_model_predict

    def logged(x):
        y = inner(x)
        log.append(np.asarray(y, np.float32).reshape(-1, 96).copy())
        return y

    model.preprocessor.embedding_model_predict = logged
    return log


def read_clip(path):
    with wave.open(path, "rb") as f:
        if (f.getnchannels(), f.getsampwidth(), f.getframerate()) != (1, 2, 16000):
            raise SystemExit(f"{path}: not 16 kHz mono s16")
        return np.frombuffer(f.readframes(f.getnframes()), dtype="<i2").astype(np.int16)


def mix_sizes(total, rng):
    """Chunk sizes summing to `total`, drawn from 0, 1..1279, 1280 and 1281..4000 (so some calls
    process k = 0, 1, 2 or 3 chunks); the 11th call is always an empty array (size 0)."""
    sizes = []
    while sum(sizes) < total:
        kind = rng.choice(4, p=[0.1, 0.4, 0.1, 0.4])
        size = [0, int(rng.integers(1, 1280)), 1280, int(rng.integers(1281, 4001))][kind]
        sizes.append(min(size, total - sum(sizes)))
    sizes.insert(10, 0)
    return sizes


def stream(oww, src, chunks, init_features):
    """Feeds `chunks` (list of arrays) to predict() on a fresh Model.

    Returns (scores {head: [calls]}, features [E, 96], embeddings per call).
    """
    model = build_model(oww, src)
    if model.preprocessor.feature_buffer.tobytes() != init_features.tobytes():
        raise SystemExit("initial features differ between two seeded Models")
    log = record_embeddings(model)
    scores = {h: [] for h in oww_env.HEADS}
    per_call = []
    for chunk in chunks:
        before = len(log)
        out = model.predict(chunk)
        per_call.append(len(log) - before)
        for h in oww_env.HEADS:
            scores[h].append(np.float32(out[h]))
    features = np.concatenate(log) if log else np.zeros((0, 96), np.float32)
    tail = model.preprocessor.feature_buffer[-min(len(features), 16):]
    if tail.tobytes() != features[-len(tail):].astype(tail.dtype).tobytes():
        raise SystemExit("logged embeddings do not match the feature buffer")
    return {h: np.array(v, np.float32) for h, v in scores.items()}, features, per_call


def simulate(head_fn, init_features, features, per_call):
    """Re-derives predict()'s per-call scores from the features (see the module docstring).

    head_fn(head, windows [n, 16, 96]) -> [n] scores.
    """
    buf = np.concatenate([init_features, features])
    out = {}
    for h in oww_env.HEADS:
        prev, values, end = 0.0, [], len(init_features)
        for call, k in enumerate(per_call):
            if k > 0:
                windows = np.stack([buf[e - 16:e] for e in range(end + 1, end + k + 1)])
                value = float(np.max(head_fn(h, windows)))
                end += k
            else:
                value = prev
            if call < 5:
                value = 0.0
            values.append(value)
            prev = value
        out[h] = np.array(values)
    return out


def head_functions(src):
    """Two head evaluators: the TFLite heads (as openwakeword runs them) and convert.py's
    float64 numpy heads on the committed safetensors weights."""
    import convert
    from ai_edge_litert.interpreter import Interpreter

    interpreters = {}
    for h in oww_env.HEADS:
        it = Interpreter(model_path=os.path.join(src, f"{h}.tflite"), num_threads=1)
        it.allocate_tensors()
        interpreters[h] = it

    def tflite(h, windows):
        it = interpreters[h]
        out = []
        for w in windows:
            it.set_tensor(it.get_input_details()[0]["index"], w[None].astype(np.float32))
            it.invoke()
            out.append(float(it.get_tensor(it.get_output_details()[0]["index"]).reshape(())))
        return np.array(out)

    weights = {h: oww_env.read_safetensors(os.path.join(oww_env.MODELS_DIR, f"{h}.safetensors"))[0]
               for h in oww_env.HEADS}

    def numpy64(h, windows):
        return convert.head_score(weights[h], windows)[0]

    return tflite, numpy64


def clip_goldens(oww, src, path, init_features, head_fns, rng):
    clip = read_clip(path)
    data = np.concatenate([np.zeros(PAD, np.int16), clip, np.zeros(PAD, np.int16)])
    tensors, report = {}, {}

    model = build_model(oww, src)
    identity = lambda x: x  # noqa: E731 (keep the raw dB: openwakeword's default is x / 10 + 2)
    tensors["mel_db"] = np.asarray(
        model.preprocessor._get_melspectrogram(clip, melspec_transform=identity), np.float32)
    tensors["mel_db_window"] = np.asarray(
        model.preprocessor._get_melspectrogram(clip[:1760], melspec_transform=identity), np.float32)
    expected_frames = (len(clip) - 512) // 160 + 1
    if tensors["mel_db"].shape != (expected_frames, 32) or tensors["mel_db_window"].shape != (8, 32):
        raise SystemExit(f"mel shapes {tensors['mel_db'].shape} {tensors['mel_db_window'].shape}")

    runs = {}
    for size in CHUNK_SIZES:
        chunks = [data[i:i + size] for i in range(0, len(data) - size, size)]
        runs[size] = stream(oww, src, chunks, init_features)
    # predict_clip itself must give the 1280 scores.
    model = build_model(oww, src)
    via_clip = model.predict_clip(data, padding=0, chunk_size=1280)
    for h in oww_env.HEADS:
        if np.array([p[h] for p in via_clip], np.float32).tobytes() != runs[1280][0][h].tobytes():
            raise SystemExit(f"predict_clip and the chunk loop disagree for {h}")

    sizes = mix_sizes(len(data), rng)
    offsets = np.cumsum([0] + sizes)
    chunks = [data[offsets[i]:offsets[i + 1]] for i in range(len(sizes))]
    runs["mix"] = stream(oww, src, chunks, init_features)

    features = runs[1280][1]
    tensors["features"] = features
    for key, (scores, feats, per_call) in runs.items():
        suffix = "" if key == 1280 else f"_{key}"
        for h in oww_env.HEADS:
            tensors[f"scores{suffix}.{h}"] = scores[h]
        sim = simulate(head_fns[0], init_features, feats, per_call)
        err = max(float(np.abs(sim[h] - scores[h]).max()) for h in oww_env.HEADS)
        if err != 0.0:
            raise SystemExit(f"{path} chunking {key}: documented predict() rules off by {err}")
        sim64 = simulate(head_fns[1], init_features, feats, per_call)
        err64 = {h: float(np.abs(sim64[h] - scores[h]).max()) for h in oww_env.HEADS}
        n = min(len(feats), len(features))
        report[key] = {
            "calls": len(per_call),
            "embeddings": len(feats),
            "max_calls_k": max(per_call),
            "zero_k_calls": per_call.count(0),
            "numpy64_err": err64,
            "features_vs_1280": float(np.abs(feats[:n] - features[:n]).max()),
            "features_bitexact_1280": feats[:n].tobytes() == features[:n].tobytes(),
            "peaks": {h: (float(scores[h].max()), int(scores[h].argmax())) for h in oww_env.HEADS},
        }
    tensors["mix_sizes"] = np.array(sizes, np.int32)
    scores_mix = {f"scores_mix.{h}": tensors.pop(f"scores_mix.{h}") for h in oww_env.HEADS}
    tensors.update(scores_mix)  # mix_sizes next to its scores
    return tensors, report, clip


def versions():
    from importlib.metadata import version

    return {p: version(p) for p in ("openwakeword", "ai-edge-litert", "numpy")}


def generate(out_dir, verbose=True):
    src = oww_env.source_models_dir()
    oww = oww_env.import_openwakeword()
    vers = versions()
    head_fns = head_functions(src)
    common = {
        "generator": "tools/openwakeword/goldens.py",
        "pipeline": f"openwakeword {vers['openwakeword']} Model(inference_framework='tflite'), "
                    f"ai-edge-litert {vers['ai-edge-litert']}, numpy {vers['numpy']}",
        "source": f"{oww_env.SOURCE_PACKAGE} {oww_env.SOURCE_VERSION}, models "
                  f"{', '.join(['melspectrogram', 'embedding_model'] + oww_env.HEADS)}",
        "heads": ",".join(oww_env.HEADS),
    }
    written = []

    model = build_model(oww, src)
    init_features = model.preprocessor.feature_buffer.astype(np.float32)
    path = os.path.join(out_dir, "goldens", "init.safetensors")
    oww_env.write_safetensors(path, {"init_features": init_features}, dict(
        common,
        init_features="feature buffer right after Model() when np.random.seed(0) precedes it: "
                      "embeddings of np.random.randint(-1000, 1000, 64000).astype(int16); "
                      "the mel buffer starts as 76 rows of 1.0",
    ))
    written.append(path)

    rng = np.random.default_rng(MIX_SEED)
    clip_dir = os.path.join(oww_env.MODELS_DIR, "clips")
    for name in sorted(os.listdir(clip_dir)):
        if not name.endswith(".wav"):
            continue
        clip_path = os.path.join(clip_dir, name)
        tensors, report, clip = clip_goldens(oww, src, clip_path, init_features, head_fns, rng)
        meta = dict(
            common,
            clip=f"models/openwakeword/clips/{name}",
            clip_sha256=oww_env.sha256_file(clip_path),
            clip_samples=str(len(clip)),
            padding="1 s (16000 samples) of zeros before and after the clip for all streaming runs",
            chunking="fixed sizes as predict_clip: data[i:i+size] for i in "
                     "range(0, len(data) - size, size); mix: consecutive chunks of mix_sizes "
                     "covering all of data",
            mel_db="one melspectrogram call on the unpadded clip, dB before / 10 + 2",
            mel_db_window="one melspectrogram call on clip[:1760]",
            features="embeddings appended during the 1280-chunk run, in order",
            seed="np.random.seed(0) before each Model(); see init.safetensors",
        )
        path = os.path.join(out_dir, "goldens", name[:-4] + ".safetensors")
        oww_env.write_safetensors(path, tensors, meta)
        written.append(path)
        if verbose:
            print(f"{name}: {len(clip)} samples, mel {tensors['mel_db'].shape}, "
                  f"features {tensors['features'].shape}")
            for key, r in report.items():
                same = ("bit-identical" if r["features_bitexact_1280"]
                        else f"max abs diff {r['features_vs_1280']:.2g}")
                peaks = ", ".join(f"{h.split('_v0')[0]} {p:.4g}@{i}"
                                  for h, (p, i) in r["peaks"].items())
                print(f"  chunks {key}: {r['calls']} calls, {r['embeddings']} embeddings, "
                      f"max k {r['max_calls_k']}, k=0 calls {r['zero_k_calls']}, "
                      f"features vs 1280: {same}")
                print(f"    peaks: {peaks}")
                print("    float64 numpy heads vs these scores: " + ", ".join(
                    f"{h.split('_v0')[0]} {e:.2g}" for h, e in r["numpy64_err"].items()))
    return written


SCORE_ATOL = 2e-6


def check():
    exact = 0

    def compare(tmp, path):
        nonlocal exact
        rel = os.path.relpath(path, tmp)
        mine = os.path.join(oww_env.MODELS_DIR, rel)
        if not os.path.exists(mine):
            return rel, None, ""
        new, meta_new = oww_env.read_safetensors(path)
        old, meta_old = oww_env.read_safetensors(mine)
        ok = set(new) == set(old) and meta_new == meta_old
        worst = 0.0
        for k in set(new) & set(old):
            a, b = new[k], old[k]
            if a.shape != b.shape or a.dtype != b.dtype:
                ok = False
                print(f"  {rel}: {k} shape/dtype differs")
                continue
            d = np.abs(a.astype(np.float64) - b.astype(np.float64))
            scale = np.maximum(np.abs(b.astype(np.float64)), 1e-30)
            worst = max(worst, float((d / scale).max()) if d.size else 0.0)
            if k.startswith("scores"):
                # Scores are sigmoid outputs: a value near 0 carries its logit's absolute error
                # as a relative one, so they are compared absolutely. TFLite's XNNPACK picks
                # its kernels (and summation order) by the CPU's vector extensions: on another
                # x86_64 CPU the regenerated scores moved by up to 1.2e-6 (hey_mycroft, the
                # head most sensitive to f32 rounding) and 5.9e-6 relative, while mel and
                # features stayed within 1e-6 relative. SCORE_ATOL is a fifth of the
                # tightest score tolerance of the Rust tests (1e-5, models/tests/common).
                bad = d > SCORE_ATOL
                what = f"{SCORE_ATOL:g} absolute"
            else:
                bad = d > 1e-6 * scale
                what = "1e-6 relative"
            if np.any(bad):
                ok = False
                print(f"  {rel}: {k} differs beyond {what} (max {float(d.max()):.3g})")
        with open(path, "rb") as f1, open(mine, "rb") as f2:
            identical = f1.read() == f2.read()
        exact += identical
        return rel, ok, f": {'bit-identical' if identical else f'max relative diff {worst:.3g}'}"

    return oww_env.check_regenerated(
        "oww-goldens-", lambda tmp: generate(tmp, verbose=False), compare,
        lambda: f"within tolerance ({exact} bit-identical)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=oww_env.MODELS_DIR, help="output directory (goldens/ below)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary directory and compare with the committed files")
    args = ap.parse_args()
    if args.check:
        sys.exit(check())
    for path in generate(args.out):
        print(f"wrote {os.path.relpath(path, oww_env.REPO_ROOT)} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
