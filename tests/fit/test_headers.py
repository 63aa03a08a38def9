"""Reading safetensors headers: exact bytes, and refusals of what is not a header."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from servekit.errors import HeaderError
from servekit.fit.headers import local_tensors


def test_tensors_carry_the_bytes_of_their_data_offsets(tmp_path: Path) -> None:
    save_file(
        {
            "a": np.zeros((3, 5), "float16"),
            "b": np.zeros((7,), "uint8"),
            "c": np.zeros((2, 2), "float32"),
        },
        str(tmp_path / "model.safetensors"),
    )
    tensors = {t.name: t for t in local_tensors(tmp_path) or []}
    assert {n: (t.dtype, t.shape, t.nbytes) for n, t in tensors.items()} == {
        "a": ("F16", (3, 5), 30),
        "b": ("U8", (7,), 7),
        "c": ("F32", (2, 2), 16),
    }


def test_a_directory_without_weights_has_no_tensors(tmp_path: Path) -> None:
    assert local_tensors(tmp_path) is None


def test_the_index_decides_which_files_are_weights(tmp_path: Path) -> None:
    save_file({"a": np.zeros((4,), "uint8")}, str(tmp_path / "model-1.safetensors"))
    save_file({"z": np.zeros((4,), "uint8")}, str(tmp_path / "consolidated.safetensors"))
    (tmp_path / "model.safetensors.index.json").write_text(
        '{"weight_map": {"a": "model-1.safetensors"}}'
    )
    assert [t.name for t in local_tensors(tmp_path) or []] == ["a"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x01\x02", "shorter than the 8-byte"),
        (b"version https://git-lfs.github.com/spec/v1\n", "is not a safetensors header"),
        (struct.pack("<Q", 100) + b"{}", "truncated"),
        (struct.pack("<Q", 4) + b"nope", "not JSON"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
        (struct.pack("<Q", 19) + b'{"t": {"dtype": 1}}', "malformed header entry"),
    ],
)
def test_what_is_not_a_header_is_refused(tmp_path: Path, data: bytes, message: str) -> None:
    (tmp_path / "model.safetensors").write_bytes(data)
    with pytest.raises(HeaderError, match=message) as info:
        local_tensors(tmp_path)
    assert info.value.exit_code == 49
