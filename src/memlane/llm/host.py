"""The host's own model, reached through the sidecar (hosts/pi/sidecar.py): memlane
sends ``llm.complete {system, prompt, model?, model_role?, max_tokens?}`` and the
host (pi) answers ``{text}`` with whatever model and credentials it already
uses. Without ``model`` the host picks its session provider's cheapest model,
or with ``model_role: "session"`` the session's own model (a dream's).

``call`` is supplied by the host adapter: it sends the request, waits up to
the given number of seconds and returns the JSON-RPC result, or raises.
It is foreign code, so its answer is checked and anything it raises becomes
an ``LlmError``; the deadline is enforced here as well, in case ``call``
ignores its timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memlane.core.errors import LlmError, MemlaneError
from memlane.llm._deadline import call_with_deadline, timed_out
from memlane.llm._text import exception_reason, one_line
from memlane.llm.base import DEFAULT_MAX_TOKENS

if TYPE_CHECKING:
    from memlane.llm.factory import LlmChoice

#: ``call(params, timeout_s) -> result`` for the ``llm.complete`` request.
HostCall = Callable[[dict[str, Any], float], dict[str, Any]]

METHOD = "llm.complete"


class HostLLM:
    def __init__(
        self,
        call: HostCall,
        model: str | None = None,
        *,
        timeout_s: float = 30.0,
        session_model: bool = False,
    ) -> None:
        self._call = call
        self.model = model
        self.timeout_s = timeout_s
        self.session_model = session_model and not model

    def __repr__(self) -> str:
        return f"HostLLM(model={self.model!r})"

    @property
    def name(self) -> str:
        # Without a model the host picks its session provider's cheapest one.
        return f"host/{self.model or ('session model' if self.session_model else 'cheapest')}"

    def complete(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout_s: float | None = None,
    ) -> str:
        budget = self.timeout_s if timeout_s is None else timeout_s
        params: dict[str, Any] = {"system": system, "prompt": prompt, "max_tokens": max_tokens}
        if self.model:
            params["model"] = self.model
        elif self.session_model:
            params["model_role"] = "session"
        result = call_with_deadline(
            lambda _cancel: self._ask(params, budget),
            budget,
            thread_name="memlane-llm-host",
            hint="the host's model did not answer in time; raise llm.timeout_s",
        )
        if not isinstance(result, dict):
            raise LlmError(
                f"malformed answer: {METHOD} returned {type(result).__name__}, not an object",
                "the host adapter must return {text}",
            )
        text = result.get("text")
        if not isinstance(text, str):
            raise LlmError(
                f"malformed answer: no text in the {METHOD} result",
                "the host adapter must return {text}",
            )
        if not text.strip():
            raise LlmError("empty answer", f"{self.name} returned no text")
        return text.strip()

    def _ask(self, params: dict[str, Any], budget: float) -> Any:
        try:
            return self._call(params, budget)
        except LlmError:
            raise
        except TimeoutError:
            raise timed_out(budget) from None
        except MemlaneError as exc:
            raise LlmError(f"host error: {one_line(exc.message)}", exc.hint) from None
        except Exception as exc:
            raise LlmError(
                f"host error: {exception_reason(exc)}",
                f"the host could not run {METHOD}; see its log",
            ) from None


def from_choice(choice: LlmChoice, host_call: HostCall | None = None) -> HostLLM:
    """Provider ``host`` of the LLM registry (llm/factory.py): the host's model."""
    assert host_call is not None  # resolve_llm picks host only when one answers
    return HostLLM(
        host_call, choice.model, timeout_s=choice.timeout_s, session_model=choice.session_model
    )
