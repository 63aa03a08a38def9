#!/usr/bin/env bash
# The last device run of the vLLM route (docs/gpu-run.md, "vLLM on the H200"), after
# scripts/gpu/vllm_stage.sh has put parts 0..N-2 outside the checkout on the same warm machine:
#   1. stage the last part, check every part's and the bundle's sha256, assemble, extract
#   2. put servekit (this checkout's src/) on the path next to vLLM; record hardware and engine build
#   3. convert the GGUF to a bf16 checkpoint (scripts/gpu/convert_gguf.py) and digest it
#   4. for each configuration (stock: vLLM's defaults; tuned: TUNED_ARGS): start vLLM in its
#      own session, wait for /health while checking the process is alive, run one warm pass
#      (WARM, its own seed, never published), then `servekit bench run` RUNS times for each
#      grid (GRID_C1: concurrency 1; GRID_LOAD: 8, 32, 128 with more requests, so that each
#      point is measured over more than a few batches), and stop the engine by its process group
#   5. if ACCURACY=1, the accuracy check (scripts/gpu/accuracy.py): served by the last
#      engine, then in transformers on the same GPU
# $OUT gets log.txt, serve.log, facts.json, accuracy.json and evidence.tar.gz (every bench
# file, packed after each configuration: the device tool returns at most 8 files). Each step
# checks the time left against BUDGET seconds so the run ends before the tool's limit.
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
STAGE=${STAGE:-/root/vllm-parts}
WORK=${WORK:-/tmp/vllm-run}
PORT=${PORT:-8000}
NAME=smollm2-135m
BUDGET=${BUDGET:-560}
RUNS=${RUNS:-2}
SEED=${SEED:-20261201}
COMMON=${COMMON:---input-tokens 450:500 --output-tokens 64 --warmup 16}
WARM=${WARM:---concurrency 1,8,32,128 --requests 128}
GRID_C1=${GRID_C1:---concurrency 1 --requests 64}
GRID_LOAD=${GRID_LOAD:---concurrency 8,32,128 --requests 256}
ACCURACY=${ACCURACY:-1}
TUNED_ARGS=${TUNED_ARGS:---max-num-seqs 128 --max-num-batched-tokens 32768}
CONFIGS=${CONFIGS:-stock tuned}
GGUF=SmolLM2-135M-Instruct.Q4_1.gguf
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
# flashinfer is not carried; without this the engine core dies with "No module named 'flashinfer'"
export VLLM_USE_FLASHINFER_SAMPLER=0
# shellcheck source=scripts/gpu/vllm_lib.sh
. scripts/gpu/vllm_lib.sh

log "1. assemble"
assemble
mkdir -p "$WORK/ev"

log "2. servekit from this checkout; facts"
export PYTHONPATH=$PWD/src:$WORK/site${PYTHONPATH:+:$PYTHONPATH}
SK=(python3 -m servekit.cli.main --quiet)
(cd scripts/gpu && python3 vllm_facts.py) > "$WORK/facts-engine.json" || die "facts"
cat "$WORK/facts-engine.json" >> "$OUT/log.txt"

log "3. convert"
python3 scripts/gpu/convert_gguf.py "$WORK/gguf/$GGUF" "$WORK/$NAME" > "$WORK/convert.json" 2>> "$OUT/log.txt" || die "convert"
cat "$WORK/convert.json" | tee -a "$OUT/log.txt"
"${SK[@]}" model digest "$WORK/$NAME" -o "$WORK/converted-pin.json" || die "digest"
mkdir -p "$WORK/gguf-tree" && ln "$WORK/gguf/$GGUF" "$WORK/gguf-tree/$GGUF"
"${SK[@]}" model digest "$WORK/gguf-tree" -o "$WORK/gguf-pin.json" || die "gguf digest"
python3 - "$WORK" > "$OUT/facts.json" <<'PY'
import json, sys, pathlib
w = pathlib.Path(sys.argv[1])
facts = json.loads((w / "facts-engine.json").read_text())
facts["convert"] = json.loads((w / "convert.json").read_text())
facts["converted_pin"] = json.loads((w / "converted-pin.json").read_text())
facts["gguf_pin"] = json.loads((w / "gguf-pin.json").read_text())
print(json.dumps(facts, indent=2))
PY
log "converted tree $(grep -m1 tree_digest "$WORK/converted-pin.json")"

PID=""
SERVE_CMD=""
serve() {  # serve LABEL ARGS...: start vLLM in its own session, wait for /health
  local label=$1; shift
  log "serve $label: vllm serve MODEL --served-model-name $NAME --host 127.0.0.1 --port $PORT $*"
  echo "===== $label: $* =====" >> "$OUT/serve.log"
  # What each run's header records (evidence v2): `vllm` is the console script of the same
  # entry point (vllm.entrypoints.cli.main), which the bundle trims away.
  SERVE_CMD="VLLM_USE_FLASHINFER_SAMPLER=0 vllm serve $WORK/$NAME --served-model-name $NAME --host 127.0.0.1 --port $PORT $*"
  rm -f "$WORK/engine.pid"
  # The session leader writes its pid, which is also the process group to stop.
  # shellcheck disable=SC2016
  setsid bash -c 'echo $$ > "$0"; exec "$@"' "$WORK/engine.pid" \
    python3 -m vllm.entrypoints.cli.main serve "$WORK/$NAME" --served-model-name "$NAME" \
    --host 127.0.0.1 --port "$PORT" "$@" >> "$OUT/serve.log" 2>&1 < /dev/null &
  for _ in $(seq 50); do [ -s "$WORK/engine.pid" ] && break; sleep 0.1; done
  PID=$(cat "$WORK/engine.pid")
  local t=$(date +%s)
  while kill -0 "$PID" 2> /dev/null; do
    if curl -sf -o /dev/null "http://127.0.0.1:$PORT/health"; then
      log "ready after $(($(date +%s) - t)) s"; return 0
    fi
    [ "$(left)" -gt 30 ] || { log "out of time waiting for readiness"; return 1; }
    sleep 1
  done
  log "the engine exited before it was ready"; PID=""; return 1
}
stop() {  # stop the engine's whole process group
  [ -n "$PID" ] || return 0
  kill -TERM -- "-$PID" 2> /dev/null
  for _ in $(seq 30); do kill -0 "$PID" 2> /dev/null || break; sleep 1; done
  kill -KILL -- "-$PID" 2> /dev/null; PID=""
  log "engine stopped"
}
trap stop EXIT

bench() {  # bench DIR RUNS SEED GRID...: one `servekit bench run` into $WORK/ev/DIR
  local dir=$1 runs=$2 seed=$3; shift 3
  local limit=$(($(left) - 40))
  [ "$limit" -gt 20 ] || { log "skip bench $dir: $(left) s left"; return 1; }
  log "4. bench $dir ($runs runs, at most $limit s): $*"
  # shellcheck disable=SC2086
  timeout "$limit" "${SK[@]}" bench run --endpoint "http://127.0.0.1:$PORT" --model "$NAME" \
    --api completions $COMMON "$@" --seed "$seed" --runs "$runs" --gpus 1 \
    --hardware "1x H200" --serve-command "$SERVE_CMD" \
    --tokenizer "$WORK/$NAME" --timeout 120 --out "$WORK/ev/$dir" 2>&1 | tail -14 | tee -a "$OUT/log.txt"
}

for config in $CONFIGS; do
  [ "$(left)" -gt 150 ] || { log "skip $config: $(left) s left"; continue; }
  args=""; [ "$config" = tuned ] && args=$TUNED_ARGS
  # shellcheck disable=SC2086
  serve "$config" $args || { stop; continue; }
  # shellcheck disable=SC2086
  bench "$config/warm" 1 $((SEED - 1)) $WARM
  # shellcheck disable=SC2086
  bench "$config/c1" "$RUNS" "$SEED" $GRID_C1
  # shellcheck disable=SC2086
  bench "$config/load" "$RUNS" "$SEED" $GRID_LOAD
  tar -C "$WORK/ev" -czf "$OUT/evidence.tar.gz" .
  log "bench $config done"
  if [ "$config" != "$(echo $CONFIGS | awk '{print $NF}')" ]; then stop; fi
done

log "5. accuracy (ACCURACY=$ACCURACY)"
[ "$ACCURACY" = 1 ] || { stop; log "done"; exit 0; }
if [ -n "$PID" ] && [ "$(left)" -gt 40 ]; then
  timeout 60 python3 scripts/gpu/accuracy.py served --endpoint "http://127.0.0.1:$PORT" --model "$NAME" > "$WORK/acc-served.json" || log "served accuracy failed"
fi
stop
if [ "$(left)" -gt 30 ]; then
  timeout $(($(left) - 10)) python3 scripts/gpu/accuracy.py transformers --model-dir "$WORK/$NAME" > "$WORK/acc-tf.json" 2>> "$OUT/log.txt" || log "transformers accuracy failed"
fi
cat "$WORK"/acc-*.json 2> /dev/null > "$OUT/accuracy.json"
python3 -c "import json,sys; [print(r['side'], r['correct'], '/', r['questions']) for r in map(json.loads, open(sys.argv[1]))]" "$OUT/accuracy.json" 2>&1 | tee -a "$OUT/log.txt"
log "done"
