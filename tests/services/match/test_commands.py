"""Command safety: races, idempotency, and every kind of bad input appending nothing."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest

from domain.decider import fold
from domain.events import DieRolled, Event, PieceMoved, TurnEnded
from domain.rules import CURRENT_REVISION
from services.shared.eventstore import EventStore
from tests.conftest import NEST, progress_on
from tests.services.conftest import Api

pytestmark = pytest.mark.anyio


async def _to_move_phase(api: Api, match_id: str, players: list[dict[str, str]]) -> dict[str, Any]:
    for _ in range(200):
        state = await api.match(match_id)
        if state["phase"] == "move":
            return state
        await api.step(match_id, players)
    raise AssertionError("never reached a move")


async def test_two_moves_at_once_exactly_one_lands(api: Api) -> None:
    """Two concurrent moves on one match: one appends, the other gets 409."""
    match_id, players, _ = await api.duel()
    state = await _to_move_phase(api, match_id, players)
    seat = state["turn"]
    moves = (await api.call("GET", f"/api/matches/{match_id}/moves")).json()["moves"]
    pieces = [moves[0]["piece"], moves[-1]["piece"]]
    results: list[Any] = []

    async def move(piece: int) -> None:
        results.append(
            await api.call(
                "POST",
                f"/api/matches/{match_id}/move",
                json={"piece": piece},
                headers=api.h(players[seat]),
            )
        )

    async with anyio.create_task_group() as tg:
        for piece in pieces:
            tg.start_soon(move, piece)
    codes = sorted(r.status_code for r in results)
    assert codes == [200, 409], [r.text for r in results]
    loser = next(r for r in results if r.status_code == 409).json()
    assert loser["error"] in ("conflict", "roll_first", "not_your_turn")
    winner = next(r for r in results if r.status_code == 200).json()
    assert await api.version(match_id) == winner["version"]
    assert await api.stream_length(f"match-{match_id}") == winner["version"]


async def test_service_level_race_gives_conflict(api: Api) -> None:
    """Two executions decided on the same version: the second append raises conflict (409)."""
    match_id, players, _ = await api.duel()
    service = api.client.app.state.parts
    from services.match.guests import Player  # noqa: PLC0415

    me = Player(players[0]["id"], "alice")
    gate = anyio.Event()
    original = service.store.append
    arrived = 0

    async def slow_append(*args: Any, **kwargs: Any) -> Any:
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            gate.set()
        await gate.wait()  # both have decided on the same version before either appends
        return await original(*args, **kwargs)

    service.store.append = slow_append
    outcomes: list[Any] = []

    async def roll() -> None:
        try:
            outcomes.append(await service.commands.roll(match_id, me, None))
        except Exception as exc:
            outcomes.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(roll)
        tg.start_soon(roll)
    service.store.append = original
    errors = [o for o in outcomes if isinstance(o, Exception)]
    assert len(errors) == 1 and type(errors[0]).__name__ == "ConcurrencyError"
    assert await api.stream_length(f"match-{match_id}") == 3  # created, started, one roll


async def test_same_idempotency_key_twice_appends_once(api: Api) -> None:
    """A command repeated with the same Idempotency-Key returns the first outcome."""
    match_id, players, _ = await api.duel()
    headers = api.h(players[0], **{"Idempotency-Key": "roll-1"})
    first = await api.call("POST", f"/api/matches/{match_id}/roll", headers=headers)
    assert first.status_code == 200 and first.json()["duplicate"] is False
    length = await api.stream_length(f"match-{match_id}")
    second = await api.call("POST", f"/api/matches/{match_id}/roll", headers=headers)
    assert second.status_code == 200, second.text
    assert second.json()["duplicate"] is True
    assert second.json()["events"] == first.json()["events"]
    assert await api.stream_length(f"match-{match_id}") == length
    # The key is the player's: another player's same key is a different command.
    party_key = {"Idempotency-Key": "p-1"}
    one = await api.call(
        "POST", "/api/parties", json={"seats": 2}, headers=api.h(players[1], **party_key)
    )
    two = await api.call(
        "POST", "/api/parties", json={"seats": 2}, headers=api.h(players[1], **party_key)
    )
    assert one.status_code == two.status_code == 201
    assert one.json()["id"] == two.json()["id"] and two.json()["version"] == 2


async def test_a_key_reused_for_another_request_is_refused(api: Api) -> None:
    """A key names one request: sent again with another command or body it is 422
    `idempotency_key_reused` and changes nothing, instead of answering with the first
    outcome as if the new request had been carried out."""
    match_id, players, _ = await api.duel()
    url = f"/api/matches/{match_id}"
    stream = f"match-{match_id}"
    leave = api.h(players[1], **{"Idempotency-Key": "k-1"})
    assert (await api.call("POST", f"{url}/leave", headers=leave)).status_code == 200
    length = await api.stream_length(stream)
    again = await api.call("POST", f"{url}/leave", headers=leave)  # the same: first outcome
    assert again.status_code == 200 and again.json()["duplicate"] is True
    reused = await api.call("POST", f"{url}/reclaim", headers=leave)
    assert reused.status_code == 422, reused.text
    assert (reused.json()["error"], reused.json()["field"]) == (
        "idempotency_key_reused",
        "Idempotency-Key",
    )
    assert await api.stream_length(stream) == length
    assert (await api.match(match_id))["seats"][1]["stood_in"] is not None  # still stood in

    key = {"Idempotency-Key": "party-1"}
    first = await api.call(
        "POST", "/api/parties", json={"seats": 2}, headers=api.h(players[0], **key)
    )
    assert first.status_code == 201
    other = await api.call(
        "POST", "/api/parties", json={"seats": 4, "ranked": True}, headers=api.h(players[0], **key)
    )
    assert other.status_code == 422 and other.json()["error"] == "idempotency_key_reused"
    join = api.h(players[1], **{"Idempotency-Key": "j-1"})
    r = await api.call("POST", f"/api/parties/{first.json()['id']}/join", json={}, headers=join)
    assert r.status_code == 200, r.text
    r = await api.call("POST", f"/api/parties/{first.json()['id']}/leave", headers=join)
    assert r.status_code == 422 and r.json()["error"] == "idempotency_key_reused", r.text


async def test_bad_input_is_4xx_json_and_appends_nothing(api: Api) -> None:
    """Malformed, mistyped, oversized, unauthorised, out-of-turn and illegal commands."""
    match_id, players, _ = await api.duel(rules={"preset": "standard", "quick_start": True})
    stranger = await api.player("eve")
    url = f"/api/matches/{match_id}"
    state = await api.match(match_id)
    turn, other = state["turn"], 1 - state["turn"]
    mover = api.h(players[turn])
    cases: list[tuple[str, str, dict[str, Any], int, str]] = [
        ("POST", f"{url}/move", {"content": b"{", "headers": mover}, 400, "malformed_json"),
        ("POST", f"{url}/move", {"json": {"piece": "x"}, "headers": mover}, 422, "invalid"),
        ("POST", f"{url}/move", {"json": {"piece": 7}, "headers": mover}, 422, "invalid"),
        ("POST", f"{url}/move", {"json": {"pice": 1}, "headers": mover}, 422, "invalid"),
        ("POST", f"{url}/move", {"json": [], "headers": mover}, 422, "invalid"),
        (
            "POST",
            f"{url}/move",
            {"content": b'{"piece": 1, "x": "' + b"a" * 20_000 + b'"}', "headers": mover},
            413,
            "too_large",
        ),
        # strict types: Litestar alone would turn "0" and 0.0 into 0 and move piece 0
        ("POST", f"{url}/move", {"json": {"piece": "0"}, "headers": mover}, 422, "invalid"),
        ("POST", f"{url}/move", {"json": {"piece": 0.0}, "headers": mover}, 422, "invalid"),
        (
            "POST",
            f"{url}/move",
            {"content": b'{"piece": 0}', "headers": {**mover, "Content-Type": "text/plain"}},
            415,
            "unsupported_media_type",
        ),
        # commands without a body take none: not garbage, not fields, not megabytes
        ("POST", f"{url}/roll", {"content": b"{garbage", "headers": mover}, 400, "malformed_json"),
        ("POST", f"{url}/roll", {"json": {"die": 6}, "headers": mover}, 422, "invalid"),
        (
            "POST",
            f"{url}/leave",
            {"content": b"{{{not json", "headers": mover},
            400,
            "malformed_json",
        ),
        (
            "POST",
            f"{url}/roll",
            {"content": b'"' + b"a" * 100_000 + b'"', "headers": mover},
            413,
            "too_large",
        ),
        (
            "POST",
            "/api/rules/moves",  # its body is any JSON: the decoder would recurse
            {"content": b'{"rules": ' + b"[" * 1000 + b"]" * 1000 + b"}"},
            400,
            "malformed_json",
        ),
        ("POST", f"{url}/roll", {}, 401, "unauthorized"),
        ("POST", f"{url}/roll", {"headers": {"Authorization": "Bearer nope"}}, 401, "unauthorized"),
        ("POST", f"{url}/roll", {"headers": api.h(stranger)}, 403, "not_your_seat"),
        # `{}` is no body: the command goes on to the turn check
        (
            "POST",
            f"{url}/roll",
            {"json": {}, "headers": api.h(players[other])},
            409,
            "not_your_turn",
        ),
        ("POST", f"{url}/move", {"json": {"piece": 0}, "headers": mover}, 409, "roll_first"),
        ("POST", f"{url}/reclaim", {"headers": mover}, 409, "not_stood_in"),
        (
            "POST",
            f"{url}/roll",
            {"headers": api.h(players[turn], **{"Idempotency-Key": "a b"})},
            422,
            "invalid",
        ),
        ("POST", f"/api/matches/{uuid.uuid4()}/roll", {"headers": mover}, 404, "not_found"),
        ("GET", "/api/matches/not-a-uuid", {}, 404, "not_found"),
        ("GET", f"/api/matches/{uuid.uuid4()}/moves", {}, 404, "not_found"),
        ("GET", f"{url}/events", {"params": {"from": "x"}}, 422, "invalid"),
    ]
    before = await api.stream_length(f"match-{match_id}")
    for method, path, kwargs, status, code in cases:
        r = await api.call(method, path, **kwargs)
        assert r.status_code == status, (path, kwargs.get("json"), r.text)
        body = r.json()
        assert body["error"] == code and isinstance(body["detail"], str), body
        assert await api.stream_length(f"match-{match_id}") == before
    assert (await api.call("POST", f"{url}/move", json={"piece": "x"}, headers=mover)).json()[
        "field"
    ] == "piece"

    # An illegal move: find a roll after which some piece cannot move.
    for _ in range(300):
        state = await _to_move_phase(api, match_id, players)
        legal = {m["piece"] for m in (await api.call("GET", f"{url}/moves")).json()["moves"]}
        illegal = sorted({0, 1, 2, 3} - legal)
        if illegal:
            length = await api.stream_length(f"match-{match_id}")
            r = await api.call(
                "POST",
                f"{url}/move",
                json={"piece": illegal[0]},
                headers=api.h(players[state["turn"]]),
            )
            assert r.status_code == 422 and r.json()["error"] == "illegal_move", r.text
            assert r.json()["field"] == "piece"
            assert await api.stream_length(f"match-{match_id}") == length
            break
        await api.step(match_id, players)
    else:
        raise AssertionError("no illegal move found")


async def stage_a_block(store: EventStore, match_id: str) -> int:
    """Bring a fresh 2-player match of the standard rules to seat 0 having rolled a 4, its
    piece 0 on 20 (free to move) and its piece 2 on 3, behind red's (seat 1's) pair on
    track square 6. Written to the stream as facts, as `evolve` applies any (pieces
    teleport by PieceMoved); the service decides on them as on its own. Returns the
    stream's version after them."""
    stream = f"match-{match_id}"
    state = fold(await store.read_events(stream))
    assert state.status == "playing" and state.ruleset is not None
    assert state.ruleset.blocks == "double" and state.players == 2
    assert all(p == NEST for row in state.pieces for p in row)
    red_on_6 = progress_on(6, "red")
    events: list[Event] = [
        PieceMoved(seat=0, piece=0, frm=NEST, to=20),
        PieceMoved(seat=0, piece=2, frm=NEST, to=3),
        PieceMoved(seat=1, piece=0, frm=NEST, to=red_on_6),
        PieceMoved(seat=1, piece=1, frm=NEST, to=red_on_6),
        TurnEnded(seat=state.turn, next_seat=0),
        DieRolled(seat=0, n=state.rolls_made, value=4),
    ]
    result = await store.append(stream, state.version, events)
    return result.next_version


# The answer to moving piece 2 in `stage_a_block`'s position, over HTTP and the socket.
BLOCKED_PIECE_2 = {
    "error": "illegal_move",
    "detail": "piece 2 cannot move 4: a block stands on square 6",
    "field": "piece",
    "why": {"rule": "block", "square": 6, "seat": 1},
}


class TestWhyAPieceCannotMove:
    """An illegal move's error gives the rule that stops the piece as facts (`why`), for
    the page to word in its own language, beside the English `detail`."""

    async def test_an_illegal_move_answers_its_rule_as_facts_and_appends_nothing(
        self, api: Api
    ) -> None:
        """422 illegal_move with `why` {rule block, square, seat}; the stream is unchanged."""
        match_id, players, _ = await api.duel(rules={"preset": "standard"})
        version = await stage_a_block(EventStore(api.engine), match_id)
        moves = (await api.call("GET", f"/api/matches/{match_id}/moves")).json()["moves"]
        assert [m["piece"] for m in moves] == [0]
        r = await api.call(
            "POST", f"/api/matches/{match_id}/move", json={"piece": 2}, headers=api.h(players[0])
        )
        assert r.status_code == 422, r.text
        assert r.json() == BLOCKED_PIECE_2
        assert await api.stream_length(f"match-{match_id}") == version

    async def test_other_errors_carry_no_why(self, api: Api) -> None:
        """A refusal that is not an illegal move (roll_first) has no `why` at all."""
        match_id, players, _ = await api.duel(rules={"preset": "standard"})
        mover = players[(await api.match(match_id))["turn"]]
        r = await api.call(
            "POST", f"/api/matches/{match_id}/move", json={"piece": 0}, headers=api.h(mover)
        )
        assert r.status_code == 409 and r.json()["error"] == "roll_first", r.text
        assert set(r.json()) == {"error", "detail"}


async def test_party_errors_and_flow(api: Api) -> None:
    """Parties: listing, join/leave, host-only actions, start checks, validation errors."""
    host = await api.player("host")
    guest = await api.player("guest")
    bad = await api.call("POST", "/api/parties", json={"seats": 5}, headers=api.h(host))
    assert bad.status_code == 422 and bad.json()["field"] == "seats"
    bad = await api.call(
        "POST", "/api/parties", json={"rules": {"blocks": "wall"}}, headers=api.h(host)
    )
    assert bad.status_code == 422 and bad.json()["field"] == "rules.blocks"
    for mistyped in ({"ranked": "1"}, {"ranked": "true"}, {"seats": "2"}, {"seats": 3.0}):
        bad = await api.call("POST", "/api/parties", json=mistyped, headers=api.h(host))
        assert bad.status_code == 422 and bad.json()["field"] == next(iter(mistyped)), bad.text
    deep = b'{"rules": {"enter_on": ' + b"[" * 1000 + b"]" * 1000 + b"}}"
    bad = await api.call("POST", "/api/parties", content=deep, headers=api.h(host))
    assert bad.status_code == 400 and bad.json()["error"] == "malformed_json"
    bad = await api.call("POST", "/api/parties", json={"turn_limit": 45}, headers=api.h(host))
    assert bad.status_code == 422 and bad.json()["field"] == "turn_limit"
    bad = await api.call("POST", "/api/parties", json={"client_seed": "é"}, headers=api.h(host))
    assert bad.status_code == 422 and bad.json()["field"] == "client_seed"
    party = await api.party(host, seats=3, rules={"preset": "standard", "goal_bonus": "on"})
    pid = party["id"]
    assert party["rules"]["goal_bonus"] is True and party["seats"][0]["player_id"] == host["id"]
    listed = (await api.call("GET", "/api/parties")).json()["parties"]
    assert [p["id"] for p in listed] == [pid]
    stream = f"party-{pid}"
    length = await api.stream_length(stream)
    for path, who, body, status, code in [
        (f"/api/parties/{pid}/start", host, None, 409, "seats_empty"),
        (f"/api/parties/{pid}/cpus", guest, {"level": "easy"}, 403, "not_host"),
        (f"/api/parties/{pid}/cpus", host, {"level": "genius"}, 422, "invalid"),
        (f"/api/parties/{pid}/join", host, {}, 409, "already_seated"),
        (f"/api/parties/{pid}/join", guest, {"seat": 0}, 409, "seat_taken"),
        (f"/api/parties/{pid}/leave", guest, None, 403, "not_seated"),
        (f"/api/parties/{uuid.uuid4()}/join", guest, {}, 404, "not_found"),
    ]:
        r = await api.call("POST", path, json=body, headers=api.h(who))
        assert r.status_code == status and r.json()["error"] == code, (path, r.text)
        assert await api.stream_length(stream) == length
    r = await api.call("POST", f"/api/parties/{pid}/join", json={"seat": 2}, headers=api.h(guest))
    assert r.status_code == 200 and r.json()["seats"][2]["player_id"] == guest["id"]
    r = await api.call("POST", f"/api/parties/{pid}/cpus", json={}, headers=api.h(host))
    assert r.status_code == 200 and r.json()["seats"][1]["cpu"] == "normal"
    r = await api.call("POST", f"/api/parties/{pid}/cpus/1/remove", headers=api.h(host))
    assert r.status_code == 200 and r.json()["seats"][1]["name"] is None
    r = await api.call(
        "POST", f"/api/parties/{pid}/cpus", json={"level": "hard", "seat": 1}, headers=api.h(host)
    )
    assert r.status_code == 200
    r = await api.call(
        "POST", f"/api/parties/{pid}/settings", json={"turn_limit": 60}, headers=api.h(host)
    )
    assert r.status_code == 200 and r.json()["turn_limit"] == 60
    r = await api.call("POST", f"/api/parties/{pid}/start", headers=api.h(guest))
    assert r.status_code == 403 and r.json()["error"] == "not_host"
    # The host leaves: the guest becomes host and starts.
    r = await api.call("POST", f"/api/parties/{pid}/leave", headers=api.h(host))
    assert r.status_code == 200 and r.json()["host_id"] == guest["id"]
    r = await api.call("POST", f"/api/parties/{pid}/join", json={"seat": 0}, headers=api.h(host))
    assert r.status_code == 200
    match_id = await api.start(pid, guest)
    state = await api.match(match_id)
    assert [s["cpu"] for s in state["seats"]] == [None, "hard", None]
    # Once playing, a stranger is still told who may act (403), not the table's state.
    stranger = await api.player("stranger")
    r = await api.call("POST", f"/api/parties/{pid}/start", headers=api.h(stranger))
    assert r.status_code == 403 and r.json()["error"] == "not_host", r.text
    r = await api.call("POST", f"/api/parties/{pid}/leave", headers=api.h(stranger))
    assert r.status_code == 403 and r.json()["error"] == "not_seated", r.text
    r = await api.call("POST", f"/api/parties/{pid}/leave", headers=api.h(host))
    assert r.status_code == 409 and r.json()["error"] == "not_open", r.text
    assert state["turn_limit"] == 60 and state["party_id"] == pid
    assert (await api.call("GET", "/api/parties")).json()["parties"] == []
    me = await api.call("GET", "/api/players/me", headers=api.h(guest))
    assert me.json() == {"id": guest["id"], "name": "guest"}


async def test_the_revision_is_pinned_by_the_match_never_chosen_by_the_party(api: Api) -> None:
    """A party's settings are options only: a `revision` is refused (422 naming
    `rules.revision`, nothing appended); the match it starts pins the current revision."""
    host = await api.player("host")
    for body in ({"rules": {"revision": 1}}, {"rules": {"preset": "bga", "revision": 2}}):
        bad = await api.call("POST", "/api/parties", json=body, headers=api.h(host))
        assert bad.status_code == 422 and bad.json()["field"] == "rules.revision", bad.text
    party = await api.party(host, seats=2, rules={"empty_course": "three_tries"})
    assert "revision" not in party["rules"]
    stream = f"party-{party['id']}"
    length = await api.stream_length(stream)
    r = await api.call(
        "POST",
        f"/api/parties/{party['id']}/settings",
        json={"rules": {"empty_course": "three_tries", "revision": 1}},
        headers=api.h(host),
    )
    assert r.status_code == 422 and r.json()["field"] == "rules.revision", r.text
    assert await api.stream_length(stream) == length
    r = await api.call("POST", f"/api/parties/{party['id']}/cpus", json={}, headers=api.h(host))
    assert r.status_code == 200
    match = await api.match(await api.start(party["id"], host))
    assert match["rules"] == {**party["rules"], "revision": CURRENT_REVISION}


async def test_rules_oracle_endpoint(api: Api) -> None:
    """POST /api/rules/moves answers one query and names the bad field of a wrong one."""
    position = {
        "players": 2,
        "pieces": {"yellow": [-1, -1, -1, -1], "red": [-1, -1, -1, -1]},
        "turn": "yellow",
    }
    ok = await api.call("POST", "/api/rules/moves", json={"position": position, "die": 6})
    assert ok.status_code == 200 and len(ok.json()["moves"]) == 4
    bad = await api.call("POST", "/api/rules/moves", json={"position": position, "die": 9})
    assert bad.status_code == 422 and bad.json()["field"] == "die"
    bad = await api.call("POST", "/api/rules/moves", content=b"{nope")
    assert bad.status_code == 400 and bad.json()["error"] == "malformed_json"
    schema = (await api.call("GET", "/schema/openapi.json")).json()
    ops = [op for path in schema["paths"].values() for op in path.values()]
    assert all(op.get("operationId") and op.get("tags") for op in ops)


async def test_responses_are_not_cached(api: Api) -> None:
    """API responses, a new guest's secret token above all, carry Cache-Control: no-store."""
    r = await api.call("POST", "/api/players", json={"name": "cache"})
    assert r.status_code == 201 and r.headers.get_list("cache-control") == ["no-store"]
    r = await api.call("GET", "/api/parties")
    assert r.headers.get_list("cache-control") == ["no-store"]
    match_id, _, _ = await api.duel()
    r = await api.call("GET", f"/replay/{match_id}")  # a page: its own header, not two
    assert r.status_code == 200 and r.headers.get_list("cache-control") == ["no-store"]


async def test_an_optional_body_may_be_left_out(api: Api) -> None:
    """`join` takes an optional body: none at all seats the guest in the first free seat."""
    host, guest = await api.player("host"), await api.player("guest")
    party = await api.party(host, seats=2)
    r = await api.call("POST", f"/api/parties/{party['id']}/join", headers=api.h(guest))
    assert r.status_code == 200 and r.json()["seats"][1]["player_id"] == guest["id"], r.text
