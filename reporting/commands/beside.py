"""``recompute --format parquet``: the figures in ``OUT.json`` and the run's case table beside them in
``OUT.parquet``, both new files, written all or nothing."""

from __future__ import annotations

import argparse
import functools
import os
from pathlib import Path

from reporting.commands import BadInput, _err, _refuse_overwriting_input
from reporting.format.writing import check_output_path, document_chunks, dumps
from reporting.textsafe import file_name, shown


def table_beside(args: argparse.Namespace) -> str:
    """Where ``--format parquet`` puts the case table: ``OUT.parquet`` beside the figures' ``-o OUT.json``. Both
    are new files (said before the run is read): RunLens never overwrites one, least of all a table of cases."""
    if not args.output:
        raise BadInput("--format parquet: name the figures' file with -o OUT.json (the cases go beside it)")
    name = os.path.basename(args.output)  # ("OUT.json/" has no name: refused, as the file system would)
    if not name.lower().endswith(".json") or name.lower() == ".json":
        raise BadInput(
            f"{args.output}: with --format parquet, -o names the figures' JSON file (OUT.json); the case table is "
            "written beside it as OUT.parquet"
        )
    if file_name(args.output) != name:
        raise BadInput(
            f"{shown(file_name(args.output))}: the name is not UTF-8 text, and the figures name their table in text "
            "(cases_file): choose a name of UTF-8 text"
        )
    table_path = args.output[: -len(".json")] + ".parquet"
    _refuse_overwriting_input(table_path, args.run)
    check_output_path(table_path)
    taken = [path for path in (table_path, args.output) if os.path.lexists(path)]
    if taken:
        raise BadInput(*[f"{path}: exists already; RunLens never overwrites a file" for path in taken])
    return table_path


def write_beside(output: str, table_path: str, report, document: dict, large: bool) -> None:
    """The case table and the figures naming it, both written in full before either is put in place, each never
    over an existing file (all or nothing)."""
    from reporting.commands.importing import StagedOutputs
    from reporting.format.parquet import fill_case_table
    from reporting.format.table_run import run_case_table

    # cases_file next to schema_version, at the head of the file: a folder's reader tells it from a run by its head
    rest = {k: v for k, v in document.items() if k not in ("schema_version", "cases", "errors")}
    document = {"schema_version": document["schema_version"], "cases_file": os.path.basename(table_path), **rest}
    staged = StagedOutputs()
    try:
        table = run_case_table(report.run)  # (as reviewed with --as reviewed, as the JSON)
        staged.write_with(Path(table_path), functools.partial(fill_case_table, table))
        del table
        staged.write(Path(output), document_chunks(document, compact_head=True) if large else [dumps(document), "\n"])
        staged.commit()
    finally:
        staged.discard()
    _err(f"wrote {shown(table_path)}: the case table ({len(report.run.cases)} case(s), Parquet)")
    _err(f"wrote {shown(output)}: {report.shown} case(s), {len(report.drift)} drift finding(s)")
