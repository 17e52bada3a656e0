"""`neon serve --engine micro` as wyoming-microwakeword 2.1.0's own test suite checks it.

That project is not on PyPI, so its test file cannot be fetched by a package client; this is our
own test of the same contract (tools/wyoming/test.sh also runs the project's file, unchanged,
when given its path). Run by test.sh with pytest inside the project's layout: the recordings
`<model>.wav` beside this file, the community models in `../wakewords`, and the server started
as `python -m wyoming_microwakeword` (tools/wyoming/peer_shim, which runs `$NEON serve --engine
micro`). One server over stdio serves every stream:
- `describe` gives one wake program, `microWakeWord`, with the 4 official and 3 community
  models, the community ones described by their JSON;
- for each model, `detect` with that model alone: its own recording (1024-sample chunks,
  `audio-start`, no `audio-stop`) gives a `detection` of that model; every other recording
  (with `audio-stop`) gives `not-detected` and no `detection`;
- closing stdin ends the server with status 0.
"""

import asyncio
import sys
import wave
from asyncio.subprocess import PIPE
from pathlib import Path

import pytest
from wyoming.audio import wav_to_chunks
from wyoming.event import async_read_event, async_write_event
from wyoming.info import Describe, Info
from wyoming.wake import Detect, Detection, NotDetected

HERE = Path(__file__).parent
WAKEWORDS = HERE.parent / "wakewords"
CHUNK_SAMPLES = 1024
TIMEOUT = 5.0
OFFICIAL = {"alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"}
COMMUNITY = {"choo_choo_homie", "hey_home_assistant", "okay_computer"}


async def next_event(proc):
    event = await asyncio.wait_for(async_read_event(proc.stdout), timeout=TIMEOUT)
    assert event is not None, "the server closed its output"
    return event


async def send_wav(proc, name, stop):
    with wave.open(str(HERE / f"{name}.wav"), "rb") as wav:
        for chunk in wav_to_chunks(wav, CHUNK_SAMPLES, start_event=True, stop_event=stop):
            await async_write_event(chunk.event(), proc.stdin)


@pytest.mark.asyncio
async def test_micro_server() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "wyoming_microwakeword", "--uri", "stdio://",
        "--custom-model-dir", str(WAKEWORDS), stdin=PIPE, stdout=PIPE,
    )
    await async_write_event(Describe().event(), proc.stdin)
    info = Info.from_event(await next_event(proc))
    assert [p.name for p in info.wake] == ["microWakeWord"]
    models = {m.name: m for m in info.wake[0].models}
    assert set(models) == OFFICIAL | COMMUNITY
    assert models["okay_nabu"].phrase == "Okay Nabu"
    assert models["okay_computer"].phrase == "Okay Computer"
    assert models["okay_computer"].attribution.name == "Michael Hansen"
    assert models["okay_computer"].languages == ["en"]

    for model in sorted(models):
        await async_write_event(Detect(names=[model]).event(), proc.stdin)
        await send_wav(proc, model, stop=False)
        event = await next_event(proc)
        assert Detection.is_type(event.type), f"{model}: {event.type} on its own recording"
        assert Detection.from_event(event).name == model
        for other in sorted(models):
            if other == model:
                continue
            await send_wav(proc, other, stop=True)
            event = await next_event(proc)
            assert NotDetected.is_type(event.type), f"{model} fired on {other}.wav"

    proc.stdin.close()
    await proc.communicate()
    assert proc.returncode == 0
