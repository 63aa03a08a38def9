#!/usr/bin/env bash
# The tuning route on the H200 (docs/gpu-run.md, "servekit tune on the H200"): one job that
# outlives the device call that starts it, started in its own session after
# scripts/gpu/vllm_stage.sh has put the bundle's first parts outside the checkout:
#   setsid nohup bash scripts/gpu/tune_all.sh > /root/tune-job.log 2>&1 < /dev/null &
# Each device call then runs scripts/gpu/tune_wait.sh, which waits for the job (or its own
# time limit) and packs what the job has written so far into $OUT, so a later call picks up
# where the last one stopped while the machine stays warm.
#   1. assemble the bundle (scripts/gpu/vllm_lib.sh); a `vllm` command on PATH that runs the
#      entry point the trimmed bundle keeps (python3 -m vllm.entrypoints.cli.main)
#   2. record the hardware and engine build (scripts/gpu/vllm_facts.py)
#   3. convert the SmolLM2 GGUF (scripts/gpu/convert_gguf.py), warming vLLM's imports meanwhile
#   4. for each of MODELS: servekit tune (scripts/gpu/tune/NAME-{workload,space}.yaml), under
#      `timeout`: on SIGTERM the tuner stops its engine and writes the draft of what it measured
# Everything lands in RES; RES/DONE marks the end. DRY=1 runs the same steps on this machine
# with servekit's simulator instead of vLLM (no bundle, no GPU), for the dry run.
set -uo pipefail
RES=${RES:-/root/tune-out}
STAGE=${STAGE:-/root/vllm-parts}
WORK=${WORK:-/tmp/vllm-run}
DRY=${DRY:-0}
MODELS=${MODELS:-qwen7b smollm2}
BUDGET_smollm2=${BUDGET_smollm2:-520}
BUDGET_qwen7b=${BUDGET_qwen7b:-660}
BUDGET_sim=${BUDGET_sim:-60}
CANDIDATES=${CANDIDATES:-3}
PAIRS=${PAIRS:-4}
GGUF=SmolLM2-135M-Instruct.Q4_1.gguf
SMOL=$WORK/smollm2-135m
QWEN=$WORK/qwen2.5-7b-instruct-config
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
rm -rf "$RES" && mkdir -p "$RES"
OUT=$RES BUDGET=100000  # vllm_lib.sh logs to $OUT/log.txt; each tune has its own budget
# shellcheck source=scripts/gpu/vllm_lib.sh
. scripts/gpu/vllm_lib.sh
trap 'log "job ends"; touch "$RES/DONE"' EXIT
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
SK=(python3 -m servekit.cli.main)

if [ "$DRY" = 1 ]; then
  log "dry run: servekit's simulator stands in for vLLM"
  mkdir -p "$SMOL" && echo '{"model_type": "llama"}' > "$SMOL/config.json"
else
  log "1. assemble"
  assemble
  export PYTHONPATH=$PYTHONPATH:$WORK/site
  mkdir -p "$WORK/bin"
  printf '#!/bin/sh\nexec python3 -m vllm.entrypoints.cli.main "$@"\n' > "$WORK/bin/vllm"
  chmod +x "$WORK/bin/vllm"
  export PATH=$WORK/bin:$PATH
  log "2. facts"
  (cd scripts/gpu && python3 vllm_facts.py) > "$RES/facts.json" || die "facts"
  log "3. convert (vLLM's imports warmed meanwhile)"
  (time python3 -c 'import vllm.entrypoints.openai.api_server') > "$RES/warm-import.log" 2>&1 &
  python3 scripts/gpu/convert_gguf.py "$WORK/gguf/$GGUF" "$SMOL" > "$RES/convert.json" 2>> "$RES/log.txt" || die "convert"
  wait
  "${SK[@]}" --quiet model digest "$SMOL" -o "$RES/smollm2-pin.json" || die "digest"
  mkdir -p "$QWEN" && cp tests/assets/fit/configs/qwen2.5-7b-instruct.json "$QWEN/config.json"
  "${SK[@]}" --quiet model digest "$QWEN" -o "$RES/qwen7b-pin.json" || die "digest"
  log "converted $(grep -m1 tree_digest "$RES/smollm2-pin.json")"
fi

tune() {  # tune NAME MODEL_DIR ENGINE WORKLOAD SPACE BUDGET
  local name=$1 model=$2 eng=$3 workload=$4 space=$5 budget=$6
  sed "s|@TOKENIZER@|$SMOL|" "$space" > "$RES/$name-space.yaml"
  cp "$workload" "$RES/$name-workload.yaml"
  log "tune $name: $eng, budget $budget s, $CANDIDATES candidates at most, $PAIRS pairs"
  # the confirmation starts no pair past 1.25 budgets (servekit.tune.run.OVERRUN); SIGTERM
  # at 1.3 budgets and a minute: the tuner stops its engine and writes what it measured
  timeout --kill-after=60 $((budget * 13 / 10 + 60)) "${SK[@]}" tune --engine "$eng" --model "$model" \
    --workload "$RES/$name-workload.yaml" --space "$RES/$name-space.yaml" --budget "${budget}s" \
    --out "$RES/$name" --gpus 1 --hardware "1x H200" --max-candidates "$CANDIDATES" \
    --confirm-pairs "$PAIRS" --method grid --served-name "$name" \
    > "$RES/$name-tune.out" 2> "$RES/$name-tune.err"
  log "tune $name: exit $?; $(tail -3 "$RES/$name-tune.out" | tr '\n' ' ')"
}

for name in $MODELS; do
  w=scripts/gpu/tune/$name-workload.yaml
  case $DRY:$name in
    1:*) tune "$name" "$SMOL" sim "$w" scripts/gpu/tune/sim-space.yaml "$BUDGET_sim" ;;
    0:smollm2) tune smollm2 "$SMOL" vllm "$w" scripts/gpu/tune/smollm2-space.yaml "$BUDGET_smollm2" ;;
    0:qwen7b) tune qwen7b "$QWEN" vllm "$w" scripts/gpu/tune/qwen7b-space.yaml "$BUDGET_qwen7b" ;;
  esac
done
