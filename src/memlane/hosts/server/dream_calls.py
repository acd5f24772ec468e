"""pi's ``/dream`` on its connection: ``dream.plan`` and ``dream.apply`` (hosts/server/rpc.py).

| method | params | result |
|---|---|---|
| dream.plan | {save?: bool} | the plan (``DreamPlan.to_json``) with ``rendered``, ``empty``, ``applied`` when empty, ``saved_to`` with save |
| dream.apply | {plan} (the plan as dream.plan answered it) | {applied, changes, notices} |

The dream is the engine's (engine/topics/dream/hosted.py: the code ``memlane
dream`` runs). Its LLM is memlane's own ``[llm]``, and with ``llm.provider =
auto`` the session host's model through ``llm.complete`` on this very
connection, as capture distils (``dream_llm``). A plan takes minutes, so each
call runs on a thread of its own with its own handle on the project's memory
(``Memory.fork``): the connection answers the session's other requests
meanwhile, and no other connection's calls on the project wait for it. The
reply goes out when the thread is done (a ``Future``, rpc.py). The model's
calls end with the session like any other (``llm.cancel``): a dream still
planning then fails, nothing changed.

One dream at a time per project: a second ``dream.plan`` while one is
planning is refused. After an apply the session's snapshot is rebuilt (it
shows ``MEMORY.md``, which the dream rewrote).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from memlane.core.errors import MemlaneError
from memlane.hosts.jsonrpc import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from memlane.engine.live.session import Session
    from memlane.engine.project import Memory
    from memlane.hosts.server.projects import Project

_lock = threading.Lock()
_planning: set[str] = set()  # the collections a dream is being planned for


def plan(project: Project, session: Session, params: dict[str, Any]) -> Future[dict[str, Any]]:
    """``dream.plan``: the plan, made on a thread of its own."""
    from memlane.engine.topics.dream import dream_llm
    from memlane.engine.topics.dream.hosted import plan_for_host

    save = params.get("save", False)
    if not isinstance(save, bool):
        raise RpcError(INVALID_PARAMS, "dream.plan: save must be a boolean")
    collection = project.collection
    with _lock:
        if collection in _planning:
            raise MemlaneError(
                "a dream is already being planned for this project",
                "wait for its plan; then run /dream again if you want another",
            )
        _planning.add(collection)

    def work(mem: Memory) -> dict[str, Any]:
        try:
            llm = dream_llm(mem.config, mem.clock, host_call=session.host_call, host=session.host)
            return plan_for_host(mem, llm, save=save)
        finally:
            with _lock:
                _planning.discard(collection)

    return _on_thread(project, work, "memlane-dream-plan")


def apply(project: Project, session: Session, params: dict[str, Any]) -> Future[dict[str, Any]]:
    """``dream.apply``: exactly the plan that was shown, then the snapshot rebuilt."""
    from memlane.engine.topics.dream.hosted import apply_for_host

    data = params.get("plan")
    if not isinstance(data, dict):
        raise RpcError(
            INVALID_PARAMS, "dream.apply: params.plan must be the plan dream.plan answered"
        )

    def work(mem: Memory) -> dict[str, Any]:
        result = apply_for_host(mem, data)
        session.refresh_snapshot()
        return result

    return _on_thread(project, work, "memlane-dream-apply")


def _on_thread(
    project: Project, work: Callable[[Memory], dict[str, Any]], name: str
) -> Future[dict[str, Any]]:
    done: Future[dict[str, Any]] = Future()

    def run() -> None:
        mem = project.memory.fork()
        try:
            result = work(mem)
        except Exception as exc:  # the connection answers it as an error
            done.set_exception(exc)
        except BaseException as exc:
            done.set_exception(RuntimeError(f"the dream ended with {type(exc).__name__}"))
            raise
        else:
            done.set_result(result)
        finally:
            mem.close()

    # A daemon: a dream still waiting for its model does not keep an ending process alive.
    threading.Thread(target=run, name=name, daemon=True).start()
    return done
