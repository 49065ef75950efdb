"""The report model built once from a run (figures, observability, drift, rubric results), and the CI gates."""
