"""Reference speech segments for models/src/vad/segments.rs: runs silero-vad's own
`get_speech_timestamps` (PyPI `silero-vad` 6.2.3, MIT, `silero_vad/utils_vad.py`) on committed
probability sequences and writes models/vad/goldens/segments.json, which
models/tests/vad_segments.rs compares with the Rust segmenter.

The function is run unmodified, from the pinned wheel (fetched with `pip download --no-deps`
into target/py/cache and sha256-checked by sv_env.py, as for convert.py), with real PyTorch.
The network is replaced by a stub model object that answers each call with the next given
probability (as a float32 tensor, as the real model does): the function calls
`model.reset_states()` once, then `model(chunk, 16000)` once per 512-sample window of the audio
(the last window zero-padded) and reads `.item()`. The audio itself is zeros of the stated
length; only its length matters to the function. The stub checks the calls (one reset, one
call per window, 512 samples each).

Each case is run twice: in samples, and with `return_seconds=True` for its time resolutions.
Probabilities are float32 values, written as the shortest decimal that reads back as the same
float32 (also when read as a double first); `null` is NaN.

Cases: synthetic sequences that reach each branch of the function (named and described in the
JSON), seeded random sequences with varied parameters, and the real-clip probabilities of
models/vad/goldens/<clip>.json (ONNX Runtime on silero_vad.onnx, written by goldens.py) when
present, with the clip's length read from the WAV it names. A table of Python's
`round(samples / 16000, decimals)` checks the seconds conversion.

Environment (not the tools/silero_vad venv, which has no torch): a throwaway venv with
`pip install torch numpy packaging safetensors` (torch 2.15.0, numpy 2.4.6, packaging 26.4,
safetensors 0.8.0 when generated; safetensors only because tools/common imports it). PyTorch
with its CUDA dependencies is several GB, so CI does not rerun this script: it reads the
committed JSON.

Usage: python tools/silero_vad/segments_reference.py [--check]
  --check: regenerate in memory and compare with the committed file (exit 1 if different).
"""
import argparse
import glob
import importlib.util
import json
import math
import os
import random
import sys
import wave

import numpy as np
import torch

# The pinned wheel, the paths and the 16 kHz window of the other Silero VAD tools.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sv_env  # noqa: E402
from sv_env import REPO_ROOT, SAMPLE_RATE, UTILS, WINDOW  # noqa: E402

GOLDENS_DIR = os.path.join(sv_env.MODELS_DIR, "goldens")
OUTPUT = os.path.join(GOLDENS_DIR, "segments.json")
PACKAGE = sv_env.SOURCE_PACKAGE
VERSION = sv_env.SOURCE_VERSION
UTILS_SHA256 = sv_env.FILE_SHA256[UTILS]

# The function's parameters that shape segments, with its defaults (None: neg_threshold's
# default max(threshold - 0.15, 0.01); max_speech_duration_s is written as null for infinity).
DEFAULTS = {
    "threshold": 0.5,
    "neg_threshold": None,
    "min_speech_duration_ms": 250,
    "min_silence_duration_ms": 100,
    "speech_pad_ms": 30,
    "max_speech_duration_s": math.inf,
    "min_silence_at_max_speech": 98,
    "use_max_poss_sil_at_max_speech": True,
}


def load_utils():
    """silero_vad/utils_vad.py of the pinned wheel as a module (the package's __init__ is not
    run: it only re-exports). The wheel is unpacked and checked as the other tools do it."""
    root = sv_env.source_dir()
    spec = importlib.util.spec_from_file_location("silero_vad_utils_6_2_3",
                                                  os.path.join(root, UTILS))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ProbabilityModel:
    """Stands in for the network: each call returns the next probability (float32, shape
    [1, 1] like the real model's output)."""

    def __init__(self, probabilities):
        self.probabilities = probabilities
        self.calls = 0
        self.resets = 0

    def reset_states(self):
        self.resets += 1
        self.calls = 0

    def __call__(self, chunk, sampling_rate):
        assert sampling_rate == SAMPLE_RATE, sampling_rate
        assert tuple(chunk.shape) == (WINDOW,), chunk.shape
        p = self.probabilities[self.calls]
        self.calls += 1
        return torch.tensor([[math.nan if p is None else p]], dtype=torch.float32)


def f32(x):
    """The float32 value nearest x, as a Python float (exact); None stays None (NaN)."""
    return None if x is None else float(np.float32(x))


def seq(*parts):
    """Concatenates (value, count) runs; a bare value is one window."""
    out = []
    for part in parts:
        value, count = part if isinstance(part, tuple) else (part, 1)
        out += [f32(value)] * count
    return out


def case(name, note, probabilities, total=None, resolutions=(1,), **params):
    """One case; `total` defaults to a whole number of windows."""
    for key in params:
        assert key in DEFAULTS, key
    return {
        "name": name,
        "note": note,
        "params": {**DEFAULTS, **params},
        "total_samples": len(probabilities) * WINDOW if total is None else total,
        "probabilities": probabilities,
        "resolutions": list(resolutions),
    }


def synthetic_cases():
    above_neg = float(np.nextafter(np.float32(0.35), np.float32(1)))
    cases = [
        case("empty", "no audio, no windows", [], 0),
        case("silence_only", "never reaches the threshold", seq((0.1, 40), (0.49, 5))),
        case("burst_7_dropped", "7 windows of speech = 3584 samples, not over 250 ms (4000)",
             seq((0.0, 10), (0.9, 7), (0.0, 10))),
        case("burst_8_kept", "8 windows = 4096 samples: kept",
             seq((0.0, 10), (0.9, 8), (0.0, 10))),
        case("gaps_against_min_silence",
             "silences of 3 and 4 windows (1536 < 1600 samples) do not end speech, 5 do",
             seq((0.9, 20), (0.1, 3), (0.9, 20), (0.1, 4), (0.9, 20), (0.1, 5), (0.9, 20),
                 (0.1, 30)), resolutions=(0, 1, 2, 3)),
        case("hysteresis",
             "values between neg_threshold and threshold neither start, cancel nor extend a "
             "silence; a silence is measured from its first window below neg_threshold",
             seq((0.9, 10), (0.4, 6), (0.9, 5), 0.2, (0.4, 4), 0.3, (0.9, 3), 0.1, (0.45, 3),
                 0.1, (0.4, 2), (0.6, 2), (0.4, 8), (0.0, 10))),
        case("threshold_boundaries",
             "0.5 is speech; float32 0.35 lies below 0.35 (silence), the next float32 above "
             "it does not",
             seq((0.5, 12), (above_neg, 8), (0.0, 4), (0.9, 12), (0.35, 6), (0.0, 10))),
        case("nan_probabilities",
             "NaN compares false with both thresholds (null = NaN)",
             seq((0.9, 10), (None, 6), 0.1, (None, 4), 0.1, (None, 3), (0.9, 12), (None, 20)),
             ),
        case("nan_onset", "NaN never opens speech", seq((None, 10), (0.9, 12), (0.0, 8))),
        case("speech_to_the_end_partial_window",
             "an open run ends at the audio's length (24 windows, the last holding 100 "
             "samples)",
             seq((0.0, 5), (0.9, 19)), total=23 * WINDOW + 100, resolutions=(1, 2, 3)),
        case("open_at_end_too_short",
             "open at the end for 7 windows + 400 samples = 3984 <= 4000: dropped",
             seq((0.0, 5), (0.9, 8)), total=12 * WINDOW + 400),
        case("open_at_end_just_kept", "7 windows + 417 samples = 4001 > 4000: kept",
             seq((0.0, 5), (0.9, 8)), total=12 * WINDOW + 417),
        case("speech_from_the_first_window", "start padding clamped at 0",
             seq((0.9, 15), (0.0, 10))),
        case("pad_clamped_at_the_end",
             "min silence 0 ends the run at its first silent window; the end + 30 ms goes "
             "past the audio's length",
             seq((0.0, 3), (0.9, 10), 0.0), total=13 * WINDOW + 10,
             min_silence_duration_ms=0),
        case("close_segments_share_the_gap",
             "pad 100 ms: gaps under 3200 samples are split in halves (odd gaps too)",
             seq((0.0, 5), (0.9, 10), (0.0, 3), (0.9, 10), (0.0, 4), (0.9, 12), (0.0, 7),
                 (0.9, 9), (0.0, 12)),
             total=72 * WINDOW - 77, speech_pad_ms=100, min_silence_duration_ms=50),
        case("close_segments_odd_pad", "pad 45 ms = 720 samples, min silence 20 ms",
             seq((0.0, 2), (0.9, 9), (0.0, 2), (0.9, 9), (0.0, 3), (0.9, 9), (0.0, 5)),
             speech_pad_ms=45, min_silence_duration_ms=20, min_speech_duration_ms=100),
        case("speech_pad_0", "no padding",
             seq((0.9, 10), (0.0, 6), (0.9, 20), (0.0, 5), (0.9, 3)), speech_pad_ms=0),
        case("min_speech_0", "every run longer than 0 samples is kept",
             seq((0.0, 2), 0.9, (0.0, 6), (0.9, 2), (0.0, 6)), min_speech_duration_ms=0),
        case("max_speech_no_silence",
             "1 s limit, continuous speech: cut at the window itself (no silence to cut at); "
             "the next run opens one window later and shares the gap",
             seq((0.9, 100)), max_speech_duration_s=1.0),
        case("max_speech_at_silence",
             "1 s limit: cut at the remembered silence; the new run starts where speech came "
             "back",
             seq((0.9, 10), (0.1, 4), (0.9, 40), (0.0, 8)), max_speech_duration_s=1.0),
        case("max_speech_longest_silence",
             "the longest remembered silence wins, the first of equal length",
             seq((0.9, 4), (0.1, 4), (0.9, 3), (0.1, 4), (0.9, 2), (0.2, 4), (0.4, 1),
                 (0.9, 30), (0.0, 10)),
             max_speech_duration_s=1.2),
        case("max_speech_short_silences_ignored",
             "silences of 3 windows (1536 samples) are not over 98 ms: no cut point",
             seq((0.9, 8), (0.1, 3), (0.9, 8), (0.1, 3), (0.9, 30), (0.0, 8)),
             max_speech_duration_s=1.0),
        case("max_speech_min_silence_at_max_0",
             "min_silence_at_max_speech 0: any cancelled silence is a cut point",
             seq((0.9, 8), (0.1, 1), (0.9, 8), (0.1, 2), (0.9, 30), (0.0, 8)),
             max_speech_duration_s=1.0, min_silence_at_max_speech=0),
        case("max_speech_cut_then_fallback",
             "0.6 s limit: a cut at the early silence, then the new run (no silence in it) "
             "is cut at a window, twice",
             seq((0.9, 3), (0.1, 5), (0.9, 40), (0.0, 6)), max_speech_duration_s=0.6,
             min_silence_duration_ms=400),
        case("max_speech_legacy",
             "use_max_poss_sil_at_max_speech false, min silence 300 ms: cut at the latest "
             "silence over 98 ms, the new run where speech came back",
             seq((0.9, 10), (0.1, 5), (0.9, 6), (0.1, 6), (0.9, 30), (0.0, 12)),
             max_speech_duration_s=1.0, min_silence_duration_ms=300,
             use_max_poss_sil_at_max_speech=False),
        case("max_speech_legacy_in_silence",
             "legacy cut while the silence still lasts: no run is open after it",
             seq((0.9, 20), (0.1, 8), (0.4, 4), (0.9, 20), (0.0, 12)),
             max_speech_duration_s=1.0, min_silence_duration_ms=600,
             use_max_poss_sil_at_max_speech=False),
        case("max_speech_legacy_no_silence", "legacy, no silence: cut at the window",
             seq((0.9, 70)), max_speech_duration_s=1.5,
             use_max_poss_sil_at_max_speech=False),
        case("max_speech_and_min_silence_0",
             "min silence 0: a cut and an end of speech in the same window",
             seq((0.9, 6), (0.1, 5), (0.9, 25), 0.1, (0.9, 3), (0.0, 3)),
             max_speech_duration_s=0.8, min_silence_duration_ms=0,
             min_speech_duration_ms=0),
    ]
    # One smooth sequence under several thresholds.
    rng = random.Random(1234)
    walk, p = [], 0.2
    for _ in range(300):
        p = min(1.0, max(0.0, p + rng.uniform(-0.18, 0.18)))
        walk.append(f32(round(p, 3)))
    for threshold, neg in [(0.5, None), (0.3, None), (0.8, None), (0.1, None), (0.05, None),
                           (0.6, 0.2), (0.5, 0.5)]:
        name = f"walk_threshold_{threshold}" + ("" if neg is None else f"_neg_{neg}")
        cases.append(case(name, "a random walk of probabilities", walk,
                          total=len(walk) * WINDOW - 300, threshold=threshold,
                          neg_threshold=neg))
    return cases


def random_cases():
    """Seeded random sequences (runs of speech, silence, in-between values, NaN) with varied
    parameters."""
    rng = random.Random(20240610)
    cases = []
    for k in range(8):
        params = {
            "threshold": rng.choice([0.5, 0.5, 0.3, 0.7]),
            "min_speech_duration_ms": rng.choice([0, 100, 250]),
            "min_silence_duration_ms": rng.choice([0, 50, 100, 300]),
            "speech_pad_ms": rng.choice([0, 10, 30, 100]),
            "max_speech_duration_s": rng.choice([math.inf, 0.5, 1.0, 2.0]),
            "min_silence_at_max_speech": rng.choice([0, 98]),
            "use_max_poss_sil_at_max_speech": rng.choice([True, False]),
        }
        t = params["threshold"]
        neg = max(t - 0.15, 0.01)
        probs = []
        windows = rng.randrange(150, 260)
        while len(probs) < windows:
            kind = rng.randrange(10)
            for _ in range(rng.randrange(1, 25)):
                if kind < 4:
                    probs.append(f32(round(rng.uniform(t, 1.0), 3)))
                elif kind < 8:
                    probs.append(f32(round(rng.uniform(0.0, neg), 3)))
                elif kind == 8:
                    probs.append(f32(round(rng.uniform(neg, t), 3)))
                else:
                    probs.append(rng.choice([f32(t), None, f32(round(rng.random(), 3))]))
        probs = probs[:windows]
        total = (windows - 1) * WINDOW + rng.randrange(1, WINDOW + 1)
        cases.append(case(f"random_{k}", "seeded random runs", probs, total=total, **params))
    return cases


def clip_cases():
    """The real-clip probabilities, with the defaults and a 2 s limit."""
    cases = []
    for path in sorted(glob.glob(os.path.join(GOLDENS_DIR, "*.json"))):
        if os.path.abspath(path) == OUTPUT:
            continue
        with open(path) as f:
            golden = json.load(f)
        if not {"clip", "window", "probabilities"} <= golden.keys():
            continue
        assert golden["window"] == WINDOW, path
        wav_path = os.path.join(REPO_ROOT, golden["clip"])
        if not os.path.exists(wav_path):
            print(f"skip {golden['clip']}: not present")
            continue
        with wave.open(wav_path) as w:
            assert w.getframerate() == SAMPLE_RATE and w.getnchannels() == 1, wav_path
            total = w.getnframes()
        assert golden.get("samples", total) == total, path
        probs = [f32(p) for p in golden["probabilities"]]
        assert probs == golden["probabilities"], f"{path}: not float32 values"
        assert len(probs) == -(-total // WINDOW), path
        name = os.path.splitext(os.path.basename(path))[0]
        source = os.path.relpath(path, REPO_ROOT)
        cases.append(case(f"clip_{name}", f"{source} ({golden['clip']})", probs, total=total,
                          resolutions=(1, 2)))
        cases.append(case(f"clip_{name}_max_1s", f"{source}, 1 s limit, threshold 0.4", probs,
                          total=total, threshold=0.4, max_speech_duration_s=1.0))
    return cases


def run_case(utils, c):
    params = dict(c["params"])
    probs = c["probabilities"]
    total = c["total_samples"]
    assert len(probs) == -(-total // WINDOW), c["name"]
    audio = torch.zeros(total)

    def timestamps(**extra):
        model = ProbabilityModel(probs)
        out = utils.get_speech_timestamps(audio, model, sampling_rate=SAMPLE_RATE, **params,
                                          **extra)
        assert model.resets == 1 and model.calls == len(probs), (c["name"], model.calls)
        return out

    segments = [[s["start"], s["end"]] for s in timestamps()]
    for start, end in segments:
        assert isinstance(start, int) and isinstance(end, int), c["name"]
    seconds = {}
    for r in c["resolutions"]:
        seconds[str(r)] = [[s["start"], s["end"]]
                           for s in timestamps(return_seconds=True, time_resolution=r)]
    out = dict(c)
    del out["resolutions"]
    if math.isinf(out["params"]["max_speech_duration_s"]):
        out["params"] = {**out["params"], "max_speech_duration_s": None}
    out["segments"] = segments
    out["seconds"] = seconds
    check_plain_floats([out["params"], seconds], c["name"])
    return out


def rounding_table():
    """Python's round(samples / 16000, decimals) at ties and elsewhere."""
    rng = random.Random(7)
    samples = sorted({0, 1, 7, 8, 24, 40, 80, 400, 800, 1200, 2400, 4000, 5600, 8000, 24000,
                      12345, 16001, 159414, *(rng.randrange(1, 2_000_000) for _ in range(40)),
                      *(800 * rng.randrange(1, 2000) for _ in range(20)),
                      *(8 * rng.randrange(1, 20000) for _ in range(20))})
    table = [[s, d, round(s / SAMPLE_RATE, d)] for s in samples for d in range(0, 6)]
    check_plain_floats(table, "rounding")
    return table


def generate():
    utils = load_utils()
    cases = synthetic_cases() + random_cases() + clip_cases()
    names = [c["name"] for c in cases]
    assert len(set(names)) == len(names)
    out = {
        "source": f"get_speech_timestamps of {PACKAGE} {VERSION} ({UTILS}, sha256 "
                  f"{UTILS_SHA256}) run by tools/silero_vad/segments_reference.py with torch "
                  f"{torch.__version__.split('+')[0]} and a stub model returning the "
                  "probabilities",
        "sample_rate": SAMPLE_RATE,
        "window": WINDOW,
        "cases": share_probabilities([run_case(utils, c) for c in cases]),
        "rounding": rounding_table(),
    }
    return dump(out)


def probabilities_json(values):
    """float32 values written as the shortest decimal that reads back as the same float32
    (numpy's), NaN as null. Each is checked to survive being read as a double and then
    rounded to float32, as the Rust test reads it."""
    out = []
    for v in values:
        if v is None:
            out.append("null")
            continue
        text = str(np.float32(v))
        assert float(np.float32(float(text))) == v, (v, text)
        out.append(text)
    return "[" + ", ".join(out) + "]"


def check_plain_floats(value, where):
    """Every float in `value` is written with at most 15 significant digits and no exponent
    past 22, so that any JSON reader (serde_json's default, fast one too) reads it exactly."""
    if isinstance(value, float):
        digits = repr(value).lower().split("e")[0].replace(".", "").replace("-", "").lstrip("0")
        exponent = math.floor(math.log10(abs(value))) if value else 0
        assert len(digits) <= 15 and -22 <= exponent <= 22, (where, value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            check_plain_floats(v, where)
    elif isinstance(value, dict):
        for v in value.values():
            check_plain_floats(v, where)


def share_probabilities(cases):
    """A case whose probabilities equal an earlier case's names that case instead
    (`probabilities_from`), to keep the file small."""
    first = {}
    out = []
    for c in cases:
        key = json.dumps(c["probabilities"])
        if key in first:
            c = {k: v for k, v in c.items() if k != "probabilities"}
            c = {**{k: c[k] for k in ("name", "note", "params", "total_samples")},
                 "probabilities_from": first[key],
                 **{k: c[k] for k in ("segments", "seconds")}}
        else:
            first[key] = c["name"]
        out.append(c)
    return out


def dump(value):
    """JSON with one case per block and the number lists on one line each."""
    def scalar(x):
        return json.dumps(x, allow_nan=False)

    lines = ["{"]
    for key in ("source", "sample_rate", "window"):
        lines.append(f"  {json.dumps(key)}: {scalar(value[key])},")
    lines.append('  "cases": [')
    for i, c in enumerate(value["cases"]):
        lines.append("    {")
        items = list(c.items())
        for j, (k, v) in enumerate(items):
            comma = "," if j + 1 < len(items) else ""
            text = probabilities_json(v) if k == "probabilities" else json.dumps(
                v, allow_nan=False)
            lines.append(f"      {json.dumps(k)}: {text}{comma}")
        lines.append("    }" + ("," if i + 1 < len(value["cases"]) else ""))
    lines.append("  ],")
    lines.append(f'  "rounding": {json.dumps(value["rounding"], allow_nan=False)}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed file instead of writing it")
    args = parser.parse_args()
    text = generate()
    if args.check:
        with open(OUTPUT) as f:
            same = f.read() == text
        print(f"{'ok' if same else 'DIFF'} {os.path.relpath(OUTPUT, REPO_ROOT)}")
        sys.exit(0 if same else 1)
    with open(OUTPUT, "w") as f:
        f.write(text)
    cases = text.count('"name": ')
    print(f"wrote {os.path.relpath(OUTPUT, REPO_ROOT)}: {cases} cases")


if __name__ == "__main__":
    main()
