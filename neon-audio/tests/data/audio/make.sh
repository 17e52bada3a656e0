#!/usr/bin/env bash
# Regenerates the audio test files in this folder (neon-audio/tests/audio/ reads them) and the
# fuzz seeds in fuzz/seeds/decode. Needs python3 and sox (with FLAC and Ogg/Vorbis).
#
# Every file carries the same signal, a 440 Hz sine of amplitude 0.5 (16-bit values
# round(0.5 * 32767 * sin(2 pi 440 t))), 0.25 s long:
#   ref16k.wav        16-bit mono 16 kHz, the reference the others are compared with
#   ext24in32.wav     WAVE_FORMAT_EXTENSIBLE, 24 valid bits in 32-bit containers: the 16-bit
#                     value in the top bits, 0x5A junk in the unused low byte
#   ext20in24.wav     WAVE_FORMAT_EXTENSIBLE, 20 valid bits in 24-bit containers, junk 0xF in
#                     the unused low 4 bits
#   oddchunks.wav     odd-sized LIST and JUNK chunks, each followed by its pad byte
#   pipe_ffff.wav     RIFF and data sizes 0xFFFFFFFF (as ffmpeg writes to a pipe)
#   pipe_zero.wav     RIFF and data sizes 0
#   pipe_sox.wav      sox's own output to a pipe (sizes 0x7FFFF000 and 0x7FFFF024)
#   u8.wav            8-bit unsigned (values round(v / 256) + 128)
#   stereo44k.wav     16-bit stereo 44.1 kHz, left the sine, right the sine at -0.5 x
#   ref16k.flac       FLAC of ref16k.wav (lossless)
#   stereo44k.flac    FLAC of stereo44k.wav
#   ref16k.ogg        Ogg/Vorbis of ref16k.wav (quality 6; each run differs: a random Ogg
#                     stream serial number)
#   rate500.flac      a 100 Hz sine at 500 Hz, a rate below the supported range
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
seeds="$here/../../../../fuzz/seeds/decode"
mkdir -p "$seeds"
cd "$here"

python3 - "$seeds" <<'EOF'
import math, struct, sys

seeds = sys.argv[1]

def sine(rate, secs, gain=1.0):
    n = round(rate * secs)
    return [round(gain * 0.5 * 32767 * math.sin(2 * math.pi * 440 * i / rate)) for i in range(n)]

def fmt_pcm(channels, rate, bits):
    align = channels * bits // 8
    return struct.pack('<HHIIHH', 1, channels, rate, rate * align, align, bits)

def fmt_ext(channels, rate, container, valid):
    align = channels * container // 8
    body = struct.pack('<HHIIHH', 0xFFFE, channels, rate, rate * align, align, container)
    body += struct.pack('<HHI', 22, valid, 4 if channels == 1 else 3)
    body += struct.pack('<H', 1) + bytes.fromhex('000000001000800000aa00389b71')
    return body

def chunk(cid, body):
    pad = b'\0' if len(body) % 2 else b''
    return cid + struct.pack('<I', len(body)) + body + pad

def wav(fmt, data, extra=b'', riff=None, data_len=None):
    body = b'WAVE' + chunk(b'fmt ', fmt) + extra
    body += b'data' + struct.pack('<I', len(data) if data_len is None else data_len) + data
    size = len(body) if riff is None else riff
    return b'RIFF' + struct.pack('<I', size) + body

def s16(values):
    return b''.join(struct.pack('<h', v) for v in values)

def write(path, b):
    with open(path, 'wb') as f:
        f.write(b)

x = sine(16000, 0.25)
write('ref16k.wav', wav(fmt_pcm(1, 16000, 16), s16(x)))
write('ext24in32.wav', wav(fmt_ext(1, 16000, 32, 24),
                           b''.join(struct.pack('<i', (v << 16) | 0x5A) for v in x)))
write('ext20in24.wav', wav(fmt_ext(1, 16000, 24, 20),
                           b''.join(struct.pack('<i', (v << 8) | 0xF)[:3] for v in x)))
odd = chunk(b'LIST', b'INFOISFT\x05\0\0\0neon\0') + chunk(b'JUNK', b'abc')
write('oddchunks.wav', wav(fmt_pcm(1, 16000, 16), s16(x), extra=odd))
write('pipe_ffff.wav', wav(fmt_pcm(1, 16000, 16), s16(x), riff=0xFFFFFFFF, data_len=0xFFFFFFFF))
write('pipe_zero.wav', wav(fmt_pcm(1, 16000, 16), s16(x), riff=0, data_len=0))
write('u8.wav', wav(fmt_pcm(1, 16000, 8), bytes(min(255, round(v / 256) + 128) for v in x)))
left, right = sine(44100, 0.25), sine(44100, 0.25, -0.5)
write('stereo44k.wav', wav(fmt_pcm(2, 44100, 16),
                           b''.join(struct.pack('<hh', l, r) for l, r in zip(left, right))))

# Fuzz seeds: the same kinds of file, 20 ms at 8 kHz (each under 4 KB).
y = sine(8000, 0.02)
write(f'{seeds}/pcm16.wav', wav(fmt_pcm(1, 8000, 16), s16(y)))
write(f'{seeds}/ext24in32.wav', wav(fmt_ext(1, 8000, 32, 24),
                                    b''.join(struct.pack('<i', v << 16) for v in y)))
write(f'{seeds}/oddchunks.wav', wav(fmt_pcm(1, 8000, 16), s16(y), extra=odd))
write(f'{seeds}/pipe_ffff.wav', wav(fmt_pcm(1, 8000, 16), s16(y), riff=0xFFFFFFFF,
                                    data_len=0xFFFFFFFF))
write(f'{seeds}/float_stereo.wav', wav(struct.pack('<HHIIHH', 3, 2, 8000, 64000, 8, 32),
                                       b''.join(struct.pack('<ff', v / 32768, -v / 65536)
                                                for v in y)))
EOF

# Raw samples in, so that sox does not know the length when it writes the header.
tail -c +45 ref16k.wav | sox -D -t s16 -r 16000 -c 1 - -t wav - 2>/dev/null | cat > pipe_sox.wav
sox -D ref16k.wav ref16k.flac
sox -D stereo44k.wav stereo44k.flac
sox -D ref16k.wav -C 6 ref16k.ogg
sox -D -n -r 500 -b 16 -c 1 rate500.flac synth 0.1 sine 100
sox -D "$seeds/pcm16.wav" "$seeds/tiny.flac"
sox -D "$seeds/pcm16.wav" -C 0 "$seeds/tiny.ogg"
ls -l "$here" "$seeds"
