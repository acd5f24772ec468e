"""Topics: curated knowledge files, auto-surfacing, extraction, dream and importers."""
