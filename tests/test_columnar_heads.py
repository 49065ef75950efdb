"""The columnar reader's heads of judged cases (``reporting.format.columnar_heads``, issue 34): a chunk of cases
carrying verdicts is read decoding a few keys a case, with its judges in Arrow's strict schema, and gives the very
run the reader gave decoding every key (table, the file's own weights, stored figures), which is the per-record
reader's; what the strict parse refuses (an extra field, a key given twice, too many judges) is read as before."""

from __future__ import annotations

import json
from typing import Optional

import pytest
from test_columnar import assert_read_alike, per_record
from test_columnar_v3 import GARAK, VARIATIONS, _run, imported, variation_file  # noqa: F401 (a fixture)

import reporting.format.columnar as columnar
from reporting.format.columnar_heads import MAX_JUDGES


def _read(path, monkeypatch, heads: bool):
    """``read_table`` of ``path``, and how each chunk was parsed: heads / known / ignore."""
    ways: list[str] = []
    parse = columnar._parse_known

    def watched(*args):
        found = parse(*args)
        ways.append("heads" if found[2] is not None else "known" if found[1] else "ignore")
        return found

    with monkeypatch.context() as patch:
        patch.setattr(columnar, "_parse_known", watched)
        if not heads:
            patch.setattr(columnar, "judged_heads", lambda *args: None)
        return columnar.read_table(str(path)), ways


def _same(new, old) -> None:
    assert (new is None) == (old is None)
    if new is None:
        return
    assert new.table.equals(old.table)
    assert (new.given is None and old.given is None) or new.given.equals(old.given)
    assert new.stored == old.stored and new.meta == old.meta and new.version == old.version


def _check(path, monkeypatch, way: Optional[str]) -> None:
    """The same run by heads as by every key (``way``: how some chunk must be parsed), and the per-record reader's."""
    new, ways = _read(path, monkeypatch, heads=True)
    old, _ = _read(path, monkeypatch, heads=False)
    assert way is None or way in ways, ways
    _same(new, old)
    slow = per_record(path)
    if slow.ok and not slow.problems:
        assert_read_alike(new, slow)
    else:
        assert new is None


GARAK_VARIATIONS = [name for name, (run, _, _) in VARIATIONS.items() if run == GARAK]


@pytest.mark.parametrize("name", GARAK_VARIATIONS)
def test_each_garak_variation_reads_the_same_by_heads_as_by_every_key(imported, tmp_path, monkeypatch, name):  # noqa: F811
    """Every hostile variation of a garak run: the same run (or handed back alike) either way."""
    path = variation_file(imported, tmp_path, name)
    new, ways = _read(path, monkeypatch, heads=True)
    old, _ = _read(path, monkeypatch, heads=False)
    _same(new, old)


def _judged_document(imported, change) -> str:  # noqa: F811
    document = _run(imported, GARAK)
    change(document["cases"])
    return json.dumps(document)


def _explicit_nulls(cases):
    for i, case in enumerate(cases):
        if i % 2:
            case.update(matched_safe_patterns=None, safe_signal_hits=None, failure_modes=None)


def _extra_field(cases):
    cases[-1]["latency_ms"] = 12


def _many_judges(cases):
    for i, case in enumerate(cases):
        case["verdicts"] = {f"judge {i % (MAX_JUDGES + 1)}": {"passed": True, "score": 0.0, "explanation": "x"}}


def _unjudged_cases(cases):
    for case in cases[::3]:
        case.pop("verdicts", None)


CASES = {
    # (change of the cases, how the chunk must be parsed)
    "as imported": (lambda cases: None, "heads"),
    "explicit nulls beside verdicts": (_explicit_nulls, "heads"),
    "cases without verdicts among them": (_unjudged_cases, "heads"),
    "a field beyond the format's": (_extra_field, "ignore"),
    "more judges than the schema takes": (_many_judges, "ignore"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_judged_cases_by_heads_where_the_strict_parse_vouches(imported, tmp_path, monkeypatch, name):  # noqa: F811
    change, way = CASES[name]
    path = tmp_path / "run.json"
    path.write_text(_judged_document(imported, change))
    _check(path, monkeypatch, way)


@pytest.mark.parametrize(
    "old, new",
    [
        ('"passed": true, "risk_score"', '"passed": true, "passed": null, "risk_score"'),  # a checked key twice
        ('"verdicts": {', '"verdicts": null, "verdicts": {'),  # verdicts twice, the first null
        ('"verdicts": {', '"x\\"verdicts": {"a": 1}, "verdicts": {'),  # a key ending like verdicts, beyond the format
        ('"explanation": "', '"explanation": "\\"verdicts\\": {}, '),  # a text holding the key
    ],
)
def test_keys_given_twice_or_like_verdicts_are_read_as_before(imported, tmp_path, monkeypatch, old, new):  # noqa: F811
    text = json.dumps(_run(imported, GARAK))
    assert old in text
    path = tmp_path / "run.json"
    path.write_text(text.replace(old, new, 1))
    _check(path, monkeypatch, None)
