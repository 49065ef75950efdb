"""What the ``import`` verb writes: every output made in full before any is in place (all or nothing), and output
names that one file system would take for the same file refused before anything is written."""

from __future__ import annotations

import os
import tempfile
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO, Optional

from reporting.format.problems import InputError, Problem
from reporting.format.reading import turn_values
from reporting.format.schema import Case, state_problem
from reporting.format.strict_json import _nonfinite_and_depth as nonfinite_and_depth
from reporting.format.writing import OutputError, current_umask


def name_key(name: str) -> str:
    """The file name as a case-insensitive or normalising file system sees it (macOS, Windows): NFKC, casefolded."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def clashing_names(names: list[Path], folder: Path) -> list[str]:
    """One message per output name that another output, or a file already in ``folder``, matches once case and
    Unicode form are ignored: on macOS or Windows the second would replace the first."""
    seen: dict[str, Path] = {}
    try:
        present = {name_key(entry.name): entry for entry in folder.iterdir()} if folder.is_dir() else {}
    except OSError:
        present = {}
    found = []
    for name in names:
        key = name_key(name.name)
        if key in seen and seen[key] != name:
            found.append(
                f"{name}: two runs would be written to {seen[key].name!r} and {name.name!r}, names that differ only "
                "by case or Unicode form: a case-insensitive file system (macOS, Windows) keeps one file for both, "
                "so RunLens refuses rather than renaming; import them into separate folders"
            )
        seen.setdefault(key, name)
        other = present.get(key)
        if other is not None and other.name != name.name:
            found.append(
                f"{name}: {other.name!r} exists already in the folder and differs only by case or Unicode form; "
                "RunLens never overwrites a file"
            )
    return found


class StagedOutputs:
    """Outputs written to temporary files beside their targets; ``commit`` puts every one in place (never over an
    existing file) or, if one cannot be placed, takes back those placed; ``discard`` removes them all."""

    def __init__(self) -> None:
        self.pending: list[tuple[str, Path]] = []

    def write(self, target: Path, pieces: Iterable[str]) -> None:
        def fill(handle: BinaryIO) -> None:
            for piece in pieces:
                handle.write(piece.encode("utf-8"))

        self.write_with(target, fill)

    def write_with(self, target: Path, fill: Callable[[BinaryIO], object]) -> None:
        """``fill`` writes the output to the open temporary file."""
        folder = target.parent if str(target.parent) else Path(".")
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
        except OSError as exc:
            raise OutputError(f"{target}: cannot write in {folder}: {exc.strerror or type(exc).__name__}") from None
        self.pending.append((tmp, target))
        try:
            os.fchmod(fd, 0o666 & ~current_umask())
            with os.fdopen(fd, "wb") as handle:
                fill(handle)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise OutputError(f"{target}: cannot write: {exc.strerror or type(exc).__name__}") from None

    def commit(self) -> None:
        placed: list[Path] = []
        try:
            for tmp, target in self.pending:
                _place(tmp, target)
                placed.append(target)
        except BaseException:
            for target in placed:
                _remove(str(target))
            raise
        finally:
            self.discard()

    def discard(self) -> None:
        for tmp, _ in self.pending:
            _remove(tmp)
        self.pending = []


def _place(tmp: str, target: Path) -> None:
    """``tmp`` at ``target``, which must not exist (a hard link fails on an existing name, atomically)."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise OutputError(f"{target}: exists already; RunLens never overwrites a file") from None
    except OSError:  # a file system without hard links
        if os.path.lexists(target):
            raise OutputError(f"{target}: exists already; RunLens never overwrites a file") from None
        os.replace(tmp, target)


def _remove(path: Optional[str]) -> None:
    if path is None:
        return
    try:
        os.unlink(path)
    except OSError:
        pass


CASE_FIELDS = frozenset(Case.model_fields)


class CaseScreen:
    """The reader's checks beyond one case's model, made on each case as ``import`` writes it, so that import never
    writes a run that every verb then refuses: unique probe ids; evaluated (passed, with a risk score) or not
    evaluated (passed null, with an error saying why), never both nor neither; a judged turn an assistant turn of
    the case's conversation (``schema.state_problem``). A break raises ``InputError`` naming the tool's file."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.first: dict[str, int] = {}

    def check(self, index: int, case: object) -> None:
        if type(case) is not dict:  # (the format's model says what is wrong with it as it is written)
            return
        get = case.get
        if (
            get("judged_turn") is not None
            or get("error") is not None
            or get("passed") is None
            or get("risk_score") is None
        ):
            self._state(index, get)  # (evaluated, no error, no conversation: a million garak cases skip this)
        if "messages" in case or "limit" in case or not CASE_FIELDS.issuperset(case):
            self._free_form(index, case)
        probe_id = get("probe_id")
        first = self.first
        if type(probe_id) is str:
            if probe_id in first:
                raise InputError(
                    Problem(
                        self.label,
                        f"the run made of it: cases[{index}].probe_id",
                        f"the file gives this item twice (first as cases[{first[probe_id]}]): two cases with one "
                        "probe_id, which no reader takes; RunLens refuses rather than keep one",
                        probe_id,
                    )
                )
            first[probe_id] = index

    def _state(self, index: int, get) -> None:
        broken = state_problem(
            get("passed"), get("error"), get("risk_score"), get("judged_turn"), lambda: _roles(get("messages")), 3
        )
        if broken is not None:
            field, message, value = broken
            raise InputError(Problem(self.label, f"the run made of it: cases[{index}].{field}", message, value))

    def _free_form(self, index: int, case: dict) -> None:
        """The free-form values the reader checks (finite numbers, integers in range, nesting at most 64 deep), each
        from where the reader starts (``reading.turn_values`` for a conversation): a case's extras, each turn's own
        fields, each tool call's arguments and own fields, a limit's fields."""
        found: list[tuple[str, object]] = []
        messages = case.get("messages")
        if _turn_dicts(messages):  # (turns of another shape: the format's model says what is wrong as it is written)
            found += turn_values(messages)
        limit = case.get("limit")
        if type(limit) is dict:
            found += ((f"limit.{name}", value) for name, value in limit.items())
        found += ((key, value) for key, value in case.items() if key not in CASE_FIELDS)
        problems: list[Problem] = []
        for where, value in found:
            nonfinite_and_depth(self.label, f"the run made of it: cases[{index}].{where}", value, problems)
        if problems:
            raise InputError(problems)


def _turn_dicts(messages: object) -> bool:
    """Whether ``messages`` is a list of turns as dicts, their tool calls lists of dicts."""
    if type(messages) is not list:
        return False
    for turn in messages:
        calls = turn.get("tool_calls") if type(turn) is dict else None
        if type(turn) is not dict or not (calls is None or type(calls) is list and all(type(c) is dict for c in calls)):
            return False
    return True


def _roles(messages: object) -> list[object]:
    return [m.get("role") if type(m) is dict else None for m in messages] if type(messages) is list else []
