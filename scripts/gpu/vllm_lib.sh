# Sourced by the last device run of the vLLM route (scripts/gpu/vllm_run.sh, fit_run.sh):
# the clock, logging, and the assembly of the bundle that scripts/gpu/vllm_stage.sh staged.
# The caller sets OUT, STAGE, WORK and BUDGET (seconds) first.
T0=$(date +%s)
log() { echo "[$(date -u +%H:%M:%S) +$(($(date +%s) - T0))s] $*" | tee -a "$OUT/log.txt"; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }
die() { log "FAILED: $*"; exit 1; }

# Stage the last carried part, check every part's and the bundle's sha256, extract the
# bundle into $WORK (vLLM and its wheels in $WORK/site); $WORK is emptied first.
assemble() {
  local last parts i
  last=$(ls -d .vllm/part* | sort | tail -1)
  cp "$last"/* "$STAGE"/ || die "no $last carried"
  parts=$(cat "$STAGE/PARTS")
  for i in $(seq 0 $((parts - 1))); do
    [ -f "$STAGE/bundle.part$i" ] || die "part $i is not on this machine (a fresh machine? run vllm_stage.sh first)"
  done
  (cd "$STAGE" && grep 'bundle.part' SHA256SUMS | sha256sum -c --quiet -) || die "a part's sha256 differs"
  rm -rf "$WORK" && mkdir -p "$WORK"
  cat $(for i in $(seq 0 $((parts - 1))); do echo "$STAGE/bundle.part$i"; done) > "$WORK/bundle.tar.xz"
  (cd "$WORK" && grep ' bundle.tar.xz' "$STAGE/SHA256SUMS" | sha256sum -c --quiet -) || die "bundle sha256 differs"
  tar -C "$WORK" -xJf "$WORK/bundle.tar.xz" && rm "$WORK/bundle.tar.xz" || die "extract"
  log "extracted: $(du -sh "$WORK/site" | cut -f1)"
}
