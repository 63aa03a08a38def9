"""A run's journal: each request record on disk the moment the request completes.

``bench run`` measures run N into ``OUT/run-N.jsonl.partial``: the run header as it
stood at the start, then one evidence record per line, written and flushed to the
operating system as each request completes. A ``kill -9`` therefore loses no completed
request (the kernel keeps what was written); the file is also fsynced at most every
:data:`SYNC_INTERVAL_S` seconds, off the event loop, and when it is closed, so a power
loss costs at most that last interval. A torn last line (power loss mid-write) is
dropped on recovery.

The journal is already an evidence file in form (header, then records). When the run
completes it is replaced by ``run-N.jsonl`` (written whole, fsynced, renamed into
place); when the run is interrupted, or ``--resume`` finds a journal a killed process
left, :func:`finish_partial` turns it into ``run-N.jsonl`` with a PARTIAL note.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from servekit.package.evidence import (
    RequestRecord,
    RunHeader,
    dump_evidence,
    evidence_line,
    parse_evidence,
)

PARTIAL = "PARTIAL"
"""The first word of the header note of a run that was interrupted."""

SUFFIX = ".partial"
SYNC_INTERVAL_S = 1.0


def journal_path(run_file: Path) -> Path:
    """Where the journal of ``run_file`` lives while its run is measured."""
    return run_file.with_name(run_file.name + SUFFIX)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: a temporary file, fsynced, renamed."""
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    temporary.replace(path)
    _sync_directory(path.parent)


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """The append-only journal of one run (see the module docstring)."""

    def __init__(self, path: Path, header: RunHeader) -> None:
        self.path = path
        self.records: list[RequestRecord] = []
        self._fh = path.open("w", encoding="utf-8")
        self._fh.write(evidence_line(header) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        _sync_directory(path.parent)
        self._synced_at = time.monotonic()
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="journal")
        self._sync: concurrent.futures.Future[None] | None = None

    def append(self, record: RequestRecord) -> None:
        """One record, handed to the OS now; an fsync started at most once per interval."""
        self.records.append(record)
        self._fh.write(evidence_line(record) + "\n")
        self._fh.flush()
        now = time.monotonic()
        if now - self._synced_at >= SYNC_INTERVAL_S and (self._sync is None or self._sync.done()):
            self._synced_at = now
            self._sync = self._pool.submit(os.fsync, self._fh.fileno())

    def close(self) -> None:
        """Flush and fsync what was written; the file stays (finish or recover it)."""
        if self._fh.closed:
            return
        self._pool.shutdown(wait=True)
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()

    def finish(self, run_file: Path, header: RunHeader) -> None:
        """The run completed: write ``run_file`` whole, then drop the journal."""
        self.close()
        write_atomic(run_file, dump_evidence(header, self.records))
        self.path.unlink()


def read_journal(path: Path) -> tuple[RunHeader, list[RequestRecord]] | None:
    """The header and the records of a journal (a torn last line left out); None when
    not even the header was written whole (killed as the run began)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    whole = text.split("\n")[:-1]  # the piece after the last newline was never finished
    if not any(line.strip() for line in whole):
        return None
    evidence = parse_evidence(path, whole)
    return evidence.header, list(evidence.requests)


def usage_source(records: Sequence[RequestRecord]) -> str:
    """``server``, ``client`` or ``mixed``: who counted the tokens of the successful requests."""
    sources = {r.usage_source for r in records if r.ok}
    return "mixed" if len(sources) > 1 else ("client" if sources == {"client"} else "server")


def measured_count(records: Sequence[RequestRecord]) -> int:
    return sum(not r.warmup for r in records)


def finish_partial(
    path: Path, run_file: Path, note: Callable[[int], str], requests_sent: int | None
) -> list[RequestRecord]:
    """Turn the journal at ``path`` into ``run_file``, its header noting ``note(measured)``.

    Returns the records kept; none when no request had completed (then no file is
    written). The journal is removed either way. ``requests_sent`` is None when it is not
    known (a killed process): the claim rules then say so instead of trusting a guess.
    """
    read = read_journal(path)
    header, records = read if read is not None else (None, [])
    if header is None or not records:
        path.unlink()
        return []
    started = dt.datetime.fromisoformat(header.started_at)
    last = max((r.t_end or r.t_send) for r in records)
    header = header.model_copy(
        update={
            "notes": (*header.notes, note(measured_count(records))),
            "usage_source": usage_source(records),
            "ended_at": (started + dt.timedelta(seconds=last)).isoformat(),
            "requests_sent": requests_sent,
        }
    )
    write_atomic(run_file, dump_evidence(header, records))
    path.unlink()
    return records
