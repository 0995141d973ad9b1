"""The name a guest gets when they did not give one (`POST /api/players` without `name`):
a colour, an animal and a number, in the language of the page that asked ("金色のラッコ42",
"Golden Otter 42", "स्वर्ण ऊदबिलाव 42"). The server makes it, so there is one rule, and the
name is checked as any other (`guests._valid_name`); the guest renames themself as any
guest does (`PUT /api/players/me`).

The words are each catalogue's `guest_names` section (web/i18n/<lang>.json, read through
services/shared/words.py): `colours` and `animals`, so a language is added with its
catalogue. They are chosen to be friendly in any pairing: colours of gems, plants and the
sky (none that names people's skin), animals a child would draw (no monkeys, pigs, snakes
or insects, nothing used as an insult in any of the languages: the owl is one in Hindi, so
the Hindi list has the peacock in its place). Every language's lists have the same length,
the n-th word of each meaning the same thing (but for such a swap), so a name means the
same in every language. 16 colours × 32 animals × 90 numbers: 46,080 names, so two guests
met on the site rarely share one (names need not be unique: the id is the player).
"""

from __future__ import annotations

import random
from typing import Final, Literal, get_args

from services.shared.words import catalogue

__all__ = ["LANGUAGES", "NUMBERS", "Lang", "animals", "colours", "generated_name"]

# The languages a name is made in: every catalogue's (a test checks they are the same).
Lang = Literal["ja", "en", "hi"]
LANGUAGES: Final[tuple[Lang, ...]] = get_args(Lang)

# The languages that write a name without spaces ("金色のラッコ42").
_UNSPACED: Final = frozenset({"ja"})

NUMBERS: Final = range(10, 100)


def colours(lang: Lang) -> list[str]:
    """The colours of `lang`, in the order every language shares."""
    words: list[str] = catalogue(lang)["guest_names"]["colours"]
    return words


def animals(lang: Lang) -> list[str]:
    """The animals of `lang`, in the order every language shares."""
    words: list[str] = catalogue(lang)["guest_names"]["animals"]
    return words


def generated_name(lang: Lang, rng: random.Random) -> str:
    """A colour, an animal and a two-digit number drawn with `rng`, in `lang` (the same
    draw is the same name in every language)."""
    colour = rng.randrange(len(colours("en")))
    animal = rng.randrange(len(animals("en")))
    number = rng.choice(NUMBERS)
    words = (colours(lang)[colour], animals(lang)[animal], str(number))
    return "".join(words) if lang in _UNSPACED else " ".join(words)
