#!/usr/bin/env python3
"""ONNX Runtime's time per Silero VAD window (512 samples, 32 ms): the benchmark peer of
neon's `time_vad` (benches/src/bin/time_vad.rs); benches/vad-peer.sh runs both alternately.

Usage (after tools/silero_vad/setup.sh; from any directory):
  bench_peer.py [--passes 30] [--threads 1] [--modes call bare] [--model onnx|op15] [--json F]
  bench_peer.py --compare NEON.json ORT.json [NEON.json ORT.json ...] [--json SUMMARY.json]

Timing: `silero_vad.onnx` of silero-vad 6.2.3 (`--model op15`: the 16 kHz-only
`silero_vad_16k_op15.onnx`, for information), one session opened as OnnxWrapper opens it (CPU
provider, `intra_op_num_threads` = --threads, `inter_op_num_threads` 1, default graph
optimisations; sv_env.ort_session), fed the windows of models/moonshine/clips/train_numbers.wav
as OnnxWrapper feeds them (sv_env.windows: 64 samples of context, then 512 new ones; the state
[2, 1, 128] carried; `sr` int64 16000), the state zeroed at every pass over the clip (183
windows), as for a new clip. Two ways of calling it, each call timed on its own
(perf_counter):

  call  `session.run(None, {"input": x, "state": state, "sr": sr})` with numpy arrays, as
        OnnxWrapper calls it (OnnxWrapper adds its own torch conversions, not timed here)
  bare  `session.run_with_iobinding` with the inputs and outputs bound to preallocated
        OrtValues (the state outputs alternate between two buffers; the next window is
        copied into the bound input before the timed call): the least Python per call

After one warm-up pass, --passes passes are timed with the garbage collector off; printed per
mode: the median per window (10th and 90th percentiles, minimum) over all calls, the real-time
factor (median / 32 ms) and the process CPU time per window over the passes
(time.process_time). The first timed pass is checked against the goldens
(models/vad/goldens/train_numbers.json, 1e-5).

--compare reads the JSON files of rounds (neon's and this script's, in pairs, as
benches/vad-peer.sh writes them) and prints, per round and as the median and range over the
rounds, the speed-up of ours: ONNX Runtime's median time per window / ours.
"""
import argparse
import gc
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sv_env  # noqa: E402
from machine import cpu_name  # noqa: E402

CLIP = "models/moonshine/clips/train_numbers.wav"
GOLDEN = os.path.join(sv_env.MODELS_DIR, "goldens", "train_numbers.json")
WINDOW_MS = 1000.0 * sv_env.WINDOW / sv_env.SAMPLE_RATE  # 32 ms
MODELS = {"onnx": sv_env.ONNX, "op15": sv_env.OP15_ONNX}
GOLDEN_TOL = 1e-5


def quantile(v, q):
    """The q quantile of sorted v (linear interpolation, as time_vad)."""
    at = q * (len(v) - 1)
    lo, hi = int(at), min(int(at) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (at - lo)


class Call:
    """session.run with numpy inputs, as OnnxWrapper."""

    def __init__(self, sess):
        import numpy as np

        self.sess = sess
        self.sr = np.array(sv_env.SAMPLE_RATE, dtype=np.int64)
        self.reset()

    def reset(self):
        import numpy as np

        self.state = np.zeros(sv_env.STATE_SHAPE, np.float32)

    def prepare(self, x):
        self.x = x[None, :]

    def __call__(self):
        out, self.state = self.sess.run(None, {"input": self.x, "state": self.state,
                                               "sr": self.sr})
        return out

    def probability(self, out):
        return float(out.reshape(()))


class Bare:
    """run_with_iobinding on preallocated OrtValues, the state ping-ponged."""

    def __init__(self, sess):
        import numpy as np
        import onnxruntime as ort

        value = ort.OrtValue.ortvalue_from_numpy
        self.sess = sess
        self.x = value(np.zeros((1, sv_env.CONTEXT + sv_env.WINDOW), np.float32))
        self.states = [value(np.zeros(sv_env.STATE_SHAPE, np.float32)) for _ in range(2)]
        self.out = value(np.zeros((1, 1), np.float32))
        self.sr = value(np.array(sv_env.SAMPLE_RATE, dtype=np.int64))
        self.bindings = []
        for cur in range(2):
            b = sess.io_binding()
            b.bind_ortvalue_input("input", self.x)
            b.bind_ortvalue_input("state", self.states[cur])
            b.bind_ortvalue_input("sr", self.sr)
            b.bind_ortvalue_output("output", self.out)
            b.bind_ortvalue_output("stateN", self.states[1 - cur])
            self.bindings.append(b)
        self.reset()

    def reset(self):
        import numpy as np

        self.states[0].update_inplace(np.zeros(sv_env.STATE_SHAPE, np.float32))
        self.cur = 0

    def prepare(self, x):
        self.x.update_inplace(x[None, :])

    def __call__(self):
        self.sess.run_with_iobinding(self.bindings[self.cur])
        self.cur = 1 - self.cur
        return self.out

    def probability(self, out):
        return float(out.numpy().reshape(()))


def measure(a):
    import numpy as np
    import onnxruntime as ort

    audio = sv_env.read_clip(CLIP)
    windows = sv_env.windows(audio)
    with open(GOLDEN) as f:
        golden = np.array(json.load(f)["probabilities"], np.float32)
    assert len(golden) == len(windows)
    path = os.path.join(sv_env.source_dir(), MODELS[a.model])
    sess = sv_env.ort_session(path, threads=a.threads)
    load = os.getloadavg()[0]
    print(f"# Silero VAD peer: ONNX Runtime {ort.__version__} on {MODELS[a.model]} (silero-vad "
          f"{sv_env.SOURCE_VERSION}), {cpu_name()}, {os.cpu_count()} logical CPUs, "
          f"{len(windows)} windows of {CLIP} per pass, median per window over {a.passes} "
          f"passes after 1 warm-up pass, load average {load:.2f} at start")
    results = []
    for mode in a.modes:
        runner = {"call": Call, "bare": Bare}[mode](sess)

        def one_pass(times, probs):
            runner.reset()
            c0 = time.process_time()
            for k, x in enumerate(windows):
                runner.prepare(x)
                t0 = time.perf_counter()
                out = runner()
                times.append(time.perf_counter() - t0)
                if probs is not None:
                    probs.append(runner.probability(out))
            return time.process_time() - c0

        one_pass([], None)
        times, cpu, probs = [], 0.0, []
        gc.disable()
        try:
            for p in range(a.passes):
                cpu += one_pass(times, probs if p == 0 else None)
        finally:
            gc.enable()
        diff = float(np.max(np.abs(np.array(probs, np.float32) - golden)))
        if diff > GOLDEN_TOL:
            raise SystemExit(f"{mode}: probabilities {diff} from the goldens")
        times.sort()
        us = [t * 1e6 for t in times]
        name = (f"ONNX Runtime {ort.__version__} ({mode}, {a.model}, {a.threads} thread"
                f"{'s' if a.threads > 1 else ''})")
        r = {"name": name, "median_us": quantile(us, 0.5), "p10_us": quantile(us, 0.1),
             "p90_us": quantile(us, 0.9), "min_us": us[0],
             "cpu_us": cpu / (a.passes * len(windows)) * 1e6, "calls": len(us),
             "max_abs_diff": diff}
        print(f"{name}: {r['median_us']:.2f} us per window (p10 {r['p10_us']:.2f}, p90 "
              f"{r['p90_us']:.2f}, min {r['min_us']:.2f}; real-time factor "
              f"{r['median_us'] / 1e3 / WINDOW_MS:.5f}; process CPU {r['cpu_us']:.2f} us; "
              f"{r['calls']} calls; max |p - golden| {diff:.1e})")
        results.append(r)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"side": "ort", "windows": len(windows), "passes": a.passes,
                       "load": f"{load:.2f}", "results": results}, f, indent=1)
            f.write("\n")


def compare(files, out):
    """Speed-ups per round from (neon, ort) JSON pairs; median and range over the rounds."""
    if len(files) % 2:
        raise SystemExit("--compare takes pairs: NEON.json ORT.json ...")
    rounds = []
    for i in range(0, len(files), 2):
        sides = {}
        for path in files[i:i + 2]:
            with open(path) as f:
                d = json.load(f)
            sides[d["side"]] = {r["name"]: r["median_us"] for r in d["results"]}
        if set(sides) != {"neon", "ort"}:
            raise SystemExit(f"round {i // 2 + 1}: expected one neon and one ort file")
        rounds.append(sides)
    ours = [n for n in rounds[0]["neon"] if all(n in r["neon"] for r in rounds)]
    peers = [n for n in rounds[0]["ort"] if all(n in r["ort"] for r in rounds)]

    def summary(values):
        return statistics.median(values), min(values), max(values)

    print(f"== {len(rounds)} rounds: median time per window in us (min-max over the rounds)")
    table = {}
    for n in ours + peers:
        side = "neon" if n in ours else "ort"
        v = [r[side][n] for r in rounds]
        table[n] = v
        med, lo, hi = summary(v)
        print(f"  {n}: {med:.2f} ({lo:.2f}-{hi:.2f}); rounds: "
              + ", ".join(f"{x:.2f}" for x in v))
    print("== speed-up of ours: ONNX Runtime time / ours, per round; median (min-max)")
    ratios = {}
    for o in ours:
        for p in peers:
            v = [r["ort"][p] / r["neon"][o] for r in rounds]
            med, lo, hi = summary(v)
            ratios[f"{p} / {o}"] = v
            print(f"  {p} / {o}: {med:.2f}x ({lo:.2f}-{hi:.2f}); rounds: "
                  + ", ".join(f"{x:.2f}" for x in v))
    if out:
        with open(out, "w") as f:
            json.dump({"times_us": table, "speedups": ratios}, f, indent=1)
            f.write("\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--passes", type=int, default=30)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--modes", nargs="+", default=["call", "bare"], choices=["call", "bare"])
    p.add_argument("--model", default="onnx", choices=sorted(MODELS))
    p.add_argument("--json")
    p.add_argument("--compare", nargs="+", metavar="FILE")
    a = p.parse_args()
    if a.compare:
        compare(a.compare, a.json)
    else:
        if a.passes < 1 or a.threads < 1:
            raise SystemExit("--passes and --threads must be >= 1")
        measure(a)


if __name__ == "__main__":
    main()
