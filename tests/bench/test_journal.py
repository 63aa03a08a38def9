"""The run journal: records on disk as they complete, a torn last line dropped, PARTIAL files."""

from __future__ import annotations

import json
from pathlib import Path

from servekit.bench.journal import Journal, finish_partial, journal_path, read_journal
from servekit.package.evidence import RequestRecord, RunHeader, load_evidence

HEADER = RunHeader(run="run-1", endpoint="http://127.0.0.1:9", model="m", api="completions",
                   servekit_version="0", seed=0, host="h", gpus=1,
                   started_at="2026-01-01T00:00:00+00:00", ended_at="2026-01-01T00:00:00+00:00")  # fmt: skip


def _record(n: int, *, warmup: bool = False) -> RequestRecord:
    return RequestRecord(id=f"r{n}", run="run-1", concurrency=1, warmup=warmup, seq=n,
                         t_send=n, t_first_content=n + 0.5, t_end=n + 1.0, http_status=200,
                         prompt_tokens=4, completion_tokens=2, usage_source="client")  # fmt: skip


def test_each_record_is_readable_before_the_journal_is_closed(tmp_path: Path) -> None:
    path = journal_path(tmp_path / "run-1.jsonl")
    journal = Journal(path, HEADER)
    journal.append(_record(0))
    journal.append(_record(1))
    # another process (or the one that recovers after kill -9) sees both now
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()[1:]] == ["r0", "r1"]
    journal.close()
    read = read_journal(path)
    assert read is not None
    header, records = read
    assert header.run == "run-1" and [r.id for r in records] == ["r0", "r1"]


def test_a_torn_last_line_is_dropped(tmp_path: Path) -> None:
    path = journal_path(tmp_path / "run-1.jsonl")
    journal = Journal(path, HEADER)
    journal.append(_record(0))
    journal.close()
    with path.open("a") as fh:
        fh.write(json.dumps(_record(1).model_dump(mode="json"))[:40])  # power loss mid-write
    read = read_journal(path)
    assert read is not None and [r.id for r in read[1]] == ["r0"]


def test_finish_partial_writes_a_partial_run_file_and_removes_the_journal(tmp_path: Path) -> None:
    run_file = tmp_path / "run-1.jsonl"
    journal = Journal(journal_path(run_file), HEADER)
    for n in range(3):
        journal.append(_record(n, warmup=n == 0))
    journal.close()
    kept = finish_partial(journal.path, run_file, lambda n: f"PARTIAL: {n} measured", None)
    assert len(kept) == 3 and not journal.path.exists()
    ev = load_evidence(run_file)
    assert ev.header.notes[-1] == "PARTIAL: 2 measured" and ev.header.requests_sent is None
    assert ev.header.usage_source == "client" and ev.header.ended_at.startswith(
        "2026-01-01T00:00:03"
    )
    assert len(ev.requests) == 3


def test_a_journal_without_records_leaves_no_file(tmp_path: Path) -> None:
    run_file = tmp_path / "run-1.jsonl"
    journal = Journal(journal_path(run_file), HEADER)
    journal.close()
    assert finish_partial(journal.path, run_file, str, 0) == []
    assert list(tmp_path.iterdir()) == []


def test_a_journal_killed_before_its_header_was_whole_keeps_nothing(tmp_path: Path) -> None:
    run_file = tmp_path / "run-1.jsonl"
    journal_path(run_file).write_text('{"record":"run","run":"ru')
    assert read_journal(journal_path(run_file)) is None
    assert finish_partial(journal_path(run_file), run_file, str, None) == []
    assert list(tmp_path.iterdir()) == []
