"""The one YAML reader of the project: safe types only, and aliases counted before they expand.

A YAML alias (``*name``) refers back to an anchored node; nested aliases make a 448-byte file
expand to gigabytes ("billion laughs") in whatever walks the result. Aliases are allowed (the
built-in pattern file uses them for shared lists), but the document's size with every alias
expanded is computed on the composed node graph, each distinct node once, and capped at
``MAX_YAML_NODES`` before a single Python object is built; a recursive alias is refused. Deep nesting,
non-UTF-8 bytes and numbers too long to convert are problems too, never exceptions.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Union

import yaml

from reporting.format.problems import InputError, unreadable

MAX_YAML_BYTES = 16 * 1024 * 1024


class YamlProblem(InputError):
    """A YAML file that cannot be read; the message is one line naming the file."""


MAX_YAML_NODES = 200_000  # nodes of the document once every alias is expanded


class _BoundedLoader(yaml.SafeLoader):
    """Safe types only; aliases allowed, but the document's size with every alias expanded is computed from the
    composed node graph (each distinct node once) and capped before any Python object is built."""

    def compose_document(self):
        node = super().compose_document()
        _expanded_size(node)
        return node


def _expanded_size(root: yaml.Node) -> int:
    sizes: dict[int, int] = {}
    visiting: set[int] = set()
    # Iterative post-order walk: deep documents do not exhaust Python's stack here.
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            visiting.discard(key)
            children = _children(node)
            total = 1 + sum(sizes[id(c)] for c in children)
            if total > MAX_YAML_NODES:
                mark = node.start_mark
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"the document expands to more than {MAX_YAML_NODES:,} nodes through its aliases "
                    f"(an alias bomb?) at line {mark.line + 1}",
                    mark,
                )
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in visiting:
            raise yaml.composer.ComposerError(
                None, None, "a recursive alias (a node that contains itself)", node.start_mark
            )
        visiting.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes[id(root)]


def _children(node: yaml.Node) -> list:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def parse_yaml(text: Union[str, bytes], label: str) -> Any:
    """Parse YAML text; raise ``YamlProblem`` with one line naming ``label`` for anything wrong."""
    if isinstance(text, bytes):
        if len(text) > MAX_YAML_BYTES:
            raise YamlProblem(f"{label}: $: the file is larger than {MAX_YAML_BYTES // (1024 * 1024)} MB")
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise YamlProblem(
                f"{label}: $: not UTF-8 text: byte 0x{text[exc.start]:02x} at offset {exc.start} cannot be decoded"
            ) from None
    limit = sys.getrecursionlimit()
    try:
        return yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        detail = str(exc).replace("\n", " ")
        if "aliases" in detail or "recursive alias" in detail:
            detail = next(line for line in str(exc).splitlines() if "alias" in line)
        raise YamlProblem(f"{label}: $: not valid YAML: {detail[:300]}") from None
    except RecursionError:
        raise YamlProblem(f"{label}: $: nesting is too deep") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise YamlProblem(f"{label}: $: a value cannot be read: {str(exc)[:200]}") from None
    finally:
        sys.setrecursionlimit(limit)


def read_yaml(source: Union[str, Path, tuple[str, bytes]]) -> Any:
    """Read a YAML file (a path, or ``(label, bytes)`` held in memory)."""
    if isinstance(source, tuple):
        label, data = source
        return parse_yaml(data, label)
    try:
        with open(source, "rb") as handle:
            data = handle.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise YamlProblem([unreadable(str(source), exc)]) from None
    return parse_yaml(data, str(source))
