"""Arrow's memory from the C library's allocator, given back when a large read is done.

Arrow's own default pool (mimalloc in the Linux wheels) keeps what it freed for its next allocations, where
Python's objects cannot use it: an imported garak run of a million cases peaked at 2.1 GB in `recompute` with it
and at 1.9 GB with the system allocator, whose freed memory Python's objects reuse and which ``release_unused`` trims
(bench/RESULTS.md). A pool the user names in ``ARROW_DEFAULT_MEMORY_POOL`` is kept.
"""

from __future__ import annotations

import os
import sys

POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


def use_system_pool() -> None:
    """Arrow allocates with the C library's malloc from now on (before pyarrow is imported: every pool of the
    process; after: pyarrow's default), unless the user chose a pool."""
    if POOL_VARIABLE in os.environ:
        return
    if "pyarrow" in sys.modules:
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())
    else:
        os.environ[POOL_VARIABLE] = "system"


def give_back() -> None:
    """Memory Arrow freed, returned to the system (after a large read, before the figures are computed)."""
    if "pyarrow" in sys.modules:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()


STEP_ROWS = 2_000_000  # cases from which a reader's or a frame's steps give back what each freed as they go


def give_back_between(rows: int) -> None:
    """``give_back`` between the steps of a large read (``rows`` cases, at least ``STEP_ROWS``): what one step
    freed, scattered through the C library's heap and its threads' arenas, is not otherwise reused by the next and
    counts in the process's peak (ten million cases as JSON Lines: 4.86 -> 3.99 GiB at the open's peak, for 0.6 s of
    trimming over about twenty steps)."""
    if rows >= STEP_ROWS:
        give_back()
