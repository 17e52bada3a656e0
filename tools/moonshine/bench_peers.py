"""Peer benchmark for Moonshine base-en: ONNX Runtime on beckett.wav, the input of neon's
`benches/benches/moonshine.rs` and `time_moonshine`, and the comparison of both.

ONNX Runtime runs on the CPU provider with intra_op_num_threads = --threads (default 1),
inter_op_num_threads = 1, sequential execution and every graph optimisation
(ORT_ENABLE_ALL), two model variants:

  int8   the shipped decoder_model_merged.ort / encoder_model.ort (moonshine-cpp 0.1.4): int8
         weights, dequantised to f32 by the graph on every call
  f32    the plain-f32 ONNX copies of `convert.py --onnx-f32 DIR` (the same graphs with each
         dequantisation replaced by its f32 result)

Workloads (the same as time_moonshine's; beckett.wav as int16 / 32768, 159 414 samples, 413
encoder frames):

  encoder       one encoder run (input and output bound once: run_with_iobinding)
  step          one cached decoder step at position 7: fed token 7 of beckett's greedy sequence
                (4383) with the self-attention cache of tokens 0..6 and the cross-attention K/V of
                the first step, all bound once (run_with_iobinding), the same call repeated
  first_logits  encoder + the first decoder step (the uncached branch, which also computes the
                cross-attention K/V that neon's encode computes): audio to the first logits,
                plain `run` calls
  transcribe    encoder + greedy decoding to EOS (15 steps), plain `run` calls feeding each
                step's cache to the next

Each workload: one untimed call, then `reps` timed ones (perf_counter_ns, garbage collector off);
median, quartiles and minimum in ms. Before timing, each variant's greedy tokens are checked
against the golden ones (models/moonshine/goldens/beckett.json). `--clip beckett30` runs the
same workloads on beckett.wav three times in a row (478 242 samples, 29.9 s: the 30 s segment
bound); its tokens are not checked against a golden file but written to the JSON, and
`--compare` requires both sides' tokens to be equal. Its `step` is fed beckett's first tokens
as well (its own greedy sequence departs from them at the sixth token; the step's cost does
not depend on the token values).

Usage (after tools/moonshine/fetch.sh, setup.sh --bench and convert.py ... --onnx-f32 DIR; the
one command running everything is benches/moonshine-peers.sh):

  target/py/moonshine/bin/python tools/moonshine/bench_peers.py [--onnx-f32 DIR] [--json OUT]
      [--scale X] [--threads N] [--clip beckett|beckett30]
  target/py/moonshine/bin/python tools/moonshine/bench_peers.py --compare OURS.json PEERS.json
      [OURS.json PEERS.json ...]

`--compare` takes (time_moonshine --json, bench_peers --json) pairs, one per round, and prints
per-round and median ratios (neon time / ONNX Runtime time). When ours also timed its
cross-attention keys and values alone (`cross_kv`), it prints the encoder network, ours minus
them, against ONNX Runtime's encoder graph (which leaves them to its first decoder step).
"""
import argparse
import gc
import hashlib
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ms_env  # noqa: E402

BECKETT = os.path.join(ms_env.MODELS_DIR, "beckett.wav")
GOLDEN = os.path.join(ms_env.MODELS_DIR, "goldens", "beckett.json")
DEFAULT_ONNX_F32 = os.path.join(ms_env.REPO_ROOT, "target", "py", "moonshine-onnx")
STEP_POSITION = 7
WORKLOADS = ["encoder", "step", "first_logits", "transcribe"]
# Timed calls per workload and variant (before --scale).
REPS = {
    "int8": {"encoder": 15, "step": 60, "first_logits": 15, "transcribe": 5},
    "f32": {"encoder": 15, "step": 200, "first_logits": 15, "transcribe": 7},
}
# The target of the decoder step (neon / ONNX Runtime f32).
STEP_TARGET = 0.5


THREADS = 1


def session(path):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


class Peer:
    """One model variant: encoder and merged decoder sessions (see ms_env.OrtMoonshine for the
    merged decoder's protocol)."""

    def __init__(self, encoder_path, decoder_path):
        self.encoder = session(encoder_path)
        self.decoder = session(decoder_path)
        self.out_names = [o.name for o in self.decoder.get_outputs()]

    def encode(self, audio):
        return self.encoder.run(["last_hidden_state"], {"input_values": audio[None, :]})[0][0]

    def feeds(self, token, enc, cache):
        feeds = {"input_ids": np.array([[token]], np.int64),
                 "encoder_hidden_states": np.ascontiguousarray(enc[None])}
        for past, present in ms_env.decoder_cache_names():
            feeds[past] = (cache[present] if cache is not None
                           else np.zeros((1, 8, 0, 52), np.float32))
        feeds["use_cache_branch"] = np.array([cache is not None])
        return feeds

    def step(self, token, enc, cache):
        outs = dict(zip(self.out_names,
                        self.decoder.run(self.out_names, self.feeds(token, enc, cache))))
        if cache is not None:  # the cached branch returns placeholders for the cross K/V
            for name in outs:
                if ".encoder." in name:
                    outs[name] = cache[name]
        return outs["logits"][0, -1], outs

    def transcribe(self, audio, max_new):
        enc = self.encode(audio)
        tokens, cache = [ms_env.BOS], None
        while len(tokens) - 1 < max_new:
            logits, cache = self.step(tokens[-1], enc, cache)
            tokens.append(int(np.argmax(logits)))
            if tokens[-1] == ms_env.EOS:
                break
        return tokens

    def bound_encoder(self, audio):
        """The encoder with its input and output bound once: returns the call to time."""
        import onnxruntime as ort

        binding = self.encoder.io_binding()
        x = np.ascontiguousarray(audio[None, :])
        binding.bind_cpu_input("input_values", x)
        frames = ms_env.encoder_frames(len(audio))
        y = ort.OrtValue.ortvalue_from_numpy(np.empty((1, frames, 416), np.float32))
        binding.bind_ortvalue_output("last_hidden_state", y)
        keep = (x, y)

        def call():
            self.encoder.run_with_iobinding(binding)
            return keep

        return call

    def bound_step(self, audio, tokens, position):
        """The cached step fed tokens[position] after tokens[0..position], every input and the
        outputs of known shape bound once: returns the call to time and its logits."""
        import onnxruntime as ort

        enc = self.encode(audio)
        cache = None
        for token in tokens[:position]:
            _, cache = self.step(token, enc, cache)
        feeds = self.feeds(tokens[position], enc, cache)
        binding = self.decoder.io_binding()
        keep = []
        for name, value in feeds.items():
            value = np.ascontiguousarray(value)
            keep.append(value)
            binding.bind_cpu_input(name, value)
        logits = np.empty((1, 1, ms_env.VOCAB), np.float32)
        for name in self.out_names:
            if name == "logits":
                shape = logits.shape
            elif ".decoder." in name:
                shape = (1, 8, position + 1, 52)
            else:  # the cached branch's empty cross-K/V placeholders: let ONNX Runtime allocate
                binding.bind_output(name, "cpu")
                continue
            buf = logits if name == "logits" else np.empty(shape, np.float32)
            value = ort.OrtValue.ortvalue_from_numpy(buf)
            keep.append(value)
            binding.bind_ortvalue_output(name, value)

        def call():
            self.decoder.run_with_iobinding(binding)
            return keep

        call()
        return call, logits[0, 0].copy()


def timed(reps, fn):
    """One untimed call, then `reps` timed ones; times in ms."""
    fn()
    out = []
    gc.disable()
    try:
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            fn()
            out.append((time.perf_counter_ns() - t0) / 1e6)
    finally:
        gc.enable()
    return out


def stats(ms):
    q1, med, q3 = np.percentile(ms, [25, 50, 75])
    return {"median_ms": round(float(med), 4), "q1_ms": round(float(q1), 4),
            "q3_ms": round(float(q3), 4), "min_ms": round(float(min(ms)), 4), "n": len(ms)}


def machine():
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "cpus_usable": len(os.sched_getaffinity(0)), "cpu_model": None,
            "loadavg_before": os.getloadavg()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return info


def measure(args):
    import onnxruntime as ort

    golden = json.load(open(GOLDEN))
    tokens = golden["tokens"]
    _, audio = ms_env.read_wav(BECKETT)
    if args.clip == "beckett30":
        audio = np.tile(audio, 3)
    audio = np.ascontiguousarray(audio, np.float32)
    pkg = ms_env.source_dir()
    f32_dir = args.onnx_f32
    paths = {
        "int8": (os.path.join(pkg, ms_env.ENCODER), os.path.join(pkg, ms_env.DECODER)),
        "f32": (os.path.join(f32_dir, "encoder_model_f32.onnx"),
                os.path.join(f32_dir, "decoder_model_merged_f32.onnx")),
    }
    for enc, dec in paths.values():
        for p in (enc, dec):
            if not os.path.exists(p):
                raise SystemExit(f"{p} missing: run tools/moonshine/setup.sh --bench and "
                                 f"convert.py models/moonshine --if-needed --onnx-f32 {f32_dir}")
    info = {"runtime": "onnxruntime", "onnxruntime": ort.__version__, "machine": machine(),
            "clip": args.clip, "threads": THREADS, "samples": len(audio),
            "frames": ms_env.encoder_frames(len(audio)),
            "sha256_f32le": hashlib.sha256(audio.astype("<f4").tobytes()).hexdigest(),
            "step_position": STEP_POSITION, "step_token": tokens[STEP_POSITION],
            "models": {k: [os.path.relpath(p, ms_env.REPO_ROOT) for p in v]
                       for k, v in paths.items()},
            "results": {}}
    budget = ms_env.token_budget(len(audio))
    for variant, (enc_path, dec_path) in paths.items():
        peer = Peer(enc_path, dec_path)
        got = peer.transcribe(audio, budget)
        if args.clip == "beckett30":
            info.setdefault("tokens", got)
            if info["tokens"] != got:
                raise SystemExit(f"{variant}: tokens {got} differ from the other variant's")
        elif got != tokens:
            raise SystemExit(f"{variant}: tokens {got} differ from the golden {tokens}")
        else:
            info["tokens"] = got
        reps = {w: max(3, round(n * args.scale)) for w, n in REPS[variant].items()}
        encoder = peer.bound_encoder(audio)
        step, logits = peer.bound_step(audio, tokens, STEP_POSITION)
        if args.clip == "beckett" and int(np.argmax(logits)) != tokens[STEP_POSITION + 1]:
            raise SystemExit(f"{variant}: the bound step does not predict the golden token")

        def first_logits():
            enc = peer.encode(audio)
            return peer.step(ms_env.BOS, enc, None)

        fns = {"encoder": encoder, "step": step, "first_logits": first_logits,
               "transcribe": lambda: peer.transcribe(audio, budget)}
        info["results"][f"ort_{variant}"] = {w: stats(timed(reps[w], fns[w])) for w in WORKLOADS}
        del peer, encoder, step
        gc.collect()
    return info


def print_measured(info, out=sys.stdout):
    print(f"ONNX Runtime {info['onnxruntime']}, {info['threads']} thread(s), {info['clip']} "
          f"({info['samples']} "
          f"samples, {info['frames']} frames); step at position {info['step_position']}", file=out)
    print(f"{'variant':<10} {'workload':<14} {'median ms':>10} {'q1':>10} {'q3':>10} {'n':>5}",
          file=out)
    for variant, rows in info["results"].items():
        for w in WORKLOADS:
            s = rows[w]
            print(f"{variant:<10} {w:<14} {s['median_ms']:>10.3f} {s['q1_ms']:>10.3f} "
                  f"{s['q3_ms']:>10.3f} {s['n']:>5}", file=out)


def compare(files):
    if len(files) % 2:
        raise SystemExit("--compare takes pairs: OURS.json PEERS.json ...")
    rounds = []
    for ours_path, peers_path in zip(files[::2], files[1::2]):
        ours, peers = json.load(open(ours_path)), json.load(open(peers_path))
        for key in ("clip", "threads", "samples", "frames", "step_position", "step_token",
                    "tokens"):
            if ours[key] != peers[key]:
                raise SystemExit(f"{ours_path} / {peers_path}: {key} differs "
                                 f"({ours[key]} vs {peers[key]})")
        med = {"neon": {w: ours["results"]["neon"][w]["median_ms"] for w in WORKLOADS}}
        # Ours also times its cross-attention keys and values alone (part of its encoder,
        # in ONNX Runtime's first decoder step): `encoder - cross_kv` is the network that
        # ONNX Runtime's encoder graph runs.
        cross = ours["results"]["neon"].get("cross_kv")
        if cross is not None:
            med["neon"]["cross_kv"] = cross["median_ms"]
        for variant, rows in peers["results"].items():
            med[variant] = {w: rows[w]["median_ms"] for w in WORKLOADS}
        rounds.append(med)
    first = json.load(open(files[0]))
    peers0 = json.load(open(files[1]))
    print(f"neon ({first['backend']}) vs ONNX Runtime {peers0['onnxruntime']} "
          f"({first['threads']} thread(s) each), {first['clip']} ({first['frames']} frames), "
          f"step at position {first['step_position']}; "
          f"{len(rounds)} round(s), medians in ms; ratio = neon time / ONNX Runtime time")
    hdr = (f"{'workload':<14} {'neon':>9} {'ORT f32':>9} {'ORT int8':>9} "
           f"{'neon/f32':>9} {'neon/int8':>10}")
    summary = {}
    for i, med in enumerate(rounds + [None]):
        if med is None:
            if len(rounds) == 1:
                break
            label = "median over rounds"
            med = {k: {w: float(np.median([r[k][w] for r in rounds])) for w in WORKLOADS}
                   for k in rounds[0]}
        else:
            label = f"round {i + 1}"
        print(f"\n{label}\n{hdr}")
        for w in WORKLOADS:
            n, f, q = med["neon"][w], med["ort_f32"][w], med["ort_int8"][w]
            print(f"{w:<14} {n:>9.3f} {f:>9.3f} {q:>9.3f} {n / f:>9.3f} {n / q:>10.3f}")
        summary = {w: {"neon_ms": med["neon"][w], "ort_f32_ms": med["ort_f32"][w],
                       "ort_int8_ms": med["ort_int8"][w],
                       "neon_over_f32": med["neon"][w] / med["ort_f32"][w],
                       "neon_over_int8": med["neon"][w] / med["ort_int8"][w]}
                   for w in WORKLOADS}
    if all("cross_kv" in r["neon"] for r in rounds):
        nets = [r["neon"]["encoder"] - r["neon"]["cross_kv"] for r in rounds]
        ratios = [n / r["ort_f32"]["encoder"] for n, r in zip(nets, rounds)]
        net = float(np.median(nets))
        f32 = float(np.median([r["ort_f32"]["encoder"] for r in rounds]))
        print(f"\nencoder network (neon encoder - cross_kv, like ONNX Runtime's encoder): "
              f"{net:.3f} ms, {net / f32:.3f} of ORT f32's encoder (per round: "
              f"{', '.join(f'{x:.3f}' for x in ratios)})")
        summary["encoder_network"] = {"neon_ms": net, "ort_f32_ms": f32,
                                      "neon_over_f32": net / f32}
    ratio = summary["step"]["neon_over_f32"]
    verdict = "met" if ratio <= STEP_TARGET else "NOT met"
    print(f"\ndecoder step: neon / ONNX Runtime f32 = {ratio:.3f} (target <= {STEP_TARGET}: "
          f"{verdict})")
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onnx-f32", default=DEFAULT_ONNX_F32,
                    help="directory of convert.py --onnx-f32 (default target/py/moonshine-onnx)")
    ap.add_argument("--json", help="write the results as JSON here")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every repetition count (0.2 for a quick look)")
    ap.add_argument("--threads", type=int, default=1,
                    help="ONNX Runtime's intra_op_num_threads (default 1)")
    ap.add_argument("--clip", choices=["beckett", "beckett30"], default="beckett",
                    help="beckett.wav, or beckett.wav three times in a row (29.9 s)")
    ap.add_argument("--compare", nargs="+", metavar="JSON",
                    help="(ours, peers) JSON pairs, one per round: print the ratios")
    args = ap.parse_args()
    global THREADS
    THREADS = args.threads
    if args.compare:
        summary = compare(args.compare)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(summary, f, indent=1)
        return
    info = measure(args)
    print_measured(info)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(info, f, indent=1)
    else:
        print(json.dumps(info["results"]))


if __name__ == "__main__":
    main()
