"""The operator's token (`LUDO_OPERATOR_TOKEN`): one check for every operator-only route
of both services (the ranking API and dashboard data, the dispute report)."""

from __future__ import annotations

import hmac

__all__ = ["is_operator"]


def is_operator(authorization: str, expected: str | None) -> bool:
    """True when an `Authorization` header value is `Bearer <expected>`.

    Unset or empty `expected` refuses everyone: an operator route is never open by
    default. Compared in constant time, so the token cannot be guessed byte by byte.
    """
    scheme, _sep, token = authorization.partition(" ")
    return bool(
        expected
        and scheme.lower() == "bearer"
        and hmac.compare_digest(token.strip().encode(), expected.encode())
    )
