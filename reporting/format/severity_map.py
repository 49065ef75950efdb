"""A severity map: the user's tiers for a source's categories or probes, overriding any default mapping
(garak's tiers, promptfoo's plugin table, RunLens's JailbreakBench table...). ``--severity-map MAP.yaml``:

    categories:            # a case's category -> tier
      T009ignore: high
    probes:                # a probe id, a probe group, or the probe a group repeats (before '#') -> tier
      dan.Dan_11_0: critical

A probe entry wins over a category entry. docs/importers.md has an example.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reporting.format.problems import InputError, Problem
from reporting.format.safe_yaml import read_yaml
from reporting.format.schema import RunReport
from reporting.format.severity import SEVERITIES, normalize_severity


class SeverityMapError(InputError):
    """A severity map with problems; each names the file and the entry."""


@dataclass(frozen=True)
class SeverityMap:
    categories: dict[str, str] = field(default_factory=dict)
    probes: dict[str, str] = field(default_factory=dict)

    def tier(self, case: Any) -> str:
        return self._tier(case.probe_id, case.probe_group, case.category, case.severity)

    def _tier(self, probe_id: str, group: Any, category: str, severity: str) -> str:
        group = group or ""
        for key in (probe_id, group, group.split("#", 1)[0]):
            if key and key in self.probes:
                return self.probes[key]
        return self.categories.get(category, severity)

    def apply(self, run: RunReport) -> RunReport:
        """The run with every mapped case at its mapped tier (its stored weight dropped: the tier's default). A run
        read by columns stays one: its fields read as columns, the mapped rows replaced (``updated_cases``)."""
        from reporting.format.table_run import rows_for, updated_cases

        updates = {}
        for case in rows_for(run, None, ("probe_id", "probe_group", "category", "severity")):
            tier = self._tier(case["probe_id"], case["probe_group"], case["category"], case["severity"])
            if tier != case["severity"]:
                updates[case["probe_id"]] = {"severity": tier, "severity_weight": None, "weighted_risk": None}
        return run.model_copy(update={"cases": updated_cases(run, updates)})


def load_severity_map(path: str) -> SeverityMap:
    data = read_yaml(path)
    problems: list[Problem] = []
    if not isinstance(data, dict) or not set(data) <= {"categories", "probes"}:
        raise SeverityMapError([Problem(path, "$", "a severity map has 'categories' and/or 'probes' mappings")])
    tables: dict[str, dict[str, str]] = {"categories": {}, "probes": {}}
    for section, table in data.items():
        if not isinstance(table, dict):
            problems.append(Problem(path, section, "must map names to tiers", table))
            continue
        for name, tier in table.items():
            normal = normalize_severity(tier) if isinstance(tier, str) else None
            if normal is None:
                problems.append(Problem(path, f"{section}.{name}", f"must be one of {', '.join(SEVERITIES)}", tier))
            else:
                tables[section][str(name)] = normal
    if problems:
        raise SeverityMapError(problems)
    return SeverityMap(tables["categories"], tables["probes"])
