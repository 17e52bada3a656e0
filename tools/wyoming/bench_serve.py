"""CPU time per second of audio of a Wyoming wake-word server: `neon serve` next to
wyoming-openwakeword 1.8.2 (the newest release on PyPI that installs here, with its own tflite
models), both serving the same five wake words to one client over TCP on 127.0.0.1; with
`--engine micro`, `neon serve --engine micro` next to wyoming-microwakeword 2.1.0 (pymicro-
wakeword 2.5.0 and its libtensorflowlite_c), both serving the four official microWakeWord
models (alexa, hey_jarvis, hey_mycroft, okay_nabu) to one client.

  bench_serve.py --neon NEON_BINARY --peer-python PYTHON [--engine oww|micro] [--seconds S]
                 [--speed X] [--runs N] [--only neon|peer] [--verbose]

Both servers are started (the peer with the five models preloaded, as a user would run it),
then each gets a warm-up session of 5 s of audio (not counted), then N measured sessions,
alternating peer and neon, so a change in the machine's load hits both alike. A session: one
client (the `wyoming` library of the peer's venv) sends `detect` naming the five built-ins,
`audio-start` and `describe`; the `info` reply says the server has handled the first two (both
servers handle a client's events in order), so that set-up is not counted. Then S seconds of
audio in 1280-sample (80 ms) chunks paced at X times real time; then it waits until the
server's CPU time stops growing (the peer scores in its own threads, behind the socket), and
sends `audio-stop`. The figure is the server process's CPU time (user + system of every
thread, and of any child it waited for, from /proc/PID/stat; the client is another process)
between the first chunk and the end of that wait, divided by S. Printed per run and as the
median; then the ratio of the medians, the ratio per round and the servers' peak resident
memory (VmHWM).

The audio: 2 s of silence, then our clips of the five wake words and one of other speech
(`weather`), each followed by 1 s of silence, repeated (20.1 s a cycle, not a whole number of
chunks: each repeat meets the 80 ms grid at another phase). Detections are printed as
utterances detected / wake-word clips in the audio, then the raw count: wyoming-openwakeword
1.8.2 sends a detection for every chunk scoring at least the threshold (it has no refractory
period), neon serve one per utterance.

With `--engine micro` the audio is the four models' recordings of wyoming-microwakeword's
test (models/tests/data/microwakeword) and `okay_computer` as the other speech, laid out the
same way (15.5 s a cycle); the peer is started as `python -m wyoming_microwakeword` (the
package installed in PYTHON's venv; it loads a client's models at `audio-start`, which is not
counted) and both servers have a 2 s refractory period, so each sends one detection per
utterance. wyoming-microwakeword scores in its event handler, so its CPU time is all in the
server process too.

Pacing: the peer keeps a 10 s ring of audio per client, so a client sending much faster than
its threads consume would lose audio. At X = 4 it keeps up on this 2-core machine: its CPU
time per second of audio and its detections are the same at X = 1 and X = 4.
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
from wyoming.info import Describe, Info
from wyoming.wake import Detect, Detection, NotDetected

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class Engine:
    """What differs between the engines: the clips, the names a client asks for, the peer's
    label and module, and `neon serve`'s extra arguments."""

    def __init__(self, clips, wake_clips, other, names, peer, module, neon_args):
        self.clips, self.wake_clips, self.other = clips, wake_clips, other
        self.names, self.peer, self.module, self.neon_args = names, peer, module, neon_args


ENGINES = {
    # 1.x names: the peer's own; `neon serve` takes them as aliases of its 2.x names.
    "oww": Engine(os.path.join(ROOT, "models", "openwakeword", "clips"),
                  ["alexa", "hey_jarvis", "hey_mycroft", "hey_rhasspy", "ok_nabu"], "weather",
                  [f"{w}_v0.1" for w in
                   ["alexa", "hey_jarvis", "hey_mycroft", "hey_rhasspy", "ok_nabu"]],
                  "wyoming-openwakeword 1.8.2", "wyoming_openwakeword", []),
    "micro": Engine(os.path.join(ROOT, "models", "tests", "data", "microwakeword"),
                    ["alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"], "okay_computer",
                    ["alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"],
                    "wyoming-microwakeword 2.1.0", "wyoming_microwakeword",
                    ["--engine", "micro"]),
}
ENGINE = ENGINES["oww"]
RATE = 16000
CHUNK = 1280
CLK_TCK = os.sysconf("SC_CLK_TCK")
# Silence before the first clip: the peer scores nothing in a stream's first ~2 s (it waits
# for 76 mel frames, then 16 embeddings), so a wake word there would be missed by design.
LEAD_IN = 2
WARM_UP_SECONDS = 5
# Detections of one name closer than this (in audio seconds) belong to one utterance; one
# clip recurs every 20.1 s.
SAME_UTTERANCE = 4.0


def audio(seconds):
    """16-bit mono 16 kHz PCM of `seconds` (LEAD_IN s of silence, then the six clips, each
    followed by 1 s of silence, repeated) and how many times each wake-word clip is whole in
    it."""
    cycle = b""
    starts = []
    for name in ENGINE.wake_clips + [ENGINE.other]:
        with wave.open(os.path.join(ENGINE.clips, f"{name}.wav"), "rb") as w:
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (RATE, 1, 2)
            clip = w.readframes(w.getnframes())
        starts.append((len(cycle), len(clip)))
        cycle += clip + bytes(2 * RATE)
    want = 2 * RATE * seconds
    lead = 2 * RATE * LEAD_IN
    pcm = (bytes(lead) + cycle * (want // len(cycle) + 1))[:want]
    whole = {
        name: sum(1 for k in range(want // len(cycle) + 1)
                  if lead + k * len(cycle) + start + size <= want)
        for name, (start, size) in zip(ENGINE.wake_clips, starts)
    }
    return pcm, whole


def clip_of(name):
    """The clip a detection name is for: `okay_nabu` (neon serve), `ok_nabu_v0.1` (peer);
    the microWakeWord names are the clips'."""
    if ENGINE is ENGINES["micro"]:
        return name
    base = name.removesuffix("_v0.1")
    return "ok_nabu" if base == "okay_nabu" else base


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid`: every thread (live or ended) and every
    child it has waited for (proc(5) fields 14-17: utime, stime, cutime, cstime; neither
    server starts children). In clock ticks (10 ms), each field rounded down."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / CLK_TCK


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
    sys.exit(f"server did not listen within {timeout} s")


async def session(port, pid, pcm, speed):
    """One client session: (CPU seconds, [(audio seconds sent at arrival, clip name)])."""
    # `async with`: the connect API of wyoming 1.2.0 (the peer's pin) and of later releases.
    async with AsyncTcpClient("127.0.0.1", port) as client:
        return await stream(client, pid, pcm, speed)


async def stream(client, pid, pcm, speed):
    detections = []
    await client.write_event(Detect(names=ENGINE.names).event())
    await client.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
    await client.write_event(Describe().event())
    while True:
        event = await client.read_event()
        if event is None:
            sys.exit("the server closed the connection before answering describe")
        if Info.is_type(event.type):
            break
    start = None

    async def reader():
        while True:
            event = await client.read_event()
            if event is None:
                return
            if Detection.is_type(event.type):
                sent = (time.monotonic() - start) * speed
                detections.append((sent, clip_of(Detection.from_event(event).name)))
            elif NotDetected.is_type(event.type):
                return

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
    # Wait until the server's CPU time stops growing (less than a tick in 0.5 s).
    last = cpu_seconds(pid)
    while True:
        await asyncio.sleep(0.5)
        now = cpu_seconds(pid)
        if now - last < 1.1 / CLK_TCK:
            break
        last = now
    cpu = now - cpu0
    await client.write_event(AudioStop().event())
    try:
        await asyncio.wait_for(task, timeout=5)
    except asyncio.TimeoutError:
        task.cancel()
    return cpu, detections


def utterances(detections):
    """{clip: (detections, utterances)}: detections of one clip less than SAME_UTTERANCE
    audio seconds apart are one utterance."""
    found = {}
    last = {}
    for sent, name in detections:
        count, groups = found.get(name, (0, 0))
        new = name not in last or sent - last[name] >= SAME_UTTERANCE
        found[name] = (count + 1, groups + new)
        last[name] = sent
    return found


class Server:
    """One server process and its measured runs."""

    def __init__(self, label, argv_for_port):
        self.label = label
        self.port = free_port()
        self.proc = subprocess.Popen(argv_for_port(self.port), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.results = []

    def run(self, pcm, speed):
        """One session; returns (CPU seconds, detections)."""
        return asyncio.run(session(self.port, self.proc.pid, pcm, speed))

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def describe_run(label, run, cpu, seconds, detections, occurrences, verbose):
    found = utterances(detections)
    words = ", ".join(f"{w} {found.get(w, (0, 0))[1]}/{occurrences[w]} "
                      f"({found.get(w, (0, 0))[0]})" for w in ENGINE.wake_clips)
    others = [w for w in found if w not in ENGINE.wake_clips]
    if others:
        words += f"; unexpected: {others}"
    print(f"  {label} run {run}: {1000 * cpu / seconds:.2f} ms CPU per s of audio "
          f"({cpu:.2f} s); utterances detected/in the audio (detections): {words}", flush=True)
    if verbose:
        print("    arrived at (s of audio sent): "
              + ", ".join(f"{n} {sent:.2f}" for sent, n in detections), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--neon", required=True, help="the neon binary (a release build)")
    p.add_argument("--peer-python", required=True,
                   help="python of a venv with the peer (wyoming-openwakeword 1.8.2, or "
                        "wyoming-microwakeword 2.1.0 with --engine micro)")
    p.add_argument("--engine", choices=sorted(ENGINES), default="oww",
                   help="openWakeWord (default) or microWakeWord")
    p.add_argument("--seconds", type=int, default=120, help="seconds of audio per run")
    p.add_argument("--speed", type=float, default=4.0, help="times real time the client sends")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--only", choices=["neon", "peer"], help="measure one server only")
    p.add_argument("--verbose", action="store_true",
                   help="print when each detection arrived (in seconds of audio sent)")
    a = p.parse_args()
    global ENGINE
    ENGINE = ENGINES[a.engine]
    pcm, occurrences = audio(a.seconds)
    print(f"{a.seconds} s of audio ({LEAD_IN} s of silence, then the {len(ENGINE.wake_clips)} "
          f"wake words ({a.engine}) and one "
          f"other phrase, each followed by 1 s of silence, repeated), sent at {a.speed}x real "
          f"time; {a.runs} runs per server, alternating, after a {WARM_UP_SECONDS} s warm-up; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    # wyoming-openwakeword preloads the models; wyoming-microwakeword has no such option.
    preload = [] if a.engine == "micro" else [
        arg for n in ENGINE.names for arg in ("--preload-model", n)]
    argvs = {
        "peer": (ENGINE.peer,
                 lambda port: [a.peer_python, "-m", ENGINE.module,
                               "--uri", f"tcp://127.0.0.1:{port}", *preload]),
        "neon": (" ".join(["neon serve", *ENGINE.neon_args]),
                 lambda port: [a.neon, "serve", *ENGINE.neon_args,
                               "--uri", f"tcp://127.0.0.1:{port}"]),
    }
    servers = {}
    try:
        for key, (label, argv) in argvs.items():
            if a.only in (None, key):
                servers[key] = Server(label, argv)
        for s in servers.values():
            wait_listening(s.port, s.proc)
            s.run(pcm[:2 * RATE * WARM_UP_SECONDS], a.speed)
        for run in range(1, a.runs + 1):
            for s in servers.values():
                cpu, detections = s.run(pcm, a.speed)
                s.results.append(cpu / a.seconds)
                describe_run(s.label, run, cpu, a.seconds, detections, occurrences, a.verbose)
        rss = {key: peak_rss_mb(s.proc.pid) for key, s in servers.items()}
    finally:
        for s in servers.values():
            s.stop()
    for key, s in servers.items():
        median = statistics.median(s.results)
        spread = (max(s.results) - min(s.results)) / median
        print(f"{s.label}: {1000 * median:.2f} ms CPU per s of audio (median of {a.runs}; "
              f"runs {', '.join(f'{1000 * r:.2f}' for r in s.results)}; spread (max - min) / "
              f"median {100 * spread:.1f}%), peak RSS {rss[key]:.0f} MB", flush=True)
    if len(servers) == 2:
        ours, peer = servers["neon"].results, servers["peer"].results
        print(f"{servers['neon'].label} / {ENGINE.peer}: "
              f"{statistics.median(ours) / statistics.median(peer):.3f}x the CPU time (per "
              f"round: {', '.join(f'{o / q:.3f}' for o, q in zip(ours, peer))}); load average "
              f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
