"""The name a guest gets when they did not give one (`POST /api/players` without `name`):
a colour, an animal and a number, in the language of the page that asked ("金色のラッコ42",
"Golden Otter 42"). The server makes it, so there is one rule, and the name is checked as
any other (`guests._valid_name`); the guest renames themself as any guest does
(`PUT /api/players/me`).

The words are chosen to be friendly in any pairing: colours of gems, plants and the sky
(none that names people's skin), animals a child would draw (no monkeys, pigs, snakes or
insects, nothing used as an insult in either language). Two lists of the same length,
the n-th word of each meaning the same thing, so a name means the same in both
languages. 16 colours × 32 animals × 90 numbers: 46,080 names, so two guests met on the
site rarely share one (names need not be unique: the id is the player).
"""

from __future__ import annotations

import random
from typing import Final, Literal

__all__ = ["ANIMALS", "COLOURS", "Lang", "generated_name"]

Lang = Literal["ja", "en"]

COLOURS: Final[dict[Lang, tuple[str, ...]]] = {
    "en": (
        "Azure", "Coral", "Jade", "Indigo", "Violet", "Silver", "Golden", "Mint",
        "Plum", "Ruby", "Teal", "Amber", "Lilac", "Sky", "Pearl", "Maple",
    ),
    "ja": (
        "空色の", "さんご色の", "ひすい色の", "藍色の",
        "すみれ色の", "銀色の", "金色の", "ミント色の",
        "うめ色の", "ルビー色の", "青緑の", "こはく色の",
        "ふじ色の", "水色の", "真珠色の", "もみじ色の",
    ),
}  # fmt: skip

ANIMALS: Final[dict[Lang, tuple[str, ...]]] = {
    "en": (
        "Otter", "Panda", "Fox", "Rabbit", "Squirrel", "Penguin", "Turtle", "Dolphin",
        "Whale", "Owl", "Hedgehog", "Koala", "Seal", "Deer", "Cat", "Swan",
        "Crane", "Sparrow", "Frog", "Beaver", "Raccoon", "Falcon", "Capybara", "Alpaca",
        "Puffin", "Kingfisher", "Hamster", "Tanuki", "Red Panda", "Lynx", "Walrus", "Duckling",
    ),
    "ja": (
        "ラッコ", "パンダ", "キツネ", "ウサギ",
        "リス", "ペンギン", "カメ", "イルカ",
        "クジラ", "フクロウ", "ハリネズミ", "コアラ",
        "アザラシ", "シカ", "ネコ", "ハクチョウ",
        "ツル", "スズメ", "カエル", "ビーバー",
        "アライグマ", "ハヤブサ", "カピバラ", "アルパカ",
        "ツノメドリ", "カワセミ", "ハムスター", "タヌキ",
        "レッサーパンダ", "オオヤマネコ", "セイウチ", "アヒルの子",
    ),
}  # fmt: skip

NUMBERS: Final = range(10, 100)


def generated_name(lang: Lang, rng: random.Random) -> str:
    """A colour, an animal and a two-digit number drawn with `rng`, in `lang`."""
    colour = rng.randrange(len(COLOURS["en"]))
    animal = rng.randrange(len(ANIMALS["en"]))
    number = rng.choice(NUMBERS)
    if lang == "ja":
        return f"{COLOURS['ja'][colour]}{ANIMALS['ja'][animal]}{number}"
    return f"{COLOURS['en'][colour]} {ANIMALS['en'][animal]} {number}"
