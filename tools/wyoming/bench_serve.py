"""CPU time per second of audio of a Wyoming wake-word server: `neon serve` next to
wyoming-openwakeword 1.8.2 (the newest release on PyPI, with its own tflite models), both
serving the same five wake words to one client over TCP on 127.0.0.1.

  bench_serve.py --neon NEON_BINARY --peer-python PYTHON [--seconds S] [--speed X] [--runs N]

For each server: start it, connect one client (the `wyoming` library of the peer's venv), send
`detect` naming the five built-ins, `audio-start`, then S seconds of audio in 1280-sample
(80 ms) chunks paced at X times real time, wait until the server's CPU time stops growing,
then `audio-stop`. The figure is the server process's CPU time (user + system, every thread,
from /proc/PID/stat) between the first chunk and the end of that wait, divided by S; the
median of N runs on one server process. Also printed: the detections each server sent
(the audio cycles through our clips of the five wake words and one of other speech, each
followed by 1 s of silence, so both should detect every wake word), and the server's peak
resident memory (VmHWM).

Pacing matters for the peer: it keeps a 10 s ring of audio per client, so a client sending
much faster than its threads consume loses audio. At X <= 4 the peer keeps up on a desktop
CPU (its detections show it).
"""
import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
import wave

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.wake import Detect, Detection, NotDetected

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CLIPS = os.path.join(ROOT, "models", "openwakeword", "clips")
WAKE_CLIPS = ["alexa", "hey_jarvis", "hey_mycroft", "hey_rhasspy", "ok_nabu"]
# 1.x names: the peer's own; `neon serve` takes them as aliases of its 2.x names.
NAMES = [f"{w}_v0.1" for w in WAKE_CLIPS]
RATE = 16000
CHUNK = 1280
CLK_TCK = os.sysconf("SC_CLK_TCK")


def audio(seconds):
    """16-bit mono 16 kHz PCM: the six clips, each then 1 s of silence, repeated to `seconds`."""
    cycle = b""
    for name in WAKE_CLIPS + ["weather"]:
        with wave.open(os.path.join(CLIPS, f"{name}.wav"), "rb") as w:
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (RATE, 1, 2)
            cycle += w.readframes(w.getnframes()) + bytes(2 * RATE)
    want = 2 * RATE * seconds
    pcm = cycle * (want // len(cycle) + 1)
    return pcm[:want], len(cycle) / (2 * RATE)


def cpu_seconds(pid):
    """User + system CPU seconds of every thread of process `pid`."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit(f"server exited with status {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    sys.exit("server did not listen within 60 s")


async def session(port, pid, pcm, speed):
    """One client session; returns (CPU seconds, detections)."""
    client = AsyncTcpClient("127.0.0.1", port)
    await client.connect()
    detections = []

    async def reader():
        while True:
            event = await client.read_event()
            if event is None:
                return
            if Detection.is_type(event.type):
                detections.append(Detection.from_event(event).name)
            elif NotDetected.is_type(event.type):
                return

    await client.write_event(Detect(names=NAMES).event())
    await client.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
    task = asyncio.create_task(reader())
    cpu0 = cpu_seconds(pid)
    start = time.monotonic()
    step = CHUNK / RATE / speed
    for i, offset in enumerate(range(0, len(pcm), 2 * CHUNK)):
        chunk = AudioChunk(rate=RATE, width=2, channels=1, audio=pcm[offset:offset + 2 * CHUNK])
        await client.write_event(chunk.event())
        delay = start + (i + 1) * step - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
    # The peer scores in its own threads, behind the socket: wait until its CPU time is flat.
    last = cpu_seconds(pid)
    while True:
        await asyncio.sleep(0.5)
        now = cpu_seconds(pid)
        if now - last < 0.011:
            break
        last = now
    cpu = cpu_seconds(pid) - cpu0
    await client.write_event(AudioStop().event())
    try:
        await asyncio.wait_for(task, timeout=5)
    except asyncio.TimeoutError:
        task.cancel()
    await client.disconnect()
    return cpu, detections


def bench(label, argv, port, pcm, seconds, speed, runs):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc)
        results = [asyncio.run(session(port, proc.pid, pcm, speed)) for _ in range(runs)]
        rss = peak_rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait()
    cpus = [cpu / seconds for cpu, _ in results]
    found = {}
    for name in results[-1][1]:
        found[name] = found.get(name, 0) + 1
    print(f"{label}: {1000 * statistics.median(cpus):.2f} ms CPU per s of audio "
          f"(runs: {', '.join(f'{1000 * c:.2f}' for c in cpus)}), peak RSS {rss:.0f} MB, "
          f"detections (last run): {dict(sorted(found.items()))}")
    return statistics.median(cpus)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--neon", required=True, help="the neon binary (a release build)")
    p.add_argument("--peer-python", required=True,
                   help="python of a venv with wyoming-openwakeword 1.8.2")
    p.add_argument("--seconds", type=int, default=60, help="seconds of audio per run")
    p.add_argument("--speed", type=float, default=4.0, help="times real time the client sends")
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    pcm, cycle = audio(a.seconds)
    print(f"{a.seconds} s of audio ({a.seconds / cycle:.1f} cycles of five wake words and one "
          f"other phrase), sent at {a.speed}x real time, {a.runs} runs per server")
    port = free_port()
    peer = bench("wyoming-openwakeword 1.8.2",
                 [a.peer_python, "-m", "wyoming_openwakeword", "--uri", f"tcp://127.0.0.1:{port}",
                  *[arg for n in NAMES for arg in ("--preload-model", n)]],
                 port, pcm, a.seconds, a.speed, a.runs)
    port = free_port()
    ours = bench("neon serve", [a.neon, "serve", "--uri", f"tcp://127.0.0.1:{port}"],
                 port, pcm, a.seconds, a.speed, a.runs)
    print(f"neon serve / wyoming-openwakeword: {ours / peer:.3f}x the CPU time")


if __name__ == "__main__":
    main()
