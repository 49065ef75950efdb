"""Time stamps, one way: UTC, to the second, ISO 8601 with a trailing Z."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Optional


def utc_stamp(moment: Optional[datetime] = None) -> str:
    """``moment`` (default now) as 2026-11-02T14:30:00Z; a naive moment is taken as UTC."""
    moment = moment or datetime.now(timezone.utc)
    moment = moment.astimezone(timezone.utc) if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def generated_at(timestamp: Optional[str] = None) -> str:
    """`timestamp` (ISO 8601 or epoch seconds), else $SOURCE_DATE_EPOCH (reproducible builds), else now."""
    value = timestamp if timestamp is not None else os.environ.get("SOURCE_DATE_EPOCH")
    if value is None or value == "":
        return utc_stamp()
    if str(value).strip().lstrip("-").isdigit():
        return utc_stamp(datetime.fromtimestamp(int(value), timezone.utc))
    return utc_stamp(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
