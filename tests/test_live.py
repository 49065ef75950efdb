"""Growing runs (reporting/format/growing.py, reporting/importers/garak_growing.py, reporting/analysis/live.py): a
writer process appends to a garak report.jsonl and to a RunLens JSON Lines run in chunks, each ending in a torn
line; at every step the growing reader's cases, problems and figures equal a whole read of the same complete lines,
the counts rise, only the new bytes are read, and a torn line is a problem only once the file stops growing."""

import json
import os
import threading

import pytest
from _helpers_live import GARAK, ROOT, step, stop, writer
from conftest import HAND_CASES

from reporting.analysis.live import LiveTally, live_figures, progress_line, rate_text
from reporting.analysis.metrics import aggregate_metrics
from reporting.format.synthetic import synthetic_run
from reporting.sources.growing import GrowingRun, kind_of
from reporting.sources.reading import load_run


class Clock:
    def __init__(self, now: float = 0.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def runlens_jsonl(n: int = 240) -> bytes:
    cases = synthetic_run(n)["cases"]
    cases[7]["probe_id"] = cases[2]["probe_id"]  # a duplicate: the first is kept
    lines = [json.dumps(c).encode() for c in cases]
    lines[30] = b'{"probe_id": "bad", "passed": "maybe"}'  # a case with problems
    lines[50] = b"not json"
    return b"\n".join(lines) + b"\n"


def whole(data: bytes, label: str):
    """A whole read of the complete lines of ``data``."""
    return load_run(data[: data.rfind(b"\n") + 1], name=label)


def dumped(cases, drop_error: bool = False):
    return [{**c.model_dump(), **({"error": bool(c.error)} if drop_error else {})} for c in cases]


@pytest.mark.parametrize("kind", ["garak", "runlens"])
def test_a_writer_process_appends_and_every_step_equals_a_whole_read(tmp_path, kind):
    if kind == "garak":
        src, dest = GARAK, tmp_path / "live.report.jsonl"
    else:
        src, dest = tmp_path / "source.jsonl", tmp_path / "live.jsonl"
        src.write_bytes(runlens_jsonl())
    data = src.read_bytes()
    dest.write_bytes(b"")
    clock = Clock()
    growing = GrowingRun(dest, label="live", idle_seconds=30, clock=clock)
    process = writer(src, dest, 8)
    counts, torn_seen, tally = [], 0, LiveTally()
    try:
        for _ in range(8):
            written = step(process)
            clock.now = os.stat(dest).st_mtime + 1  # the file grew a second ago: still growing
            growing.refresh()
            live = growing.snapshot()
            assert live is not None and live.kind == kind and live.growing is not live.completed
            assert live.bytes_read == written  # only the new bytes, each once
            torn_seen += live.held_back > 0
            reference = whole(data[:written], "live")
            assert reference.run is not None
            # the same cases (garak's attempts not judged yet say so in their own words), problems and figures
            assert dumped(live.run.cases, True) == dumped(reference.run.cases, True)
            assert [str(p) for p in live.problems] == [str(p) for p in reference.problems]  # a torn line is none
            assert live.cases_in_file == reference.cases_in_file or kind == "garak"
            figures = live_figures(live.run.cases)
            metrics = aggregate_metrics(reference.run)
            assert figures["evaluated"] == metrics["counts"]["probes_evaluated"]
            assert figures["passed"] == metrics["counts"]["passed"]
            assert figures["errors"] == metrics["counts"]["errors"]
            assert figures["pass_rate"] == metrics["overall"]["pass_rate"]
            assert figures["pass_rate_ci"] == metrics["overall"]["pass_rate_ci"]
            counts.append(figures["cases"])
            # kept up to date, counting each settled case once: the same figures as counting them all afresh
            assert tally.figures(live.run.cases, live.stable, live.settled) == figures
    finally:
        stop(process)
    assert torn_seen >= 6  # every chunk but the last ended in a torn line
    assert counts == sorted(counts) and counts[0] < counts[-1]  # the counts rose
    final = load_run(data, name="live")
    assert dumped(growing.snapshot().run.cases) == dumped(final.run.cases)  # done: the same run as a whole read


def test_a_writer_thread_while_the_reader_polls(tmp_path):
    """Reads interleaved with writes at any byte: whatever the reader saw, its last snapshot is the whole file's."""
    data = GARAK.read_bytes()
    dest = tmp_path / "r.report.jsonl"
    dest.write_bytes(b"")
    growing = GrowingRun(dest, label="r", idle_seconds=3600)
    seen = []

    def write():
        with open(dest, "ab", buffering=0) as out:
            for start in range(0, len(data), 7919):
                out.write(data[start : start + 7919])

    thread = threading.Thread(target=write)
    thread.start()
    while thread.is_alive():
        growing.refresh()
        if (live := growing.snapshot()) is not None:
            seen.append(len(live.run.cases))
    thread.join()
    growing.refresh()
    live = growing.snapshot()
    assert dumped(live.run.cases) == dumped(load_run(data, name="r").run.cases)
    assert live.problems == [] and live.completed and not live.growing
    assert seen == sorted(seen)


def test_a_torn_line_is_waited_for_and_a_problem_only_once_the_file_stops_growing(tmp_path):
    dest = tmp_path / "run.jsonl"
    lines = [json.dumps(c) for c in HAND_CASES[:3]]
    dest.write_text(lines[0] + "\n" + lines[1] + "\n" + lines[2][:20])
    clock = Clock(os.stat(dest).st_mtime + 5)
    growing = GrowingRun(dest, idle_seconds=10, clock=clock)
    growing.refresh()
    live = growing.snapshot()
    assert len(live.run.cases) == 2 and live.problems == [] and live.held_back == 20 and live.growing
    clock.now += 10  # unchanged for 10 s: stopped growing, the torn line is now a problem of line 3
    live = growing.snapshot()
    assert not live.growing and len(live.run.cases) == 2
    assert [p.path for p in live.problems] == ["line 3"] and "cut short" in live.problems[0].message
    with open(dest, "a") as out:  # it grows again: the line is whole, the problem gone
        out.write(lines[2][20:] + "\n")
    clock.now = os.stat(dest).st_mtime + 1
    growing.refresh()
    live = growing.snapshot()
    assert len(live.run.cases) == 3 and live.problems == [] and live.held_back == 0


def test_a_last_line_without_a_line_end_is_read_once_the_file_stops(tmp_path):
    dest = tmp_path / "run.jsonl"
    lines = [json.dumps(c) for c in HAND_CASES[:3]]
    dest.write_text("\n".join(lines))  # no line end after the last case
    clock = Clock(os.stat(dest).st_mtime + 100)
    growing = GrowingRun(dest, idle_seconds=10, clock=clock)
    growing.refresh()
    assert len(growing.snapshot().run.cases) == 3 and growing.snapshot().problems == []
    with open(dest, "a") as out:  # the line end comes later, then a fourth case: no line counted twice
        out.write("\n" + json.dumps(HAND_CASES[3]) + "\n")
    growing.refresh()
    live = growing.snapshot()
    reference = load_run(dest.read_bytes(), name=str(dest))
    assert dumped(live.run.cases) == dumped(reference.run.cases) and live.lines == 4


def test_a_file_that_shrinks_or_is_replaced_is_read_afresh(tmp_path):
    dest = tmp_path / "run.jsonl"
    lines = [json.dumps(c) + "\n" for c in HAND_CASES]
    dest.write_text("".join(lines[:4]))
    growing = GrowingRun(dest, idle_seconds=3600)
    growing.refresh()
    assert [c.probe_id for c in growing.snapshot().run.cases] == ["a", "b", "c", "d"]
    dest.write_text("".join(lines[4:]))  # cut short: fewer bytes than were read
    growing.refresh()
    assert [c.probe_id for c in growing.snapshot().run.cases] == ["e", "f"]
    other = tmp_path / "other.jsonl"
    other.write_text("".join(lines[:5]) + "\n" * 40)
    os.replace(other, dest)  # another file (inode) of more bytes
    growing.refresh()
    assert [c.probe_id for c in growing.snapshot().run.cases] == ["a", "b", "c", "d", "e"]


def test_a_fifo_in_place_of_the_file_is_never_opened(tmp_path):
    dest = tmp_path / "run.jsonl"
    dest.write_text(json.dumps(HAND_CASES[0]) + "\n")
    growing = GrowingRun(dest)
    growing.refresh()
    dest.unlink()
    os.mkfifo(dest)
    with pytest.raises(OSError, match="not a regular file"):
        growing.refresh()


def test_kind_of_a_growing_file():
    assert kind_of(GARAK.read_bytes()[:300], "x.report.jsonl") == "garak"
    assert kind_of(b'{"probe_id": "a", "category": "c"}\n', "r.jsonl") == "runlens"
    assert kind_of(b'{"probe_id": "a", "categ', "r.jsonl") == "runlens"  # a first line not ended yet
    assert kind_of(b'{"probe_id": "a"}\n', "r.json") is None  # a JSON document is read whole
    assert kind_of(b'{"results": []}\n', "r.jsonl") is None
    assert kind_of(b"", "r.jsonl") is None


def test_live_figures_by_hand():
    run = load_run(json.dumps({"cases": HAND_CASES}).encode(), name="hand").run
    figures = live_figures(run.cases, per=4, newest=2)
    # HAND_CASES: a pass, b fail, c fail, d pass, e pass, f fail (conftest: computed by hand in test_metrics)
    verdicts = [c.passed for c in run.cases]
    assert figures["cases"] == 6 and figures["passed"] == verdicts.count(True) and figures["failed"] == 3
    assert figures["pass_rate"] == pytest.approx(3 / 6)
    assert [(s["first"], s["last"], s["evaluated"]) for s in figures["series"]] == [(1, 4, 4), (5, 6, 2)]
    assert figures["series"][0]["pass_rate"] == pytest.approx(verdicts[:4].count(True) / 4)
    assert [f["probe_id"] for f in figures["newest_failures"]] == [
        c.probe_id for c in reversed(run.cases) if c.passed is False
    ][:2]
    assert live_figures([])["pass_rate"] is None and live_figures([])["series"] == []


def test_the_tally_counts_afresh_when_verdicts_before_it_changed():
    run = load_run(json.dumps({"cases": HAND_CASES}).encode(), name="hand").run
    tally = LiveTally(per=4)
    assert tally.figures(run.cases[:4]) == live_figures(run.cases[:4], per=4)
    flipped = [run.cases[0].model_copy(update={"passed": not run.cases[0].passed}), *run.cases[1:]]
    assert tally.figures(flipped, stable=0) == live_figures(flipped, per=4)  # the first case changed: afresh
    assert tally.figures(flipped, stable=6, settled=5) == live_figures(flipped, per=4)


def test_progress_words():
    assert (
        progress_line("garak", 1234, 2468, 100.0, 140.0, True)
        == "in progress: 1,234 attempts so far, the last 40 s ago"
    )
    assert progress_line("runlens", 0, 12, 0.0, 600.0, False) == "stopped growing: 12 cases, the last 10 min ago"
    assert rate_text(0.5, [0.25, 0.75]) == "50.0% (95% CI 25.0% to 75.0%)"
    assert rate_text(None, None) == "no case evaluated yet"


@pytest.mark.parametrize("name", ["fitd_multiturn", "goat_multiturn"])
def test_garak_multi_turn_attacks_as_they_grow(tmp_path, name):
    """Attempts without seq (named and folded over the whole run): at every cut the same cases as a whole read."""
    data = (ROOT / "tests" / "fixtures" / "garak" / "multiturn" / f"{name}.report.jsonl").read_bytes()
    dest = tmp_path / f"{name}.report.jsonl"
    dest.write_bytes(b"")
    growing, tally = GrowingRun(dest, label="m", idle_seconds=3600), LiveTally()
    ends = [data.find(b"\n", len(data) * k // 6) + 1 or len(data) for k in range(1, 6)] + [len(data)]
    for end in ends:
        with open(dest, "ab") as out:
            out.write(data[os.path.getsize(dest) : end])
        growing.refresh()
        live = growing.snapshot()
        reference = whole(data[:end], "m")
        assert dumped(live.run.cases, True) == dumped(reference.run.cases, True)
        assert tally.figures(live.run.cases, live.stable, live.settled) == live_figures(reference.run.cases)
    assert live.completed and dumped(live.run.cases) == dumped(load_run(data, name="m").run.cases)
