"""Reading ``config.json``: each refusal names the file or the missing field."""

from __future__ import annotations

from pathlib import Path

import pytest

from servekit.errors import ArchitectureError
from servekit.fit.arch import parse, read_config
from tests.fit.checkpoints import LLAMA


def test_a_config_that_is_not_json_is_refused_with_the_parser_message(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": 64,', encoding="utf-8")
    with pytest.raises(ArchitectureError, match="not readable JSON") as info:
        read_config(path)
    assert str(path) in str(info.value)
    assert info.value.exit_code == 46


def test_a_config_that_is_a_json_list_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ArchitectureError, match="not a JSON object"):
        read_config(path)


def test_a_mixture_of_experts_config_must_count_its_experts() -> None:
    mixtral = {**LLAMA, "architectures": ["MixtralForCausalLM"]}
    with pytest.raises(ArchitectureError, match="'num_local_experts'") as info:
        parse(mixtral, source="mixtral/config.json")
    assert "mixtral/config.json" in str(info.value)


def test_a_dense_config_must_give_its_mlp_width() -> None:
    config = {k: v for k, v in LLAMA.items() if k != "intermediate_size"}
    with pytest.raises(ArchitectureError, match="'intermediate_size'") as info:
        parse(config)
    assert "it must set intermediate_size" in str(info.value.hint)
