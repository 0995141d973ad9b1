"""A lean HTTP/1.1 client for the service bench's load: one kept-alive connection, one
request at a time, JSON in and out.

Why not httpx: the load must not be the bottleneck of what it measures, and httpx spent about
0.6 ms of the generator's CPU per command, more than the service itself. This client
writes the request in one piece and reads the answer by its Content-Length (or chunked),
nothing else: a tenth of that. It speaks to the bench's own service on loopback only.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import msgspec

__all__ = ["Http1", "Http1Error"]

_MAX_HEAD = 64 * 1024


class Http1Error(Exception):
    """The connection failed or the answer was not HTTP/1.1 as expected."""


class _Stale(Exception):
    """A reused connection was closed before a byte of the answer came."""


class Http1:
    """One connection to `base` (`http://host:port`), opened on first use and again after
    a failure or the server's close; `request` returns (status, body bytes)."""

    def __init__(self, base: str, *, timeout: float = 30.0) -> None:
        parts = urlsplit(base)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"an http:// base URL, not {base!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.timeout = timeout
        self._host_header = f"{self.host}:{self.port}".encode()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> Http1:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        body = b"" if json is None else msgspec.json.encode(json)
        head = [
            f"{method} {path} HTTP/1.1\r\n".encode(),
            b"Host: ",
            self._host_header,
            b"\r\nContent-Length: ",
            str(len(body)).encode(),
            b"\r\n",
        ]
        if json is not None:
            head.append(b"Content-Type: application/json\r\n")
        for name, value in (headers or {}).items():
            head.append(f"{name}: {value}\r\n".encode())
        head.append(b"\r\n")
        data = b"".join(head) + body
        try:
            try:
                return await asyncio.wait_for(self._exchange(data), self.timeout)
            except _Stale:
                # The server closed the kept-alive connection as it idled (uvicorn's
                # keep-alive timeout) just as the request went out: it never read it, so
                # it is sent once more on a new connection.
                await self.aclose()
                return await asyncio.wait_for(self._exchange(data), self.timeout)
        except (OSError, EOFError, asyncio.IncompleteReadError, TimeoutError, ValueError) as exc:
            await self.aclose()  # the next request opens a new connection
            raise Http1Error(f"{type(exc).__name__}: {exc}") from exc

    async def _exchange(self, data: bytes) -> tuple[int, bytes]:
        if self._reader is not None and self._reader.at_eof():
            await self.aclose()  # closed by the server while idle: not reused
        reused = self._writer is not None and not self._writer.is_closing()
        if not reused:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._reader, self._writer
        assert reader is not None and writer is not None
        writer.write(data)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionResetError) as exc:
            partial = getattr(exc, "partial", b"")
            if reused and not partial:
                raise _Stale from exc
            raise
        if len(head) > _MAX_HEAD:
            raise ValueError("response head too large")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length: int | None = None
        chunked = close = False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding":
                chunked = "chunked" in value.lower()
            elif name == "connection":
                close = "close" in value.lower()
        if chunked:
            body = await _chunks(reader)
        elif length is not None:
            body = await reader.readexactly(length)
        else:  # no length: the body runs to the end of the connection
            body = await reader.read()
            close = True
        if close:
            await self.aclose()
        return status, body


async def _chunks(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # no trailers are sent to us
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
