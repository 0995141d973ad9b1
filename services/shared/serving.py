"""How every service process is served: the uvicorn options (no heavy imports, so the CLI
can read them). `ludo up`, the service bench and the tests' in-process servers use these;
the Dockerfile and compose.yaml spell the same flags (tests/services/shared/test_limits.py checks).
"""

from __future__ import annotations

from typing import Any

__all__ = ["GUARDED_H11", "KEEP_ALIVE", "UVICORN_ARGS", "WS_MAX_SIZE", "uvicorn_options"]

WS_MAX_SIZE = 65536  # bytes: uvicorn's --ws-max-size for every service process
KEEP_ALIVE = 5  # seconds an idle keep-alive connection is kept (uvicorn's default)
GUARDED_H11 = "services.shared.limits:GuardedH11Protocol"
# The uvicorn options every service process is started with (ludo up, the bench, the
# Dockerfile and compose.yaml spell the same).
UVICORN_ARGS = [
    "--ws-max-size",
    str(WS_MAX_SIZE),
    "--http",
    GUARDED_H11,
    "--timeout-keep-alive",
    str(KEEP_ALIVE),
]


def uvicorn_options() -> dict[str, Any]:
    """`UVICORN_ARGS` as `uvicorn.Config` keywords (for servers started in-process)."""
    return {"ws_max_size": WS_MAX_SIZE, "http": GUARDED_H11, "timeout_keep_alive": KEEP_ALIVE}
