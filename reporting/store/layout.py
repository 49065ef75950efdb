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

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote

from reporting.format.columnar import ColumnarRun
from reporting.format.parquet import case_table, write_case_table
from reporting.format.problems import InputError, Problem
from reporting.format.schema import RunMeta, RunReport
from reporting.format.writing import dumps, write_atomic

FORMAT = "runlens-store"
VERSION = 1
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})")


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
        try:
            header = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StoreError([Problem(folder, "store.json", f"cannot be read: {exc}")]) from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise StoreError([Problem(folder, "store.json", "not a RunLens run store")])
        version = header.get("version")
        if not isinstance(version, int) or version > VERSION:
            raise StoreError(
                [
                    Problem(
                        folder,
                        "store.json.version",
                        f"written by a newer RunLens (version {version!r}); this one reads version {VERSION}",
                    )
                ]
            )
        store = cls(root)
        store._migrate(version)
        return store

    def _migrate(self, version: int) -> None:
        """The one migration chain of the store's layout; version 1 is the first, so nothing to do yet."""
        assert version == VERSION

    def runs(self) -> list[StoredRun]:
        """Every committed run, oldest first (by date, time, run id)."""
        found = []
        for path in sorted((self.root / "runs").glob("*.json")):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
                found.append(StoredRun(**{k: record.get(k) for k in StoredRun.__dataclass_fields__}))
            except (OSError, ValueError, TypeError) as exc:
                raise StoreError([Problem(str(path), "$", f"a run record cannot be read: {exc}")]) from None
        return sorted(found, key=lambda r: (r.date, r.created_at or "", r.run_id))

    def case_files(self, runs: Optional[list[StoredRun]] = None) -> list[str]:
        return [str(self.root / r.path) for r in (self.runs() if runs is None else runs)]

    def add(self, run: RunReport, file: str) -> tuple[StoredRun, bool]:
        """Add a run (False: it was there already, nothing written)."""
        from reporting.analysis.compare import run_fingerprint

        key = run_fingerprint(run)
        return self._add(key, run.run, len(run.cases), lambda: case_table(run, key), file)

    def add_table(self, run: ColumnarRun, file: str) -> tuple[StoredRun, bool]:
        """Add a run the columnar reader read (its case table goes in as it is, with its key)."""
        import pyarrow as pa

        key = run.fingerprint
        table = run.table
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
            file=os.path.basename(file),
        )
        (self.root / folder).mkdir(parents=True, exist_ok=True)
        write_case_table(table(), self.root / stored.path)
        write_atomic(record_path, dumps(stored.as_dict()) + "\n")  # last: the run is in the store from here on
        return stored, True
