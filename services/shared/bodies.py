"""Request bodies checked strictly before a handler runs (an app `before_request` hook).

Litestar converts a body to the handler's `data` type leniently (`"0"` becomes 0,
`"true"` becomes True) and never reads the body of a handler without `data`. Here every
POST/PUT/PATCH/DELETE body is read once (which applies the size limit: 413) and:

- a body declared as anything but JSON (`application/json`, `…+json`) is refused: 415;
- a handler with `data: T` gets it only if the body decodes as `T` with msgspec's strict
  rules: malformed JSON, JSON nested too deeply to parse (which would otherwise escape as a
  `RecursionError`) -> 400 `malformed_json`; a wrong type or unknown field -> 422
  `invalid`, naming the field;
- a handler without `data` (roll, leave, start, ...) takes no body: empty or `{}`,
  anything else is refused, so no command runs on a body it ignored.

Litestar then decodes the (valid) body again for the handler: bodies are at most 16 KiB.
"""

from __future__ import annotations

import re
from typing import Any, get_args, get_origin

import msgspec
from litestar import Request

from domain.errors import Invalid, Malformed
from services.shared.cors import refuse_options
from services.shared.errors import UnsupportedMediaType

__all__ = ["check_body", "validation_field"]

_WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# msgspec's error messages end "... - at `$.rules.enter_on[0]`".
_PATH = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")
# ... or, at the top level, name the field: "Object missing required field `piece`".
_NAMED = re.compile(r" field `(?P<name>[^`]*)`$")
# The body types of handlers, looked up once per handler.
_BODY_TYPES: dict[Any, tuple[Any, bool]] = {}
_NO_BODY = object()


async def check_body(request: Request[Any, Any, Any]) -> None:
    """`before_request`: refuse a body the handler could not take (see module doc), and
    a CORS preflight (`services/shared/cors.py`)."""
    refuse_options(request)
    if request.method not in _WITH_BODY:
        return
    kind, optional = _body_type(request.route_handler)
    raw = await request.body()
    if not raw.strip():
        if optional:
            return
        raise Malformed("a JSON body is required")
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    # No Content-Type is read as JSON (the body says what it is); a declared other type
    # is refused, so a form post is not half-understood.
    if media and media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaType(f"send the body as Content-Type: application/json (got {media})")
    decoded = _decode(raw, Any if kind is _NO_BODY else kind)
    if kind is _NO_BODY and decoded != {}:
        raise Invalid("this command takes no body (send none, or {})", field="body")


def _decode(raw: bytes, kind: Any) -> Any:
    try:
        return msgspec.json.decode(raw, type=kind, strict=True)
    except RecursionError:
        raise Malformed("the body is nested too deeply") from None
    except msgspec.ValidationError as error:
        field, detail = validation_field(error)
        field = field or "body"
        raise Invalid(f"{field}: {detail}", field=field) from None
    except msgspec.DecodeError as error:
        raise Malformed(f"the body is not valid JSON: {error}") from None


def validation_field(error: msgspec.ValidationError, *, named: bool = False) -> tuple[str, str]:
    """The path msgspec's error names (`rules.enter_on[0]`; "" for the whole value) and
    the message without it. `named`: a top-level missing or unknown field is named too
    (`piece` for "Object missing required field `piece`")."""
    message = str(error)
    found = _PATH.search(message)
    if found is not None:
        return found.group("path"), _PATH.sub("", message)
    if named and (top := _NAMED.search(message)) is not None:
        return top.group("name"), message
    return "", message


def _body_type(handler: Any) -> tuple[Any, bool]:
    """The handler's body type (`_NO_BODY` when it takes none) and whether an empty body
    is allowed (no `data`, or `data` with a default, as `join`'s)."""
    found = _BODY_TYPES.get(handler)
    if found is None:
        field = handler.parsed_fn_signature.parameters.get("data")
        if field is None:
            found = (_NO_BODY, True)
        else:
            found = (_unwrap(field.annotation), bool(field.has_default))
        _BODY_TYPES[handler] = found
    return found


def _unwrap(annotation: Any) -> Any:
    """`Annotated[T, Body(...)]` -> T."""
    while get_origin(annotation) is not None and hasattr(annotation, "__metadata__"):
        annotation = get_args(annotation)[0]
    return annotation
