#!/usr/bin/env bash
# One device run of the vLLM route (docs/gpu-run.md): copy the carried part N of the bundle
# (.vllm/partN/, made by scripts/gpu/vllm_bundle.sh) outside the checkout, where it stays
# while the machine is warm, and say what arrived. Run as: bash scripts/gpu/vllm_stage.sh N
set -euo pipefail
n=${1:?part number}
STAGE=${STAGE:-/root/vllm-parts}
mkdir -p "$STAGE"
cp .vllm/part"$n"/* "$STAGE"/
echo "checkout $(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo '?') $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
ls -l "$STAGE"
( cd "$STAGE" && sha256sum bundle.part* )
nvidia-smi -L || true
