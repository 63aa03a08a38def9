#!/usr/bin/env bash
# Measure a small Llama model served by `transformers serve` on one GPU, end to end:
#   1. install the carried wheels and servekit itself into /tmp/site
#   2. create the model twice from a fixed seed; commit each tree with fixed git metadata
#   3. digest the first (servekit model digest) and verify the second against it
#   4. record hardware, engine build and weight residency (scripts/gpu/facts.py)
#   5. serve it with continuous batching and run servekit bench run over loopback
# Everything lands in $OUT (at most 8 files come back): see docs/gpu-run.md.
set -euo pipefail
: "${OUT:?set OUT to the output directory}"
SIZE=${SIZE:-850m}
PORT=${PORT:-8000}
GRID=${GRID:---input-tokens 900:1000 --output-tokens 32 --concurrency 1,8,32 --requests 32 --warmup 2}
WORK=${WORK:-/tmp/gpurun}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/log.txt"; }

log "1. install"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/site . 2>&1 | tail -2
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
SK=(python3 -m servekit.cli.main --quiet)

commit_tree() {  # a git commit of the model tree with fixed metadata: same bytes, same id
  git -C "$1" init -q && git -C "$1" config core.compression 0 && git -C "$1" add -A
  GIT_AUTHOR_NAME=servekit GIT_AUTHOR_EMAIL=servekit@localhost GIT_AUTHOR_DATE=2026-11-30T00:00:00Z \
  GIT_COMMITTER_NAME=servekit GIT_COMMITTER_EMAIL=servekit@localhost GIT_COMMITTER_DATE=2026-11-30T00:00:00Z \
    git -C "$1" commit -q -m "llama-$SIZE-seed0" && git -C "$1" rev-parse HEAD
}

log "2. create the model (TWIN=1: twice)"
rm -rf "$WORK" && mkdir -p "$WORK"
twins=(a); [ "${TWIN:-1}" = 1 ] && twins=(a b)
for t in "${twins[@]}"; do
  python3 scripts/gpu/make_model.py "$WORK/model-$t" --size "$SIZE"
  echo "{\"model\": \"model-$t\", \"commit\": \"$(commit_tree "$WORK/model-$t")\"}" >> "$OUT/commits.json"
  rm -rf "$WORK/model-$t/.git"
done
log "commits: $(cat "$OUT/commits.json" | tr '\n' ' ')"

log "3. digest and verify"
"${SK[@]}" model digest "$WORK/model-a" -o "$WORK/pin.json"
if [ "${TWIN:-1}" = 1 ]; then
  "${SK[@]}" verify weights "$WORK/model-b" --pin "$WORK/pin.json" --json >> "$OUT/verify.json"
  log "model-b verified against the pin of model-a"
fi
if [ -n "${PIN:-}" ]; then  # a pin made on another machine: the same bytes here too
  "${SK[@]}" verify weights "$WORK/model-a" --pin "$PIN" --json >> "$OUT/verify.json"
  log "model-a verified against $PIN"
fi

log "4. facts"
if command -v nvidia-smi > /dev/null; then
  python3 scripts/gpu/facts.py "$WORK/model-a" > "$OUT/facts.json"
else
  log "no nvidia-smi: facts skipped (a dry run off the GPU machine)"
fi

log "5. serve and measure"
mkdir -p ~/.cache/huggingface/hub
serve() {  # serve EXTRA_ARGS...
  log "serve: transformers serve MODEL --continuous-batching $* --host 127.0.0.1 --port $PORT"
  setsid transformers serve "$WORK/model-a" --continuous-batching "$@" --host 127.0.0.1 \
    --port "$PORT" >> "$OUT/serve.log" 2>&1 < /dev/null &
  for _ in $(seq 180); do
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/health" && return 0
    sleep 1
  done
  return 1
}
# shellcheck disable=SC2086
serve ${SERVE_ARGS:-} || log "server did not come up"
bench() {  # bench OUTDIR RUNS SEED
  # shellcheck disable=SC2086
  timeout "${BENCH_TIMEOUT:-400}" "${SK[@]}" bench run --endpoint "http://127.0.0.1:$PORT" \
    --model "$WORK/model-a" --api completions $GRID --seed "$3" --runs "$2" --gpus 1 \
    --tokenizer "$WORK/model-a" --timeout 120 --out "$1" || log "bench exit $?"
}
if [ "${WARM_PASS:-1}" = 1 ]; then
  # A fresh server is slower for its first requests at each batch shape; one pass of the same
  # grid, with its own seed and kept apart, warms it. No figure is computed from this pass.
  log "5a. warm pass (kept in warm/, never published)"
  bench "$OUT/warm" 1 20261129
  if [ ! -s "$OUT/warm/run-1.jsonl" ] && [ -n "${SERVE_ARGS:-}" ]; then
    log "warm pass failed with SERVE_ARGS=$SERVE_ARGS; serving without them"
    pkill -f "transformers serve" || true; sleep 3; SERVE_ARGS=""
    serve; bench "$OUT/warm" 1 20261129
  fi
fi
log "5b. measured runs (SERVE_ARGS=${SERVE_ARGS:-})"
bench "$OUT/bench" 2 20261130
pkill -f "transformers serve" || true
log "done"
