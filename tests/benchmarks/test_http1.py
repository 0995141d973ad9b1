"""The bench's lean HTTP/1.1 client (benchmarks/http1.py): keep-alive requests with
JSON, answers by length or chunked, and a dropped connection reopened."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import msgspec
import pytest

from benchmarks.http1 import Http1, Http1Error

pytestmark = pytest.mark.anyio


class _Server:
    """A loopback HTTP/1.1 server: echoes each request's line, headers and body as JSON;
    `/chunked` answers chunked, `/drop` closes the connection without an answer, `/last`
    answers and then closes it (as a keep-alive timeout does, with no `Connection: close`),
    and the next `drop_next` requests read are dropped unanswered (the close
    racing a request on a kept-alive connection)."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[str] = []
        self.drop_next = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode()
                line, *fields = head.split("\r\n")[:-2]
                headers = dict(f.split(": ", 1) for f in fields)
                body = await reader.readexactly(int(headers.get("Content-Length", "0")))
                path = line.split(" ")[1]
                self.requests.append(path)
                if path == "/drop" or self.drop_next:
                    self.drop_next = max(0, self.drop_next - 1)
                    writer.close()
                    return
                answer = msgspec.json.encode(
                    {"line": line, "headers": headers, "body": body.decode()}
                )
                if path == "/chunked":
                    half = len(answer) // 2
                    chunks = b"".join(
                        b"%x\r\n%s\r\n" % (len(part), part)
                        for part in (answer[:half], answer[half:])
                    )
                    writer.write(
                        b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + chunks
                        + b"0\r\n\r\n"
                    )
                else:
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(answer), answer)
                    )
                await writer.drain()
                if path == "/last":
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@pytest.fixture
async def server() -> AsyncIterator[_Server]:
    running = _Server()
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


async def test_requests_share_one_kept_alive_connection(server: _Server) -> None:
    """JSON bodies and headers go out as sent; answers come back by length or chunked,
    all on one connection."""
    async with Http1(f"http://127.0.0.1:{server.port}") as http:
        status, raw = await http.request(
            "POST", "/api/x", json={"piece": 2}, headers={"Authorization": "Bearer t"}
        )
        echoed = msgspec.json.decode(raw)
        assert status == 200 and echoed["line"] == "POST /api/x HTTP/1.1"
        assert echoed["body"] == '{"piece":2}'
        assert echoed["headers"]["Authorization"] == "Bearer t"
        assert echoed["headers"]["Content-Type"] == "application/json"
        status, raw = await http.request("GET", "/chunked")
        assert status == 201 and msgspec.json.decode(raw)["line"] == "GET /chunked HTTP/1.1"
    assert server.connections == 1


async def test_a_dropped_connection_is_an_error_then_reopened(server: _Server) -> None:
    """A connection closed without an answer raises `Http1Error`; the next request opens
    a new one."""
    async with Http1(f"http://127.0.0.1:{server.port}") as http:
        with pytest.raises(Http1Error):
            await http.request("GET", "/drop")
        status, _ = await http.request("GET", "/again")
        assert status == 200
    assert server.connections == 2


async def test_a_connection_the_server_closed_while_idle_is_not_reused(server: _Server) -> None:
    """After the server closed a kept-alive connection, the next request goes out on a new
    one and succeeds."""
    async with Http1(f"http://127.0.0.1:{server.port}") as http:
        status, _ = await http.request("GET", "/last")
        assert status == 200
        status, _ = await http.request("POST", "/next", json={"n": 1})
        assert status == 200
    assert server.connections == 2
    assert server.requests == ["/last", "/next"]


async def test_a_request_met_by_the_close_of_a_reused_connection_is_sent_again(
    server: _Server,
) -> None:
    """A reused connection closed with no byte of an answer: the request is sent once more
    on a new connection; on a new connection the same close is an error."""
    async with Http1(f"http://127.0.0.1:{server.port}") as http:
        assert (await http.request("GET", "/first"))[0] == 200
        server.drop_next = 1
        status, raw = await http.request("POST", "/again", json={"n": 2})
        assert status == 200 and msgspec.json.decode(raw)["body"] == '{"n":2}'
        assert server.connections == 2
        assert server.requests == ["/first", "/again", "/again"]
        server.drop_next = 2
        with pytest.raises(Http1Error):
            await http.request("GET", "/twice")  # reused, dropped; new, dropped again
    assert server.requests[-2:] == ["/twice", "/twice"]
