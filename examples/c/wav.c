#include "wav.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

int wav_read_16k_mono(const char *path, int16_t **samples, size_t *n, char *err, size_t err_cap) {
    FILE *f = fopen(path, "rb");
    unsigned char head[12], chunk[8], fmt[16];
    int have_fmt = 0;
    if (!f) {
        snprintf(err, err_cap, "%s: cannot open", path);
        return -1;
    }
    if (fread(head, 1, 12, f) != 12 || memcmp(head, "RIFF", 4) != 0 ||
        memcmp(head + 8, "WAVE", 4) != 0) {
        snprintf(err, err_cap, "%s: not a RIFF/WAVE file", path);
        fclose(f);
        return -1;
    }
    for (;;) {
        uint32_t size;
        if (fread(chunk, 1, 8, f) != 8) {
            snprintf(err, err_cap, "%s: no \"data\" chunk", path);
            break;
        }
        size = le32(chunk + 4);
        if (memcmp(chunk, "fmt ", 4) == 0) {
            if (size < 16 || fread(fmt, 1, 16, f) != 16) {
                snprintf(err, err_cap, "%s: truncated \"fmt \" chunk", path);
                break;
            }
            /* format 1 (PCM) or 0xFFFE (extensible; its sub-format is assumed to be PCM) */
            if ((le16(fmt) != 1 && le16(fmt) != 0xFFFE) || le16(fmt + 2) != 1 ||
                le32(fmt + 4) != 16000 || le16(fmt + 14) != 16) {
                snprintf(err, err_cap,
                         "%s: need 16 kHz mono 16-bit PCM, got format %u, %u channels, %u Hz, "
                         "%u bits",
                         path, le16(fmt), le16(fmt + 2), (unsigned)le32(fmt + 4), le16(fmt + 14));
                break;
            }
            have_fmt = 1;
            size -= 16;
        } else if (memcmp(chunk, "data", 4) == 0) {
            size_t count = size / 2, i;
            unsigned char *bytes;
            if (!have_fmt) {
                snprintf(err, err_cap, "%s: \"data\" before \"fmt \"", path);
                break;
            }
            bytes = malloc(size ? size : 1);
            *samples = malloc(count ? count * sizeof(int16_t) : 1);
            if (!bytes || !*samples) {
                snprintf(err, err_cap, "%s: out of memory", path);
                free(bytes);
                free(*samples);
                break;
            }
            /* a truncated last chunk keeps the whole samples that are there */
            count = fread(bytes, 1, size, f) / 2;
            for (i = 0; i < count; i++) (*samples)[i] = (int16_t)le16(bytes + 2 * i);
            free(bytes);
            *n = count;
            fclose(f);
            return 0;
        }
        /* skip the rest of this chunk and its pad byte */
        if (fseek(f, (long)size + (long)(size & 1), SEEK_CUR) != 0) {
            snprintf(err, err_cap, "%s: truncated chunk", path);
            break;
        }
    }
    fclose(f);
    return -1;
}
