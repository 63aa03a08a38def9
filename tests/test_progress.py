"""Progress bars: one unit system (decimal GB, as docs/performance.md), a named count."""

from __future__ import annotations

import io

from rich.console import Console
from rich.progress import Progress

from servekit import progress


def _render(columns: tuple[object, ...], total: int, done: int) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    with Progress(*columns, console=console, auto_refresh=False) as bar:  # type: ignore[arg-type]
        task = bar.add_task("x", total=total)
        bar.update(task, completed=done)
        bar.refresh()
    return out.getvalue()


def test_bytes_are_decimal_gigabytes_beside_a_gb_per_second_rate() -> None:
    text = _render(progress._byte_columns(), 4_300_000_000, 1_200_000_000)
    assert "1.2/4.3 GB" in text and "GiB" not in text


def test_a_count_names_what_it_counts() -> None:
    with progress.track_count("bench run", 40, unit="requests") as tracker:
        tracker.phase("run 1/1, c=8, measured requests", 40)  # silent off a terminal
    columns = (*progress._count_columns("requests"),)
    assert "12/40 requests" in " ".join(_render(columns, 40, 12).split())


def test_a_phase_of_unknown_length_shows_no_count() -> None:
    assert "requests" not in _render(progress._count_columns("requests"), None, 0)  # type: ignore[arg-type]


def test_each_phase_restarts_the_count_with_its_own_total() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    with Progress(console=console, auto_refresh=False) as bar:
        tracker = progress._RichTracker(bar, bar.add_task("bench run", total=28))
        tracker.advance(3)
        tracker.phase("probing http://127.0.0.1:8000", None)
        (task,) = bar.tasks
        assert (task.description, task.total, task.completed) == (
            "probing http://127.0.0.1:8000",
            None,
            0,
        )
        tracker.phase("run 1/1, c=2, measured requests", 12)
        tracker.advance(1)
        (task,) = bar.tasks
        assert (task.total, task.completed) == (12, 1)
