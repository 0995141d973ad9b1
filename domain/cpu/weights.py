"""Arrays of float32 shipped as package data beside the code: `learned.py`'s weights.

A set of arrays is two files, `<name>.bin` and `<name>.json`. The binary holds every array
as little-endian float32, row-major, one after another; the JSON header gives, in that
order, each array's name and shape, plus where the values came from (the training run's
parameters file and its iteration) and the binary's sha256. `pack` makes both from the
arrays (tools/train_hard_value.py writes them), `unpack` reads them back and `load` reads
them from a package.

Reading data that ships with the code keeps the domain pure: the same bytes on every
machine, like the code itself. The hash is checked on every read, so a damaged or
half-updated install fails at import instead of playing differently.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from typing import Any

__all__ = ["Array", "load", "pack", "unpack"]

_DTYPE = "<f4"  # numpy's name for little-endian float32


@dataclass(frozen=True, slots=True)
class Array:
    """An array's shape and its values, row-major (one value for the shape `()`)."""

    shape: tuple[int, ...]
    values: tuple[float, ...]


def pack(
    arrays: Mapping[str, tuple[Sequence[int], Sequence[float]]], about: Mapping[str, Any]
) -> tuple[bytes, str]:
    """The binary and the JSON header of `arrays` (name -> shape, row-major values, each
    rounded to float32), in their order; `about` adds its keys to the header."""
    flat = array("f")
    entries = []
    for name, (shape, values) in arrays.items():
        if len(values) != math.prod(shape):
            raise ValueError(f"{name}: {len(values)} values for the shape {list(shape)}")
        flat.extend(values)
        entries.append({"name": name, "shape": list(shape)})
    if sys.byteorder == "big":
        flat.byteswap()
    data = flat.tobytes()
    header = {
        **about,
        "dtype": _DTYPE,
        "arrays": entries,
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    return data, json.dumps(header, indent=2) + "\n"


def unpack(header: str, data: bytes) -> dict[str, Array]:
    """The arrays of `data` as `header` describes them; ValueError if they disagree."""
    head = json.loads(header)
    if head["dtype"] != _DTYPE:
        raise ValueError(f"dtype {head['dtype']!r}, expected {_DTYPE!r}")
    if hashlib.sha256(data).hexdigest() != head["sha256"]:
        raise ValueError("the binary does not match the sha256 in its header")
    flat = array("f")
    flat.frombytes(data)
    if sys.byteorder == "big":
        flat.byteswap()
    arrays: dict[str, Array] = {}
    at = 0
    for entry in head["arrays"]:
        shape = tuple(int(n) for n in entry["shape"])
        size = math.prod(shape)
        arrays[str(entry["name"])] = Array(shape, tuple(flat[at : at + size]))
        at += size
    if at != len(flat):
        raise ValueError(f"the header describes {at} values, the binary holds {len(flat)}")
    return arrays


def load(folder: Traversable, name: str) -> dict[str, Array]:
    """The arrays stored as `name`.bin and `name`.json in `folder` (a package's files)."""
    return unpack(
        (folder / f"{name}.json").read_text("utf-8"), (folder / f"{name}.bin").read_bytes()
    )
