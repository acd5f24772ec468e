"""``memlane ui``: a local web viewer of one project's memory.

Translation only, like every host: each page calls the engine's public API
(the tools' dispatch for search, expand, transcript, forget and status;
the timeline, topics and sessions views) and renders the answer as HTML.
``app.py`` builds the Starlette application, ``security.py`` holds the
token and CSRF checks, ``render.py`` the Jinja2 templates (``templates/``,
autoescaped), ``markdown.py`` memory markdown through markdown-it-py,
``pages_*.py`` the pages, ``server.py`` runs it on 127.0.0.1 with uvicorn.
Templates and assets are package data: nothing is fetched from a network.
"""
