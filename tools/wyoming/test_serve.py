"""`neon serve` driven by the `wyoming` client library, as Home Assistant and the test suite of
wyoming-openwakeword drive a wake-word server.

  test_serve.py NEON_BINARY

1. stdio: describe lists every model (built-ins under their 2.x names, the custom `computer`);
   one detect names all six; each recording of wyoming-openwakeword's suite
   (models/tests/data/wyoming/) wakes its own model within 5 s of audio-stop; `snowboy.wav`
   gives not-detected within 1 s; closing stdin ends the server with status 0.
2. speech recognition (when models/moonshine holds the model, as after tools/moonshine/fetch.sh):
   transcribe then a 16 kHz clip gives a transcript equal to `neon transcribe`'s text.
3. TCP on 127.0.0.1: 8 clients (AsyncTcpClient) stream different recordings at once and each
   gets its own detection; a client sending bytes that are not an event gets an error event
   and the others are unaffected.

Exits 0 when every check passes; prints what failed otherwise.
"""
import asyncio
import os
import socket
import subprocess
import sys
import wave
from asyncio.subprocess import PIPE

from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioStart, AudioStop, wav_to_chunks
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import async_read_event, async_write_event
from wyoming.info import Describe, Info
from wyoming.wake import Detect, Detection, NotDetected

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DATA = os.path.join(ROOT, "models", "tests", "data")
CUSTOM = os.path.join(DATA, "custom")
MODELS = ["okay_nabu", "hey_jarvis", "hey_mycroft", "hey_rhasspy", "alexa", "computer"]
SAMPLES_PER_CHUNK = 1024


def recording(name):
    if name == "computer":
        return os.path.join(CUSTOM, "computer.wav")
    return os.path.join(DATA, "wyoming", f"{name}.wav")


def events_of(path):
    """audio-start, the chunks, audio-stop of one WAV file."""
    with wave.open(path, "rb") as w:
        out = [AudioStart(rate=w.getframerate(), width=w.getsampwidth(),
                          channels=w.getnchannels()).event()]
        out += [c.event() for c in wav_to_chunks(w, SAMPLES_PER_CHUNK)]
    out.append(AudioStop().event())
    return out


async def wait_for(read, kind, timeout):
    """Reads events until one of `kind` (an Eventable class); returns it."""
    while True:
        event = await asyncio.wait_for(read(), timeout=timeout)
        if event is None:
            raise AssertionError(f"the server closed the connection waiting for {kind.__name__}")
        if kind.is_type(event.type):
            return event


async def stdio(neon):
    proc = await asyncio.create_subprocess_exec(
        neon, "serve", "--uri", "stdio://", "--custom-model-dir", CUSTOM,
        stdin=PIPE, stdout=PIPE, stderr=PIPE)
    read = lambda: async_read_event(proc.stdout)  # noqa: E731
    await async_write_event(Describe().event(), proc.stdin)
    info = Info.from_event(await wait_for(read, Info, 10))
    assert len(info.wake) == 1, "one wake program"
    names = {m.name for m in info.wake[0].models}
    assert set(MODELS) <= names, f"missing models: {set(MODELS) - names}"
    await async_write_event(Detect(names=MODELS).event(), proc.stdin)
    for model in MODELS:
        for e in events_of(recording(model)):
            await async_write_event(e, proc.stdin)
        d = Detection.from_event(await wait_for(read, Detection, 5))
        assert d.name == model, f"{model}: detected {d.name}"
        print(f"stdio: {model} detected at {d.timestamp} ms")
    for e in events_of(recording("snowboy")):
        await async_write_event(e, proc.stdin)
    # Nothing else may come first: a detection here would be a false positive.
    event = await asyncio.wait_for(read(), timeout=1)
    assert event is not None and NotDetected.is_type(event.type), f"snowboy: {event}"
    print("stdio: snowboy not detected")
    proc.stdin.close()
    _, stderr = await proc.communicate()
    assert proc.returncode == 0, stderr.decode()
    print("stdio: exit status 0 after stdin closed")


async def asr(neon):
    model_dir = os.path.join(ROOT, "models", "moonshine")
    if not os.path.exists(os.path.join(model_dir, "base-en.safetensors")):
        print("asr: skipped (no Moonshine model: tools/moonshine/fetch.sh)")
        return
    clip = os.path.join(model_dir, "clips", "quick_brown_fox.wav")
    want = subprocess.run([neon, "transcribe", clip, "--model-dir", model_dir],
                          check=True, capture_output=True, text=True).stdout.strip()
    proc = await asyncio.create_subprocess_exec(
        neon, "serve", "--uri", "stdio://", "--model-dir", model_dir,
        stdin=PIPE, stdout=PIPE, stderr=PIPE)
    await async_write_event(Transcribe().event(), proc.stdin)
    for e in events_of(clip):
        await async_write_event(e, proc.stdin)
    read = lambda: async_read_event(proc.stdout)  # noqa: E731
    got = Transcript.from_event(await wait_for(read, Transcript, 60)).text
    assert got == want, f"transcript {got!r} != neon transcribe {want!r}"
    print(f"asr: {got!r}, as neon transcribe")
    proc.stdin.close()
    await proc.communicate()
    assert proc.returncode == 0


async def tcp_client(port, model):
    client = AsyncTcpClient("127.0.0.1", port)
    await client.connect()
    try:
        await client.write_event(Detect(names=MODELS).event())
        for e in events_of(recording(model)):
            await client.write_event(e)
        d = Detection.from_event(await wait_for(client.read_event, Detection, 30))
        assert d.name == model, f"tcp {model}: detected {d.name}"
        return d.name
    finally:
        await client.disconnect()


async def tcp(neon):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = await asyncio.create_subprocess_exec(
        neon, "serve", "--uri", f"tcp://127.0.0.1:{port}", "--custom-model-dir", CUSTOM,
        stdout=PIPE, stderr=PIPE)
    try:
        for _ in range(100):
            try:
                _, w = await asyncio.open_connection("127.0.0.1", port)
                w.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        # A malformed client: error event, disconnected.
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b"{not json\n")
        await w.drain()
        event = await asyncio.wait_for(async_read_event(r), timeout=5)
        assert event is not None and Error.is_type(event.type), f"malformed: {event}"
        w.close()
        picks = [MODELS[i % len(MODELS)] for i in range(8)]
        got = await asyncio.gather(*(tcp_client(port, m) for m in picks))
        assert got == picks, f"{got} != {picks}"
        print(f"tcp: 8 clients at once detected {got}")
    finally:
        proc.kill()
        await proc.wait()


async def main(neon):
    await stdio(neon)
    await asr(neon)
    await tcp(neon)
    print("wyoming client tests passed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
