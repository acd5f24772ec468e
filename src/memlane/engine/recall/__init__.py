"""Recall: the one search router for every kind of memory, cross-repo, expand and L3 transcripts."""
