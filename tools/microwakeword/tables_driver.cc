// Prints the start-up tables of the pymicro-features 2.0.2 frontend as JSON.
//
// Built by tools/microwakeword/dump_tables.sh against the package's own sources (the
// TFLite Micro `experimental/microfrontend/lib` *_util.cc files and its vendored kissfft,
// compiled with -DFIXED_POINT=16 as the package's setup.py does). The configuration is the
// one `init_cfg` in the package's src/micro_features.cpp sets: 16 kHz, 30 ms window, 10 ms
// step, 40 channels over 125..7500 Hz, noise reduction (10 bits, 0.025, 0.06, 0.05), PCAN
// (0.95, 80, 21 bits), log scale (shift 6).
//
// Besides the integer tables, it prints the f32 value each rounded entry was computed from
// (as IEEE bit patterns), so that dump_tables.sh can measure how far each one is from a
// rounding boundary. Those values are recomputed here with the same expressions, types and
// compiler as the library, and checked against the library's table (exit 1 on a mismatch).

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

// Included, not linked, so that the private kiss_fftr_state layout is visible.
#include "tensorflow/lite/experimental/microfrontend/lib/kiss_fft_int16.cc"

extern "C" {
#include "tensorflow/lite/experimental/microfrontend/lib/bits.h"
#include "tensorflow/lite/experimental/microfrontend/lib/frontend.h"
#include "tensorflow/lite/experimental/microfrontend/lib/frontend_util.h"
#include "tensorflow/lite/experimental/microfrontend/lib/log_lut.h"
#include "tensorflow/lite/experimental/microfrontend/lib/pcan_gain_control_util.h"
}

namespace {

const int kSampleRate = 16000;
// Entries of kLogLut in log_lut.cc (kLogSegments + 2).
const int kLogLutLen = kLogSegments + 2;
bool g_ok = true;

uint32_t Bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

template <typename T>
void PrintInts(const char* name, const T* v, size_t n, bool last = false) {
  std::printf("  \"%s\": [", name);
  for (size_t i = 0; i < n; ++i) {
    std::printf("%s%lld", i ? ", " : "", static_cast<long long>(v[i]));
  }
  std::printf("]%s\n", last ? "" : ",");
}

void Check(bool cond, const char* what, size_t i) {
  if (!cond) {
    std::fprintf(stderr, "tables_driver: recomputed %s[%zu] differs from the library\n", what,
                 i);
    g_ok = false;
  }
}

void Configure(FrontendConfig* cfg) {
  cfg->window.size_ms = 30;
  cfg->window.step_size_ms = 10;
  cfg->filterbank.num_channels = 40;
  cfg->filterbank.lower_band_limit = 125.0f;
  cfg->filterbank.upper_band_limit = 7500.0f;
  cfg->filterbank.output_scale_shift = 7;  // unused by FrontendPopulateState
  cfg->noise_reduction.smoothing_bits = 10;
  cfg->noise_reduction.even_smoothing = 0.025f;
  cfg->noise_reduction.odd_smoothing = 0.06f;
  cfg->noise_reduction.min_signal_remaining = 0.05f;
  cfg->pcan_gain_control.enable_pcan = 1;
  cfg->pcan_gain_control.strength = 0.95f;
  cfg->pcan_gain_control.offset = 80.0f;
  cfg->pcan_gain_control.gain_bits = 21;
  cfg->log_scale.enable_log = 1;
  cfg->log_scale.scale_shift = 6;
}

// window_util.cc: v = 0.5 - 0.5 cos(2 pi (i + 0.5) / size) in f32; coefficient
// floorf(v 2^12 + 0.5f).
void PrintWindow(const WindowState& w) {
  std::printf("  \"window_size\": %zu,\n  \"window_step\": %zu,\n", w.size, w.step);
  PrintInts("window_coefficients", w.coefficients, w.size);
  const float arg = static_cast<float>(M_PI) * 2.0f / static_cast<float>(w.size);
  std::printf("  \"window_value_bits\": [");
  for (size_t i = 0; i < w.size; ++i) {
    const float v = 0.5f - (0.5f * cosf(arg * (i + 0.5f)));
    Check(static_cast<int16_t>(floorf(v * (1 << kFrontendWindowBits) + 0.5f)) ==
              w.coefficients[i],
          "window", i);
    std::printf("%s%u", i ? ", " : "", Bits(v));
  }
  std::printf("],\n");
}

float FreqToMel(float f) { return 1127.0f * log1pf(f / 700.0f); }

// filterbank_util.cc: the weight of FFT bin `frequency` in channel `chan`, in f32.
void PrintFilterbank(const FilterbankState& fb, const FrontendConfig& cfg, int spectrum_size) {
  const int n1 = fb.num_channels + 1;
  std::printf("  \"num_channels\": %d,\n  \"start_index\": %d,\n  \"end_index\": %d,\n",
              fb.num_channels, fb.start_index, fb.end_index);
  PrintInts("channel_frequency_starts", fb.channel_frequency_starts, n1);
  PrintInts("channel_weight_starts", fb.channel_weight_starts, n1);
  PrintInts("channel_widths", fb.channel_widths, n1);
  int total = 0;
  for (int c = 0; c < n1; ++c) {
    const int end = fb.channel_weight_starts[c] + fb.channel_widths[c];
    if (end > total) total = end;
  }
  PrintInts("weights", fb.weights, total);
  PrintInts("unweights", fb.unweights, total);
  // Recompute the f32 weights of every (channel, bin) pair the library quantised.
  const float lo = FreqToMel(cfg.filterbank.lower_band_limit);
  const float hi = FreqToMel(cfg.filterbank.upper_band_limit);
  const float spacing = (hi - lo) / static_cast<float>(n1);
  const float hz_per_sbin = 0.5f * kSampleRate / (static_cast<float>(spectrum_size) - 1);
  int start = fb.start_index;
  std::printf("  \"weight_values\": [");
  bool first = true;
  for (int c = 0; c < n1; ++c) {
    const float center = lo + (spacing * (c + 1));
    const float prev = c == 0 ? lo : lo + (spacing * c);
    int f = start;
    while (FreqToMel(f * hz_per_sbin) <= center) ++f;
    for (int bin = start; bin < f; ++bin) {
      const float wv = (center - FreqToMel(bin * hz_per_sbin)) / (center - prev);
      const int idx = fb.channel_weight_starts[c] + bin - fb.channel_frequency_starts[c];
      Check(static_cast<int16_t>(floorf(wv * (1 << kFilterbankBits) + 0.5f)) == fb.weights[idx],
            "weights", idx);
      Check(static_cast<int16_t>(floorf((1.0f - wv) * (1 << kFilterbankBits) + 0.5f)) ==
                fb.unweights[idx],
            "unweights", idx);
      std::printf("%s[%d, %d, %u]", first ? "" : ", ", idx, bin, Bits(wv));
      first = false;
    }
    start = f;
  }
  std::printf("],\n");
}

// pcan_gain_control_util.cc: gain(x) = 2^gain_bits * powf(x / 2^input_bits + offset, -strength),
// stored as (int16_t)(gain + 0.5f), saturated at 32767.
void PrintPcan(const PcanGainControlState& p, const FrontendConfig& cfg, int input_bits) {
  std::printf("  \"pcan_snr_shift\": %d,\n  \"pcan_input_bits\": %d,\n", p.snr_shift, input_bits);
  // PcanGainControlPopulateState writes slots 0, 1 and 4i-6..4i-4 for i in 2..=32; the slots
  // 4i-3 are left uninitialised (malloc) and WideDynamicFunction never reads them: null here.
  std::printf("  \"pcan_gain_lut\": [");
  for (int i = 0; i < kWideDynamicFunctionLUTSize; ++i) {
    const bool unset = i >= 5 && (i + 3) % 4 == 0;
    if (unset) {
      std::printf("%snull", i ? ", " : "");
    } else {
      std::printf("%s%d", i ? ", " : "", p.gain_lut[i]);
    }
  }
  std::printf("],\n");
  // Every x the LUT construction evaluates, with gain_as_float.
  std::printf("  \"pcan_gain_values\": [");
  bool first = true;
  auto emit = [&](uint32_t x) {
    const float xf = static_cast<float>(x) / (static_cast<uint32_t>(1) << input_bits);
    const float g = (static_cast<uint32_t>(1) << cfg.pcan_gain_control.gain_bits) *
                    powf(xf + cfg.pcan_gain_control.offset, -cfg.pcan_gain_control.strength);
    std::printf("%s[%u, %u]", first ? "" : ", ", x, Bits(g));
    first = false;
  };
  emit(0);
  emit(1);
  for (int interval = 2; interval <= kWideDynamicFunctionBits; ++interval) {
    const uint32_t x0 = static_cast<uint32_t>(1) << (interval - 1);
    const uint32_t x1 = x0 + (x0 >> 1);
    const uint32_t x2 = (interval == kWideDynamicFunctionBits) ? x0 + (x0 - 1) : 2 * x0;
    emit(x0);
    emit(x1);
    emit(x2);
  }
  std::printf("],\n");
}

void PrintFft(const FftState& fft) {
  const auto* st = static_cast<const kissfft_fixed16::kiss_fftr_state*>(fft.scratch);
  const auto* sub = st->substate;
  std::printf("  \"fft_size\": %zu,\n  \"fft_input_size\": %zu,\n  \"kiss_nfft\": %d,\n",
              fft.fft_size, fft.input_size, sub->nfft);
  int nf = 0;
  // kf_factor stops when the remaining length reaches 1, so the last pair has m == 1.
  for (; nf < 2 * MAXFACTORS; nf += 2) {
    if (sub->factors[nf + 1] == 1) {
      nf += 2;
      break;
    }
  }
  PrintInts("kiss_factors", sub->factors, nf);
  std::printf("  \"kiss_twiddles\": [");
  for (int i = 0; i < sub->nfft; ++i) {
    std::printf("%s[%d, %d]", i ? ", " : "", sub->twiddles[i].r, sub->twiddles[i].i);
  }
  std::printf("],\n  \"kiss_super_twiddles\": [");
  for (int i = 0; i < sub->nfft / 2; ++i) {
    std::printf("%s[%d, %d]", i ? ", " : "", st->super_twiddles[i].r, st->super_twiddles[i].i);
  }
  std::printf("],\n");
}

}  // namespace

int main() {
  FrontendConfig cfg;
  Configure(&cfg);
  FrontendState s;
  if (!FrontendPopulateState(&cfg, &s, kSampleRate)) {
    std::fprintf(stderr, "tables_driver: FrontendPopulateState failed\n");
    return 1;
  }
  const int input_correction_bits =
      MostSignificantBit32(s.fft.fft_size) - 1 - (kFilterbankBits / 2);
  std::printf("{\n  \"source\": \"pymicro-features 2.0.2 sdist, FrontendPopulateState\",\n");
  std::printf("  \"sample_rate\": %d,\n", kSampleRate);
  PrintWindow(s.window);
  PrintFft(s.fft);
  PrintFilterbank(s.filterbank, cfg, static_cast<int>(s.fft.fft_size / 2 + 1));
  const NoiseReductionState& nr = s.noise_reduction;
  std::printf(
      "  \"noise_smoothing_bits\": %d,\n  \"noise_even_smoothing\": %u,\n"
      "  \"noise_odd_smoothing\": %u,\n  \"noise_min_signal_remaining\": %u,\n",
      nr.smoothing_bits, nr.even_smoothing, nr.odd_smoothing, nr.min_signal_remaining);
  std::printf("  \"noise_config_value_bits\": [%u, %u, %u],\n",
              Bits(cfg.noise_reduction.even_smoothing * (1 << kNoiseReductionBits)),
              Bits(cfg.noise_reduction.odd_smoothing * (1 << kNoiseReductionBits)),
              Bits(cfg.noise_reduction.min_signal_remaining * (1 << kNoiseReductionBits)));
  std::printf("  \"input_correction_bits\": %d,\n", input_correction_bits);
  PrintPcan(s.pcan_gain_control, cfg, nr.smoothing_bits - input_correction_bits);
  std::printf("  \"log_enable\": %d,\n  \"log_scale_shift\": %d,\n", s.log_scale.enable_log,
              s.log_scale.scale_shift);
  std::printf("  \"log_segments_log2\": %d,\n  \"log_scale_log2\": %d,\n  \"log_coeff\": %d,\n",
              kLogSegmentsLog2, kLogScaleLog2, kLogCoeff);
  PrintInts("log_lut", kLogLut, kLogLutLen, true);
  std::printf("}\n");
  FrontendFreeStateContents(&s);
  return g_ok ? 0 : 1;
}
