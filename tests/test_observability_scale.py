"""Observability at scale (issues 15, 28): above a documented size the model is fitted on a stratified sample and
the geometry is the sample's (or, asked, every case is assigned by it, a chunk at a time); the output, the dashboard
and the HTML say so."""

import json
import re

import numpy as np
import pytest

import reporting
import reporting.analysis.observability as ob
from reporting.analysis.metrics import cases_frame
from reporting.format.synthetic import synthetic_run


@pytest.fixture(scope="module")
def run():
    return reporting.read_run(json.dumps(synthetic_run(2400)).encode())


def test_every_case_is_assigned_and_the_sample_is_stratified(run, monkeypatch):
    monkeypatch.setattr(ob, "CHUNK", 700)  # several chunks, the last one short
    frame = cases_frame(run)
    result = ob.observability(run, sample_above=1000, sample_size=600, assign_all=True)
    assert result["sampled"]["assigned"] == "every case"
    assert result["sampled"]["n"] == len(ob.stratified_sample(frame, 600)) and result["sampled"]["of"] == len(frame)
    assert [c["probe_id"] for c in result["cases"]] == list(frame["probe_id"])
    assert sum(c["size"] for c in result["clusters"]) == len(frame) == result["n_cases"]
    # Every (category, outcome) stratum is in the sample in proportion to its share (rounding, at least one).
    sample = ob.stratified_sample(frame, 600)
    strata = frame["category"].astype(str) + np.where(frame["passed"], "+", "-")
    share, drawn = strata.value_counts(), strata.iloc[sample].value_counts()
    for name, count in share.items():
        assert drawn[name] == max(1, round(600 * count / len(frame))), name
    # The cases of the sample are assigned as the fit on the sample clustered them.
    fitted = ob._observability(frame.iloc[sample], ob.DEFAULT_MIN_CASES, 0, ob.DEFAULT_EMBEDDING)
    on_sample = {c["probe_id"]: c["cluster_id"] for c in fitted["cases"]}
    assigned = {c["probe_id"]: c["cluster_id"] for c in result["cases"]}
    assert all(assigned[p] == cluster for p, cluster in on_sample.items())
    assert ob.observability(run, sample_above=1000, sample_size=600, assign_all=True) == result  # seeded


def test_by_default_the_geometry_is_the_samples(run):
    """Without assign_all the clusters, mutual information and points are those of the fit on the sample, exactly;
    every other figure of the report still covers every case."""
    frame = cases_frame(run)
    result = ob.observability(run, sample_above=1000, sample_size=600)
    sample = ob.stratified_sample(frame, 600)
    fitted = ob._observability(frame.iloc[sample], ob.DEFAULT_MIN_CASES, 0, ob.DEFAULT_EMBEDDING)
    assert {k: v for k, v in result.items() if k != "sampled"} == fitted
    assert result["sampled"] == {**result["sampled"], "n": len(sample), "of": 2400, "assigned": "sample"}
    assert [c["probe_id"] for c in result["cases"]] == list(frame["probe_id"].iloc[sample])
    assert sum(c["size"] for c in result["clusters"]) == len(sample) == result["n_cases"]


def test_below_the_size_nothing_is_sampled_and_the_note_shows_only_when_it_is(run, monkeypatch, tmp_path):
    from reporting.cli import main

    assert "sampled" not in ob.observability(run)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(synthetic_run(2400)))
    assert main(["recompute", str(path), "-o", str(tmp_path / "plain.json")]) == 0
    assert "sampled" not in json.loads((tmp_path / "plain.json").read_text())["observability"]
    monkeypatch.setattr(ob, "SAMPLE_ABOVE", 1000)
    monkeypatch.setattr(ob, "SAMPLE_SIZE", 500)
    assert main(["recompute", str(path), "-o", str(tmp_path / "r.json")]) == 0
    sampled = json.loads((tmp_path / "r.json").read_text())["observability"]["sampled"]
    assert sampled == {**sampled, "of": 2400, "n": len(ob.stratified_sample(cases_frame(run), 500))}
    assert main(["export", str(path), "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert f"fitted on a stratified sample of {sampled['n']:,} of 2,400 cases" in html
    assert "the clusters, the mutual information and the scatter&#39;s points are those of the sample" in html
    # The HTML's points line up with its case rows: the sample's cases have theirs, the others none.
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    rows, points = data["cases"]["rows"], data["observability"]["cases"]["rows"]
    assert len(rows) == len(points) == 2400
    pid = data["cases"]["columns"].index("probe_id")
    written = {c["probe_id"]: c for c in json.loads((tmp_path / "r.json").read_text())["observability"]["cases"]}
    assert sum(p[0] is not None for p in points) == len(written) == sampled["n"]
    for row, point in zip(rows, points):
        mine = written.get(row[pid])
        assert point == ([mine["cluster_id"], mine["scatter_x"], mine["scatter_y"]] if mine else [None] * 3)


def test_the_scatter_of_a_sampled_geometry_draws_the_samples_cases_at_their_points(run):
    from reporting.render.figures import cluster_scatter

    frame = cases_frame(run)
    result = ob.observability(run, sample_above=1000, sample_size=600)
    fig = cluster_scatter(frame, result, color_by="outcome", cap=10_000)
    drawn = {pid: (x, y) for trace in fig.data for pid, x, y in zip((c[0] for c in trace.customdata), trace.x, trace.y)}
    assert drawn == {c["probe_id"]: (c["scatter_x"], c["scatter_y"]) for c in result["cases"]}
    outcome = dict(zip(frame["probe_id"], frame["passed"]))
    for trace in fig.data:  # each drawn case in the trace of its own outcome
        assert {outcome[c[0]] for c in trace.customdata} == {trace.name == "passed"}


def test_blas_runs_on_one_thread_while_the_geometry_is_fitted_whatever_the_machine_allows(run, monkeypatch):
    """The fit's sums are split among BLAS threads otherwise, and the points' last digits then depend on the
    machine's cores: held to one thread inside, given back after."""
    from threadpoolctl import threadpool_info, threadpool_limits

    seen = []
    fit = ob._observability

    def watched(*args, **kwargs):
        seen.append({pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"})
        return fit(*args, **kwargs)

    monkeypatch.setattr(ob, "_observability", watched)
    with threadpool_limits(limits=2, user_api="blas"):
        before = {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}
        two = ob.observability(cases_frame(run), sample_above=300, sample_size=300)
        after = {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}
    assert seen == [{1}] and after == before
    with threadpool_limits(limits=1, user_api="blas"):
        assert ob.observability(cases_frame(run), sample_above=300, sample_size=300) == two
