"""The GPU table: every GPU the issue names, each figure with a source."""

from __future__ import annotations

from pathlib import Path

from servekit.fit.gpus import lookup, table

NAMED = (
    "H100",
    "H200",
    "B200",
    "B300",
    "GB200",
    "MI300X",
    "MI325X",
    "MI355X",
    "L40S",
    "A100-40GB",
    "A100-80GB",
    "RTX-4090",
    "RTX-5090",
)


def test_every_named_gpu_is_in_the_table_with_sources() -> None:
    gpus = table()
    assert set(NAMED) <= set(gpus)
    for gpu in gpus.values():
        assert gpu.total_source and gpu.usable_source
        assert 0.8 * gpu.total_gb < gpu.usable_gib * 2**30 / 1e9 < 1.1 * gpu.total_gb, gpu.name


def test_unmeasured_figures_are_below_what_was_measured_for_a_like_gpu() -> None:
    # the stand-in for an unmeasured figure (as-sold GB read as decimal) undercuts B200's measurement
    b200 = lookup("B200")
    assert b200.usable_measured
    assert b200.total_gb * 1e9 / 2**30 < b200.usable_gib
    assert all(not g.usable_measured for g in (lookup("B300"), lookup("GB200"), lookup("MI300X")))


def test_the_documented_table_is_the_data_file() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "fit.md").read_text()
    for gpu in table().values():
        assert f"| {gpu.name} | {gpu.total_gb:g} | {gpu.usable_gib:.2f} |" in doc, gpu.name
