"""Float32 arrays as package data (domain/cpu/weights.py): exact round trips, and a binary
that disagrees with its header is refused."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.cpu.weights import Array, load, pack, unpack

float32s = st.floats(width=32, allow_nan=False)
ABOUT = {"source": "params_7.npz", "iteration": 7}


@given(st.lists(float32s, min_size=6, max_size=6), float32s)
def test_float32_values_come_back_exactly(matrix: list[float], scalar: float) -> None:
    """Values that are float32 come back bit for bit, with their shapes and names in order."""
    data, header = pack({"M": ((2, 3), matrix), "s": ((), [scalar])}, ABOUT)
    arrays = unpack(header, data)
    assert list(arrays) == ["M", "s"]
    assert arrays["M"] == Array((2, 3), tuple(matrix))
    assert arrays["s"] == Array((), (scalar,))
    assert len(data) == 4 * 7
    assert json.loads(header)["iteration"] == 7


def test_the_binary_is_little_endian_float32_row_major() -> None:
    """The layout the header promises: float32, little-endian, row after row."""
    data, _ = pack({"M": ((2, 2), [1.0, 2.0, 3.0, 0.5])}, ABOUT)
    assert data == struct.pack("<4f", 1.0, 2.0, 3.0, 0.5)


def test_wider_values_are_rounded_to_float32() -> None:
    """A float64 is stored as its nearest float32."""
    data, header = pack({"x": ((), [0.1])}, ABOUT)
    assert unpack(header, data)["x"].values == struct.unpack("<f", struct.pack("<f", 0.1))


def test_a_changed_binary_is_refused() -> None:
    """One flipped byte and the binary no longer matches the sha256 in its header."""
    data, header = pack({"v": ((3,), [1.0, 2.0, 3.0])}, ABOUT)
    changed = data[:-1] + bytes([data[-1] ^ 1])
    with pytest.raises(ValueError, match="sha256"):
        unpack(header, changed)


def test_a_header_describing_other_sizes_is_refused() -> None:
    """Shapes that do not add up to the binary's length are refused, even with the hash right."""
    data, header = pack({"v": ((3,), [1.0, 2.0, 3.0])}, ABOUT)
    head = json.loads(header)
    head["arrays"][0]["shape"] = [2]
    with pytest.raises(ValueError, match="describes 2 values"):
        unpack(json.dumps(head), data)


def test_a_shape_that_does_not_fit_its_values_is_not_packed() -> None:
    """pack refuses values that do not fill the shape they are given."""
    with pytest.raises(ValueError, match="shape"):
        pack({"v": ((2, 2), [1.0, 2.0, 3.0])}, ABOUT)


def test_load_reads_both_files_from_a_folder(tmp_path: Path) -> None:
    """`load` reads `<name>.json` and `<name>.bin` from a folder of package files."""
    data, header = pack({"v": ((2,), [1.5, -2.0])}, ABOUT)
    (tmp_path / "w.bin").write_bytes(data)
    (tmp_path / "w.json").write_text(header, "utf-8")
    assert load(tmp_path, "w") == {"v": Array((2,), (1.5, -2.0))}
