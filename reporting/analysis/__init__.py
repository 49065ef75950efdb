"""Figures computed from the cases: case frame, metrics, statistics, filters, observability, compare, trend."""
