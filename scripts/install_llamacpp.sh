#!/usr/bin/env bash
# Idempotent set-up of .venv-llamacpp: a separate venv holding llama-cpp-python (built from its
# PyPI source, CPU backend only), the gguf library, and what llama.cpp's own converter
# (convert_hf_to_gguf.py) needs, so that `qgpu export gguf` and qwengpu/engines/llamacpp.py can
# run. It is separate from .venv on purpose: nothing here may change qwengpu's own environment.
# Run from anywhere:
#
#     bash scripts/install_llamacpp.sh     # the build: 12-40 min on 2 cores; ~1.5 GB in the venv
#
# The sdist (llama_cpp_python-VERSION.tar.gz) is kept in .venv-llamacpp/src, and its vendored
# llama.cpp converter (convert_hf_to_gguf.py, conversion/, gguf-py/, requirements/) is unpacked
# to .venv-llamacpp/llama.cpp, so export works offline later and matches the compiled library.
#
# Environment knobs: PYTHON (python >= 3.10, default python3), LLAMACPP_VENV (default
# .venv-llamacpp), LLAMACPP_VERSION (default 0.3.36), TORCH_SPEC (default torch==2.13.0+cpu,
# falling back to torch==2.13.0), TRANSFORMERS_SPEC (default transformers==5.24.0: the converter
# reads the checkpoint's config with AutoConfig, and qwen3_5_text needs transformers 5),
# CMAKE_BUILD_PARALLEL_LEVEL (default: the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${LLAMACPP_VENV:-.venv-llamacpp}
PYTHON=${PYTHON:-python3}
VERSION=${LLAMACPP_VERSION:-0.3.36}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0+cpu}
TRANSFORMERS_SPEC=${TRANSFORMERS_SPEC:-transformers==5.24.0}
GGUF_SPEC=${GGUF_SPEC:-gguf==0.19.0}
PY="$VENV/bin/python"
SDIST="$VENV/src/llama_cpp_python-$VERSION.tar.gz"

say() { echo "install_llamacpp: $*"; }
# pip warns about every absent local index folder: keep those lines out of the log
pip_q() {
    "$PY" -m pip "$@" --quiet 2> >(grep -v '^WARNING: Location .* is ignored' >&2)
}
have() {   # have DIST VERSION: DIST is installed at VERSION (any version when VERSION is empty)
    "$PY" -c 'import importlib.metadata as m, sys
v = m.version(sys.argv[1])
sys.exit(bool(sys.argv[2]) and v.split("+")[0] != sys.argv[2].split("+")[0])' "$1" "${2:-}" 2>/dev/null
}

# 1. the venv
if [ -x "$PY" ]; then
    say "1/6 venv $VENV already exists ($("$PY" --version))"
else
    say "1/6 creating venv $VENV with $("$PYTHON" --version)"
    "$PYTHON" -m venv "$VENV"
    pip_q install --upgrade pip
fi

# 2. torch, the CPU build (the converter imports torch). Installed first and on its own, so no
#    other requirement resolves a CUDA build of several GB.
TORCH_VER=${TORCH_SPEC#*==}
if have torch "$TORCH_VER"; then
    say "2/6 torch $("$PY" -c 'import importlib.metadata as m; print(m.version("torch"))') already installed"
else
    say "2/6 installing $TORCH_SPEC"
    pip_q install "$TORCH_SPEC" || { say "  $TORCH_SPEC not found; trying torch==${TORCH_VER%+*}"; pip_q install "torch==${TORCH_VER%+*}"; }
fi
echo "torch==$("$PY" -c 'import importlib.metadata as m; print(m.version("torch"))')" > "$VENV/qwengpu-constraints.txt"

# 3. the converter's other needs and the gguf library (torch held where it is)
if have transformers "${TRANSFORMERS_SPEC#*==}" && have gguf "${GGUF_SPEC#*==}" && have safetensors && have sentencepiece \
        && have protobuf && have numpy; then
    say "3/6 $TRANSFORMERS_SPEC, $GGUF_SPEC, safetensors, sentencepiece, protobuf, numpy already installed"
else
    say "3/6 installing $TRANSFORMERS_SPEC $GGUF_SPEC safetensors sentencepiece protobuf numpy"
    PIP_CONSTRAINT="$VENV/qwengpu-constraints.txt" pip_q install "$TRANSFORMERS_SPEC" "$GGUF_SPEC" safetensors \
        sentencepiece protobuf numpy
fi

# 4. the llama-cpp-python sdist, kept in the venv
if [ -s "$SDIST" ]; then
    say "4/6 source $SDIST already downloaded"
else
    say "4/6 downloading llama-cpp-python==$VERSION (source) to $VENV/src"
    mkdir -p "$VENV/src"
    pip_q download --no-deps --no-binary :all: -d "$VENV/src" "llama-cpp-python==$VERSION"
fi

# 5. its vendored converter, unpacked beside the venv's bin/ (qwengpu/engines/gguf.py looks there)
if [ -f "$VENV/llama.cpp/convert_hf_to_gguf.py" ] && [ -f "$VENV/llama.cpp/.version" ] \
        && [ "$(cat "$VENV/llama.cpp/.version")" = "$VERSION" ]; then
    say "5/6 converter already unpacked in $VENV/llama.cpp"
else
    say "5/6 unpacking llama.cpp's converter (convert_hf_to_gguf.py, conversion/, gguf-py/) to $VENV/llama.cpp"
    rm -rf "$VENV/llama.cpp" "$VENV/src/unpack"
    mkdir -p "$VENV/src/unpack"
    top="llama_cpp_python-$VERSION/vendor/llama.cpp"
    tar -xzf "$SDIST" -C "$VENV/src/unpack" "$top/convert_hf_to_gguf.py" "$top/conversion" "$top/gguf-py" "$top/requirements"
    mv "$VENV/src/unpack/$top" "$VENV/llama.cpp"
    rm -rf "$VENV/src/unpack"
    echo "$VERSION" > "$VENV/llama.cpp/.version"
fi

# 6. llama-cpp-python itself, compiled from the kept sdist: the CPU backend only (no CUDA even
#    where nvcc exists, no BLAS, no curl), native CPU flags
if have llama_cpp_python "$VERSION"; then
    say "6/6 llama-cpp-python $VERSION already built and installed"
else
    say "6/6 building llama-cpp-python $VERSION from source, CPU only (12-40 min on 2 cores; log: $VENV/build.log)"
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    CMAKE_ARGS="-DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF -DGGML_NATIVE=ON -DLLAMA_CURL=OFF" \
    PIP_CONSTRAINT="$VENV/qwengpu-constraints.txt" \
        "$PY" -m pip install -v --no-binary llama-cpp-python "$SDIST" > "$VENV/build.log" 2>&1 \
        || { tail -30 "$VENV/build.log" >&2; say "the build failed (full log: $VENV/build.log)"; exit 1; }
fi

say "smoke test:"
"$PY" - <<'PYEOF'
import importlib.metadata as m
import llama_cpp, torch, transformers
print(f"  llama_cpp {llama_cpp.__version__} (GPU offload: {bool(llama_cpp.llama_supports_gpu_offload())}), "
      f"gguf {m.version('gguf')}, torch {torch.__version__}, transformers {transformers.__version__}")
PYEOF
# the converter imports its own vendored gguf-py (newer than PyPI's gguf of the same version
# number: it knows architectures PyPI's does not), as convert_hf_to_gguf.py itself does
"$PY" - "$VENV/llama.cpp" <<'PYEOF'
import sys
d = sys.argv[1]
sys.path[:0] = [d, d + "/gguf-py"]
from conversion import get_model_class
print(f"  converter: {d}/convert_hf_to_gguf.py (Qwen3_5ForCausalLM -> {get_model_class('Qwen3_5ForCausalLM').__name__})")
PYEOF
say "done: $VENV (qgpu export gguf --model DIR --out FILE.gguf; qwengpu.engines.llamacpp.LlamaCppEngine)"
