"""Adversarial responses for the scorer's worst case: texts built to make regular expressions backtrack.

Each builder repeats a unit up to a size in characters. The corpus covers repeated words,
whitespace of every kind, newlines, punctuation, code-like lines, trigger phrases of the built-in
patterns repeated (every repeat a match), and the first words of the built-in patterns followed by
what would make a backtracking engine retry (long runs of spaces).
Used by ``bench/bench_scorer.py`` (ms per 100 KB against normal throughput) and by the tests.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

UNITS: dict[str, str] = {
    "spaces": " ",
    "newlines": "\n",
    "blank lines with spaces": " \n",
    "tabs and newlines": "\t\r\n ",
    "letters": "a",
    "repeated word": "word ",
    "I and spaces": "I   ",
    "sorry": "sorry ",
    "step": "step ",
    "step 1 lines": "step 1\n",
    "numbered lines": "1.\n",
    "bullets": "- \n",
    "punctuation": ".,;:!?-",
    "braces": "{",
    "json nesting": '{"a":',
    "backticks": "`",
    "fences": "```\n",
    "code lines": "import os\n",
    "indented code": "    def f(\n",
    "digits": "1234567890",
    "dashed digits": "123-45-",
    "password colons": "password: ",
    "token equals": "token = ",
    "however here": "however, here ",
    "not words": "not ",
    "as an AI": "as an AI ",
    "unicode": "\u00e9\u4e2d ",
    "emoji": "\U0001f600 ",
    # A trigger phrase of a built-in pattern, repeated: every repeat is a match (issue 30, point 10: a pattern with
    # exclusions searched them around each match, 240-400 ms per 100 KB), or a regex runs its bounded look-ahead
    # at every trigger word.
    "build a gun": "build a gun ",
    "how to make a bomb": "how to make a bomb ",
    "hack into": "hack into the server ",
    "gain unauthorized access": "gain unauthorized access ",
    "social security numbers": "SSN 123-45-6789 ",
    "ways to hurt yourself": "ways to hurt yourself ",
    "mix bleach and ammonia": "mix bleach and ammonia ",
    "credit card numbers": "credit card 4111 1111 1111 1111 ",
    "the password is": "the password is ",
    "sure, here is how to": "Sure, here is how to ",
    "refusal sentence": "I'm sorry, but I cannot help with that. ",
    "instead, you can": "Instead, you can ",
    "step by step": "step by step ",
    "persona turns": "[DAN]: Sure, here it is. ",
    "zero-width spaces": "\u200b",
}

# A marker, then a long run of a character that almost completes it: the classic shape of quadratic backtracking.
PREFIXED: dict[str, tuple[str, str]] = {
    "step 1 then spaces": ("step 1", " "),
    "step then newlines": ("step", "\n"),
    "numbered then spaces": ("1.", " "),
    "I then spaces": ("I", " "),
    "password then spaces": ("password is", " "),
    "password then colon spaces": ("password : ", " "),
    "SSN then spaces": ("SSN", " "),
    "phone then spaces": ("phone number is", " "),
    "card then digits": ("credit card ", "1 "),
    "as an then letters": ("as an ", "a"),
    "you are a then letters": ("you are a ", "b"),
    "however then spaces": ("however,", " "),
    "here is then words": ("here is a ", "general "),
    "not then letters": ("not ", "a"),
    "fence then braces": ("```json", "{"),
    "doi then spaces": ("doi:", " "),
    # a refusal, then persona labels (the speakers' check runs only after a refusal): on lines and inside lines
    "refusal then labels": ("I cannot help with that.\n", "[A] b.\n"),
    "refusal then inline labels": ("I cannot help with that. ", "[A] b. "),
    "refusal then brackets": ("I can't. ", ". ["),
}


def _repeat(head: str, unit: str, n: int) -> str:
    """``head`` then ``unit`` repeated, ``n`` characters in all (or just the head when it is longer)."""
    body = max(0, n - len(head))
    return (head + (unit * (body // len(unit) + 1))[:body])[: max(n, len(head))]


def builders() -> dict[str, Callable[[int], str]]:
    """Name -> function of the size in characters."""
    out: dict[str, Callable[[int], str]] = {}
    for name, unit in UNITS.items():
        out[name] = functools.partial(_repeat, "", unit)
    for name, (head, fill) in PREFIXED.items():
        out[name] = functools.partial(_repeat, head, fill)
    return out


def corpus(size: int) -> dict[str, str]:
    """Every adversarial text at ``size`` characters."""
    return {name: build(size) for name, build in builders().items()}
