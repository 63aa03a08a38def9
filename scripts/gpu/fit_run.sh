#!/usr/bin/env bash
# The last device run of the weight-residency measurements (docs/fit.md, "Measured by
# servekit on an H200"), after scripts/gpu/vllm_stage.sh has put parts 0..N-2 of the bundle
# outside the checkout on the same warm machine. The bundle is vLLM 0.26.0 with its MoE
# kernels and compressed-tensors:
#   EXTRA_WHEELS=scripts/gpu/fit-wheels.txt KEEP_MOE=1 GGUF=0 scripts/gpu/vllm_bundle.sh
# Steps:
#   1. stage the last part, check the sums, assemble, extract (scripts/gpu/vllm_lib.sh)
#   2. record the hardware and the engine build (scripts/gpu/vllm_facts.py)
#   3. for each wave of WAVES (waves split by ','; the configs of a wave run side by side,
#      each in its own process: scripts/gpu/fit_measure.py on tests/assets/fit/configs/NAME.json,
#      under a time limit that ends before BUDGET); after each wave, append the results
#      to $OUT/results.jsonl and pack every log into $OUT/logs.tar.gz, so a late failure
#      keeps what ran
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
STAGE=${STAGE:-/root/vllm-parts}
WORK=${WORK:-/tmp/fit-run}
BUDGET=${BUDGET:-570}
WAVE_S=${WAVE_S:-240}
WAVES=${WAVES:-qwen3-0.6b-quantized-w4a16 qwen3-0.6b qwen2.5-7b-instruct-awq qwen2.5-7b-instruct qwen3-30b-a3b,llama-3.3-70b-instruct-fp8-dynamic,gpt-oss-120b}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_ENABLE_V1_MULTIPROCESSING=0
# shellcheck source=scripts/gpu/vllm_lib.sh
. scripts/gpu/vllm_lib.sh

log "1. assemble"
assemble
export PYTHONPATH=$WORK/site${PYTHONPATH:+:$PYTHONPATH}

log "2. facts"
(cd scripts/gpu && python3 vllm_facts.py) > "$OUT/facts.json" || log "facts failed"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$OUT/log.txt"

wave() {  # wave NAME...: one process per config, side by side, under one time limit
  local limit=$(($(left) - 20)) name pids=()
  [ "$limit" -gt "$WAVE_S" ] && limit=$WAVE_S
  [ "$limit" -gt 40 ] || { log "skip $*: $(left) s left"; return 1; }
  log "3. wave (at most $limit s): $*"
  for name in "$@"; do
    timeout -k 5 "$limit" python3 scripts/gpu/fit_measure.py \
      "tests/assets/fit/configs/$name.json" "$WORK/$name.json" > "$WORK/$name.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"; log "${*:$((i + 1)):1} exit $?"
  done
  for name in "$@"; do
    grep -E "^FIT |Model loading took|Using .*([Kk]ernel|backend)|Error" "$WORK/$name.log" \
      | cut -c1-300 | tail -8 | tee -a "$OUT/log.txt"
    [ -s "$WORK/$name.json" ] && python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
      "$WORK/$name.json" >> "$OUT/results.jsonl"
  done
  (cd "$WORK" && tar -czf "$OUT/logs.tar.gz" ./*.log)
}

IFS=',' read -r -a waves <<< "$WAVES"
for w in "${waves[@]}"; do
  # shellcheck disable=SC2086
  wave $w
done
log "done"
