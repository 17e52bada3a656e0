#!/usr/bin/env python3
"""ONNX Runtime's time per second of audio on the sanoTTS decoder: the benchmark peer.

Usage: bench_peer.py [--frames 125] [--reps 50] [--threads 1 2] [--forms unfolded folded]

For each graph form of onnx_peer.py (unfolded: projection then conv_embed, as a training export
has it; folded: one input conv, the same work as our plan) and each intra-op thread count: one
ORT session (CPU provider, sequential, default graph optimisations), 5 warm-up runs, then
`--reps` timed runs of `session.run` on the seeded test hidden states [192, frames] of the
synthetic voice; prints the median (and min, max) in ms per second of audio (frames / 125 s of
audio; 125 frames = 1 s at hop 128, 16 kHz) and the real-time factor, one line per case, ready
for BENCHMARKS.md. Also the median process CPU time per second of audio: with 1 thread it is
the compute time even when other jobs share the cores (wall time then includes waiting for a
core); with 2 threads it adds both threads' time, spinning included. Input conversion and output copy are inside the timing (both are
`session.run`); session creation is not.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, HERE)
import onnx_peer  # noqa: E402
from machine import cpu_name  # noqa: E402
import voice as voice_mod  # noqa: E402

FRAMES_PER_SECOND = 125  # 16000 / 128
WARMUP = 5


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=FRAMES_PER_SECOND)
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--forms", nargs="+", default=["unfolded", "folded"],
                   choices=["unfolded", "folded"])
    a = p.parse_args()
    import numpy as np
    import onnxruntime as ort

    v = voice_mod.voice()
    h = voice_mod.hidden(a.frames)
    x = np.ascontiguousarray(h, np.float32)[None]
    seconds = a.frames / FRAMES_PER_SECOND
    print(f"# sanoTTS decoder peer: ONNX Runtime {ort.__version__}, {cpu_name()}, "
          f"{os.cpu_count()} logical CPUs, T = {a.frames} frames ({seconds:g} s of audio), "
          f"median of {a.reps} runs after {WARMUP} warm-up runs, load average "
          f"{os.getloadavg()[0]:.2f} at start")
    for form in a.forms:
        model = onnx_peer.build_model(v, folded=form == "folded")
        for threads in a.threads:
            sess = onnx_peer.session(model, threads)
            for _ in range(WARMUP):
                sess.run(["audio"], {"hidden": x})
            times, cpu = [], []
            for _ in range(a.reps):
                c0, t0 = time.process_time(), time.perf_counter()
                sess.run(["audio"], {"hidden": x})
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            med = statistics.median(times) / seconds * 1e3
            lo, hi = min(times) / seconds * 1e3, max(times) / seconds * 1e3
            cpu_med = statistics.median(cpu) / seconds * 1e3
            print(f"ONNX Runtime {ort.__version__} ({form} graph, {threads} thread"
                  f"{'s' if threads > 1 else ''}): {med:.2f} ms per second of audio "
                  f"(min {lo:.2f}, max {hi:.2f}; real-time factor {med / 1e3:.4f}; "
                  f"process CPU {cpu_med:.2f} ms)")


if __name__ == "__main__":
    main()
