"""Observability geometry: structure, threshold, determinism and the figures it reports."""

import json

import numpy as np
import pytest
from sklearn.metrics import mutual_info_score, normalized_mutual_info_score

import reporting
from reporting.analysis.observability import PERMUTATIONS, case_texts, choose_k, permutation_nulls
from reporting.format.synthetic import synthetic_run
from reporting.format.writing import dumps
from reporting.resources import sample_run_files


@pytest.fixture(scope="module")
def run():
    return reporting.read_run(json.dumps(synthetic_run(120, seed=3)).encode())


def test_below_threshold_is_skipped_with_a_reason(hand_report):
    hand_report["cases"] = hand_report["cases"][:4]
    obs = reporting.observability(reporting.read_run(json.dumps(hand_report).encode()))
    assert obs == {"skipped": True, "reason": "4 case(s); observability needs at least 5"}
    # Above the threshold, cases without any text have nothing to embed (the labels are not text any more).
    obs = reporting.observability(reporting.read_run(json.dumps(hand_report).encode()), min_cases=3)
    assert obs == {"skipped": True, "reason": "the cases have no words to embed"}
    for i, case in enumerate(hand_report["cases"]):
        case["task"] = f"describe topic{i} plainly with detail{i % 2}"
    assert reporting.observability(reporting.read_run(json.dumps(hand_report).encode()), min_cases=3)["n_cases"] == 4


def test_structure_and_consistency(run):
    obs = reporting.observability(run)
    frame = reporting.cases_frame(run)
    assert obs["n_cases"] == 120
    assert obs["n_clusters"] == choose_k(120, 120) == 8  # round(sqrt(60)) = 8
    assert [c["probe_id"] for c in obs["cases"]] == frame["probe_id"].tolist()
    labels = np.array([c["cluster_id"] for c in obs["cases"]])
    sizes = [c["size"] for c in obs["clusters"]]
    assert sum(sizes) == 120 and sizes == sorted(sizes, reverse=True)  # ids ordered by size
    # The reported MI is the MI of the reported clusters with each label, in nats.
    assert obs["mutual_information"]["category"] == pytest.approx(
        mutual_info_score(labels, frame["category"]), abs=1e-6
    )
    outcome = np.where(frame["passed"], "pass", "fail")
    assert obs["normalized_mutual_information"]["pass_fail"] == pytest.approx(
        normalized_mutual_info_score(labels, outcome), abs=1e-6
    )
    for cluster in obs["clusters"]:
        members = labels == cluster["cluster_id"]
        assert cluster["pass_rate"] == pytest.approx(frame["passed"][members].mean(), abs=1e-6)
        assert cluster["dominant_category"] == frame["category"][members].value_counts().index[0]
        assert 1 <= len(cluster["top_terms"]) <= 5
    # The reported NMI is one of association, not of label count: the same clusters against a shuffled copy of
    # the categories (same six labels, same sizes) score near zero. The default embedding holds only the
    # cases' content, so this is the text following the category, not the label embedded.
    shuffled = np.random.default_rng(0).permutation(frame["category"].to_numpy())
    null = normalized_mutual_info_score(labels, shuffled)
    assert null < 0.25 < obs["normalized_mutual_information"]["category"]
    assert {"tfidf", "svd", "kmeans", "seed"} <= set(obs["method"])


def test_deterministic_byte_identical(run):
    first = dumps(reporting.observability(run))
    second = dumps(reporting.observability(reporting.read_run(json.dumps(synthetic_run(120, seed=3)).encode())))
    assert first == second
    assert dumps(reporting.observability(run, seed=1)) != first


def test_choose_k_rule():
    assert choose_k(5, 5) == 2 and choose_k(50, 50) == 5 and choose_k(100000, 100000) == 12
    assert choose_k(50, 3) == 3 and choose_k(50, 1) == 1


def test_identical_cases_collapse_to_one_cluster():
    cases = [
        {
            "probe_id": f"p{i}",
            "category": "c",
            "severity": "low",
            "passed": True,
            "risk_score": 0.1,
            "task": "same task text here about widgets",
        }
        for i in range(6)
    ]
    obs = reporting.observability(reporting.read_run(json.dumps(cases).encode()))
    assert obs["n_clusters"] == 1 and obs["mutual_information"]["category"] == 0.0


def test_sample_runs_are_valid_and_realistic():
    files = sample_run_files()
    assert len(files) >= 3
    models, suites = set(), {}
    agent = [p for p in files if p.name == "mail-agent-inspect.json"]
    assert len(agent) == 1  # the agent run imported from a real Inspect log (issue 32): checked on its own below
    for path in (p for p in files if p not in agent):
        run = reporting.read_run(path)
        frame = reporting.cases_frame(run)
        assert 100 <= len(frame) <= 500
        assert set(frame["severity"].astype(str)) == {"low", "medium", "high", "critical"}
        assert frame["category"].nunique() >= 6
        assert frame["response"].str.len().min() > 10 and frame["task"].str.len().min() > 10
        models.add(run.run.model)
        drift = reporting.build_report(run, with_observability=False).drift
        assert bool(drift) == ("legacy" in path.name), (path.name, drift[:3])  # only the legacy export drifts
        suites.setdefault(run.run.suite, []).append(set(frame["probe_id"]))
    same_suite = [ids for ids in suites.values() if len(ids) >= 2]
    assert same_suite and same_suite[0][0] == same_suite[0][1]  # two versions on the same probes
    assert len(models) >= 3
    agent_run = reporting.read_run(agent[0])
    assert agent_run.run.source.tool == "inspect" and not reporting.build_report(agent_run).drift
    calls = [c.function for case in agent_run.cases for m in case.messages or () for c in m.tool_calls]
    assert "send_email" in calls  # an agent case with a tool call
    assert any(sum(m.role == "user" for m in case.messages or ()) >= 2 for case in agent_run.cases)  # multi-turn


def _independent_run(n=300, seed=11):
    """Text, category, severity and outcome drawn independently: no label has anything to do with the text."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"word{i}" for i in range(400)]
    cases = []
    for i in range(n):
        passed = bool(rng.random() < 0.5)
        cases.append(
            {
                "probe_id": f"p{i:04d}",
                "category": str(rng.choice(["alpha", "beta", "gamma", "delta", "eps", "zeta"])),
                "severity": str(rng.choice(["low", "medium", "high", "critical"])),
                "passed": passed,
                "risk_score": 0.1 if passed else 0.8,
                "task": " ".join(rng.choice(vocabulary, 12)),
                "response": " ".join(rng.choice(vocabulary, 25)),
            }
        )
    return reporting.read_run(json.dumps(cases).encode())


def test_independent_labels_are_read_as_nothing_beyond_chance():
    from reporting.render.presentation import mutual_information_reading

    run = _independent_run()
    obs = reporting.observability(run)
    assert obs["method"]["embedding"] == "content" and obs["method"]["permutations"] >= 100
    assert set(obs["mutual_information_null"]) == set(obs["mutual_information_p"]) == set(obs["mutual_information"])
    assert all(p >= 0.01 for p in obs["mutual_information_p"].values()), obs["mutual_information_p"]
    # The MI of independent labels is its own null's size, not zero: that is why a null is needed.
    for key, value in obs["mutual_information"].items():
        assert 0 < obs["mutual_information_null"][key] and value < 3 * obs["mutual_information_null"][key]
    reading = " ".join(mutual_information_reading(obs))
    assert "No label is followed by the clusters beyond chance" in reading
    assert "threat family" not in reading and "strongly" not in reading
    # The design's embedding puts the labels in the text: the same run then "follows" its category and outcome,
    # which is the measurement measuring its own input; the reading says so.
    labelled = reporting.observability(run, embedding="with-labels")
    assert labelled["mutual_information_p"]["category"] < 0.01
    assert labelled["mutual_information_p"]["pass_fail"] < 0.01
    assert "partly by construction" in " ".join(mutual_information_reading(labelled))


def test_content_embedding_holds_no_label_tokens(run):
    frame = reporting.cases_frame(run)
    content, labelled = case_texts(frame), case_texts(frame, "with-labels")
    assert not any("category_" in t or "outcome_" in t or "severity_" in t for t in content)
    assert all(t.startswith("category_") for t in labelled)
    assert frame["response"].iloc[0][:40] in content[0] and frame["response"].iloc[0][:40] not in labelled[0]
    with pytest.raises(ValueError, match="unknown embedding"):
        case_texts(frame, "labels")


def test_permutation_null_known_answers():
    # Clusters identical to a balanced two-way label: MI = ln 2, no shuffle reaches it (p = 0).
    clusters = np.array([0] * 20 + [1] * 20)
    observed, null, p = permutation_nulls(clusters, {"x": np.array(["a"] * 20 + ["b"] * 20)})["x"]
    assert observed == pytest.approx(np.log(2)) and p == 0.0 and 0 < null < 0.1
    # A label with one value carries no information: MI 0, every shuffle equals it (p = 1).
    observed, null, p = permutation_nulls(clusters, {"y": np.array(["same"] * 40)})["y"]
    assert observed == 0 and null == 0 and p == 1.0
    # The MI agrees with scikit-learn's on arbitrary labels.
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, 5, 500), rng.choice(list("pqrs"), 500)
    assert permutation_nulls(a, {"z": b}, permutations=PERMUTATIONS)["z"][0] == pytest.approx(
        mutual_info_score(a, b), abs=1e-12
    )


def test_embedding_option_on_the_command_line(tmp_path):
    from reporting.cli import main

    source = sample_run_files()[0]
    out = tmp_path / "r.json"
    assert main(["recompute", str(source), "-o", str(out), "--embedding", "with-labels"]) == 0
    assert json.loads(out.read_text())["observability"]["method"]["embedding"] == "with-labels"
    assert main(["recompute", str(source), "-o", str(tmp_path / "c.json")]) == 0
    obs = json.loads((tmp_path / "c.json").read_text())["observability"]
    assert obs["method"]["embedding"] == "content" and "mutual_information_p" in obs
