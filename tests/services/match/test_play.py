"""Whole matches over HTTP: humans, CPUs, fair dice, rematch."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import sqlalchemy as sa

from domain.dice import die_for_roll
from tests.services.conftest import Api
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio


async def test_two_humans_play_a_whole_match(api: Api) -> None:
    """Two guests play a bga match to the end; the seed stays secret until it is revealed."""
    match_id, players, _ = await api.duel()
    state = await api.match(match_id)
    assert state["status"] == "playing" and state["server_seed"] is None
    assert state["client_seed"] == "a-seed|b-seed"
    final = await api.play_to_end(match_id, players)
    assert final["placements"] is not None and sorted(final["placements"]) == [1, 2]
    # Over: nobody is to act, and there is nothing to play.
    assert (final["turn"], final["phase"]) == (None, "over")
    moves = (await api.call("GET", f"/api/matches/{match_id}/moves")).json()
    assert (moves["seat"], moves["phase"], moves["moves"]) == (None, "over", [])
    seed_hex = final["server_seed"]
    assert hashlib.sha256(bytes.fromhex(seed_hex)).hexdigest() == final["seed_hash"]

    events = (await api.call("GET", f"/api/matches/{match_id}/events")).json()["events"]
    assert [e["type"] for e in events[-2:]] == ["MatchFinished", "SeedRevealed"]
    # Before the reveal, the seed appears in no response and no event.
    reveal_at = next(i for i, text in enumerate(api.seen) if seed_hex in text)
    assert '"SeedRevealed"' in api.seen[reveal_at]
    assert all(seed_hex not in str(e["data"]) for e in events[:-1])

    seed = bytes.fromhex(seed_hex)
    rolls = [e["data"] for e in events if e["type"] == "DieRolled"]
    assert rolls and [r["n"] for r in rolls] == list(range(len(rolls)))
    assert all(die_for_roll(seed, "a-seed|b-seed", r["n"]) == r["value"] for r in rolls)
    fairness = (await api.call("GET", f"/api/matches/{match_id}/fairness")).json()
    assert fairness["verified"] is True and len(fairness["rolls"]) == len(rolls)


@pytest.mark.slow
async def test_one_human_and_three_cpus_play_to_the_end(scheduled_api: Api) -> None:
    """With the deadline worker running, three CPUs and a human finish a match."""
    api = scheduled_api
    human = await api.player("solo")
    party = await api.party(human, seats=4, rules={"preset": "bga"})
    for level in ("easy", "normal", "hard"):
        r = await api.call(
            "POST", f"/api/parties/{party['id']}/cpus", json={"level": level}, headers=api.h(human)
        )
        assert r.status_code == 200, r.text
    match_id = await api.start(party["id"], human)
    human_actions = 0

    async def my_turn_or_the_end() -> dict[str, Any] | None:
        state = await api.match(match_id)
        if state["status"] == "finished":
            return state
        if state["turn"] == 0 and state["seats"][0]["stood_in"] is None:
            return state
        # A CPU is to act (its deadline row may already be gone if it just finished).
        assert state["deadline"] is None or state["deadline"]["kind"] == "cpu"
        return None

    for _ in range(2_000):
        state = await wait_until(my_turn_or_the_end, 60, what="the human's turn, or the end")
        if state["status"] == "finished":
            break
        if state["phase"] == "roll":
            r = await api.call("POST", f"/api/matches/{match_id}/roll", headers=api.h(human))
        else:
            moves = (await api.call("GET", f"/api/matches/{match_id}/moves")).json()["moves"]
            r = await api.call(
                "POST",
                f"/api/matches/{match_id}/move",
                json={"piece": moves[0]["piece"]},
                headers=api.h(human),
            )
        # The worker can act between our read and our command only for CPU seats,
        # which never hold the human's turn, so every human command lands.
        assert r.status_code == 200, r.text
        human_actions += 1
    else:
        raise AssertionError("the match did not end")
    assert human_actions > 0
    assert state["server_seed"] is not None
    events = (await api.call("GET", f"/api/matches/{match_id}/events")).json()["events"]
    seats = {e["data"]["seat"] for e in events if e["type"] == "DieRolled"}
    assert seats == {0, 1, 2, 3}
    async with api.engine.connect() as conn:
        left = await conn.scalar(sa.text("SELECT count(*) FROM turn_deadlines"))
    assert left == 0


@pytest.mark.slow
async def test_rematch_rotates_the_first_seat(api: Api) -> None:
    """After a finished match, rematch opens a new match whose first seat moved one on."""
    match_id, players, party_id = await api.duel()
    early = await api.call("POST", f"/api/parties/{party_id}/rematch", headers=api.h(players[1]))
    assert early.status_code == 409 and early.json()["error"] == "match_running"
    await api.play_to_end(match_id, players)
    r = await api.call("POST", f"/api/parties/{party_id}/rematch", headers=api.h(players[1]))
    assert r.status_code == 201, r.text
    body = r.json()
    second = body["match_id"]
    assert second != match_id and body["party"]["game"] == 2
    assert body["party"]["first_seat"] == 1
    state = await api.match(second)
    assert state["first_seat"] == 1 and state["turn"] == 1 and state["status"] == "playing"
    assert state["seed_hash"] != (await api.match(match_id))["seed_hash"]
    await api.play_to_end(second, players)
    r = await api.call("POST", f"/api/parties/{party_id}/rematch", headers=api.h(players[0]))
    assert r.status_code == 201 and r.json()["party"]["first_seat"] == 0


async def _against_cpus(api: Api, *, ranked: bool = False) -> tuple[str, dict[str, str]]:
    """A guest against three CPUs, started: (match id, the guest)."""
    human = await api.player("solo")
    party = await api.party(human, seats=4, rules={"preset": "bga"}, ranked=ranked)
    for _ in range(3):
        r = await api.call(
            "POST", f"/api/parties/{party['id']}/cpus", json={"level": "easy"}, headers=api.h(human)
        )
        assert r.status_code == 200, r.text
    return await api.start(party["id"], human), human


async def test_a_guest_concedes_a_casual_match_against_cpus_and_it_ends_at_once(
    api: Api,
) -> None:
    """POST /concede ends the match: MatchConceded, MatchFinished with the guest last,
    the seed revealed, no deadline left; again it is 409 match_finished."""
    match_id, human = await _against_cpus(api)
    r = await api.call("POST", f"/api/matches/{match_id}/concede", headers=api.h(human))
    assert r.status_code == 200, r.text
    assert [e["type"] for e in r.json()["events"]] == [
        "MatchConceded",
        "MatchFinished",
        "SeedRevealed",
    ]
    state = await api.match(match_id)
    assert state["status"] == "finished" and state["placements"][0] == 4
    assert sorted(state["placements"][1:]) == [1, 1, 1]  # the CPUs, level at the start
    async with api.engine.connect() as conn:
        left = await conn.scalar(sa.text("SELECT count(*) FROM turn_deadlines"))
    assert left == 0
    again = await api.call("POST", f"/api/matches/{match_id}/concede", headers=api.h(human))
    assert (again.status_code, again.json()["error"]) == (409, "match_finished")


async def test_a_ranked_match_or_one_against_a_person_cannot_be_conceded(api: Api) -> None:
    """409 ranked_match, 409 not_against_cpus; 403 for a token with no seat; nothing is
    appended by any of them."""
    ranked, human = await _against_cpus(api, ranked=True)
    duel, players, _ = await api.duel()
    stranger = await api.player("eve")
    for match_id, who, status, code in (
        (ranked, human, 409, "ranked_match"),
        (duel, players[0], 409, "not_against_cpus"),
        (duel, stranger, 403, "not_your_seat"),
    ):
        before = await api.version(match_id)
        r = await api.call("POST", f"/api/matches/{match_id}/concede", headers=api.h(who))
        assert (r.status_code, r.json()["error"]) == (status, code), r.text
        assert await api.version(match_id) == before
