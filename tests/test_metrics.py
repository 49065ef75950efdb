"""Known-answer tests: every aggregate figure of a six-case run, computed by hand."""

import math

import pytest
from conftest import case

import reporting

approx = lambda v: pytest.approx(v, abs=1e-9)  # noqa: E731


@pytest.fixture
def metrics(hand_report):
    return reporting.aggregate_metrics(reporting.read_run(__import__("json").dumps(hand_report).encode()))


def test_counts(metrics):
    assert metrics["counts"] == {
        "cases": 6,
        "probes_evaluated": 6,
        "passed": 3,
        "failed": 3,
        "errors": 0,
        "categories": 3,
    }


def test_overall_by_hand(metrics):
    o = metrics["overall"]
    assert o["pass_rate"] == approx(0.5) and o["fail_rate"] == approx(0.5)
    # risk = [0.1, 0.8, 0.6, 0.2, 0.5, 0.0]
    assert o["risk_mean"] == approx(2.2 / 6)
    assert o["risk_median"] == approx(0.35)
    assert o["risk_std"] == approx(math.sqrt(0.4933333333333333 / 6))
    assert o["risk_p90"] == approx(0.7)  # position 4.5 between 0.6 and 0.8
    assert o["risk_max"] == approx(0.8)
    # weighted = [0.05, min(1, 1.6)=1.0, 0.9, 0.2, 0.5, 0.0]
    assert o["weighted_risk_mean"] == approx(2.65 / 6)
    assert o["weighted_risk_median"] == approx(0.35)
    assert o["weighted_risk_p90"] == approx(0.95)
    # weights 0.5, 2, 1.5, 1, 1, 0.5; passed a, d, f
    assert o["severity_weighted_pass_rate"] == approx(2.0 / 6.5)
    assert o["high_stakes_failure_rate"] == approx(2 / 3)  # b, c of failed b, c, e
    assert o["high_stakes_probe_failure_rate"] == approx(1.0)  # b, c of high-stakes b, c
    assert o["boundary_language_rate"] == approx(2 / 6)
    assert o["safe_signal_total"] == 4 and o["unsafe_signal_total"] == 6
    assert o["safe_unsafe_signal_ratio"] == approx(4 / 6)


def test_by_category_by_hand(metrics):
    c = metrics["by_category"]
    assert list(c) == ["alpha", "beta", "gamma"]
    alpha = {k: v for k, v in c["alpha"].items() if not k.endswith("_ci")}
    assert alpha == {
        "n": 2,
        "low_n": True,
        "pass_rate": 0.5,
        "risk_mean": approx(0.45),
        "risk_median": approx(0.45),
        "weighted_risk_mean": approx(0.525),
        "critical_failures": 1,
        "high_failures": 0,
        "safe_hits_mean": approx(1.0),
        "unsafe_hits_mean": approx(1.5),
        "boundary_rate": 0.5,
    }
    assert c["beta"]["risk_mean"] == approx(0.4) and c["beta"]["weighted_risk_mean"] == approx(0.55)
    assert c["beta"]["high_failures"] == 1 and c["beta"]["critical_failures"] == 0
    assert c["beta"]["unsafe_hits_mean"] == approx(0.5)
    assert c["gamma"]["risk_median"] == approx(0.25) and c["gamma"]["boundary_rate"] == 0.0


def test_by_severity_has_all_tiers_in_order(metrics):
    s = metrics["by_severity"]
    assert list(s) == ["low", "medium", "high", "critical"]
    strip = lambda d: {k: v for k, v in d.items() if not k.endswith("_ci")}  # noqa: E731
    assert strip(s["low"]) == {"n": 2, "low_n": True, "passed": 2, "failed": 0, "pass_rate": 1.0}
    assert strip(s["medium"]) == {"n": 2, "low_n": True, "passed": 1, "failed": 1, "pass_rate": 0.5}
    assert strip(s["high"]) == {"n": 1, "low_n": True, "passed": 0, "failed": 1, "pass_rate": 0.0}
    assert strip(s["critical"]) == {"n": 1, "low_n": True, "passed": 0, "failed": 1, "pass_rate": 0.0}


def test_failure_modes_indices_worst_ranking(metrics):
    assert metrics["failure_modes"] == {"leak": 2, "override": 2}
    i = metrics["indices"]
    assert i["resilience_index"] == approx(1 - 2.65 / 6)
    assert i["exposure_index"] == approx(2.65 / 6)
    assert i["fragility_spread"] == approx(metrics["overall"]["risk_std"])
    assert [w["probe_id"] for w in metrics["worst_cases"]] == ["b", "c", "e", "d", "a", "f"]
    assert metrics["worst_cases"][0] == {
        "probe_id": "b",
        "category": "alpha",
        "severity": "critical",
        "risk_score": 0.8,
        "weighted_risk": 1.0,
        "passed": False,
    }
    assert metrics["category_ranking"] == [
        {"category": "alpha", "risk_mean": approx(0.45), "n": 2},
        {"category": "beta", "risk_mean": approx(0.4), "n": 2},
        {"category": "gamma", "risk_mean": approx(0.25), "n": 2},
    ]


def test_empty_run_has_nulls_not_nan():
    m = reporting.aggregate_metrics(reporting.read_run(b'{"cases": []}'))
    assert m["counts"] == {"cases": 0, "probes_evaluated": 0, "passed": 0, "failed": 0, "errors": 0, "categories": 0}
    assert all(v is None for k, v in m["overall"].items() if not k.endswith(("_total", "_failures")))
    assert m["by_severity"]["critical"] == {
        "n": 0,
        "low_n": True,
        "passed": 0,
        "failed": 0,
        "pass_rate": None,
        "pass_rate_ci": None,
    }
    assert all(v is None for v in m["indices"].values())
    assert m["worst_cases"] == [] and m["category_ranking"] == [] and m["by_category"] == {}


def test_one_case_run():
    run = reporting.read_run(__import__("json").dumps([case("x", "c", "critical", True, 0.7)]).encode())
    m = reporting.aggregate_metrics(run)
    assert m["overall"]["risk_std"] == 0.0 and m["overall"]["risk_p90"] == approx(0.7)
    assert m["overall"]["weighted_risk_mean"] == 1.0  # capped
    assert m["overall"]["high_stakes_failure_rate"] is None  # no failures: undefined
    assert m["overall"]["high_stakes_probe_failure_rate"] == 0.0
    assert m["overall"]["safe_unsafe_signal_ratio"] is None  # no unsafe hits
    assert m["indices"]["resilience_index"] == 0.0


def test_worst_case_ties():
    cases = [
        case("z", "c", "medium", False, 0.6),  # weighted 0.6
        case("y", "c", "high", False, 0.4),  # weighted 0.6, lower risk
        case("b", "c", "medium", False, 0.6),  # same as z: probe id decides
        case("m", "c", "critical", False, 0.9),  # weighted 1.0
        case("n", "c", "critical", False, 0.5),  # weighted 1.0, lower risk
    ]
    m = reporting.aggregate_metrics(reporting.read_run(__import__("json").dumps(cases).encode()))
    assert [w["probe_id"] for w in m["worst_cases"]] == ["m", "n", "b", "z", "y"]


def test_worst_cases_capped_at_ten_and_ranking_tie_by_name():
    cases = [case(f"p{i:02d}", "zz" if i % 2 else "aa", "low", True, 0.3) for i in range(14)]
    m = reporting.aggregate_metrics(reporting.read_run(__import__("json").dumps(cases).encode()))
    assert len(m["worst_cases"]) == 10
    assert [w["probe_id"] for w in m["worst_cases"]][:3] == ["p00", "p01", "p02"]
    assert [r["category"] for r in m["category_ranking"]] == ["aa", "zz"]


def test_stored_severity_weight_overrides_default():
    run = reporting.read_run(__import__("json").dumps([case("x", "c", "low", False, 0.4, severity_weight=3)]).encode())
    frame = reporting.cases_frame(run)
    assert frame["severity_weight"].iat[0] == 3.0
    assert frame["weighted_risk"].iat[0] == approx(1.0)
    run = reporting.read_run(__import__("json").dumps([case("x", "c", "low", False, 0.4, severity_weight=0)]).encode())
    assert reporting.aggregate_metrics(run)["overall"]["severity_weighted_pass_rate"] is None  # sum of weights 0


def test_intervals_by_hand(metrics):
    """Wilson intervals of the hand run, and t intervals of its mean risk."""
    import math

    z = 1.959963984540054

    def wilson(k, n):
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return [centre - half, centre + half]

    o = metrics["overall"]
    assert o["pass_rate_ci"] == [approx(v) for v in wilson(3, 6)]
    assert o["high_stakes_failure_rate_ci"] == [approx(v) for v in wilson(2, 3)]
    assert o["high_stakes_failures"] == 2
    # t interval: mean 2.2/6, sample sd sqrt(0.49333/5), t(0.975, 5) = 2.570581836
    half = 2.570581836 * math.sqrt(0.4933333333333333 / 5) / math.sqrt(6)
    assert o["risk_mean_ci"] == [approx(2.2 / 6 - half), approx(2.2 / 6 + half)]
    lo, hi = o["weighted_risk_mean_ci"]
    assert metrics["indices"]["resilience_index_ci"] == [approx(1 - hi), approx(min(1, 1 - lo))]
    # Kish effective n for the severity-weighted pass rate: (6.5^2) / (0.25+4+2.25+1+1+0.25) = 42.25 / 8.75
    n_eff = 42.25 / 8.75
    assert o["severity_weighted_pass_rate_ci"] == [approx(v) for v in wilson(2 / 6.5 * n_eff, n_eff)]
    assert metrics["by_category"]["alpha"]["pass_rate_ci"] == [approx(v) for v in wilson(1, 2)]


def _run_with_ties(n: int = 3000):
    """A run whose weighted risks tie by the hundred, repetitions (probe groups on three cases in four), two
    categories that are prefixes of each other and failure modes on most failures."""
    import random

    rng = random.Random(7)
    cases = []
    for i in range(n):
        risk = rng.choice([0.2, 0.4, 0.6, 0.8])
        record = case(
            f"p{rng.randrange(10**6):06d}-{i}",
            rng.choice(["a", "ab", "b"]),
            rng.choice(["low", "high"]),
            risk < 0.5,
            risk,
        )
        if i % 4:
            record["probe_group"] = f"g{(i // 2) % 300}"  # neighbours share a group, as repetitions do
        if risk >= 0.5:
            record["detected_failure_modes"] = rng.sample(["jailbreak", "leak", "bias"], rng.randint(0, 2))
        cases.append(record)
    document = {"schema_version": 2, "run": {"run_id": "ties", "model": "m"}, "cases": cases}
    return reporting.read_run(__import__("json").dumps(document).encode())


def test_figures_of_filtered_views_equal_plain_references():
    """The integer-coded counting (categories, severities, repetition keys, ties at the worst-case cutoff) gives what
    a plain Python spelling of each figure gives, on the whole run and on filtered views of it."""
    from collections import Counter

    from reporting.analysis.case_table import case_table
    from reporting.analysis.engine import Session
    from reporting.analysis.filters import Filters
    from reporting.analysis.metrics import aggregate_metrics, cases_frame

    frame = cases_frame(_run_with_ties())
    for filters in (Filters(), Filters(outcome="fail"), Filters(severities=("high",)), Filters(categories=("ab",))):
        view = filters.apply(frame)
        m = aggregate_metrics(view)
        rows = list(view[["probe_id", "category", "severity", "passed", "risk_score", "weighted_risk"]].itertuples())
        assert m["counts"]["categories"] == len({r.category for r in rows})
        for name in {r.category for r in rows}:
            mine = [r for r in rows if r.category == name]
            assert m["by_category"][name]["n"] == len(mine)
            assert m["by_category"][name]["risk_mean"] == approx(sum(r.risk_score for r in mine) / len(mine))
            assert m["by_category"][name]["high_failures"] == sum(
                1 for r in mine if not r.passed and r.severity == "high"
            )
        for tier in ("low", "high", "critical"):
            assert m["by_severity"][tier]["failed"] == sum(1 for r in rows if r.severity == tier and not r.passed)
        ranked = sorted(rows, key=lambda r: (-round(r.weighted_risk, 12), -round(r.risk_score, 12), r.probe_id))
        assert [w["probe_id"] for w in m["worst_cases"]] == [r.probe_id for r in ranked[:10]]
        modes = Counter(mode for modes in view["detected_failure_modes"] for mode in modes)
        assert m["failure_modes"] == dict(sorted(modes.items(), key=lambda kv: (-kv[1], kv[0])))
        keys = [g if isinstance(g, str) and g else p for p, g in zip(view["probe_id"], view["probe_group"])]
        expected = {
            k: (keys.count(k), sum(1 for key, ok in zip(keys, view["passed"]) if key == k and not ok))
            for k in dict.fromkeys(keys)
        }
        with Session(case_table(view)) as engine:
            counts = [tuple(map(int, pair)) for pair in zip(*engine.repetitions())]
        assert counts == list(expected.values())  # in order of first appearance
        with Session(case_table(view.drop(columns="probe_key"))) as engine:
            assert [tuple(map(int, pair)) for pair in zip(*engine.repetitions())] == counts
        assert m["repetitions"]["probes"] == len(expected)
