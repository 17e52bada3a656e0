"""Checks the tables of the installed pymicro-features binary against tables_driver's JSON.

Loads the package's own extension module (micro_features_cpp, which exports the TFLite Micro
frontend's C functions), calls FrontendPopulateState with the configuration its
micro_features.cpp uses, and compares the window, filterbank, noise-reduction and PCAN
tables with the JSON in argv[1] (built from the sdist). Exit status 1 on any difference.
The struct layouts below restate the sdist's headers (window.h, fft.h, filterbank.h,
noise_reduction.h, pcan_gain_control.h, log_scale.h and the *_util.h config structs).
"""

import ctypes as C
import json
import sys

import micro_features_cpp

P16 = C.POINTER(C.c_int16)


class WindowConfig(C.Structure):
    _fields_ = [("size_ms", C.c_size_t), ("step_size_ms", C.c_size_t)]


class FilterbankConfig(C.Structure):
    _fields_ = [("num_channels", C.c_int), ("upper_band_limit", C.c_float),
                ("lower_band_limit", C.c_float), ("output_scale_shift", C.c_int)]


class NoiseReductionConfig(C.Structure):
    _fields_ = [("smoothing_bits", C.c_int), ("even_smoothing", C.c_float),
                ("odd_smoothing", C.c_float), ("min_signal_remaining", C.c_float)]


class PcanConfig(C.Structure):
    _fields_ = [("enable_pcan", C.c_int), ("strength", C.c_float), ("offset", C.c_float),
                ("gain_bits", C.c_int)]


class LogScaleConfig(C.Structure):
    _fields_ = [("enable_log", C.c_int), ("scale_shift", C.c_int)]


class FrontendConfig(C.Structure):
    _fields_ = [("window", WindowConfig), ("filterbank", FilterbankConfig),
                ("noise_reduction", NoiseReductionConfig), ("pcan", PcanConfig),
                ("log_scale", LogScaleConfig)]


class WindowState(C.Structure):
    _fields_ = [("size", C.c_size_t), ("coefficients", P16), ("step", C.c_size_t),
                ("input", P16), ("input_used", C.c_size_t), ("output", P16),
                ("max_abs_output_value", C.c_int16)]


class FftState(C.Structure):
    _fields_ = [("input", P16), ("output", C.c_void_p), ("fft_size", C.c_size_t),
                ("input_size", C.c_size_t), ("scratch", C.c_void_p),
                ("scratch_size", C.c_size_t)]


class FilterbankState(C.Structure):
    _fields_ = [("num_channels", C.c_int), ("start_index", C.c_int), ("end_index", C.c_int),
                ("channel_frequency_starts", P16), ("channel_weight_starts", P16),
                ("channel_widths", P16), ("weights", P16), ("unweights", P16),
                ("work", C.c_void_p)]


class NoiseReductionState(C.Structure):
    _fields_ = [("smoothing_bits", C.c_int), ("even_smoothing", C.c_uint16),
                ("odd_smoothing", C.c_uint16), ("min_signal_remaining", C.c_uint16),
                ("num_channels", C.c_int), ("estimate", C.c_void_p)]


class PcanState(C.Structure):
    _fields_ = [("enable_pcan", C.c_int), ("noise_estimate", C.c_void_p),
                ("num_channels", C.c_int), ("gain_lut", P16), ("snr_shift", C.c_int32)]


class LogScaleState(C.Structure):
    _fields_ = [("enable_log", C.c_int), ("scale_shift", C.c_int)]


class FrontendState(C.Structure):
    _fields_ = [("window", WindowState), ("fft", FftState), ("filterbank", FilterbankState),
                ("noise_reduction", NoiseReductionState), ("pcan", PcanState),
                ("log_scale", LogScaleState)]


def main():
    want = json.load(open(sys.argv[1]))
    lib = C.CDLL(micro_features_cpp.__file__)
    cfg = FrontendConfig(WindowConfig(30, 10), FilterbankConfig(40, 7500.0, 125.0, 7),
                         NoiseReductionConfig(10, 0.025, 0.06, 0.05), PcanConfig(1, 0.95, 80.0, 21),
                         LogScaleConfig(1, 6))
    st = FrontendState()
    if not lib.FrontendPopulateState(C.byref(cfg), C.byref(st), 16000):
        sys.exit("tables_wheel: FrontendPopulateState failed")
    fb = st.filterbank
    n1 = fb.num_channels + 1
    total = len(want["weights"])
    lut = [st.pcan.gain_lut[i] for i in range(len(want["pcan_gain_lut"]))]
    got = {
        "window_coefficients": st.window.coefficients[:st.window.size],
        "start_index": fb.start_index,
        "end_index": fb.end_index,
        "channel_frequency_starts": fb.channel_frequency_starts[:n1],
        "channel_weight_starts": fb.channel_weight_starts[:n1],
        "channel_widths": fb.channel_widths[:n1],
        "weights": fb.weights[:total],
        "unweights": fb.unweights[:total],
        "noise_even_smoothing": st.noise_reduction.even_smoothing,
        "noise_odd_smoothing": st.noise_reduction.odd_smoothing,
        "noise_min_signal_remaining": st.noise_reduction.min_signal_remaining,
        "pcan_snr_shift": st.pcan.snr_shift,
        "pcan_gain_lut": [None if w is None else v for v, w in zip(lut, want["pcan_gain_lut"])],
        "fft_size": st.fft.fft_size,
    }
    bad = [k for k, v in got.items() if v != want[k]]
    lib.FrontendFreeStateContents(C.byref(st))
    if bad:
        sys.exit(f"tables_wheel: the installed binary differs in {bad}")
    print(f"tables_wheel: the installed binary's tables equal the sdist build ({len(got)} tables)")


if __name__ == "__main__":
    main()
