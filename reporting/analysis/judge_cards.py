"""Judge card files (``{"judge_cards": [card, ...]}``, docs/judge-cards.md) read and checked strictly.

A card file comes from whoever made it: decoded by the strict JSON decoder (duplicate keys, NaN, huge integers
are problems), then every field of every card is checked against card version 1; anything wrong is a problem
naming the file, the field path and what is wrong, and a file with any problem gives no card. The figures a card
states are checked against those recomputed from its confusion matrix (``validity.figures``), so a card cannot
claim rates its counts do not give; what is shown is always the recomputed figures.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Optional, Union

from reporting.analysis.validity import CARD_VERSION, LABEL_BASES, MEASURED_KEYS, RATE_KEYS, figures
from reporting.format.problems import FileTooLarge, Problem, read_file_bytes, unreadable
from reporting.format.strict_json import strict_loads

MAX_CARDS = 1000  # cards in one file
MAX_CATEGORIES = 500  # categories of one card
MAX_TEXT = 2000  # characters of a card's text fields
TOLERANCE = 0.0015  # a stated rate may differ from the recomputed one by rounding only
CARD_KEYS = ("card_version", "judge", "label_set", "how", "measured", "by_category", "versions", "generated")
LABEL_SET_KEYS = ("name", "description", "n", "harmful", "not_harmful", "label_basis", "trained_on")
CONFUSION_KEYS = ("tp", "fn", "fp", "tn")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**53


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text(value: Any, empty: bool = True) -> bool:
    return isinstance(value, str) and len(value) <= MAX_TEXT and (empty or value.strip() != "")


class _Checker:
    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []

    def bad(self, path: str, message: str, got: Any = None) -> None:
        self.problems.append(
            Problem(self.file, path, message, got) if got is not None else Problem(self.file, path, message)
        )

    def keys(self, value: Any, path: str, allowed: tuple[str, ...], required: tuple[str, ...]) -> bool:
        if not isinstance(value, dict):
            self.bad(path, "must be an object", value)
            return False
        for key in value:
            if key not in allowed:
                self.bad(f"{path}.{key}", f"is not a field of a judge card (fields: {', '.join(allowed)})")
        for key in required:
            if key not in value:
                self.bad(f"{path}.{key}", "is missing")
        return True

    def measured(self, value: Any, path: str) -> None:
        if not self.keys(value, path, MEASURED_KEYS, MEASURED_KEYS):
            return
        counts_ok = True
        for key in ("n", "errors"):
            if key in value and not _count(value[key]):
                self.bad(f"{path}.{key}", "must be a whole number, 0 or more", value[key])
                counts_ok = False
        confusion = value.get("confusion")
        if "confusion" in value and self.keys(confusion, f"{path}.confusion", CONFUSION_KEYS, CONFUSION_KEYS):
            for key in CONFUSION_KEYS:
                if key in confusion and not _count(confusion[key]):
                    self.bad(f"{path}.confusion.{key}", "must be a whole number, 0 or more", confusion[key])
                    counts_ok = False
        else:
            counts_ok = False
        for rate in RATE_KEYS:
            low = -1.0 if rate == "kappa" else 0.0
            number, interval = value.get(rate), value.get(f"{rate}_interval")
            if number is not None and not (_number(number) and low <= number <= 1):
                self.bad(f"{path}.{rate}", f"must be a number from {low:g} to 1, or null", number)
            if interval is not None and not (
                isinstance(interval, list)
                and len(interval) == 2
                and all(_number(x) and low <= x <= 1 for x in interval)
                and interval[0] <= interval[1]
            ):
                self.bad(f"{path}.{rate}_interval", f"must be [low, high] within {low:g} to 1, or null", interval)
        if not counts_ok or not all(key in value for key in ("n", "errors")) or self.problems:
            return
        c = confusion
        if c["tp"] + c["fn"] + c["fp"] + c["tn"] + value["errors"] != value["n"]:
            self.bad(f"{path}.n", "must equal tp + fn + fp + tn + errors", value["n"])
            return
        recomputed = figures(c["tp"], c["fn"], c["fp"], c["tn"], value["errors"])
        for rate in RATE_KEYS:
            stated, wanted = value.get(rate), recomputed[rate]
            if (stated is None) != (wanted is None) or (
                stated is not None and wanted is not None and abs(stated - wanted) > TOLERANCE
            ):
                shown = "null" if wanted is None else f"{wanted:.4f}"
                self.bad(f"{path}.{rate}", f"does not match the confusion matrix, which gives {shown}", stated)

    def card(self, card: Any, path: str) -> None:
        if not self.keys(card, path, CARD_KEYS, CARD_KEYS):
            return
        version = card.get("card_version")
        if "card_version" in card and (version != CARD_VERSION or isinstance(version, bool)):
            self.bad(f"{path}.card_version", f"must be {CARD_VERSION} (the card versions this RunLens reads)", version)
        if "judge" in card and not _text(card["judge"], empty=False):
            self.bad(f"{path}.judge", f"must be a judge's name (text of 1 to {MAX_TEXT} characters)", card["judge"])
        for key in ("how", "generated"):
            if key in card and not _text(card[key]):
                self.bad(f"{path}.{key}", f"must be text of at most {MAX_TEXT} characters", card[key])
        label_set = card.get("label_set")
        where = f"{path}.label_set"
        if "label_set" in card and self.keys(label_set, where, LABEL_SET_KEYS, LABEL_SET_KEYS):
            if "name" in label_set and not _text(label_set["name"], empty=False):
                self.bad(f"{where}.name", "must be the label set's name (text, not empty)", label_set["name"])
            if "description" in label_set and not _text(label_set["description"]):
                self.bad(f"{where}.description", f"must be text of at most {MAX_TEXT} characters")
            for key in ("n", "harmful", "not_harmful"):
                if key in label_set and not _count(label_set[key]):
                    self.bad(f"{where}.{key}", "must be a whole number, 0 or more", label_set[key])
            if "label_basis" in label_set and label_set["label_basis"] not in LABEL_BASES:
                self.bad(f"{where}.label_basis", f"must be one of: {', '.join(LABEL_BASES)}", label_set["label_basis"])
            if "trained_on" in label_set and not isinstance(label_set["trained_on"], bool):
                self.bad(f"{where}.trained_on", "must be true or false", label_set["trained_on"])
        if "measured" in card:
            self.measured(card["measured"], f"{path}.measured")
        by_category = card.get("by_category")
        if "by_category" in card:
            if not isinstance(by_category, dict):
                self.bad(f"{path}.by_category", "must be an object of category -> figures", by_category)
            elif len(by_category) > MAX_CATEGORIES:
                self.bad(f"{path}.by_category", f"holds {len(by_category)} categories: at most {MAX_CATEGORIES}")
            else:
                for name, values in by_category.items():
                    if len(name) > MAX_TEXT:
                        self.bad(f"{path}.by_category", f"a category name is longer than {MAX_TEXT} characters")
                    else:
                        self.measured(values, f"{path}.by_category[{name!r}]")
        versions = card.get("versions")
        if "versions" in card and not (
            isinstance(versions, dict) and all(_text(k, empty=False) and _text(v) for k, v in versions.items())
        ):
            self.bad(f"{path}.versions", "must be an object of name -> version text", versions)


def check_cards(document: Any, file: str) -> list[Problem]:
    """Every problem of a card file's decoded content (``{"judge_cards": [card, ...]}``), none when it is good."""
    checker = _Checker(file)
    if not isinstance(document, dict) or "judge_cards" not in document:
        checker.bad(
            "$", 'must be an object {"judge_cards": [card, ...]}', document if not isinstance(document, dict) else None
        )
        return checker.problems
    for key in document:
        if key != "judge_cards":
            checker.bad(f"$.{key}", 'is not a field of a card file (only "judge_cards")')
    cards = document["judge_cards"]
    if not isinstance(cards, list):
        checker.bad("$.judge_cards", "must be an array of judge cards", cards)
    elif len(cards) > MAX_CARDS:
        checker.bad("$.judge_cards", f"holds {len(cards)} cards: at most {MAX_CARDS}")
    else:
        for i, card in enumerate(cards):
            checker.card(card, f"$.judge_cards[{i}]")
    return checker.problems


def parse_cards(label: str, data: Union[bytes, str]) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The cards of a card file's bytes, or no card and every problem (strict JSON, then each field)."""
    document, problems = strict_loads(label, data)
    if problems:
        return [], problems
    problems = check_cards(document, label)
    if problems:
        return [], problems
    return [recomputed(card) for card in document["judge_cards"]], []


def read_cards(
    source: Union[str, os.PathLike, tuple[str, bytes]], limit: Optional[int] = None
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The cards of the file at ``source`` (a path, size-capped, or ``(label, bytes)``), or its problems."""
    if isinstance(source, tuple):
        return parse_cards(*source)
    label = str(source)
    try:
        data = read_file_bytes(source, limit, regular_only=True)
    except (OSError, FileTooLarge) as exc:
        return [], [unreadable(label, exc)]
    return parse_cards(label, data)


def recomputed(card: Mapping[str, Any]) -> dict[str, Any]:
    """The card with its figures recomputed from its confusion matrices (the stated ones agree up to rounding)."""

    def again(values: Mapping[str, Any]) -> dict[str, Any]:
        c = values["confusion"]
        return figures(c["tp"], c["fn"], c["fp"], c["tn"], values["errors"])

    return {
        **card,
        "measured": again(card["measured"]),
        "by_category": {name: again(values) for name, values in card["by_category"].items()},
    }


def primary_judge(config: Any) -> str:
    """The name of the judge whose verdict is a case's own ``passed``: ``config.primary_judge`` when the run names
    it, ``runlens-rules`` for a run scored by RunLens's rules before runs named it, an Inspect run's primary scorer,
    else "primary"."""
    if isinstance(config, Mapping):
        named = config.get("primary_judge")
        if isinstance(named, str) and named.strip():
            return named
        if config.get("scorer") in ("reporting.scorer", "reporting.scoring.scorer"):
            return "runlens-rules"  # (score before the learned judge named no primary judge: the rules')
        scorer = config.get("primary_scorer")
        if isinstance(scorer, str) and scorer.strip():
            return scorer
    return "primary"
