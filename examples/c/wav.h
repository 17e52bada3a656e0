/* A tiny reader for 16 kHz mono 16-bit PCM RIFF/WAVE files (what the neon C API takes). */
#ifndef NEON_EXAMPLE_WAV_H
#define NEON_EXAMPLE_WAV_H

#include <stddef.h>
#include <stdint.h>

/* Reads `path` into a malloc'd array of samples (*samples, *n; free() it). Walks the RIFF
 * chunks (skipping LIST and any other chunk, with the pad byte of odd-sized ones) to find
 * "fmt " and "data". Returns 0 on success, else -1 with a message in err (size err_cap). */
int wav_read_16k_mono(const char *path, int16_t **samples, size_t *n, char *err, size_t err_cap);

#endif
