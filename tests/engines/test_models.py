"""Engine specs: the serve command from a flag set, the typed flag schema, the lists the
claim rules and fit read (taken from the engine modules, not typed twice)."""

from __future__ import annotations

import pytest

from servekit.engines import ENGINES, engine, find, sglang, sim, vllm
from servekit.errors import UsageError
from servekit.fit.models import FitOptions
from servekit.fit.predict import OVERHEAD_MULTI_GIB
from servekit.kit.command import ENGINES as KIT_ENGINES
from servekit.package.rules.engines import LOAD_FLAGS, NUMERICS_FLAGS, PREALLOCATING


def test_a_flag_set_becomes_the_serve_command_in_schema_order() -> None:
    argv = vllm.SPEC.serve_argv(
        "org/m",
        {"--enable-chunked-prefill": False, "--max-num-seqs": 64, "--gpu-memory-utilization": 0.95},
        port=8123,
        served_name="m",
        extra=("--max-model-len", "4096"),
    )
    assert argv == (
        "vllm", "serve", "org/m", "--max-model-len", "4096", "--max-num-seqs", "64",
        "--no-enable-chunked-prefill", "--gpu-memory-utilization", "0.95",
        "--served-model-name", "m", "--host", "127.0.0.1", "--port", "8123",
    )  # fmt: skip


def test_sglang_takes_its_model_as_a_flag() -> None:
    argv = sglang.SPEC.serve_argv("/models/m", {"--max-running-requests": 8}, port=30000)
    assert argv[:5] == ("python", "-m", "sglang.launch_server", "--model-path", "/models/m")
    assert argv[5:7] == ("--max-running-requests", "8")


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--max-num-seqs", 0, "outside its range"),
        ("--max-num-seqs", 8.5, "takes a int"),
        ("--max-num-seqs", True, "takes a int"),
        ("--enable-chunked-prefill", "yes", "takes a bool"),
        ("--kv-cache-dtype", "int3", "takes a choice"),
        ("--gpu-memory-utilization", 1.5, "outside its range"),
    ],
)
def test_a_value_outside_the_schema_is_refused_naming_the_flag(
    flag: str, value: object, says: str
) -> None:
    with pytest.raises(UsageError, match=says) as caught:
        vllm.SPEC.flag_args({flag: value})  # type: ignore[dict-item]
    assert flag in caught.value.message


def test_an_unknown_flag_is_refused_listing_the_known_ones() -> None:
    with pytest.raises(UsageError, match="no flag --max-batch") as caught:
        vllm.SPEC.flag_args({"--max-batch": 8})
    assert "--max-num-seqs" in (caught.value.hint or "")


def test_numerics_changing_flags_are_marked_in_the_schema() -> None:
    changing = {f.name for f in vllm.SPEC.flags if f.changes_outputs}
    assert {"--dtype", "--kv-cache-dtype", "--quantization", "--speculative-config"} <= changing
    assert not any(f.changes_outputs for f in sim.SPEC.flags)
    assert not vllm.SPEC.flag("--max-num-seqs").changes_outputs
    assert vllm.SPEC.stock() == {}


def test_the_rules_kit_and_fit_read_the_engine_modules() -> None:
    assert KIT_ENGINES is ENGINES
    assert LOAD_FLAGS["sglang"] is sglang.SPEC.load_flags
    assert NUMERICS_FLAGS["vllm"] == dict(vllm.SPEC.numerics_flags)
    assert {"vllm", "sglang", "tgi"} <= PREALLOCATING and "servekit-sim" not in PREALLOCATING
    assert FitOptions(gpu="H200").gpu_memory_utilization == vllm.FIT.gpu_memory_utilization
    assert vllm.FIT.overhead_multi_gib == OVERHEAD_MULTI_GIB
    assert vllm.SPEC.multinode is vllm.RAY and sglang.SPEC.multinode is None


def test_engines_are_found_by_any_spelling_or_refused() -> None:
    assert find("SERVEKIT_SIM") is sim.SPEC
    with pytest.raises(UsageError, match="no engine module for 'tgi'") as caught:
        engine("tgi")
    assert "vllm" in (caught.value.hint or "")
