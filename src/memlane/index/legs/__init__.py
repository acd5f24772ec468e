"""The ranked legs of a hybrid search and how they are fused: the BM25 leg
(``lexical``, its query parsing in ``query``), the dense leg (``dense``, kept
in step with the file by ``dense_sync``), rank fusion (``fusion``) and the
calibrated evidence fusion (``relevance``)."""
