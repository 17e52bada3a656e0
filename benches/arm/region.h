/* The region markers of the insn-count plugin, as neon_benches::{region_start, region_stop}
 * put them in our bench binaries: `svc #0` with x8 = 0x5A5A0 (start) or 0x5A5A1 (stop) and
 * x0 = the region's id; count-insns.sh --region counts the instructions between them.
 * Off aarch64 the markers do nothing (the peers only build for aarch64). */
#ifndef NEON_BENCH_REGION_H
#define NEON_BENCH_REGION_H

#include <stdint.h>

static inline void region_marker(uint64_t marker, uint64_t id) {
#if defined(__aarch64__)
  register uint64_t x8 __asm__("x8") = marker;
  register uint64_t x0 __asm__("x0") = id;
  __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8) : "memory");
#else
  (void)marker;
  (void)id;
#endif
}

#define REGION_START(id) region_marker(0x5A5A0, (id))
#define REGION_STOP(id) region_marker(0x5A5A1, (id))

#endif
