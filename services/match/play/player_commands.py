"""The commands a player sends to a match, by name: the one table that both ways in
dispatch through, `POST /api/matches/{id}/<name>` (`play/routes.py`) and a match socket's
`{"type": "<name>"}` message (`play/socket.py`). Each entry says how the command is
carried out (`MatchCommands`), so the two ways in cannot drift apart: same rules, same
errors, same idempotency (the socket message's `id` is the HTTP `Idempotency-Key`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

import msgspec

from services.match.guests import Player
from services.match.play.service import MatchCommands
from services.shared.eventstore import AppendResult

__all__ = ["PLAYER_COMMANDS", "PlayerCommand"]

# (commands, match id, player, idempotency key, piece) -> the outcome of the append.
Run = Callable[[MatchCommands, str, Player, str | None, int | None], Awaitable[AppendResult]]


class PlayerCommand(msgspec.Struct, frozen=True, kw_only=True):
    """One command a player may send: its name (the route's last segment and the socket
    message's `type`), its OpenAPI operation, whether it names a piece, how it runs, and the
    error codes it can answer."""

    name: str
    operation_id: str
    summary: str
    run: Run
    # The error codes its refusals answer (besides the edge's: openapi_docs.edge_codes).
    errors: tuple[str, ...]
    takes_piece: bool = False


# Any command of a player: an unknown match, a token without a seat in it, the match over,
# a command that lost a race (`conflict`), a reused Idempotency-Key.
_ANY = (
    "not_found",
    "not_your_seat",
    "match_finished",
    "conflict",
    "idempotency_key_reused",
)
# A roll or a move: on another's turn, or on a seat a CPU plays.
_TURN = ("not_your_turn", "stood_in", "cpu_playing")


def _piece(piece: int | None) -> int:
    # The body or message schema requires the piece; this only narrows the type.
    assert piece is not None
    return piece


PLAYER_COMMANDS: Final[dict[str, PlayerCommand]] = {
    c.name: c
    for c in (
        PlayerCommand(
            name="roll",
            operation_id="rollDie",
            summary="Roll the die for your seat (the server derives the die)",
            run=lambda commands, match, player, key, _: commands.roll(match, player, key),
            errors=(*_ANY, *_TURN, "move_first"),
        ),
        PlayerCommand(
            name="move",
            operation_id="movePiece",
            summary="Move a piece by the die you rolled",
            run=lambda commands, match, player, key, piece: commands.move(
                match, player, _piece(piece), key
            ),
            errors=(*_ANY, *_TURN, "roll_first", "illegal_move"),
            takes_piece=True,
        ),
        PlayerCommand(
            name="reclaim",
            operation_id="reclaimSeat",
            summary="Take your seat back from the CPU stand-in",
            run=lambda commands, match, player, key, _: commands.reclaim(match, player, key),
            errors=(*_ANY, "not_stood_in"),
        ),
        PlayerCommand(
            name="concede",
            operation_id="concedeMatch",
            summary="Concede a casual match against CPUs: it ends now, you placed last",
            run=lambda commands, match, player, key, _: commands.concede(match, player, key),
            errors=(*_ANY, "seat_finished", "ranked_match", "not_against_cpus"),
        ),
        PlayerCommand(
            name="leave",
            operation_id="leaveMatch",
            summary="Leave the match: a CPU plays your seat until you reclaim it",
            run=lambda commands, match, player, key, _: commands.leave(match, player, key),
            errors=(*_ANY, "already_stood_in"),
        ),
    )
}
