"""The ranking service's operator guard: every `/api/ranking` and `/api/operator` route
needs `Authorization: Bearer $LUDO_OPERATOR_TOKEN` (services/shared/operator.py). The
settings come from the app's state, where `create_app` (services/ranking/app.py) puts them
when it builds the app."""

from __future__ import annotations

from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from domain.errors import Unauthenticated
from services.shared.operator import is_operator
from services.shared.settings import Settings

__all__ = ["operator_guard"]


def operator_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Refuses (401) a request without the operator token."""
    settings: Settings = connection.app.state.settings
    if not is_operator(connection.headers.get("authorization", ""), settings.operator_token):
        raise Unauthenticated("send Authorization: Bearer <operator token>")
