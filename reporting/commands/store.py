"""The run store verbs: ``store add`` writes runs into a store, ``store trend``, ``store compare`` and ``store
standing`` read it with DuckDB or Spark (docs/scale.md)."""

from __future__ import annotations

import argparse

from reporting.commands import EXIT_OK, BadInput, _err, _load_valid, _out
from reporting.commands.outputs import check_report_output, distinct_outputs, write_report
from reporting.format.writing import dumps
from reporting.textsafe import shown


def _engine(args: argparse.Namespace):
    from reporting.store.engine import engine

    return engine(args.engine)


def cmd_store(args: argparse.Namespace) -> int:
    from reporting.store.engine import EngineUnavailable

    try:
        return {"add": _add, "trend": _trend, "compare": _compare, "standing": _standing}[args.action](args)
    except EngineUnavailable as exc:
        raise BadInput(str(exc)) from None


def _add(args: argparse.Namespace) -> int:
    from reporting.format.columnar import ColumnarRun
    from reporting.store.layout import Store

    runs = [(path, _read_for_store(path)) for path in args.runs]  # every run read before the store is touched
    store = Store.open(args.store, create=True)
    for path, run in runs:
        stored, new = store.add_table(run, path) if isinstance(run, ColumnarRun) else store.add(run, path)
        what = "added" if new else "already in the store, nothing written"
        _err(
            f"{shown(path)}: {what}: {stored.cases} case(s) of {shown(stored.model)} on {shown(stored.suite)} "
            f"({shown(stored.key)})"
        )
    return EXIT_OK


def _read_for_store(path: str):
    """A plain RunLens run straight into Arrow columns (the columnar reader); anything else, or anything it does
    not vouch for, through the per-record reader, which names every problem."""
    from reporting.commands import MODEL, SEVERITY_MAP
    from reporting.format.columnar import read_table

    if MODEL is None and SEVERITY_MAP is None:
        columnar = read_table(path)
        if columnar is not None:
            return columnar
    return _load_valid(path)


def _outputs(args: argparse.Namespace, store) -> None:
    """Each output can be written, and none is inside the store: a store verb writes nothing there but the store's
    own files (an HTML page over a run record would leave the store unreadable)."""
    outputs = [output for output in (args.output, getattr(args, "html", None)) if output]
    for output in outputs:
        if store.holds(output):
            raise BadInput(
                f"{shown(output)}: refusing to write inside the store {shown(args.store)} (the store holds only "
                "what `store add` writes); choose an output path outside the store's folder"
            )
        check_report_output(output)
    distinct_outputs(*outputs)


def _computed(args: argparse.Namespace, view) -> dict:
    """A view of the store (``reporting.store.views``) computed by the engine asked for, which is then closed."""
    from reporting.store.layout import Store

    store = Store.open(args.store)
    _outputs(args, store)
    engine = _engine(args)
    try:
        data = view(store, engine, args.suite)
    finally:
        engine.close()
    if data["suite"] is None:
        raise BadInput(f"{shown(args.store)}: the store holds no run")
    return data


def _trend(args: argparse.Namespace) -> int:
    from reporting.commands.reports import print_trend
    from reporting.store.views import trend

    data = _computed(args, trend)
    if args.output:
        write_report(args.output, dumps(data) + "\n")
        _err(f"wrote {shown(args.output)}: the trend as JSON")
    if args.html:
        from reporting.render.html import render_trend_html

        write_report(args.html, render_trend_html(data))
        _err(f"wrote {shown(args.html)}: the trend as a self-contained HTML file")
    print_trend(data)
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from reporting.store.views import latest

    data = _computed(args, latest)
    if args.output:
        write_report(args.output, dumps(data) + "\n")
        _err(f"wrote {shown(args.output)}: the latest figures per model as JSON")
    _out(
        f"suite {shown(data['suite'])}: the newest run of {len(data['models'])} model(s), computed by {data['engine']}"
    )
    for entry in data["models"]:
        figure = entry["figures"].get("pass_rate", {})
        rate, ci = figure.get("value"), figure.get("interval")
        rate_text = "n/a" if rate is None else f"{rate:.3f}" + ("" if not ci else f" [{ci[0]:.3f}, {ci[1]:.3f}]")
        _out(f"  {shown(entry['model']):40} {shown(entry['created_at'] or 'undated'):28} pass rate {rate_text}")
    return EXIT_OK


def _standing(args: argparse.Namespace) -> int:
    from reporting.store.views import standing, standing_sentence

    data = _computed(args, standing)
    if args.output:
        write_report(args.output, dumps(data) + "\n")
        _err(f"wrote {shown(args.output)}: each run's standing as JSON")
    _out(f"suite {shown(data['suite'])}: {len(data['runs'])} run(s), computed by {data['engine']}")
    for entry in data["runs"]:
        low, high = entry["interval"]
        _out(
            f"  {shown(entry['run_id']):36} {shown(entry['model']):28} pass rate {entry['pass_rate']:.3f} "
            f"[{low:.3f}, {high:.3f}]: {standing_sentence(entry)}"
        )
    return EXIT_OK
