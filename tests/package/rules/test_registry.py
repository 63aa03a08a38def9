"""The registry and the report: every rule is documented, carries its seed refusal and
has a package in the tests that breaks it; a valid package passes every rule."""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path

import pytest

from servekit.errors import ClaimRuleError
from servekit.package.evidence import RequestRecord, dump_evidence
from servekit.package.rules import RULES, check, check_package, enforce
from servekit.package.rules.context import Context
from tests.package.factories import base_definition, default_runs, header, write_package
from tests.package.rules.helpers import Definition, figure, fired

HERE = Path(__file__).parent
EXAMPLES = Path(__file__).parents[3] / "examples" / "packages"


def test_valid_package_passes_every_rule(tmp_path: Path) -> None:
    report = check(write_package(tmp_path))
    assert report.ok, report.violations
    assert {f.verdict for f in report.figures} == {"measured"}
    assert all(f.recomputed is not None for f in report.figures)
    assert report.cannot_verify == {}
    enforce(report)  # does not raise


def test_enforce_raises_with_the_rule_id(tmp_path: Path) -> None:
    runs = default_runs()
    d = base_definition(runs["run-a"])
    figure(d, "ttft-p50-c1")["value"] = 1.0
    with pytest.raises(ClaimRuleError) as info:
        enforce(check(write_package(tmp_path, d, runs)))
    assert [v.rule for v in info.value.violations] == ["SK101"]
    assert info.value.violations[0].field == "measurements.figures[0].value"
    assert info.value.exit_code == 4


def test_refused_figures_name_their_rules(tmp_path: Path) -> None:
    runs = default_runs()
    d = base_definition(runs["run-a"])
    figure(d, "ttft-p50-c1")["value"] = 1.0
    write_package(tmp_path, d, runs)
    report = check_package(tmp_path)
    verdicts = {f.id: (f.verdict, f.refused_by) for f in report.figures}
    assert verdicts["ttft-p50-c1"] == ("refused", ("SK101",))
    assert verdicts["e2el-p99-c4"] == ("measured", ())
    json.dumps(report.as_dict(), allow_nan=False)


def test_retracted_figures_are_not_checked(tmp_path: Path) -> None:
    def retract(d: Definition) -> None:
        figure(d, "ttft-p50-c1").update(
            value=1.0, status={"state": "retracted", "reason": "wrong run", "date": "2026-11-30"}
        )

    assert fired(tmp_path, retract) == set()


@pytest.mark.parametrize(
    "name", ["tiny-sim", "llama-850m-h200", "kimi-k3-8xb300", "smollm2-135m-vllm-h200"]
)
def test_honest_examples_pass(name: str) -> None:
    report = check_package(EXAMPLES / name)
    assert report.ok, [(v.rule, v.message) for v in report.violations]


def test_every_rule_carries_its_statement_and_seed_refusal() -> None:
    assert len(RULES) >= 34
    for rule in RULES.values():
        assert re.fullmatch(r"SK1\d\d", rule.id) and rule.name and rule.statement
        assert rule.seed_refusal and rule.family in {
            "figures", "records", "runs", "speedups", "accuracy", "memory_cost", "disclosures", "pin", "tuning",
        }  # fmt: skip


def test_docs_give_each_rule_what_it_reads_and_cannot_detect() -> None:
    text = (Path(__file__).parents[3] / "docs" / "rules.md").read_text()
    for rule in RULES.values():
        start = text.index(f"#### {rule.id} `{rule.name}`")
        end = min(i for i in (text.find("\n#### ", start + 1), text.find("\n## ", start)) if i > 0)
        section = text[start:end]
        assert rule.seed_refusal in section and "**Reads:**" in section
        assert "**Cannot detect:**" in section, f"document what {rule.id} cannot detect"


def _tested_ids(path: Path) -> set[str]:
    """Rule ids a test module breaks: keys of its CASES, and ``test_skNNN_...`` functions."""
    tree = ast.parse(path.read_text())
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (m := re.match(r"test_sk(\d{3})_", node.name)):
            ids.add(f"SK{m[1]}")
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Dict):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "CASES" for t in targets):
                ids |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return ids


def test_every_rule_has_a_test_in_its_family_module() -> None:
    for rule in RULES.values():
        module = HERE / f"test_{rule.family}.py"
        assert rule.id in _tested_ids(module), f"{rule.id} has no breaking package in {module.name}"


_RETRACTED = {
    "id": "run-x",
    "file": "evidence/run-x.jsonl",
    "workload": "w",
    "date": "2026-11-30",
    "simulator": True,
    "status": {"state": "retracted", "reason": "interrupted", "date": "2026-11-30"},
}


def _interrupted(runs: dict[str, list[RequestRecord]]) -> str:
    """A run no rule may read: interrupted, on another model, seed and GPU count, against the
    simulator, with impossible numbers, a copy of run-a's timings and overlapping it in time."""
    records = [
        r.model_copy(
            update={"run": "run-x", "t_first_event": math.nan if i == 0 else r.t_first_event}
        )
        for i, r in enumerate(runs["run-a"][:5])
    ]
    h = header("run-x", gpus=8, simulator=True, records=records).model_copy(
        update={"model": "other/model", "seed": 99, "engine_name": "servekit-sim",
                "run_uid": "uid-run-a", "notes": ("PARTIAL: interrupted",)}
    )  # fmt: skip
    return dump_evidence(h, records)


@pytest.mark.parametrize("poison", ["unreadable", "interrupted"])
def test_no_rule_reads_a_retracted_run(tmp_path: Path, poison: str) -> None:
    """Every rule, run on a package whose retracted run (and the retracted figure naming it)
    would fail or alter any rule that read it, finds exactly what it finds without that run."""
    runs = default_runs()
    d = base_definition(runs["run-a"])
    d["measurements"]["runs"].append(_RETRACTED)
    d["measurements"]["figures"].append(
        {**figure(d, "ttft-p50-c1"), "id": "ttft-x", "runs": ["run-x"], "value": 1.0,
         "status": {"state": "retracted", "reason": "interrupted run", "date": "2026-11-30"}}
    )  # fmt: skip
    (tmp_path / "evidence").mkdir()
    text = "{not json\n" if poison == "unreadable" else _interrupted(runs)
    (tmp_path / "evidence" / "run-x.jsonl").write_text(text)
    loaded = write_package(tmp_path, d, runs)
    honest = write_package(tmp_path / "honest", base_definition(runs["run-a"]), runs)
    for rule in RULES.values():
        got = list(rule.fn(Context(loaded)))
        assert got == list(rule.fn(Context(honest))) == [], (rule.id, got)
    assert check(loaded).cannot_verify == {}
