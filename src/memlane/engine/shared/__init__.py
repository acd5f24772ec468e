"""What several sub-packages of the engine share, beneath all of them.

The result types (``results``), the search request and its checks
(``request``), the protocol the services see of a ``Memory`` (``ports``) and
what every handle of one memory shares (``parts``, ``embedding``,
``fresh``), the model's score scale (``scale``), the earlier memories a
writer is offered (``earlier``) and the one tool spec (``tool_spec``,
``tool_catalog``, ``tool_outputs``). Nothing here imports the rest of the
engine (tests/test_import_graph.py); importing this package imports none of
its modules, so ``memlane mcp`` lists the tools without loading the engine.
"""
