"""The sessions layer: every past message of the project's agent transcripts, indexed."""
