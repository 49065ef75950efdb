import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def case(probe_id, category, severity, passed, risk, **extra):
    return {
        "probe_id": probe_id,
        "category": category,
        "severity": severity,
        "passed": passed,
        "risk_score": risk,
        **extra,
    }


# A six-case run whose every figure is computed by hand in test_metrics.py.
HAND_CASES = [
    case("a", "alpha", "low", True, 0.1, safe_signal_hits=2, boundary_or_refusal_signal=True),
    case("b", "alpha", "critical", False, 0.8, unsafe_signal_hits=3, detected_failure_modes=["leak", "override"]),
    case(
        "c",
        "beta",
        "High",
        False,
        0.6,
        safe_signal_hits=1,
        unsafe_signal_hits=1,
        boundary_or_refusal_signal=True,
        detected_failure_modes=["leak"],
    ),
    case("d", "beta", "medium", True, 0.2, safe_signal_hits=1),
    case(
        "e",
        "gamma",
        "MEDIUM",
        False,
        0.5,
        severity_weight=1.0,
        unsafe_signal_hits=2,
        detected_failure_modes=["override"],
    ),
    case("f", "gamma", "low", True, 0.0),
]


@pytest.fixture
def hand_report():
    return {
        "schema_version": 1,
        "run": {"run_id": "hand", "model": "m", "suite": "s", "created_at": "2026-11-01T10:00:00Z"},
        "cases": [dict(c) for c in HAND_CASES],
    }


@pytest.fixture
def write_json(tmp_path):
    def write(name, value):
        path = tmp_path / name
        path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
        return path

    return write
