"""The contract: results.json and comparison.json models, their schema, safe I/O, errors, redaction, names."""
