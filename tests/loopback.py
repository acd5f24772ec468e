"""One HTTP server on 127.0.0.1 in a background thread: what every fake endpoint runs on."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer:
    """A ``ThreadingHTTPServer`` on a free port of 127.0.0.1, serving until ``close()``.

    Handler threads are daemons and are not waited for at close, so a handler
    still delaying or trickling an answer never holds up the end of a test;
    the poll interval is short because ``shutdown()`` waits up to one.
    """

    def __init__(self, handler: type[BaseHTTPRequestHandler], **bound: object) -> None:
        """*bound*: class attributes the handler sees (e.g. the fake it answers for)."""
        served = type(handler.__name__, (handler,), bound) if bound else handler
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), served)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)
