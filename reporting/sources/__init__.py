"""Runs read by their content, whoever wrote them: above ``format`` (RunLens's own files) and ``importers``."""
