"""Disclosures: modality, context and simulator, read from what the records exercised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.package.rules.helpers import Definition, Lines, fired

VISION = {"modality": "vision", "component": "ViT tower", "parameters": 400}

CASES: dict[str, dict[str, Any]] = {
    "SK112": {"mutate": lambda d: d["model"]["modalities"].append(VISION)},
    "SK113": {"mutate": lambda d: d.update(disclosures=[])},
    "SK117": {"mutate": lambda d: [r.update(simulator=True) for r in d["measurements"]["runs"]]},
}  # fmt: skip


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_refuses(tmp_path: Path, rule: str) -> None:
    assert rule in fired(tmp_path, **CASES[rule])


def test_sk112_declared_vision_workload_that_sent_only_text(tmp_path: Path) -> None:
    def claim(d: Definition) -> None:
        d["model"]["modalities"].append(VISION)
        d["workloads"][0]["modalities"] = ["text", "vision"]

    assert "SK112" in fired(tmp_path, claim)


def test_sk113_context_is_read_from_the_records(tmp_path: Path) -> None:
    """The workload claims 2048 tokens covered; the records carried 544."""

    def claim(d: Definition) -> None:
        d["disclosures"] = []
        d["workloads"][0]["prompt_tokens"] = {"min": 512, "max": 2016}

    assert "SK113" in fired(tmp_path, claim)


def test_sk117_simulator_named_by_its_engine_version(tmp_path: Path) -> None:
    """The simulator flag was edited to false; the engine version still names the simulator."""

    def hidden(lines: Lines) -> None:
        lines[0].update(simulator=False, engine_version="servekit-sim 0.1.0", engine_name=None)

    assert "SK117" in fired(tmp_path, evidence={"run-a": hidden})


def test_sk117_simulator_header_without_the_flag_in_the_package(tmp_path: Path) -> None:
    def sim(lines: Lines) -> None:
        lines[0]["simulator"] = True

    assert "SK117" in fired(tmp_path, evidence={"run-a": sim})


# --- an attacker's variants ------------------------------------------------------------


def test_sk112_a_failed_image_request_exercised_no_vision_path(tmp_path: Path) -> None:
    def failed_image(lines: Lines) -> None:
        r = next(r for r in lines[1:] if r["concurrency"] == 4 and not r["warmup"])
        r.update(content_parts=["text", "image"], http_status=500, error="image decoder crashed")

    mutate = lambda d: d["model"]["modalities"].append(VISION)  # noqa: E731
    assert "SK112" in fired(tmp_path, mutate, evidence={"run-a": failed_image})


def test_sk117_simulator_named_in_another_case_everywhere(tmp_path: Path) -> None:
    """Engine pin, headers and flags all say a real engine called 'Servekit_Sim'."""

    def renamed(lines: Lines) -> None:
        lines[0].update(simulator=False, engine_name="Servekit_Sim")

    evidence = {"run-a": renamed, "run-b": renamed}
    mutate = lambda d: d["engine"].update(name="Servekit_Sim")  # noqa: E731
    assert "SK117" in fired(tmp_path, mutate, evidence=evidence)


def test_sk113_long_context_carried_only_by_a_warmup(tmp_path: Path) -> None:
    """One warmup with a 2000-token prompt 'covers' the 2048-token context no figure measured."""

    def claim(d: Definition) -> None:
        d["disclosures"] = []
        d["workloads"][0]["prompt_tokens"] = {"min": 512, "max": 2016}

    def long_warmup(lines: Lines) -> None:
        warm = next(r for r in lines[1:] if r["warmup"])
        warm["prompt_tokens"] = warm["requested_prompt_tokens"] = 2016

    assert "SK113" in fired(tmp_path, claim, evidence={"run-a": long_warmup, "run-b": long_warmup})


def _reported_only(modalities: list[str] | None, vision: bool = False) -> Any:
    """Every figure reported, no runs; the workload declares text (and vision)."""

    def mutate(d: Definition) -> None:
        d["model"].pop("files")
        d["measurements"]["runs"] = []
        if vision:
            d["model"]["modalities"].append(VISION)
            d["workloads"][0]["modalities"] = ["text", "vision"]
        for f in d["measurements"]["figures"]:
            workload = {"output_tokens": 32, "concurrency": f["concurrency"], "requests": 8,
                        "warmup": 1, "modalities": modalities}  # fmt: skip
            source = {"name": "Publisher page", "reference": "https://example.org",
                      "date": "2026-11-01", "workload": workload}  # fmt: skip
            f.update(provenance="reported", runs=[], source=source)

    return mutate


@pytest.mark.parametrize(
    ("modalities", "vision"), [(None, False), (["text"], True)], ids=["unstated", "text only"]
)
def test_sk112_declared_modalities_do_not_stand_in_for_a_reported_source(
    tmp_path: Path, modalities: list[str] | None, vision: bool
) -> None:
    """Only what a source states (or a record carried) is characterized."""
    assert "SK112" in fired(tmp_path, _reported_only(modalities, vision))


def test_sk112_a_source_that_states_every_modality_passes(tmp_path: Path) -> None:
    assert fired(tmp_path, _reported_only(["text", "vision"], vision=True)) == set()


def test_sk112_an_unstated_source_with_every_modality_disclosed_passes(tmp_path: Path) -> None:
    def disclosed(d: Definition) -> None:
        _reported_only(None)(d)
        d["disclosures"].append({"topic": "modality", "subject": "text",
                                 "title": "Not characterized", "text": "The source says not."})  # fmt: skip

    assert fired(tmp_path, disclosed) == set()
