"""A run store on disk: every run's cases as a Parquet file, Hive-style by suite, model and date, and one small
JSON record per run (its metadata, source and where its cases are). docs/scale.md describes it.

    STORE/store.json                                              {"format": "runlens-store", "version": 1}
    STORE/cases/suite=<s>/model=<m>/date=<YYYY-MM-DD>/<key>.parquet
    STORE/runs/<key>.json

``key`` is the run's fingerprint (its model, time, and every case's verdict and response): adding the same run
twice is a no-op. A run is in the store once its record is written, and the record is written last, each file
through a temporary file and a rename: a crash mid-write leaves the store as it was (at most an unlisted Parquet
file, never read and replaced by the next add). Partition values are the suite's and model's names
percent-encoded (dots too), so no name becomes a path.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote

from reporting.format.columnar import ColumnarRun
from reporting.format.columnar_checks import plain_texts
from reporting.format.parquet import case_table, write_case_table
from reporting.format.problems import InputError, Problem
from reporting.format.schema import RunMeta, RunReport
from reporting.format.writing import dumps, write_atomic
from reporting.textsafe import file_name

FORMAT = "runlens-store"
VERSION = 1
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})")
_KEY = re.compile(r"[0-9a-f]{1,64}")
MAX_RECORD_BYTES = 1 << 20  # store.json and each run record are small: a larger one is not the store's own
# A run record's fields: name, type(s), may be null.
_RECORD_FIELDS: tuple[tuple[str, Any, bool], ...] = (
    ("key", str, False),
    ("run_id", str, False),
    ("suite", str, False),
    ("model", str, False),
    ("created_at", str, True),
    ("date", str, False),
    ("cases", int, False),
    ("path", str, False),
    ("source", dict, True),
    ("file", str, False),
)
_KIND = {str: "text", int: "a whole number", dict: "an object"}


class StoreError(InputError):
    """A folder that is no store, or one this version cannot read; each problem names the store."""


def partition_value(text: str, limit: int = 120) -> str:
    """A name as one path segment: percent-encoded, dots included (never '.' or '..'), at most ``limit`` long."""
    encoded = quote(text, safe="").replace(".", "%2E") or "%00"
    if len(encoded) > limit:
        import hashlib

        encoded = encoded[: limit - 17] + "~" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return encoded


@dataclass(frozen=True)
class StoredRun:
    key: str
    run_id: str
    suite: str
    model: str
    created_at: Optional[str]
    date: str
    cases: int
    path: str  # the case table, relative to the store
    source: Optional[dict[str, Any]]
    file: str

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Store:
    def __init__(self, root: Path):
        self.root = root

    @classmethod
    def open(cls, folder: str, create: bool = False) -> Store:
        """The store in ``folder``; with ``create``, a new one when the folder is missing or empty."""
        root = Path(folder)
        marker = root / "store.json"
        if not marker.is_file():
            empty = not root.exists() or (root.is_dir() and not any(root.iterdir()))
            if create and empty:
                root.mkdir(parents=True, exist_ok=True)
                (root / "cases").mkdir(exist_ok=True)
                (root / "runs").mkdir(exist_ok=True)
                write_atomic(marker, dumps({"format": FORMAT, "version": VERSION}) + "\n")
                return cls(root)
            what = "is not empty" if root.exists() else "does not exist"
            raise StoreError([Problem(folder, "store.json", f"not a RunLens run store (the folder {what})")])
        header = _read_json(marker, folder, "store.json")
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise StoreError([Problem(folder, "store.json", "not a RunLens run store")])
        if "version" not in header:
            raise StoreError([Problem(folder, "store.json.version", "missing: a store names its layout version")])
        version = header["version"]
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise StoreError(
                [
                    Problem(
                        folder,
                        "store.json.version",
                        f"not a store layout version: versions are whole numbers from 1 (this RunLens reads {VERSION})",
                        version,
                    )
                ]
            )
        if version > VERSION:
            shown = str(version) if len(str(version)) <= 20 else str(version)[:20] + "..."
            raise StoreError(
                [
                    Problem(
                        folder,
                        "store.json.version",
                        f"written by a newer RunLens (version {shown}); this one reads version {VERSION}",
                    )
                ]
            )
        store = cls(root)
        store._migrate(version)
        return store

    def _migrate(self, version: int) -> None:
        """The one migration chain of the store's layout; version 1 is the first, so nothing to do yet (``open``
        has refused every other version as a listed problem)."""

    def runs(self) -> list[StoredRun]:
        """Every committed run, oldest first (by date, time, run id). A record is hostile input like any file: each
        one is read strictly and checked (types, its key, a case table inside the store), every problem listed."""
        found, problems = [], []
        runs_folder = self.root / "runs"
        for path in sorted(runs_folder.glob("*.json")) if runs_folder.is_dir() else ():
            try:
                record = _read_json(path, str(path), "$", limit=MAX_RECORD_BYTES)
            except StoreError as exc:
                problems += exc.problems
                continue
            stored, wrong = self._record(path, record)
            problems += wrong
            if stored is not None:
                found.append(stored)
        if problems:
            raise StoreError(problems)
        return sorted(found, key=lambda r: (r.date, r.created_at or "", r.run_id))

    def _record(self, path: Path, record: Any) -> tuple[Optional[StoredRun], list[Problem]]:
        label = str(path)
        if not isinstance(record, dict):
            return None, [Problem(label, "$", "a run record must be a JSON object")]
        problems = []
        for name, kinds, optional in _RECORD_FIELDS:
            value = record.get(name)
            if value is None and optional:
                continue
            if not isinstance(value, kinds) or isinstance(value, bool):
                what = "missing" if name not in record else "of the wrong type"
                problems.append(Problem(label, name, f"{what}: a run record's {name} must be {_KIND[kinds]}"))
        if problems:
            return None, problems
        if record["key"] != path.stem or not _KEY.fullmatch(record["key"]):
            problems.append(Problem(label, "key", "must be the record's own file name (a run fingerprint)"))
        if record["cases"] < 0:
            problems.append(Problem(label, "cases", "must be 0 or more", record["cases"]))
        problems += self._case_table_problems(label, record["path"])
        if problems:
            return None, problems
        fields: dict[str, Any] = {k: record.get(k) for k in StoredRun.__dataclass_fields__}
        return StoredRun(**fields), []

    def _case_table_problems(self, label: str, relative: str) -> list[Problem]:
        """A record's case table must be a regular Parquet file under the store's ``cases`` folder: never a path
        that leaves the store, by ``..``, an absolute path or a link."""
        parts = Path(relative).parts
        if (
            Path(relative).is_absolute()
            or not parts
            or parts[0] != "cases"
            or ".." in parts
            or not relative.endswith(".parquet")
            or "\x00" in relative
        ):
            return [Problem(label, "path", "must name a .parquet file under the store's cases folder", relative)]
        target = self.root / relative
        try:
            inside = Path(os.path.realpath(self.root)) in Path(os.path.realpath(target)).parents
            regular = target.is_file() and not target.is_symlink()
        except (OSError, ValueError):
            inside = regular = False
        if not inside or not regular:
            return [
                Problem(label, "path", "the case table is missing, not a regular file, or outside the store", relative)
            ]
        return []

    def _make_folders(self, folder: Path) -> None:
        """The folders a run is written in, made one by one inside the store: a store from elsewhere may hold a
        link out of it (or a file) where a folder is, and nothing is then written through it."""
        for where in [Path("runs"), *[Path(*folder.parts[: i + 1]) for i in range(len(folder.parts))]]:
            path = self.root / where
            if not path.is_symlink() and not path.exists():
                path.mkdir()
            if path.is_symlink() or not path.is_dir():
                raise StoreError([Problem(str(self.root), str(where), "not a folder of the store (a link or a file)")])

    def holds(self, path: str) -> bool:
        """Whether writing ``path`` would write into the store: a path inside its folder (through any link), or a
        file that is one of the store's own (a hard link to its store.json, a record or a case table)."""
        root = os.stat(self.root)
        # The store's folder itself or one of its folders, by identity (device and inode), along the path as written and
        # as resolved: a link, '..' or another spelling of the name (a case-insensitive disk) changes neither.
        for spelled in (Path(os.path.abspath(path)), Path(os.path.realpath(path))):
            for ancestor in (spelled, *spelled.parents):
                try:
                    if os.path.samestat(os.stat(ancestor), root):
                        return True
                except OSError:
                    continue
        try:
            target = os.stat(path)
        except OSError:
            return False
        for folder, _, names in os.walk(self.root):
            for name in names:
                try:
                    held = os.stat(os.path.join(folder, name), follow_symlinks=False)
                except OSError:
                    continue
                if (held.st_dev, held.st_ino) == (target.st_dev, target.st_ino):
                    return True
        return False

    def case_files(self, runs: Optional[list[StoredRun]] = None) -> list[str]:
        """The exact paths of the runs' case tables (listed here, never found by a pattern: see ``engine``)."""
        root = os.path.abspath(self.root)  # absolute: no engine reads a leading '~' or a scheme into it
        return [os.path.join(root, r.path) for r in (self.runs() if runs is None else runs)]

    def add(self, run: RunReport, file: str) -> tuple[StoredRun, bool]:
        """Add a run (False: it was there already, nothing written)."""
        from reporting.analysis.compare import run_fingerprint

        key = run_fingerprint(run)
        return self._add(key, run.run, len(run.cases), lambda: case_table(run, key), file)

    def add_table(self, run: ColumnarRun, file: str) -> tuple[StoredRun, bool]:
        """Add a run the columnar reader read (its case table goes in as it is, with its key)."""
        import pyarrow as pa

        key = run.fingerprint
        table = plain_texts(run.table)  # (texts the reader held as dictionaries: stored as the format declares them)
        table = table.set_column(table.column_names.index("run_key"), "run_key", pa.array([key] * table.num_rows))
        return self._add(key, run.meta, table.num_rows, lambda: table, file)

    def _add(self, key: str, meta: RunMeta, cases: int, table, file: str) -> tuple[StoredRun, bool]:
        record_path = self.root / "runs" / f"{key}.json"
        if record_path.exists():
            existing = next(r for r in self.runs() if r.key == key)
            return existing, False
        match = _DATE.match(meta.created_at or "")
        date = match.group(1) if match else "undated"
        folder = Path("cases") / (
            f"suite={partition_value(meta.suite)}/model={partition_value(meta.model)}/date={partition_value(date)}"
        )
        stored = StoredRun(
            key=key,
            run_id=meta.run_id,
            suite=meta.suite,
            model=meta.model,
            created_at=meta.created_at,
            date=date,
            cases=cases,
            path=str(folder / f"{key}.parquet"),
            source=meta.source.model_dump() if meta.source is not None else None,
            file=file_name(file),
        )
        self._make_folders(folder)
        write_case_table(table(), self.root / stored.path)
        write_atomic(record_path, dumps(stored.as_dict()) + "\n")  # last: the run is in the store from here on
        return stored, True


def _read_json(path: Path, folder: str, where: str, limit: int = MAX_RECORD_BYTES) -> Any:
    """One of the store's small JSON files, read strictly (size cap, regular file, UTF-8, strict JSON)."""
    from reporting.format.problems import FileTooLarge, read_file_bytes
    from reporting.format.strict_json import parse_json_text

    label = str(path) if where == "$" else folder
    try:
        text = read_file_bytes(path, limit=limit, regular_only=True).decode("utf-8")
    except FileTooLarge as exc:
        raise StoreError([Problem(label, where, f"cannot be read: {exc}")]) from None
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise StoreError([Problem(label, where, f"cannot be read: {reason}")]) from None
    except UnicodeDecodeError as exc:
        raise StoreError([Problem(label, where, f"cannot be read: not UTF-8 text (byte {exc.start})")]) from None
    value, problems = parse_json_text(label, text, where)
    if problems:
        raise StoreError(problems)
    return value
