"""Print the honest distributions behind two claim-rule bounds (docs/rules.md, SK119 and
SK129), from every evidence file in the repository:

* how long after its last record each file's header says its run ended (milliseconds);
* the copy statistic U of every pair of files measured on one grid in one place, and U of
  the rest of the runs (the largest with a quarter left out).

Run from the repository root: ``python scripts/honest_tolerances.py``.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from servekit.package.evidence import Evidence, load_evidence
from servekit.package.rules.records import SPAN_AFTER_LAST_S, instant
from servekit.package.rules.runs import (
    COPY_U,
    REST_U,
    copy_statistic,
    repeats_timings,
    rest_statistic,
)

PATTERNS = (
    "examples/packages/*/evidence/*.jsonl",
    "examples/packages/*/trials/*.jsonl",
    "tests/assets/replicates/*.jsonl",
    "tests/assets/kit_package/evidence/*.jsonl",
)


def _after_last_ms(ev: Evidence) -> float | None:
    start, end = instant(ev.header.started_at), instant(ev.header.ended_at)
    if start is None or end is None:
        return None
    span = max((r.t_end if r.t_end is not None else r.t_send for r in ev.requests), default=0.0)
    return ((end - start).total_seconds() - span) * 1000


def main() -> None:
    files = sorted(p for pattern in PATTERNS for p in Path().glob(pattern))
    loaded = {p: load_evidence(p) for p in files}
    gaps = sorted(g for ev in loaded.values() if (g := _after_last_ms(ev)) is not None)
    print(f"header end after the last record, {len(gaps)} files: "
          f"{gaps[0]:.3f} to {gaps[-1]:.3f} ms (bound {SPAN_AFTER_LAST_S * 1000:g} ms)")  # fmt: skip
    pairs = [
        (loaded[a], loaded[b])
        for a, b in itertools.combinations(files, 2)
        if a.parent == b.parent and loaded[a].header.workload == loaded[b].header.workload
    ]
    us = sorted(u for a, b in pairs if (u := copy_statistic(a, b)) is not None)
    rests = sorted(r for a, b in pairs if (r := rest_statistic(a, b)) is not None)
    refused = sum(repeats_timings(a, b) is not None for a, b in pairs)
    print(f"copy statistic U, {len(pairs)} honest pairs ({len(us)} with fine structure): "
          f"lowest {us[0]:.3f}, median {us[len(us) // 2]:.3f} (refused below {COPY_U:g} when "
          f"the rest of the runs is under {REST_U:g}: its lowest {rests[0]:.3f}); "
          f"honest pairs refused: {refused}")  # fmt: skip


if __name__ == "__main__":
    main()
