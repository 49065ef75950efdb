"""The ``import`` verb: other tools' files (garak, promptfoo, Inspect AI, JailbreakBench, HarmBench) into RunLens
runs, one file per run, all or nothing."""

from __future__ import annotations

import argparse
import functools
import os

from reporting.commands import EXIT_OK, BadInput, _err, _refuse_overwriting_input
from reporting.commands.tools import _patterns
from reporting.format.problems import InputError
from reporting.format.writing import OutputError, check_output_path, document_chunks, dumps
from reporting.textsafe import one_line, shown

LEGACY_SOURCES = ("jailbreakbench", "garak", "promptfoo", "inspect")  # `import SOURCE FILE -o OUT`, the first form


def add_import_parser(verbs) -> None:
    """The ``import`` verb's arguments."""
    from reporting.importers import FORMATS as IMPORT_FORMATS

    p = verbs.add_parser(
        "import",
        help="convert files of garak, promptfoo, Inspect AI, JailbreakBench or HarmBench into RunLens runs, one "
        "file per run (every verb also reads them directly)",
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="the files, recognised by content (the first form `import jailbreakbench FILE -o OUT.json` scores an "
        "artifact's responses with RunLens's rules instead of keeping the benchmark's judge)",
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="the folder the runs are written to (created if missing; a name ending .json or .parquet when there is "
        "one run)",
    )
    p.add_argument(
        "--format",
        choices=("json", "parquet"),
        help="the runs' files: RunLens JSON (the default), or Parquet case tables, which every verb reads by columns "
        "(a million cases recomputed in a fraction of the time; implied by -o RUN.parquet)",
    )
    p.add_argument("--from", dest="source", choices=IMPORT_FORMATS, help="read every file with this reader")
    p.add_argument("--model", metavar="NAME", help="only the runs of this model (a promptfoo file holds several)")
    p.add_argument(
        "--primary-judge",
        metavar="NAME",
        help="Inspect: the scorer whose verdict is the case's (default: the log's headline scorer)",
    )
    p.add_argument(
        "--risk-scorer",
        metavar="NAME",
        help="Inspect: a numeric scorer whose value (0-1, higher riskier) is each case's risk and whose verdict is "
        "lower-is-better, passed below 0.5 (default: 1 - the primary scorer's value)",
    )
    p.add_argument(
        "--strategy-key",
        metavar="KEY",
        help="Inspect: the sample metadata key naming each case's attack strategy (default: no strategy)",
    )
    p.add_argument(
        "--behaviors",
        metavar="CSV",
        help="HarmBench: the behaviours CSV (harmbench_behaviors_text_all.csv) giving each behaviour its text and "
        "semantic category",
    )
    p.add_argument("--patterns", metavar="FILE.yaml", help="first form: add to or override the built-in pattern set")
    p.set_defaults(func=cmd_import)


def cmd_import(args: argparse.Namespace) -> int:
    from reporting._gc import gc_paused
    from reporting.commands.importing import CaseScreen, StagedOutputs
    from reporting.format.import_table import header_metadata
    from reporting.importers import SHAPE_ERRORS, shape_problem

    """Other tools' files as RunLens files (schema version 2), one per run, into the folder ``-o`` names (a
    ``.json`` name when the files hold one run). Every file is read before anything is written, and every output
    is written in full before any is put in place: all or nothing. Nothing is overwritten."""
    files = list(args.files)
    if len(files) >= 2 and files[0] in LEGACY_SOURCES and not os.path.exists(files[0]):
        legacy = files.pop(0)
        if legacy == "jailbreakbench":
            if len(files) != 1:
                raise BadInput("import jailbreakbench FILE -o OUT.json scores one artifact")
            return _score_jailbreakbench(files[0], args)
        if args.source is None:
            args.source = legacy
    for path in files:
        _refuse_overwriting_input(args.output, path)
    parquet = _as_parquet(args)
    if (
        args.output.lower().endswith((".json", ".parquet"))
        and os.path.lexists(args.output)
        and not os.path.isdir(args.output)
    ):
        # said before the files are read (a million garak cases: half a minute); the link that puts the file in
        # place refuses an existing name all the same
        raise BadInput(f"{args.output}: exists already; RunLens never overwrites a file")
    runs, warnings, problems = [], [], []
    behaviors = _behaviors(args.behaviors) if args.behaviors else None
    for path in files:
        documents, more_warnings, more_problems = _import_file(path, args, behaviors)
        warnings += more_warnings
        problems += more_problems
        if args.model is not None:
            documents = [d for d in documents if str(d["run"].get("model")) == args.model]
            if not documents and not more_problems:
                problems.append(f"{path}: --model {args.model!r}: no run of this model in the file")
        runs += [(path, d, len(documents)) for d in documents]
    if problems:
        raise BadInput(*problems)
    for warning in warnings:
        _err(one_line(warning))
    made = _missing(args.output)  # the folders made for the runs are taken back if nothing is written
    targets = _targets(args.output, runs, ".parquet" if parquet else ".json")
    staged, written = StagedOutputs(), []
    try:
        for (path, document, in_file), target in zip(runs, targets):
            label = path if in_file == 1 else f"{path} [{document['run'].get('model')}]"
            counted = [0, 0]  # cases, errors: counted as they are written (a streamed garak run is never a list)

            def count(cases, counted=counted, screen=CaseScreen(label)):
                for case in cases:
                    screen.check(counted[0], case)  # (what every reader checks: never written to be refused)
                    counted[0] += 1
                    counted[1] += case.get("passed") is None
                    yield case

            try:
                with gc_paused():
                    if parquet:  # (the header checked as the reader checks it when the table's metadata is made)
                        from reporting.format.import_table import write_import_table

                        fill = functools.partial(
                            write_import_table, header=document, cases=count(document["cases"]), label=label
                        )
                        staged.write_with(target, fill)
                    else:
                        header_metadata(document, label)  # the run's header as the reader checks it
                        staged.write(target, document_chunks({**document, "cases": count(document["cases"])}))
            except SHAPE_ERRORS as exc:  # a streamed case the reader could not make: nothing is written
                if isinstance(exc, (InputError, OutputError)):  # a case the format refuses; an output not written
                    raise
                raise BadInput(str(shape_problem(path, "a run", exc))) from None
            written.append((document, target, counted))
        staged.commit()  # every output in place, or none
    except BaseException:
        staged.discard()
        for folder in made:
            _remove_empty(folder)
        raise
    finally:
        staged.discard()
    for document, target, counted in written:
        tool = (document["run"].get("source") or {}).get("tool", "?")
        _err(
            f"wrote {shown(target)}: {counted[0]} case(s) of {shown(document['run']['model'])} from {shown(tool)}, "
            f"{counted[1]} not evaluated"
        )
    return EXIT_OK


def _missing(output: str) -> list[str]:
    """``output`` and its parents that do not exist yet, deepest first (the folders ``import`` would make)."""
    missing, at = [], os.path.normpath(output) if os.path.isabs(output) else output.rstrip(os.sep) or output
    while at and not os.path.lexists(at) and os.path.dirname(at) != at:
        if os.path.basename(at) not in (".", ".."):  # (never a folder reached through '..': not one made here)
            missing.append(at)
        at = os.path.dirname(at)
    return missing


def _remove_empty(folder: str) -> None:
    try:
        os.rmdir(folder)  # (only an empty folder)
    except OSError:
        pass


def _behaviors(path: str) -> dict[str, dict[str, str]]:
    from reporting.format.problems import read_file_bytes
    from reporting.importers.benchmarks import read_behaviors

    try:
        table, problems = read_behaviors(read_file_bytes(path), path)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if problems:
        raise BadInput(*[str(p) for p in problems])
    return table


def _import_file(path: str, args: argparse.Namespace, behaviors) -> tuple[list, list[str], list[str]]:
    """The runs of one file; a garak report is streamed from disk line by line, an Inspect log sample by sample."""
    from reporting.format.problems import FileTooLarge, read_file_bytes
    from reporting.importers import detect, import_documents
    from reporting.importers.garak import stream_garak_file

    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
        kind = detect(head)
        if kind == "garak" and args.source in (None, "garak"):
            header, cases, warnings, problems = stream_garak_file(path)  # (regular, under the cap); made as written
            documents = [{**header, "cases": cases}] if header is not None else []
        elif kind == "inspect" and args.source in (None, "inspect"):
            from reporting.importers.inspect_stream import stream_inspect_file

            # an .eval read member by member from the file, its cases made as they are written
            header, cases, warnings, problems = stream_inspect_file(
                path, args.primary_judge, args.risk_scorer, args.strategy_key
            )
            documents = [{**header, "cases": cases}] if header is not None else []
        else:
            documents, warnings, problems = import_documents(
                read_file_bytes(path, regular_only=True),
                path,
                args.source,
                args.primary_judge,
                behaviors,
                args.risk_scorer,
                strategy_key=args.strategy_key,
            )
    except (OSError, FileTooLarge) as exc:
        return [], [], [f"{path}: cannot read the file ({getattr(exc, 'strerror', None) or exc})"]
    lines = [str(p) for p in problems]
    return documents, warnings, lines or ([] if documents else [f"{path}: no run in the file"])


def _as_parquet(args: argparse.Namespace) -> bool:
    """Whether the runs are written as Parquet case tables (``--format parquet``, or ``-o RUN.parquet``)."""
    named = args.output.lower().endswith(".parquet") and not os.path.isdir(args.output)
    if named and args.format == "json" or args.output.lower().endswith(".json") and args.format == "parquet":
        raise BadInput(f"{args.output}: --format {args.format} and this name disagree: name OUT.json or OUT.parquet")
    return args.format == "parquet" or named


def _targets(output: str, runs: list, suffix: str = ".json") -> list:
    """Where each run goes: ``OUT.json`` (``OUT.parquet``) for a single run, else one file per run in the folder
    ``OUT``, named after its file (and model, when the file holds several), made safe for a file name."""
    from pathlib import Path

    from reporting.commands.importing import clashing_names
    from reporting.textsafe import safe_filename

    if output.lower().endswith((".jsonl", ".ndjson")) and not os.path.isdir(output):
        raise BadInput(
            f"{output}: import writes RunLens runs: -o names OUT.json or OUT.parquet (one run) or a folder (one file "
            "per run)"
        )
    if output.lower().endswith(suffix) and not os.path.isdir(output):
        if len(runs) != 1:
            raise BadInput(
                f"{output}: the files hold {len(runs)} runs; -o must name a folder (a name without {suffix}, "
                "created if missing)"
            )
        check_output_path(output)
        return [Path(output)]
    folder = Path(output)
    try:
        if folder.exists() and not folder.is_dir():
            raise BadInput(f"{output}: -o names a folder (one file per run), and this is a file")
    except OSError as exc:
        raise BadInput(f"{output}: cannot be the output folder: {exc.strerror or type(exc).__name__}") from None
    names = []
    for path, document, in_file in runs:
        stem = os.path.basename(path).split(".")[0]
        name = stem if in_file == 1 else f"{stem}.{document['run'].get('model')}"
        names.append(folder / f"{safe_filename(name)}{suffix}")
    clashes = sorted({str(n) for n in names if names.count(n) > 1})
    taken = [str(n) for n in names if n.exists()]
    folded = [] if clashes or taken else clashing_names(names, folder)
    if clashes or taken or folded:
        raise BadInput(
            *[f"{n}: two runs would be written to this file; import them into separate folders" for n in clashes],
            *[f"{n}: exists already; RunLens never overwrites a file" for n in taken],
            *folded,
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"{output}: cannot write in this folder: {exc.strerror or type(exc).__name__}") from None
    return names


def _score_jailbreakbench(path: str, args: argparse.Namespace) -> int:
    """The first form of import: a JailbreakBench artifact's responses scored by RunLens's rules, written as a
    RunLens JSON run (never over an existing file)."""
    from pathlib import Path

    from reporting.commands.importing import StagedOutputs

    _refuse_overwriting_input(args.output, path)
    if args.format == "parquet" or not Path(args.output).name.lower().endswith(".json"):
        raise BadInput(
            f"{args.output}: import jailbreakbench writes a scored RunLens JSON run (-o OUT.json); for a Parquet case "
            "table, recompute OUT.json --format parquet -o FIGURES.json, or import the artifact without the word "
            "jailbreakbench (its judge's verdicts kept)"
        )
    check_output_path(args.output)
    if os.path.lexists(args.output):
        raise BadInput(f"{args.output}: exists already; RunLens never overwrites a file")
    from reporting.scoring.runs import import_jailbreakbench

    patterns = _patterns(args)
    report, skipped, problems = import_jailbreakbench(path, patterns)
    if problems:
        raise BadInput(*[str(p) for p in problems])
    staged = StagedOutputs()
    try:
        staged.write(Path(args.output), [dumps(report), "\n"])
        staged.commit()  # (the link that puts it in place refuses a name taken meanwhile)
    finally:
        staged.discard()
    counts = report["aggregate_metrics"]["counts"]
    _err(
        f"wrote {shown(args.output)}: {counts['probes_evaluated']} case(s) scored, {skipped} record(s) without "
        "prompt or response skipped"
    )
    return EXIT_OK
