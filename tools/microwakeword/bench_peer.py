#!/usr/bin/env python3
"""pymicro-wakeword 2.5.0's time on the four official microWakeWord models: the benchmark peer
of neon's `time_micro` (benches/src/bin/time_micro.rs); benches/micro-peers.sh runs both
alternately.

Usage (in the environment of tools/microwakeword/setup.sh; from any directory):
  bench_peer.py [--passes 20] [--json F]
  bench_peer.py --compare NEON.json PEER.json [NEON.json PEER.json ...] [--json SUMMARY.json]

Input per model m: its recording models/tests/data/microwakeword/<m>.wav followed by 16,000
zero samples, as goldens.py streams it; reference: models/microwakeword/goldens/<m>.safetensors.
Workloads (one warm-up pass, then --passes passes, the garbage collector off; every pass a
fresh stream):

  step  TfLiteInterpreterInvoke alone (perf_counter around the call), on the golden's int8
        input of each step (`input.<m>`, copied in before the timed call) with the model's
        state carried, in an interpreter of the wheel's libtensorflowlite_c created with
        TfLiteInterpreterOptionsSetNumThreads(1) (pymicro-wakeword passes no options, i.e. the
        library's default thread count; a model this small runs on one thread either way).
        A fresh interpreter per pass (the state lives in its variables). Reported: the
        median wall time per step and the mean process CPU time per step (`step CPU`:
        time.process_time around the call), in microseconds. Checked: the uint8 outputs of the first timed pass
        equal `output.<m>`.
  push  pymicro-wakeword's whole process, unmodified: MicroWakeWordFeatures.process_streaming
        of the padded clip in chunks of 1,024 samples and MicroWakeWord.process_streaming_prob
        of each feature frame (its own interpreter), as wyoming-microwakeword runs a model.
        Reported: process CPU time (time.process_time) per second of audio in microseconds,
        the median over the passes. Checked: the probabilities of the first timed pass equal
        `prob.<m>`.

--compare reads the JSON files of rounds (neon's and this script's, in pairs, as
benches/micro-peers.sh writes them) and prints `| workload | ours | peer | ours/peer |` rows:
per workload the median over the rounds of each side and the median of the per-round ratios
(with their range). `step` is wall time, `step CPU` and `push` CPU time.
"""
import argparse
import ctypes
import gc
import json
import os
import statistics
import sys
import time

import numpy as np
from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures

TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(TOOLS_DIR), "common"))
from repo_paths import REPO_ROOT, models_dir  # noqa: E402
from safetensors_io import read_safetensors  # noqa: E402
from wav_io import read_pcm16_mono  # noqa: E402

MODELS = ["alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"]
PAD = 16000
CHUNK = 1024


def golden(model):
    """(padded clip as int16, step inputs [S, N, 40] int8, outputs [S] uint8, probs [S])."""
    tensors, _ = read_safetensors(
        os.path.join(models_dir("microwakeword"), "goldens", f"{model}.safetensors"))
    wav = os.path.join(REPO_ROOT, "models", "tests", "data", "microwakeword", f"{model}.wav")
    audio = np.concatenate([read_pcm16_mono(wav), np.zeros(PAD, dtype=np.int16)])
    return (audio, tensors[f"input.{model}"], tensors[f"output.{model}"],
            tensors[f"prob.{model}"])


def detector(model):
    return MicroWakeWord.from_config(os.path.join(models_dir("microwakeword"), f"{model}.json"))


def time_step(model, inputs, outputs, passes):
    """Median microseconds per TfLiteInterpreterInvoke (module docstring)."""
    ref = detector(model)
    lib = ref.lib
    lib.TfLiteInterpreterOptionsCreate.restype = ctypes.c_void_p
    lib.TfLiteInterpreterOptionsSetNumThreads.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    lib.TfLiteInterpreterOptionsDelete.argtypes = [ctypes.c_void_p]
    tflite = lib.TfLiteModelCreateFromFile(ref.model_path)
    options = lib.TfLiteInterpreterOptionsCreate()
    lib.TfLiteInterpreterOptionsSetNumThreads(options, 1)
    calls, cpu = [], 0.0
    out = np.empty(1, dtype=np.uint8)
    out_ptr = out.ctypes.data_as(ctypes.c_void_p)
    xs = [np.ascontiguousarray(x) for x in inputs]
    invoke = lib.TfLiteInterpreterInvoke
    for p in range(passes + 1):
        interp = lib.TfLiteInterpreterCreate(tflite, options)
        if lib.TfLiteInterpreterAllocateTensors(interp) != 0:
            raise SystemExit(f"{model}: AllocateTensors failed")
        x_t = lib.TfLiteInterpreterGetInputTensor(interp, 0)
        y_t = lib.TfLiteInterpreterGetOutputTensor(interp, 0)
        got = []
        for x in xs:
            lib.TfLiteTensorCopyFromBuffer(x_t, x.ctypes.data_as(ctypes.c_void_p), x.nbytes)
            c0, t0 = time.process_time(), time.perf_counter()
            status = invoke(interp)
            dt = time.perf_counter() - t0
            dc = time.process_time() - c0
            if status != 0:
                raise SystemExit(f"{model}: Invoke failed")
            lib.TfLiteTensorCopyToBuffer(y_t, out_ptr, 1)
            got.append(int(out[0]))
            if p > 0:
                calls.append(dt)
                cpu += dc
        if p == 1 and got != [int(v) for v in outputs]:
            raise SystemExit(f"{model}: step outputs differ from the golden")
        lib.TfLiteInterpreterDelete(interp)
    lib.TfLiteInterpreterOptionsDelete(options)
    lib.TfLiteModelDelete(tflite)
    ref.close()
    return statistics.median(calls) * 1e6, cpu / len(calls) * 1e6


def time_push(model, audio, probs, passes):
    """Median process CPU microseconds per second of audio of the whole process."""
    seconds = len(audio) / 16000
    chunks = [audio[i:i + CHUNK].tobytes() for i in range(0, len(audio), CHUNK)]
    per_pass = []
    for p in range(passes + 1):
        features, word = MicroWakeWordFeatures(), detector(model)
        got = []
        c0 = time.process_time()
        for chunk in chunks:
            for f in features.process_streaming(chunk):
                prob = word.process_streaming_prob(f)
                got.append(prob)
        cpu = time.process_time() - c0
        word.close()
        if p == 1:
            # process_streaming_prob returns 0.0 between steps too; the golden has one per step.
            stepped = [g for k, g in enumerate(got) if (k + 1) % word.stride == 0]
            if stepped != [float(v) for v in probs]:
                raise SystemExit(f"{model}: probabilities differ from the golden")
        if p > 0:
            per_pass.append(cpu / seconds * 1e6)
    return statistics.median(per_pass)


def measure(a):
    gc.disable()
    results = []
    for model in MODELS:
        audio, inputs, outputs, probs = golden(model)
        step, step_cpu = time_step(model, inputs, outputs, a.passes)
        push = time_push(model, audio, probs, a.passes)
        print(f"{model}: step {step:.2f} us (median per invoke; CPU {step_cpu:.2f} us, mean; "
              f"1 thread, {len(inputs)} steps "
              f"per pass); push {push:.1f} us CPU per second of audio; outputs equal to the "
              "golden")
        results += [{"name": f"step {model}", "us": step},
                    {"name": f"step CPU {model}", "us": step_cpu},
                    {"name": f"push {model}", "us": push}]
    gc.enable()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"side": "peer", "passes": a.passes, "results": results}, f)
            f.write("\n")


def compare(files, out):
    if len(files) % 2:
        raise SystemExit("--compare takes pairs: NEON.json PEER.json ...")
    rounds, backend = [], None
    for i in range(0, len(files), 2):
        sides = {}
        for path in files[i:i + 2]:
            with open(path) as f:
                d = json.load(f)
            sides[d["side"]] = {r["name"]: r["us"] for r in d["results"]}
            backend = d.get("backend", backend)
        if set(sides) != {"neon", "peer"}:
            raise SystemExit(f"round {i // 2 + 1}: expected one neon and one peer file")
        rounds.append(sides)
    names = [n for n in rounds[0]["neon"] if all(n in r["neon"] and n in r["peer"]
                                                  for r in rounds)]
    print(f"== {len(rounds)} rounds; ours: step on {backend}; step: median us per step, "
          "push: CPU us per second of audio; ours/peer: median of the per-round ratios "
          "(min-max)")
    print("| workload | ours | peer | ours/peer |")
    print("|---|---|---|---|")
    table = {}
    for n in names:
        ours = [r["neon"][n] for r in rounds]
        peer = [r["peer"][n] for r in rounds]
        ratio = [o / p for o, p in zip(ours, peer)]
        table[n] = {"ours": ours, "peer": peer, "ratio": ratio}
        print(f"| {n} | {statistics.median(ours):.2f} | {statistics.median(peer):.2f} | "
              f"{statistics.median(ratio):.3f} ({min(ratio):.3f}-{max(ratio):.3f}) |")
    if out:
        with open(out, "w") as f:
            json.dump({"backend": backend, "rounds": len(rounds), "us": table}, f, indent=1)
            f.write("\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--passes", type=int, default=20)
    p.add_argument("--json")
    p.add_argument("--compare", nargs="+", metavar="FILE")
    a = p.parse_args()
    if a.compare:
        compare(a.compare, a.json)
    elif a.passes < 1:
        raise SystemExit("--passes must be >= 1")
    else:
        measure(a)


if __name__ == "__main__":
    main()
