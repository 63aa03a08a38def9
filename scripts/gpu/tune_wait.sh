#!/usr/bin/env bash
# One device call of the tuning route (scripts/gpu/tune_all.sh runs in the background):
# wait until the job is done or LIMIT seconds pass, then pack everything it wrote into
# $OUT/results.tar.gz (the device tool returns at most 8 files) and show where it stands.
# Run as: bash scripts/gpu/tune_wait.sh LIMIT
set -uo pipefail
: "${OUT:?set OUT to the output directory}"
LIMIT=${1:?seconds to wait at most}
RES=${RES:-/root/tune-out}
t0=$(date +%s)
while [ ! -f "$RES/DONE" ] && [ $(($(date +%s) - t0)) -lt "$LIMIT" ]; do sleep 2; done
tar -C "$RES" -czf "$OUT/results.tar.gz" . 2> /dev/null
cp /root/tune-job.log "$OUT/" 2> /dev/null
echo "waited $(($(date +%s) - t0)) s; done: $([ -f "$RES/DONE" ] && echo yes || echo no)"
tail -25 "$RES/log.txt" 2> /dev/null
for f in "$RES"/*-tune.err; do [ -f "$f" ] && { echo "== $f"; tail -12 "$f"; }; done
nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv 2> /dev/null || true
ls -la "$OUT"
