"""Turning responses into scored cases: patterns, the scorer, scoring runs and importers, probe suites."""
