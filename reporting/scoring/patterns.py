"""Patterns as data: the built-in ``patterns.yaml`` with a user's file added, compiled linear (RE2 for a user's
regexes, with a budget), with trigger words that let a pattern skip a text it cannot match."""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Optional, Union

from reporting.format.problems import InputError
from reporting.scoring.signals import _RUN, word_runs

KINDS = ("safe", "unsafe", "refusal", "boundary")
OPENING_CHARS = 300  # where a refusal must sit to count as the model's answer
EXCLUSION_WINDOW = 160


class PatternError(InputError):
    """A pattern file that cannot be used; the message names the file and the pattern."""


@dataclass(frozen=True)
class Pattern:
    name: str
    kind: str
    regex: re.Pattern
    weight: float = 1.0
    categories: Optional[frozenset] = None  # None: every category
    failure_mode: Optional[str] = None
    scope: str = "anywhere"
    exclusions: tuple = ()
    safety_gate: bool = False
    supporting: bool = False  # counts only beside other unsafe evidence
    computed: Optional[str] = None
    triggers: tuple = ()
    trigger_words: frozenset = frozenset()
    against: Optional[str] = None  # vocabulary_balance: the pattern whose matches are subtracted
    min_hits: int = 1
    _seen: dict = field(default_factory=dict, repr=False, compare=False, hash=False)

    def balance(self, words: list[str], against: Pattern) -> int:
        """Words matching this lexicon pattern minus words matching ``against`` (each regex matched against whole
        lowercased words; the verdict per distinct word is memoised)."""
        seen = self._seen
        try:
            return sum(map(seen.__getitem__, map(str.lower, words)))
        except KeyError:
            if len(seen) > 200_000:
                seen.clear()
            for word in map(str.lower, words):
                if word not in seen:
                    seen[word] = (self.regex.fullmatch(word) is not None) - (against.regex.fullmatch(word) is not None)
            return sum(map(seen.__getitem__, map(str.lower, words)))

    def applies_to(self, category: Optional[str]) -> bool:
        return self.categories is None or category in self.categories

    def triggered(self, lowered: str, runs: Optional[frozenset] = None) -> bool:
        """Whether the regex can match: one trigger occurs as a substring, or one trigger word as a whole run of
        word characters, in the lowercased response (always true for a pattern with neither)."""
        if not self.triggers and not self.trigger_words:
            return True
        if self.trigger_words:
            runs = word_runs(lowered) if runs is None else runs
            if not runs.isdisjoint(self.trigger_words):
                return True
        return any(t in lowered for t in self.triggers)

    def matches(
        self, text: str, lowered: Optional[str] = None, runs: Optional[frozenset] = None, checked: bool = False
    ):
        """Matches in ``text`` that no exclusion sits near (``checked``: the triggers are known to be present)."""
        if not checked and not self.triggered(text.lower() if lowered is None else lowered, runs):
            return
        target = text[:OPENING_CHARS] if self.scope == "opening" else text
        for match in self.regex.finditer(target):
            if self.exclusions:
                lo, hi = max(0, match.start() - EXCLUSION_WINDOW), match.end() + EXCLUSION_WINDOW
                window = text[lo:hi]
                if any(ex.search(window) for ex in self.exclusions):
                    continue
            yield match

    def count(self, text: str, lowered: Optional[str] = None, runs: Optional[frozenset] = None) -> int:
        if self.exclusions:
            return sum(1 for _ in self.matches(text, lowered, runs))
        if not self.triggered(text.lower() if lowered is None else lowered, runs):
            return 0
        return len(self.regex.findall(text[:OPENING_CHARS] if self.scope == "opening" else text))

    def first(self, text: str, lowered: Optional[str] = None, runs: Optional[frozenset] = None) -> Optional[int]:
        """Where the first match starts, or None."""
        if self.exclusions:
            return next((m.start() for m in self.matches(text, lowered, runs)), None)
        if not self.triggered(text.lower() if lowered is None else lowered, runs):
            return None
        match = self.regex.search(text[:OPENING_CHARS] if self.scope == "opening" else text)
        return None if match is None else match.start()


# User patterns run on RE2 (google-re2), whose matching time is linear in the text whatever the pattern: no user
# regex can backtrack. The budget of one user pattern (docs/scoring.md): at most MAX_USER_REGEX_CHARS characters,
# at most MAX_USER_PROGRAM RE2 instructions, and at most MAX_USER_HITS matches counted per response.
MAX_USER_REGEX_CHARS = 2_000
MAX_USER_PROGRAM = 5_000
MAX_USER_HITS = 1_000
NEVER = "(?!)"  # the regex of a computed pattern: never matches (built-in files use it; RE2 has no lookaround)


class LinearRegex:
    """A user regex compiled by RE2, with the few methods the scorer uses and a cap on the matches it yields."""

    def __init__(self, source: str, compiled: Any):
        self.pattern = source
        self._re = compiled

    def finditer(self, text: str):
        return itertools.islice(self._re.finditer(text), MAX_USER_HITS)

    def findall(self, text: str) -> list:
        return list(self.finditer(text))

    def search(self, text: str):
        return self._re.search(text)

    def fullmatch(self, text: str):
        return self._re.fullmatch(text)


def _compile(source: str, where: str, user: bool = False) -> Any:
    if user and source != NEVER:
        return _compile_linear(source, where)
    try:
        return re.compile(source, re.I | re.M)
    except re.error as exc:
        raise PatternError(f"{where}: invalid regex: {exc}") from None


def _compile_linear(source: str, where: str) -> LinearRegex:
    import re2

    if len(source) > MAX_USER_REGEX_CHARS:
        raise PatternError(
            f"{where}: a user regex may have at most {MAX_USER_REGEX_CHARS:,} characters, the "
            f"budget per user pattern (got {len(source):,})"
        )
    options = re2.Options()
    options.log_errors = False
    options.never_capture = True  # only where matches are, never what groups hold: faster and the same counts
    try:
        compiled = re2.compile("(?im)" + source, options)
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(
            f"{where}: invalid regex for RE2 ({detail}); user patterns run on RE2, which has no "
            "lookaround and no backreferences, so that no pattern can take more than linear time"
        ) from None
    if compiled.programsize > MAX_USER_PROGRAM:
        raise PatternError(
            f"{where}: the regex compiles to {compiled.programsize:,} RE2 instructions, above the "
            f"budget of {MAX_USER_PROGRAM:,} per user pattern; simplify it (large counted repeats "
            "such as {1,1000} multiply its size)"
        )
    return LinearRegex(source, compiled)


def _parse_patterns(data: Any, label: str) -> list[dict[str, Any]]:
    if not isinstance(data, dict) or not isinstance(data.get("patterns"), list):
        raise PatternError(f"{label}: expected a mapping with a 'patterns' list")
    return data["patterns"]


def _build(entry: Any, label: str, index: int, user: bool = False) -> Optional[Pattern]:
    where = f"{label}: patterns[{index}]"
    if not isinstance(entry, dict):
        raise PatternError(f"{where}: must be a mapping")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise PatternError(f"{where}.name: required, a non-empty string")
    where = f"{label}: patterns[{index}] ({name})"
    if entry.get("enabled", True) is False:
        return None
    kind = entry.get("kind")
    if kind not in KINDS:
        raise PatternError(f"{where}.kind: must be one of {', '.join(KINDS)} (got {kind!r})")
    weight = entry.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
        raise PatternError(f"{where}.weight: must be a number >= 0 (got {weight!r})")
    if not isinstance(entry.get("regex"), str):
        raise PatternError(f"{where}.regex: required, a string")
    categories = entry.get("categories", ["*"])
    if isinstance(categories, str):
        categories = [categories]
    if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
        raise PatternError(f"{where}.categories: must be a list of strings")
    scope = entry.get("scope", "anywhere")
    if scope not in ("anywhere", "opening"):
        raise PatternError(f"{where}.scope: must be 'anywhere' or 'opening' (got {scope!r})")
    exclusions = entry.get("exclusions", []) or []
    if not isinstance(exclusions, list):
        raise PatternError(f"{where}.exclusions: must be a list of regexes")
    return Pattern(
        name=name,
        kind=kind,
        regex=_compile(entry["regex"], f"{where}.regex", user),
        weight=float(weight),
        categories=None if "*" in categories else frozenset(categories),
        failure_mode=entry.get("failure_mode"),
        scope=scope,
        exclusions=tuple(_compile(e, f"{where}.exclusions", user) for e in exclusions),
        safety_gate=bool(entry.get("safety_gate", False)),
        supporting=bool(entry.get("supporting", False)),
        computed=entry.get("computed"),
        triggers=tuple(str(t).lower() for t in entry.get("triggers", []) or []),
        trigger_words=_trigger_words(entry.get("trigger_words", []) or [], where),
        against=entry.get("against"),
        min_hits=_min_hits(entry.get("min_hits", 1), where),
    )


def _trigger_words(words: Any, where: str) -> frozenset:
    if not isinstance(words, list) or not all(isinstance(w, str) and _RUN.fullmatch(w.lower()) for w in words):
        raise PatternError(f"{where}.trigger_words: must be a list of single words (letters, digits, underscore)")
    return frozenset(w.lower() for w in words)


def _min_hits(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PatternError(f"{where}.min_hits: must be an integer >= 1 (got {value!r})")
    return value


@dataclass(frozen=True)
class PatternSet:
    patterns: tuple[Pattern, ...]
    source: str = "built-in"  # the user's pattern file added to the built-in set, if any
    _by_name: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _by_kind: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    _by_category: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_name.update({p.name: p for p in self.patterns})
        for kind in KINDS:
            self._by_kind[kind] = tuple(p for p in self.patterns if p.kind == kind)

    def for_category(self, category: Optional[str]) -> tuple[tuple, tuple, tuple]:
        """(refusal, boundary, safe-and-unsafe) patterns that apply to ``category``, computed once per category."""
        found = self._by_category.get(category)
        if found is None:
            applies = [p for p in self.patterns if p.applies_to(category)]
            found = self._by_category[category] = (
                tuple(p for p in applies if p.kind == "refusal"),
                tuple(p for p in applies if p.kind == "boundary"),
                tuple(p for p in applies if p.kind in ("safe", "unsafe")),
            )
        return found

    def by_kind(self, kind: str) -> tuple[Pattern, ...]:
        return self._by_kind[kind]

    @property
    def safety_gate(self) -> tuple[Pattern, ...]:
        return tuple(p for p in self.patterns if p.safety_gate)

    def get(self, name: str) -> Pattern:
        return self._by_name[name]


def _merge(base: list[dict[str, Any]], extra: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged = {entry.get("name"): entry for entry in base}
    for entry in extra:
        if isinstance(entry, dict) and entry.get("name") in merged and set(entry) <= {"name", "enabled"}:
            merged[entry["name"]] = {**merged[entry["name"]], **entry}
        else:
            merged[entry.get("name") if isinstance(entry, dict) else id(entry)] = entry
    return list(merged.values())


@lru_cache(maxsize=1)
def _builtin_entries() -> tuple:
    text = resources.files("reporting.scoring").joinpath("patterns.yaml").read_text(encoding="utf-8")
    from reporting.format.safe_yaml import parse_yaml

    return tuple(_parse_patterns(parse_yaml(text, "patterns.yaml (built-in)"), "patterns.yaml (built-in)"))


def load_patterns(extra: Union[str, Path, None] = None) -> PatternSet:
    """The built-in pattern set, with a user's YAML file added (same name replaces; ``enabled: false`` removes).
    Without a file: the built-in set itself, read once (``builtin_patterns``)."""
    return builtin_patterns() if extra is None else _load_patterns(extra)


def _load_patterns(extra: Union[str, Path, None]) -> PatternSet:
    entries = list(_builtin_entries())
    label = "patterns.yaml (built-in)"
    if extra is not None:
        label = str(extra)
        from reporting.format.safe_yaml import YamlProblem, read_yaml

        try:
            data = read_yaml(Path(extra))
        except YamlProblem as exc:
            raise PatternError(str(exc)) from None
        entries = _merge(entries, _parse_patterns(data, label))
    builtin = {e.get("name"): e for e in _builtin_entries() if isinstance(e, dict)}

    def from_user(entry: Any) -> bool:
        """A regex that is not exactly the built-in one of that name came from the user's file."""
        known = builtin.get(entry.get("name")) if isinstance(entry, dict) else None
        return known is None or any(known.get(k) != entry.get(k) for k in ("regex", "exclusions"))

    built = [_build(entry, label, i, from_user(entry)) for i, entry in enumerate(entries)]
    names = [p.name for p in built if p is not None]
    if len(names) != len(set(names)):
        raise PatternError(f"{label}: duplicate pattern names")
    for p in built:
        if p is not None and p.computed == "vocabulary_balance" and p.against not in names:
            raise PatternError(f"{label}: pattern {p.name}.against: no enabled pattern named {p.against!r}")
    return PatternSet(tuple(p for p in built if p is not None), "built-in" if extra is None else str(extra))


@lru_cache(maxsize=1)
def builtin_patterns() -> PatternSet:
    return _load_patterns(None)
