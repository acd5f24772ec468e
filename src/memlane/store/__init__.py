"""The markdown side of memory: daily files, entries, anchors, chunking.

Nothing here knows about the index. Chunks leave this package as
``core.types.Chunk`` values and the engine hands them to an index backend.
"""
