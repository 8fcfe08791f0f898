"""The published file formats: ``result.schema.json``, the JSON Schema of result files
(:func:`hmmbench.results.json_schema` reads it)."""
