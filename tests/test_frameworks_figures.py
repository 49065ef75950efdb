"""Framework figures on small runs counted by hand (docs/frameworks.md): every framework table, the precedence of
tool tags over categories, untested items listed at n = 0, errors counted apart."""

from __future__ import annotations

import json

import pytest

from reporting.analysis.frameworks import (
    aggregate_figures,
    builtin_catalog,
    case_tags,
    coverage,
    figures_of_cases,
    framework_figures,
    items_of,
)

# A run with categories only (no tool tag): id, verdict (None: not evaluated), severity, category.
RUN = [
    ("c1", True, "high", "prompt_injection"),
    ("c2", False, "critical", "prompt_injection"),
    ("c3", None, "high", "prompt_injection"),
    ("c4", False, "medium", "system_prompt_leakage"),
    ("c5", True, "low", "misinformation"),
    ("c6", True, "low", "benign_capability"),  # considered, maps to nothing
    ("c7", False, "high", "mail_agent"),  # not in the table
]


def figures_of(run, plugins=None, tags=None, catalog=None):
    ids, passed, severity, category = (list(column) for column in zip(*run))
    return framework_figures(
        ids, passed, severity=severity, category=category, plugin=plugins, tags=tags, catalog=catalog
    )


# Wilson 95% of 1 in 2 by hand: centre 0.5, half-width 1.96 * sqrt(0.125 + 0.2401) / 2.9207 = 0.4055.
ONE_OF_TWO = [0.0945, 0.9055]


def test_owasp_figures_counted_by_hand():
    owasp = figures_of(RUN)["owasp-llm-2025"]
    assert list(owasp) == [f"LLM{i:02d}" for i in range(1, 11)]
    llm01 = owasp["LLM01"]
    assert (llm01["n"], llm01["passed"], llm01["failed"], llm01["errors"]) == (2, 1, 1, 1)
    assert llm01["pass_rate"] == 0.5 and llm01["tested"] is True
    assert llm01["interval"] == pytest.approx(ONE_OF_TWO, abs=1e-4)
    assert llm01["worst_failing_severity"] == "critical" and llm01["failing_case_ids"] == ["c2"]
    assert llm01["title"] == "Prompt Injection"
    llm07 = owasp["LLM07"]
    assert (llm07["n"], llm07["failed"], llm07["pass_rate"], llm07["worst_failing_severity"]) == (1, 1, 0.0, "medium")
    llm09 = owasp["LLM09"]
    assert (llm09["n"], llm09["passed"], llm09["pass_rate"], llm09["worst_failing_severity"]) == (1, 1, 1.0, None)
    assert llm09["failing_case_ids"] == []
    # Every other item is listed, not tested, with n = 0 and no rate.
    untested = [item for item, row in owasp.items() if not row["tested"]]
    assert untested == ["LLM02", "LLM03", "LLM04", "LLM05", "LLM06", "LLM08", "LLM10"]
    for item in untested:
        row = owasp[item]
        assert (row["n"], row["passed"], row["failed"], row["errors"]) == (0, 0, 0, 0)
        assert row["pass_rate"] is None and row["interval"] is None and row["worst_failing_severity"] is None


def test_atlas_figures_counted_by_hand():
    atlas = figures_of(RUN)["mitre-atlas"]
    assert (atlas["AML.T0051"]["n"], atlas["AML.T0051"]["errors"], atlas["AML.T0051"]["failed"]) == (2, 1, 1)
    assert atlas["AML.T0056"]["failing_case_ids"] == ["c4"]
    assert atlas["AML.T0062"]["passed"] == 1
    # A category maps to the technique it names, not to its sub-techniques.
    assert atlas["AML.T0051.000"]["tested"] is False and atlas["AML.T0054"]["n"] == 0
    assert sum(row["tested"] for row in atlas.values()) == 3 and len(atlas) == 40


def test_nist_figures_counted_by_hand():
    nist = figures_of(RUN)["nist-ai-600-1"]
    security = nist["information-security"]  # c1, c2, c3 (prompt injection) and c4 (system prompt leakage)
    assert (security["n"], security["passed"], security["failed"], security["errors"]) == (3, 1, 2, 1)
    assert security["pass_rate"] == pytest.approx(1 / 3)
    assert security["failing_case_ids"] == ["c2", "c4"] and security["worst_failing_severity"] == "critical"
    assert (nist["confabulation"]["n"], nist["confabulation"]["passed"]) == (1, 1)
    assert [i for i, row in nist.items() if row["tested"]] == ["confabulation", "information-security"]
    assert len(nist) == 12
    # Failing cases of several categories come back in the run's order.
    reversed_run = figures_of(list(reversed(RUN)))["nist-ai-600-1"]["information-security"]
    assert reversed_run["failing_case_ids"] == ["c4", "c2"]


def test_eu_ai_act_figures_counted_by_hand():
    eu = figures_of(RUN)["eu-ai-act"]
    cyber = eu["Art15-cybersecurity"]
    assert (cyber["n"], cyber["passed"], cyber["failed"], cyber["errors"]) == (3, 1, 2, 1)
    assert (eu["Art15-accuracy"]["n"], eu["Art15-accuracy"]["pass_rate"]) == (1, 1.0)
    assert eu["Art9"]["tested"] is False and eu["Art55-1a"]["n"] == 0


def test_an_item_with_only_errors_is_not_tested_and_its_errors_are_counted():
    figures = figures_of(
        [("e1", None, "low", "unbounded_consumption"), ("e2", float("nan"), "low", "unbounded_consumption")]
    )
    row = figures["owasp-llm-2025"]["LLM10"]
    assert (row["tested"], row["n"], row["errors"], row["pass_rate"], row["interval"]) == (False, 0, 2, None, None)


def test_verdicts_from_numpy_and_pandas_columns():
    import numpy as np
    import pandas as pd

    passed = pd.array([True, False, None], dtype="boolean")
    figures = framework_figures(
        np.array(["a", "b", "c"], dtype=object),
        passed,
        severity=np.array(["low", "HIGH", "low"], dtype=object),
        category=pd.Series(["jailbreak"] * 3),
    )
    row = figures["mitre-atlas"]["AML.T0054"]
    assert (row["n"], row["passed"], row["failed"], row["errors"]) == (2, 1, 1, 1)
    assert row["worst_failing_severity"] == "high"


# --- precedence: a tool tag decides a framework it maps to; the category decides the others -----------------


def test_a_tag_decides_its_frameworks_and_the_category_the_rest():
    catalog = builtin_catalog()
    # garak's owasp:llm06 is the 2023 list's Sensitive Information Disclosure: LLM02 in the 2025 list.
    found = catalog.items_of(["owasp:llm06", "avid-effect:security:S0300"], None, "prompt_injection")
    assert found == {
        "owasp-llm-2025": {"LLM02"},
        "mitre-atlas": {"AML.T0057"},
        "nist-ai-600-1": {"data-privacy", "information-security"},
        "eu-ai-act": {"Art15-cybersecurity"},
    }
    # payload:hallucination names no OWASP item: OWASP comes from the category, everything else from the tag.
    found = catalog.items_of(["payload:hallucination"], None, "prompt_injection")
    assert found == {
        "owasp-llm-2025": {"LLM01"},
        "mitre-atlas": {"AML.T0062"},
        "nist-ai-600-1": {"confabulation"},
        "eu-ai-act": {"Art15-accuracy"},
    }


def test_an_empty_list_decides_too_and_a_tag_falls_back_to_its_parent():
    catalog = builtin_catalog()
    # model-identification names no OWASP item on purpose: the category's LLM07 does not apply.
    found = catalog.items_of([], "model-identification", "system_prompt_leakage")
    assert "owasp-llm-2025" not in found and found["mitre-atlas"] == {"AML.T0069"}
    assert found["nist-ai-600-1"] == {"information-security"}  # from the category
    assert catalog.items_of(["payload:malicious:badcode:virus"], None, None) == {
        "nist-ai-600-1": {"information-security"}
    }
    assert catalog.items_of([], "harmful:cybercrime:malicious-code", None)["eu-ai-act"] == {"Art55-1a"}
    # Unknown tags leave every framework to the category; keys are compared without case.
    assert catalog.items_of(["demon:Whatever"], None, "MISINFORMATION")["owasp-llm-2025"] == {"LLM09"}


def test_precedence_in_the_figures():
    run = [("g1", False, "high", "prompt_injection"), ("g2", True, "low", "prompt_injection")]
    tags = [["owasp:llm06"], []]
    owasp = figures_of(run, tags=tags)["owasp-llm-2025"]
    assert (owasp["LLM02"]["n"], owasp["LLM02"]["failing_case_ids"]) == (1, ["g1"])
    assert (owasp["LLM01"]["n"], owasp["LLM01"]["passed"]) == (1, 1)  # g1's category is overruled by its tag
    # The plugin column is a tool tag: promptfoo's plugin decides OWASP and ATLAS for pii:direct.
    figures = figures_of([("p1", False, "high", "privacy")], plugins=["pii:direct"])
    assert figures["owasp-llm-2025"]["LLM02"]["failed"] == 1
    assert figures["mitre-atlas"]["AML.T0057"]["failed"] == 1 and figures["mitre-atlas"]["AML.T0048.003"]["n"] == 0


def test_items_of_reads_a_case_object_a_dict_and_extra():
    from reporting.format.schema import Case

    case = Case.model_validate(
        {
            "probe_id": "x",
            "category": "misinformation",
            "severity": "low",
            "passed": True,
            "risk_score": 0.0,
            "safe_signal_hits": 0,
            "unsafe_signal_hits": 0,
            "boundary_or_refusal_signal": False,
            "tags": ["owasp:llm01"],
        }
    )
    assert case_tags(case) == ("owasp:llm01",)
    assert items_of(case)["owasp-llm-2025"] == {"LLM01"}
    assert items_of({"category": "jailbreak", "plugin": None, "extra": {"tags": "owasp:llm09"}})["owasp-llm-2025"] == {
        "LLM09"
    }
    assert case_tags({"tags": [1, None, "ok", {"a": 1}]}) == ("ok",)
    assert items_of({"category": 7}) == {}


def test_aggregate_shape_and_coverage():
    figures = figures_of(RUN)
    stored = aggregate_figures(figures)
    assert set(stored["owasp-llm-2025"]["LLM01"]) == {
        "title",
        "n",
        "passed",
        "failed",
        "errors",
        "pass_rate",
        "interval",
    }
    assert len(stored["nist-ai-600-1"]) == 12
    cover = coverage(figures)
    assert cover["owasp-llm-2025"] == {
        "items": 10,
        "tested": 3,
        "not_tested": ["LLM02", "LLM03", "LLM04", "LLM05", "LLM06", "LLM08", "LLM10"],
    }


def test_columns_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="severity has 1 values for 2 case ids"):
        framework_figures(["a", "b"], [True, False], severity=["low"], category=["x", "y"])


def test_figures_of_case_objects_match_the_columns():
    cases = [
        {"probe_id": i, "passed": p, "severity": s, "category": c, "plugin": None, "extra": {"tags": []}}
        for i, p, s, c in RUN
    ]
    assert figures_of_cases(cases) == figures_of(RUN)
    cases[0]["tags"] = ["owasp:llm09"]
    assert figures_of_cases(cases)["owasp-llm-2025"]["LLM09"]["n"] == 2


def test_the_column_tally_equals_the_case_by_case_tally_on_messy_columns():
    """framework_figures tallies groups by whole columns (pandas factorize, bincount); the case-by-case loop it
    replaced is the reference, on columns of every odd value a file can bring: None, "", NaN, numpy bools, 0/1,
    tags as lists, strings, nested or numbers, unknown severities, and a category that cannot be hashed."""
    import random

    import numpy as np

    import reporting.analysis.frameworks as fw

    rng = random.Random(7)
    verdicts = [True, False, None, np.True_, np.False_, 1, 0, float("nan"), 2, "yes"]
    categories = ["prompt_injection", "jailbreak", "", None, "toxicity", np.str_("jailbreak"), 5]
    plugins = [None, "harmful:hate", "pii", "", "indirect-prompt-injection"]
    tag_values = [None, [], ["owasp:llm01"], ["avid-effect:security:S0403", 3], "owasp:llm01", [["nested"]], ("a", "b")]
    severities = ["low", "HIGH", "critical", None, "medium", "severe", 3]
    for trial in range(40):
        n = rng.randint(0, 300)
        columns = {
            "case_ids": [f"c{i}" for i in range(n)],
            "passed": [rng.choice(verdicts) for _ in range(n)],
            "severity": [rng.choice(severities) for _ in range(n)] if trial % 3 else None,
            "category": [rng.choice(categories) for _ in range(n)] if trial % 4 else None,
            "plugin": [rng.choice(plugins) for _ in range(n)] if trial % 2 else None,
            "tags": [rng.choice(tag_values) for _ in range(n)] if trial % 5 else None,
        }
        if trial == 39:
            columns["category"] = [["unhashable"]] * n  # the loop decides
        if trial % 7 == 1 and columns["tags"] is not None:  # equal tag lists as distinct objects, not one shared
            columns["tags"] = [list(t) if isinstance(t, list) else t for t in columns["tags"]]
        args = (columns["case_ids"], columns["passed"])
        kwargs = {k: columns[k] for k in ("severity", "category", "plugin", "tags")}
        fast = fw.framework_figures(*args, **kwargs)
        grouped = fw.grouped
        try:
            fw.grouped = fw.grouped_by_loop
            slow = fw.framework_figures(*args, **kwargs)
        finally:
            fw.grouped = grouped
        assert fast == slow, trial


def test_failing_case_ids_are_made_when_read_and_equal_the_list():
    """``CaseIds``: the failing ids of an item read lazily (a million-case view reads a count and the first few),
    equal to the plain list, pickled as it, ids not text made text, one array of names for every item."""
    import pickle

    from reporting.analysis.framework_tally import CaseIds, failing_ids

    names: list = []
    case_ids = ["c0", 1, "c2", None, "c4"]
    plain = failing_ids([[1, 3], [0]], case_ids, [])  # the public figures: a list, as JSON takes it
    assert type(plain) is list and plain == ["c0", "1", "None"]
    ids = failing_ids([[1, 3], [0]], case_ids, names, when_read=True)
    assert isinstance(ids, CaseIds) and not names  # nothing made yet
    assert len(ids) == 3 and names == [] and ids._merged is None  # counted from the groups: none merged yet
    assert ids == ["c0", "1", "None"] and ids == ("c0", "1", "None") and ids != ["c0", "1"]
    assert ids[0] == "c0" and ids[-1] == "None" and ids[1:] == ["1", "None"]
    assert len(names) == 1  # made at the first read, shared below
    other = failing_ids([[4]], case_ids, names, when_read=True)
    assert list(other) == ["c4"] and len(names) == 1
    assert pickle.loads(pickle.dumps(ids)) == ["c0", "1", "None"] and type(pickle.loads(pickle.dumps(ids))) is list
    assert repr(ids) == "CaseIds(['c0', '1', 'None'])"
    assert failing_ids([], case_ids, names) == []


def test_the_public_figures_are_plain_json():
    figures = framework_figures(["c1", "c2"], [False, False], category=["prompt_injection"] * 2, severity=["high"] * 2)
    decoded = json.loads(json.dumps(figures))
    assert decoded["owasp-llm-2025"]["LLM01"]["failing_case_ids"] == ["c1", "c2"]
