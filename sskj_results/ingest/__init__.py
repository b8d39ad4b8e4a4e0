"""Raw client outputs -> results.json: bounded reading, key spellings, scenario building, parse and import-legacy."""
