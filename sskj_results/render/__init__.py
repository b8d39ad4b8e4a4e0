"""Markdown, PNG and HTML from a loaded run or a comparison, and writing them (publish, collect)."""
