"""How every service process is served: the uvicorn options (no heavy imports, so the CLI
can read them). `ludo up`, the service bench and the tests' in-process servers use these;
the Dockerfile and compose.yaml spell the same flags (tests/services/shared/test_limits.py checks).
"""

from __future__ import annotations

import gc
from typing import Any

__all__ = [
    "GUARDED_HTTP",
    "KEEP_ALIVE",
    "UVICORN_ARGS",
    "WS_MAX_SIZE",
    "WS_PER_MESSAGE_DEFLATE",
    "settle_heap",
    "uvicorn_options",
]

WS_MAX_SIZE = 65536  # bytes: uvicorn's --ws-max-size for every service process
KEEP_ALIVE = 5  # seconds an idle keep-alive connection is kept (uvicorn's default)
# uvicorn's httptools protocol (a C parser) with the header timeout; with uvloop installed
# (a dependency off Windows) uvicorn's default `--loop auto` runs on it. Against h11 and
# asyncio's own loop, the two took a tenth of the service's CPU per command off.
GUARDED_HTTP = "services.shared.limits:GuardedHttpToolsProtocol"
# No permessage-deflate on the sockets, though every browser offers it: the compression
# state is each connection's own, so every frame was compressed once per socket (the
# frames a match's sockets share, made once, compressed again for each), and with the
# bench's client offering it as a browser does the service spent about an eighth more
# CPU per command (docs/benchmarks.md). The frames are small JSON: a state frame is a
# couple of kilobytes, a few a second per socket at most.
WS_PER_MESSAGE_DEFLATE = False
# The uvicorn options every service process is started with (ludo up, the bench, the
# Dockerfile and compose.yaml spell the same).
UVICORN_ARGS = [
    "--ws-max-size",
    str(WS_MAX_SIZE),
    "--ws-per-message-deflate",
    str(WS_PER_MESSAGE_DEFLATE).lower(),
    "--http",
    GUARDED_HTTP,
    "--timeout-keep-alive",
    str(KEEP_ALIVE),
]


def uvicorn_options() -> dict[str, Any]:
    """`UVICORN_ARGS` as `uvicorn.Config` keywords (for servers started in-process)."""
    return {
        "ws_max_size": WS_MAX_SIZE,
        "ws_per_message_deflate": WS_PER_MESSAGE_DEFLATE,
        "http": GUARDED_HTTP,
        "timeout_keep_alive": KEEP_ALIVE,
    }


def settle_heap() -> None:
    """Put what the start-up made (modules, the app and its OpenAPI schema, the CPU's
    weights: some 140,000 objects) out of the cyclic garbage collector's reach, once the
    service has started (`gc.freeze()`; the serving processes' `on_startup` hook).

    Why: a command leaves a few objects behind for a while (a match's folded state is
    replaced at each command), so full collections come every second or so under load,
    and each one walked the whole start-up heap again: 50-85 ms with every request
    waiting, the service's p99, and a tenth of its CPU (docs/benchmarks.md). Frozen
    objects are still freed when nothing refers to them; only cycles among them are not,
    and the start-up heap lives as long as the process."""
    gc.collect()
    gc.freeze()
