"""`neon serve` driven by the `wyoming` client library, as Home Assistant and the test suite of
wyoming-openwakeword drive a wake-word server.

  test_serve.py NEON_BINARY

1. stdio: describe lists every model (built-ins under their 2.x names, the custom `computer`);
   one detect names all six; each recording of wyoming-openwakeword's suite
   (models/tests/data/wyoming/) wakes its own model within 5 s of audio-stop; `snowboy.wav`
   gives not-detected within 1 s; closing stdin ends the server with status 0.
2. speech recognition (when models/moonshine holds the model, as after tools/moonshine/fetch.sh):
   transcribe then a 16 kHz clip gives a transcript equal to `neon transcribe`'s text (stdio).
   Then, over TCP (servers started at once, each checked in turn):
   a. describe: the asr program streams (supports_transcript_streaming) and, without
      --vad-endpointing, requires an external VAD;
   b. a real clip (models/speech/clips) padded with 1 s of silence, a 3 s pause, the clip
      again and 1 s of silence: transcript-start, at least two transcript-chunks whose
      concatenation is the transcript, transcript, transcript-stop; the text equals `neon
      transcribe` of the same padded audio; the first chunk is read before audio-stop is sent
      (after the first copy and the pause);
   c. --vad-endpointing 0.7: info says no external VAD is needed; speech then 2 s of silence
      and no audio-stop gives transcript and transcript-stop; more audio and audio-stop then
      give nothing, and a next request on the same connection is answered;
   d. --asr-workers 1: a client that sends speech, the pause that closes its window and half
      of more speech, then closes its socket without reading, does not keep the next client
      from its transcript;
   e. --max-request-seconds 2 and 5 s of speech: the text so far (transcript,
      transcript-stop), then an error with code audio-too-long; its audio-stop gives nothing.
3. TCP on 127.0.0.1: 8 clients (AsyncTcpClient) stream different recordings at once and each
   gets its own detection; a client sending bytes that are not an event gets an error event
   and the others are unaffected.

Exits 0 when every check passes; prints what failed otherwise.
"""
import asyncio
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import wave
from asyncio.subprocess import PIPE

from wyoming.asr import Transcribe, Transcript, TranscriptChunk, TranscriptStart, TranscriptStop
from wyoming.audio import AudioChunk, AudioStart, AudioStop, wav_to_chunks
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import async_read_event, async_write_event
from wyoming.info import Describe, Info
from wyoming.wake import Detect, Detection, NotDetected

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DATA = os.path.join(ROOT, "models", "tests", "data")
CUSTOM = os.path.join(DATA, "custom")
MOONSHINE = os.path.join(ROOT, "models", "moonshine")
CLIPS = os.path.join(ROOT, "models", "speech", "clips")
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
    # Nothing else may come first: a detection here would be a false positive. The wait covers
    # the server working through the whole recording (a debug build on a loaded machine took
    # more than 1 s); it bounds a hang, it is not a speed check.
    event = await asyncio.wait_for(read(), timeout=10)
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


RATE = 16000


def pcm_of(path):
    """The samples (bytes) of a 16 kHz mono 16-bit WAV file."""
    with wave.open(path, "rb") as w:
        got = (w.getframerate(), w.getsampwidth(), w.getnchannels())
        assert got == (RATE, 2, 1), f"{path}: rate, width, channels {got}"
        return w.readframes(w.getnframes())


def silence(seconds):
    return bytes(2 * round(seconds * RATE))


def transcribe_cli(neon, pcm):
    """`neon transcribe` (its defaults: VAD on) of `pcm`, through a temporary WAV file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "audio.wav")
        with wave.open(path, "wb") as w:
            w.setframerate(RATE)
            w.setsampwidth(2)
            w.setnchannels(1)
            w.writeframes(pcm)
        return subprocess.run([neon, "transcribe", path, "--model-dir", MOONSHINE],
                              check=True, capture_output=True, text=True).stdout.strip()


async def send_audio(client, pcm, start=False, stop=False):
    """`pcm` as audio-chunks of SAMPLES_PER_CHUNK samples (after audio-start, before
    audio-stop when asked)."""
    if start:
        await client.write_event(AudioStart(rate=RATE, width=2, channels=1).event())
    step = 2 * SAMPLES_PER_CHUNK
    for i in range(0, len(pcm), step):
        chunk = AudioChunk(rate=RATE, width=2, channels=1, audio=pcm[i:i + step])
        await client.write_event(chunk.event())
    if stop:
        await client.write_event(AudioStop().event())


async def read_until(client, kind, timeout, what):
    """The events read up to and including the first of `kind`, each within `timeout` s."""
    got = []
    while True:
        try:
            event = await asyncio.wait_for(client.read_event(), timeout=timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"{what}: no {kind.__name__} within {timeout} s; "
                                 f"read {[e.type for e in got]}") from None
        if event is None:
            raise AssertionError(f"{what}: connection closed before {kind.__name__}; "
                                 f"read {[e.type for e in got]}")
        got.append(event)
        if kind.is_type(event.type):
            return got


async def nothing_within(client, seconds, what):
    """Checks that no event arrives within `seconds`."""
    try:
        event = await asyncio.wait_for(client.read_event(), timeout=seconds)
    except asyncio.TimeoutError:
        return
    shown = "the connection closed" if event is None else f"{event.type} {event.data}"
    raise AssertionError(f"{what}: expected nothing, got {shown}")


def answer(events, what):
    """A request's streamed answer, checked: transcript-start, transcript-chunks, transcript,
    transcript-stop, nothing else; the chunks concatenated are the transcript. Returns the
    text and the chunks."""
    kinds = [e.type for e in events]
    ok = (len(events) >= 3 and TranscriptStart.is_type(kinds[0])
          and Transcript.is_type(kinds[-2]) and TranscriptStop.is_type(kinds[-1])
          and all(TranscriptChunk.is_type(k) for k in kinds[1:-2]))
    assert ok, f"{what}: events {kinds}"
    chunks = [TranscriptChunk.from_event(e).text for e in events[1:-2]]
    text = Transcript.from_event(events[-2]).text
    assert "".join(chunks) == text, f"{what}: chunks {chunks} do not make {text!r}"
    return text, chunks


def die_with_parent():
    """In a server's process: SIGKILL when this test ends, however it ends (a timeout's
    SIGTERM skips the `finally` that kills it; Linux's PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


class Server:
    """`neon serve --model-dir models/moonshine` with more options, on a free TCP port of
    127.0.0.1; its stderr goes to a temporary file, shown when a check fails."""

    def __init__(self, neon, *args):
        self.neon, self.args = neon, list(args)
        self.name = " ".join(["neon serve", *self.args]) if self.args else "neon serve"

    async def start(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = tempfile.TemporaryFile()
        self.proc = await asyncio.create_subprocess_exec(
            self.neon, "serve", "--uri", f"tcp://127.0.0.1:{self.port}", "--model-dir",
            MOONSHINE, *self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=self.log, preexec_fn=die_with_parent)

    async def ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.returncode is None, f"{self.name} exited: {self.stderr()}"
            try:
                _, w = await asyncio.open_connection("127.0.0.1", self.port)
                w.close()
                return
            except OSError:
                await asyncio.sleep(0.1)
        raise AssertionError(f"{self.name}: not accepting after {timeout} s")

    async def client(self):
        client = AsyncTcpClient("127.0.0.1", self.port)
        await client.connect()
        return client

    def stderr(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    async def stop(self):
        """Ends the server; whether it was still running."""
        alive = self.proc.returncode is None
        if alive:
            self.proc.kill()
        await self.proc.wait()
        return alive


async def asr_info(server, external_vad):
    """(a) describe: the asr program streams; an external VAD is needed unless endpointing."""
    client = await server.client()
    try:
        await client.write_event(Describe().event())
        info = Info.from_event((await read_until(client, Info, 10, server.name))[-1])
    finally:
        await client.disconnect()
    assert len(info.asr) == 1, f"{server.name}: asr programs {info.asr}"
    program = info.asr[0]
    assert program.supports_transcript_streaming is True, f"{server.name}: {program}"
    assert program.requires_external_vad is external_vad, \
        f"{server.name}: requires_external_vad {program.requires_external_vad}"
    print(f"asr {server.name}: info streams, requires_external_vad {external_vad}")


async def asr_streaming(server, neon):
    """(b) a clip twice with silence around and a 3 s pause between: streamed, the first
    chunk before audio-stop, the text as `neon transcribe`'s."""
    speech = pcm_of(os.path.join(CLIPS, "librivox_sense_0930.wav"))
    first = silence(1) + speech + silence(3)
    rest = speech + silence(1)
    want = transcribe_cli(neon, first + rest)
    client = await server.client()
    try:
        await client.write_event(Transcribe(language="en").event())
        await send_audio(client, first, start=True)
        sent = time.monotonic()
        # No audio-stop yet: the first window closed 2 s into the pause, so its chunk must
        # come now.
        early = await read_until(
            client, TranscriptChunk, 60,
            f"{server.name}: before audio-stop (the first copy and the 3 s pause sent)")
        wait = time.monotonic() - sent
        await send_audio(client, rest, stop=True)
        late = await read_until(client, TranscriptStop, 60, f"{server.name}: after audio-stop")
        await nothing_within(client, 0.5, f"{server.name}: after transcript-stop")
    finally:
        await client.disconnect()
    text, chunks = answer(early + late, f"{server.name}: padded clip twice")
    assert len(chunks) >= 2, f"{server.name}: chunks {chunks}"
    assert text == want, f"transcript {text!r} != neon transcribe {want!r}"
    print(f"asr {server.name}: chunks {chunks} (the first {wait:.2f} s after the pause was "
          f"sent, before audio-stop), transcript as neon transcribe")


async def asr_vanish(server, neon):
    """(d) a client closing its socket halfway through its audio; then another's request."""
    speech = pcm_of(os.path.join(CLIPS, "librivox_sense_0930.wav"))
    gone = await server.client()
    await gone.write_event(Transcribe().event())
    # The first window closes in the pause: the server decodes it and answers a client that
    # may be gone by then; the socket closes halfway through the second copy.
    half = len(speech) // 4 * 2
    await send_audio(gone, silence(1) + speech + silence(3) + speech[:half], start=True)
    await gone.disconnect()
    other = pcm_of(os.path.join(CLIPS, "cmu_goforward.wav"))
    audio = silence(0.5) + other + silence(0.5)
    want = transcribe_cli(neon, audio)
    client = await server.client()
    try:
        await client.write_event(Transcribe().event())
        await send_audio(client, audio, start=True, stop=True)
        events = await read_until(client, TranscriptStop, 60,
                                  f"{server.name}: the request after a vanished client")
    finally:
        await client.disconnect()
    text, _ = answer(events, f"{server.name}: after a vanished client")
    assert text == want, f"transcript {text!r} != neon transcribe {want!r}"
    assert server.proc.returncode is None, f"{server.name} exited: {server.stderr()}"
    print(f"asr {server.name}: a client gone mid-request, the next one got {text!r}")


async def asr_endpointing(server, neon):
    """(c) --vad-endpointing: speech then 2 s of silence and no audio-stop is answered; the
    rest of that request gives nothing; a next request on the connection is answered."""
    speech = pcm_of(os.path.join(CLIPS, "arctic_slt_a0009.wav"))
    other = pcm_of(os.path.join(CLIPS, "cmu_goforward.wav"))
    client = await server.client()
    try:
        await client.write_event(Transcribe().event())
        await send_audio(client, silence(0.5) + speech + silence(2), start=True)
        events = await read_until(client, TranscriptStop, 60,
                                  f"{server.name}: speech and 2 s of silence, no audio-stop")
        text, _ = answer(events, f"{server.name}: endpointed request")
        assert text, f"{server.name}: an endpointed request gave an empty text"
        # The rest of the request (speech again) and its audio-stop: ignored.
        await send_audio(client, other + silence(0.5), stop=True)
        await nothing_within(client, 1.5, f"{server.name}: audio after the endpoint")
        audio = silence(0.3) + other + silence(0.3)
        await client.write_event(Transcribe().event())
        await send_audio(client, audio, start=True, stop=True)
        events = await read_until(client, TranscriptStop, 60,
                                  f"{server.name}: the next request on the connection")
        await nothing_within(client, 0.5, f"{server.name}: after the next request")
    finally:
        await client.disconnect()
    second, _ = answer(events, f"{server.name}: the next request")
    want = transcribe_cli(neon, audio)
    assert second == want, f"next request: {second!r} != neon transcribe {want!r}"
    print(f"asr {server.name}: endpointed without audio-stop: {text!r}; its later audio "
          f"ignored; the next request: {second!r}")


async def asr_cap(server, neon):
    """(e) --max-request-seconds 2 and 5 s of speech: the text so far, then an error."""
    speech = pcm_of(os.path.join(CLIPS, "librivox_sense_0870.wav"))[:2 * 5 * RATE]
    want = transcribe_cli(neon, speech[:2 * 2 * RATE])
    client = await server.client()
    try:
        await client.write_event(Transcribe().event())
        await send_audio(client, speech, start=True)
        events = await read_until(client, Error, 60, f"{server.name}: 5 s sent")
        # Its audio-stop gives nothing; a describe is answered next.
        await client.write_event(AudioStop().event())
        await client.write_event(Describe().event())
        after = await read_until(client, Info, 10, f"{server.name}: audio-stop, describe")
    finally:
        await client.disconnect()
    error = Error.from_event(events[-1])
    assert error.code == "audio-too-long", f"{server.name}: {error}"
    text, _ = answer(events[:-1], f"{server.name}: capped request")
    assert text == want, f"capped transcript {text!r} != neon transcribe of 2 s {want!r}"
    assert len(after) == 1, f"{server.name}: after the cap: {[e.type for e in after]}"
    print(f"asr {server.name}: 5 s sent: {text!r} (the first 2 s), then error {error.code}")


async def asr_tcp(neon):
    if not os.path.exists(os.path.join(MOONSHINE, "base-en.safetensors")):
        print("asr over tcp: skipped (no Moonshine model: tools/moonshine/fetch.sh)")
        return
    plain = Server(neon, "--asr-workers", "1")
    endpointing = Server(neon, "--vad-endpointing", "0.7")
    capped = Server(neon, "--max-request-seconds", "2")
    servers = [plain, endpointing, capped]
    try:
        for s in servers:
            await s.start()
        for s in servers:
            await s.ready()
        await asr_info(plain, True)
        await asr_streaming(plain, neon)
        await asr_vanish(plain, neon)
        await asr_info(endpointing, False)
        await asr_endpointing(endpointing, neon)
        await asr_cap(capped, neon)
        for s in servers:
            assert s.proc.returncode is None, f"{s.name} exited: {s.stderr()}"
    except BaseException:
        for s in servers:
            if hasattr(s, "log"):
                print(f"--- stderr of {s.name}:\n{s.stderr()}", file=sys.stderr)
        raise
    finally:
        for s in servers:
            if hasattr(s, "proc"):
                await s.stop()


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
    await asr_tcp(neon)
    await tcp(neon)
    print("wyoming client tests passed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
