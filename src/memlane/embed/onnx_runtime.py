"""Importing onnxruntime without it writing into the user's home.

onnxruntime (1.32 here) starts its telemetry when its library loads: on Linux
that creates ``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` (a
``deviceid`` file and an ``onnxruntime.db`` event store) in the real home,
whatever ``MEMLANE_HOME`` says, on every process that loads the model.
memlane writes only under ``MEMLANE_HOME`` and the store, so the library is
loaded with ``ORT_DISABLE_TELEMETRY=1``, which onnxruntime reads at that one
moment (setting it later, or calling ``disable_telemetry_events()``, still
leaves the files; measured). The variable is set for the import only and
then put back as it was, so commands the engine runs afterwards (a store
command, an LLM command) see the user's environment unchanged.

numpy is imported first (core/native.py ``import_numpy_first`` says why).
"""

from __future__ import annotations

import importlib
import os
import threading
from types import ModuleType

from memlane.core.native import import_numpy_first

TELEMETRY_ENV = "ORT_DISABLE_TELEMETRY"

# Two threads loading the model at once must not restore the variable under
# each other: one sets it, imports, restores, the other then finds the
# module imported already.
_IMPORT_LOCK = threading.Lock()


def import_onnxruntime() -> ModuleType:
    """The ``onnxruntime`` module, its library loaded with telemetry off.

    ImportError passes through (callers say what to install).
    """
    import_numpy_first()
    with _IMPORT_LOCK:
        before = os.environ.get(TELEMETRY_ENV)
        os.environ[TELEMETRY_ENV] = "1"
        try:
            onnxruntime = importlib.import_module("onnxruntime")
        finally:
            if before is None:
                os.environ.pop(TELEMETRY_ENV, None)
            else:
                os.environ[TELEMETRY_ENV] = before
    return onnxruntime
