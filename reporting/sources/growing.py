"""A run file read as it grows, whoever writes it, told by its first bytes: a garak ``report.jsonl``
(``reporting.importers.garak_growing``) or a RunLens JSON Lines run (``reporting.format.growing``, which holds
the reading of the new bytes; docs/live.md)."""

from __future__ import annotations

from typing import Optional

from reporting.format.growing import GrowingFile, LineReader, runlens_lines
from reporting.importers.garak import looks_like_garak
from reporting.importers.garak_growing import GarakLines


def _garak(head: bytes) -> bool:
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return bool(text) and looks_like_garak(text)


def kind_of(head: bytes, name: str) -> Optional[str]:
    """ "garak" (a garak report), "runlens" (a RunLens JSON Lines run: its first line is a case object), or None
    for anything not read as it grows."""
    if _garak(head):
        return "garak"
    return "runlens" if runlens_lines(head, name) else None


class GrowingRun(GrowingFile):
    """One growing run file, a garak report or a RunLens JSON Lines run, read a little at each ``refresh``."""

    def reader_of(self, head: bytes) -> tuple[Optional[str], Optional[LineReader]]:
        if _garak(head):
            return "garak", GarakLines(self.label)
        return super().reader_of(head)
