"""The bounded in-process caches of the match service (LRU by insertion)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["remember"]


def remember(cache: OrderedDict[Any, Any], key: Any, value: Any, size: int) -> None:
    """Put `key` in the LRU `cache`, dropping the oldest entries beyond `size`."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)
