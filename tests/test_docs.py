"""The published format documentation covers every field of the typed models."""

from pathlib import Path

from reporting.format.schema import Case, RunMeta, RunReport

DOC = (Path(__file__).resolve().parent.parent / "docs" / "report-format.md").read_text()


def test_every_model_field_is_documented():
    for model in (Case, RunMeta, RunReport):
        for name in model.model_fields:
            assert f"| `{name}` |" in DOC, f"{model.__name__}.{name} is not documented in docs/report-format.md"


def test_the_documented_example_is_valid():
    import json
    import re

    import reporting

    example = re.search(r"## Example\n\n```json\n(.*?)```", DOC, re.S).group(1)
    run = reporting.read_run(example.encode())
    report = reporting.report_document(reporting.build_report(run))
    assert report["cases"][0]["weighted_risk"] == 0.18 and report["drift"] == []
    assert report["cases"][0]["latency_ms"] == 812
    assert json.loads(json.dumps(report)) == report
