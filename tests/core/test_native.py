"""core/native.py: the interpreter's exit waits for a native call in flight on a
daemon thread, and no daemon thread starts one once the exit began.

Each case is a real program run as a process (what happens at interpreter exit
cannot be observed from inside a test). The native call is stood in for by a
wait inside ``native_call()``: the gate counts calls, whatever runs in them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

PROGRAM = """
import sys, threading, time
from pathlib import Path
from memlane.core.native import at_exit, native_call

out = Path(sys.argv[1])
inside, returning = threading.Event(), threading.Event()

def late() -> None:
    with native_call():
        (out / "late").write_text("ran")

def in_flight() -> None:
    with native_call():
        inside.set()
        returning.wait()
        # Still inside a second after the main thread returned: an exit that
        # did not wait would have ended the process by now.
        time.sleep(1.0)
        (out / "in-flight").write_text("finished")

def hook() -> None:
    (out / "hook").write_text("after " + ",".join(sorted(p.name for p in out.iterdir())))
    # A daemon thread that starts a call now waits at the gate for ever.
    thread = threading.Thread(target=late, daemon=True)
    thread.start()
    thread.join(1.0)

at_exit(hook)
threading.Thread(target=in_flight, daemon=True).start()
inside.wait()
print("main done")
returning.set()
"""


#: memlane's commands end through ``exit_process``: with only daemon threads
#: left it skips the interpreter's exit (``os._exit``), so it runs the gate's
#: waits and hooks itself (a Milvus Lite database flushed: they ran nowhere,
#: and a second index run left its rows in Lite's write-ahead log).
ENDINGS = {
    "interpreter exit": "",
    "exit_process": "from memlane.core.process import exit_process\nexit_process(0)\n",
}


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_the_exit_waits_for_a_call_in_flight_and_parks_a_late_one(
    tmp_path: Path, ending: str
) -> None:
    script = tmp_path / "program.py"
    script.write_text(PROGRAM + ENDINGS[ending], encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run(
        [sys.executable, str(script), str(out)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "main done\n", "")
    # The call in flight ran to its end before the process exited ...
    assert (out / "in-flight").read_text() == "finished"
    # ... the at_exit hook ran after it ...
    assert (out / "hook").read_text() == "after in-flight"
    # ... and a daemon thread that tried to start a call once the exit began
    # never ran it.
    assert not (out / "late").exists()
