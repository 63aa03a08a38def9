"""Print branch coverage from ``coverage.json`` and exit 1 under the floor (argv[1], %).

``coverage report --fail-under`` gates lines and branches together; this gates the
branches alone. Run by ``make test`` after ``coverage json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    floor = float(sys.argv[1])
    totals = json.loads(Path("coverage.json").read_text(encoding="utf-8"))["totals"]
    pct = 100 * totals["covered_branches"] / totals["num_branches"]
    print(f"branch coverage: {pct:.1f} % of {totals['num_branches']} branches (floor {floor:g} %)")
    return 1 if pct < floor else 0


if __name__ == "__main__":
    sys.exit(main())
