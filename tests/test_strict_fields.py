"""An object read strictly but for the fields its reader never reads (``strict_fields.strict_object_loads``, an
Inspect sample without its ``events``): the fields read are what ``strict_loads`` reads of them, value and
problems alike; the fields not read are held to JSON's grammar and UTF-8 only; a key of the object given twice,
and anything msgspec refuses, is read whole and named as a whole reading names it."""

from __future__ import annotations

import json
import random
import zipfile

import pytest

from reporting.format.strict_fields import strict_object_loads
from reporting.format.strict_json import strict_loads
from reporting.importers.inspect_stream import stream_inspect

UNREAD = frozenset({"events", "events_data"})


def doc(*fields: tuple[bytes, bytes]) -> bytes:
    return b"{" + b", ".join(b'"' + key + b'": ' + value for key, value in fields) + b"}"


def outcome(result) -> tuple[str, list[str]]:
    value, problems = result
    return repr(value), [str(p) for p in problems]


def whole_less_unread(given: bytes):
    """``strict_loads`` of the whole object, its unread fields dropped from the value."""
    value, problems = strict_loads("s.json", given, "$")
    return ({k: v for k, v in value.items() if k not in UNREAD} if isinstance(value, dict) else value), problems


# Values a read field may hold: each read as strict_loads reads it (msgspec's value or the strict decoder's
# problem), wherever the unread fields stand; or the whole object read (True), as for a colon written as an
# escape (the colons that tell a key given twice cannot be counted) or a lone surrogate (refused by msgspec).
READ_VALUES = [
    (b'{"a": 1, "b": [1, 2.5, -0.0, 1e308, 5e-324]}', False),
    (b'{"a": 1, "a": 2}', False),  # a key given twice inside a read field
    (b'{"t": "02:21:36", "u": "a:b", "k:y": "::"}', False),
    (b'{"t": "02:21:36", "u": "a\\u003ab"}', True),
    (b"[1.5, 12345678901234567]", False),  # beyond 2^53
    (b'"\\ud800"', True),
    (b"1e999", False),
    (b'"\\ud83d\\ude00:"', False),
    (b'"caf\xc3\xa9"', False),
    (b"[" * 150 + b"]" * 150, False),
    (b"[" * 250 + b"]" * 250, False),  # beyond the depth limit
]


@pytest.mark.parametrize("value, whole", READ_VALUES, ids=range(len(READ_VALUES)))
def test_a_read_field_is_what_strict_loads_reads_of_the_object_without_the_unread_fields(value, whole):
    events = b'[{"x": 1, "x": 2}, 123456789012345678901, 1e999, ' + b"[" * 300 + b"]" * 300 + b"]"  # no problem here
    for given in (
        doc((b"id", b"7"), (b"events", events), (b"messages", value), (b"events_data", b"{}")),
        doc((b"messages", value), (b"events", events)),
        doc((b"events", events), (b"messages", value)),
    ):
        without = doc((b"id", b"7"), (b"messages", value)) if given.startswith(b'{"id"') else doc((b"messages", value))
        found = strict_object_loads("s.json", given, "samples/1.json", UNREAD)
        assert outcome(found) == outcome(strict_loads("s.json", given if whole else without, "samples/1.json"))
        assert outcome(strict_object_loads("s.json", given.decode("utf-8"), "samples/1.json", UNREAD)) == outcome(found)


@pytest.mark.parametrize(
    "events",
    [
        b"[NaN]",
        b'["a\x01b"]',  # a control character in a string
        b'["\\q"]',  # an escape JSON has not
        b"[1, 2,]",
        b'["\xff"]',  # not UTF-8
        b"[" * 1200 + b"]" * 1200,  # beyond msgspec's nesting
        b"[01]",
        b'["\\udc00"]',  # a lone surrogate
    ],
)
def test_an_unread_field_that_is_not_json_is_named_as_a_whole_reading_names_it(events):
    given = doc((b"id", b"7"), (b"events", events))
    found = strict_object_loads("s.json", given, "samples/1.json", UNREAD)
    assert found[0] is None and found[1]
    assert outcome(found) == outcome(strict_loads("s.json", given, "samples/1.json"))


@pytest.mark.parametrize(
    "given",
    [
        doc((b"id", b"7"), (b"events", b"[]"), (b"id", b"8")),  # a read key twice
        doc((b"events", b"[]"), (b"id", b"7"), (b"events", b"[1]")),  # an unread key twice
        doc((b"a:", b'"::"'), (b"events", b'[":"]'), (b"a:", b"1")),  # colons in keys and values
        doc((b"a\\u003a", b"1"), (b"events", b"[]"), (b"b", b"1"), (b"b", b"2")),  # an escaped colon, a key twice
        doc((b"events", b"[]"), (b"events_data", b'{"m": "x:y"}'), (b"events_data", b"{}")),
        b'[{"events": []}]',  # not an object
        b"\xef\xbb\xbf" + doc((b"events", b"[]")),
        doc((b"events", b"[]")) + b" x",
    ],
)
def test_a_key_of_the_object_given_twice_or_an_object_msgspec_refuses_is_read_whole(given):
    assert outcome(strict_object_loads("s.json", given, "$", UNREAD)) == outcome(whole_less_unread(given))


def test_an_object_read_whole_without_a_problem_still_drops_its_unread_fields():
    given = doc((b"a", b'"\\u003a"'), (b"events", b'[{"x": 1}]'), (b"b", b"2"))
    assert strict_object_loads("s.json", given, "$", UNREAD) == ({"a": ":", "b": 2}, [])


def test_an_object_without_unread_fields_is_read_whole_and_the_unread_fields_are_dropped_in_order():
    plain = doc((b"b", b"1"), (b"a", b'{"c": [1, 2]}'))
    assert strict_object_loads("s.json", plain, "$", UNREAD) == strict_loads("s.json", plain, "$")
    value, problems = strict_object_loads("s.json", doc((b"b", b"1"), (b"events", b"[]"), (b"a", b"2")), "$", UNREAD)
    assert problems == [] and list(value.items()) == [("b", 1), ("a", 2)]


def test_random_objects_read_as_the_fields_read_are_read_whole():
    """Random objects of keys that repeat (at the top and inside), colons, escapes and long integers: the value
    is the whole reading's less the unread fields, or the problems are those of the whole reading, or of the
    object without its unread fields."""
    rng = random.Random(34)
    atoms = [b"1", b'"a:b"', b"null", b"2.5", b'"::"', b"true"] * 3 + [b"12345678901234567", b'"\\u003a"', b'"\\ud800"']

    def value(depth: int) -> bytes:
        kind = rng.random()
        if depth > 2 or kind < 0.4:
            return rng.choice(atoms)
        if kind < 0.7:
            return b"[" + b",".join(value(depth + 1) for _ in range(rng.randrange(4))) + b"]"
        keys = [rng.choice([b"x", b"y", b"x:", b"z"]) for _ in range(rng.randrange(4))]
        return b"{" + b",".join(b'"' + k + b'":' + value(depth + 1) for k in keys) + b"}"

    agreed = 0
    for _ in range(1500):
        keys = rng.sample([b"id", b"events", b"messages", b"events_data", b"a:", b"scores"], rng.randrange(1, 6))
        if rng.random() < 0.2:  # a key of the object given twice
            keys.insert(rng.randrange(len(keys) + 1), rng.choice(keys))
        fields = [(k, value(0)) for k in keys]
        given = doc(*fields)
        found = strict_object_loads("s.json", given, "$", UNREAD)
        whole = strict_loads("s.json", given, "$")
        if (
            len(set(keys)) < len(keys)
            or b"\\u003a" in given
            or b"\\ud800" in given
            or UNREAD.isdisjoint(map(bytes.decode, keys))
        ):
            assert outcome(found) == outcome(whole_less_unread(given)), given
            continue
        without = doc(*[(k, v) for k, v in fields if k.decode() not in UNREAD])
        assert outcome(found) == outcome(strict_loads("s.json", without, "$")), given
        if not whole[1]:
            agreed += 1
            assert found[0] == {k: v for k, v in whole[0].items() if k not in UNREAD}
    assert agreed > 100  # the common case was met


def test_an_inspect_samples_events_are_not_decoded_and_its_messages_still_are(tmp_path):
    """An .eval sample whose transcript holds what the strict reading refuses (a key twice, an integer beyond
    2^53) is imported as the same sample without it; a key given twice in its messages is still named."""
    header = {"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}, "results": {"scores": []}}
    sample = {"id": 1, "epoch": 1, "input": "hi", "messages": [{"role": "user", "content": "hi"}], "scores": {}}
    events = b'[{"event": "model", "event": "x", "n": 123456789012345678901}]'

    def read(text: bytes):
        path = tmp_path / "log.eval"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("header.json", json.dumps(header))
            archive.writestr("samples/1_epoch_1.json", text)
        _, cases, _, problems = stream_inspect(path.read_bytes(), "log.eval")
        return list(cases), problems

    plain = json.dumps(sample).encode()
    with_events = plain[:-1] + b', "events": ' + events + b"}"
    assert read(with_events) == read(plain) and read(plain)[1] == [] and len(read(plain)[0]) == 1
    twice = with_events.replace(b'"role": "user"', b'"role": "user", "role": "assistant"')
    cases, problems = read(twice)
    assert [(p.path, p.message.split(":")[0]) for p in problems] == [
        ("samples/1_epoch_1.json.messages[0]", "duplicate key")
    ]
    assert problems[0].got == "role" and cases == []
