"""Reads the report that `wyoming-bench stt -v` printed (its per-server block and its line per
sample) and prints one compact line per mode; with --check, fails unless both modes ran on
every sample.

  report.py LOG LABEL [--check --samples N --max-wer PCT] [--corpus DIR --skip-wer STEM...]

--check: both modes (non_streaming, streaming) reported, streaming not skipped ("NOT
SUPPORTED"), no server unreachable, ok=N and fail=0 in each mode and the pooled WER of each
mode at most PCT percent. Exit status 1 when a check fails (the reasons on stdout).

--skip-wer STEM (repeatable, with --corpus): the WER checked is then pooled over the other
samples, from the per-sample WERs and the word counts of the corpus texts (normalised as
wyoming-bench does: lowercase, punctuation to spaces); the report's WER over all samples is
still printed. stt.sh names here the clips that --vad-endpointing ends, by design, at a pause
inside them.
"""
import argparse
import os
import re
import sys

MODES = ("non_streaming", "streaming")
STATS = ("min", "mean", "median", "p95", "max")
ROWS = {"Total (ms)": "total", "TTFT (ms)": "ttft", "RTF (x)": "rtf"}


def number(cell):
    return None if cell == "n/a" else float(cell)


def parse(text):
    """{mode: {"ok", "fail", "total", "ttft", "rtf" (each {stat: value}), "wer", "cer",
    "sar" (percent)}} of the per-server block."""
    modes = {}
    current = None
    for line in text.splitlines():
        head = re.match(r"\[(\w+)\] ok=(\d+) fail=(\d+)$", line)
        if head:
            current = modes[head[1]] = {"ok": int(head[2]), "fail": int(head[3])}
            continue
        if line.startswith("="):  # the summary tables repeat what the block says
            current = None
        if current is None:
            continue
        for label, key in ROWS.items():
            if line.strip().startswith(label):
                cells = line.strip()[len(label):].split()
                current[key] = dict(zip(STATS, map(number, cells)))
        acc = re.match(r"\s+Accuracy\s+WER=(\S+)\s+CER=(\S+)\s+SAR=(\S+)", line)
        if acc:
            for key, cell in zip(("wer", "cer", "sar"), acc.groups()):
                current[key] = number(cell.rstrip("%"))
    return modes


def per_sample(text):
    """{mode: [(stem, WER percent or None for a failed sample), one per request]} of the -v
    lines, and
    {mode: [RTF of each sample that passed]} (its total time over its audio, to more digits
    than the report's table)."""
    wers, rtfs = {}, {}
    for line in text.splitlines():
        m = re.match(r"\[(\w+)\] r\d+ (\S+) (?:total=(\d+)ms .* WER=(\S+)% audio=(\S+)s|FAIL)",
                     line)
        if m:
            wers.setdefault(m[1], []).append(
                (m[2], None if m[4] in (None, "n/a") else float(m[4])))
            if m[3] is not None:
                rtfs.setdefault(m[1], []).append(int(m[3]) / 1000 / float(m[5]))
    return wers, rtfs


def words(path):
    text = open(path, encoding="utf-8").read().lower()
    return len(re.sub(r"[^\w\s]", " ", text).split())


def pooled_without(samples, corpus, skip):
    """The pooled WER (percent) of `samples` ([(stem, WER)]) without the stems of `skip`, and
    how many clips it covers; None when one of those requests failed."""
    errors = total = 0
    kept = [(stem, wer) for stem, wer in samples if stem not in skip]
    clips = len({stem for stem, _ in kept})
    for stem, wer in kept:
        if wer is None:
            return None, clips
        n = words(os.path.join(corpus, f"{stem}.txt"))
        errors += round(wer / 100 * n)
        total += n
    return (100 * errors / total if total else None), clips


def ms(stats, key):
    value = (stats or {}).get(key)
    return "n/a" if value is None else f"{value:.0f}ms"


def line(mode, s, rtfs):
    """One mode's figures; RTF is the mean over the samples (as the report's) from the -v
    lines, when they are there."""
    rtf = sum(rtfs) / len(rtfs) if rtfs else (s.get("rtf") or {}).get("mean")
    out = [f"{mode:<13} ok={s['ok']} fail={s['fail']}",
           f"WER={fmt_pct(s.get('wer'))}",
           f"CER={fmt_pct(s.get('cer'))}",
           f"RTF={'n/a' if rtf is None else f'{rtf:.3f}'}",
           f"total mean={ms(s.get('total'), 'mean')}"]
    if mode == "streaming":
        out.append(f"TTFT mean={ms(s.get('ttft'), 'mean')} p95={ms(s.get('ttft'), 'p95')}")
    return "  ".join(out)


def fmt_pct(value):
    return "n/a" if value is None else f"{value:.1f}%"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("log")
    p.add_argument("label")
    p.add_argument("--check", action="store_true")
    p.add_argument("--samples", type=int, default=0)
    p.add_argument("--max-wer", type=float, default=4.0)
    p.add_argument("--corpus")
    p.add_argument("--skip-wer", action="append", default=[], metavar="STEM")
    args = p.parse_args()
    text = open(args.log, encoding="utf-8").read()
    modes = parse(text)
    samples, rtfs = per_sample(text)
    print(f"{args.label}:")
    checked = {}
    for mode, s in modes.items():
        print(f"  {line(mode, s, rtfs.get(mode))}")
        checked[mode] = s.get("wer")
        if args.skip_wer:
            wer, n = pooled_without(samples.get(mode, []), args.corpus, set(args.skip_wer))
            checked[mode] = wer
            print(f"  {'':<13} WER={fmt_pct(wer)} over the {n} clips other than "
                  f"{', '.join(args.skip_wer)}")
    if not args.check:
        return 0
    problems = []
    for marker in ("NOT SUPPORTED", "[unreachable]"):
        for l in text.splitlines():
            if marker in l:
                problems.append(l.strip())
    for mode in MODES:
        s = modes.get(mode)
        if s is None:
            problems.append(f"{mode}: not in the report")
            continue
        if s["fail"] != 0 or s["ok"] != args.samples:
            problems.append(f"{mode}: ok={s['ok']} fail={s['fail']}, expected ok={args.samples}")
        if checked[mode] is None or checked[mode] > args.max_wer:
            problems.append(f"{mode}: WER {fmt_pct(checked[mode])} above {args.max_wer}%")
    for problem in problems:
        print(f"  FAIL: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
