/**
 * The sidecar protocol's shapes and the shim's deadlines and messages.
 *
 * The protocol itself is memlane's (src/memlane/hosts/pi/sidecar.py): JSON-RPC 2.0,
 * one JSON object per line over stdio.
 */

export const SHUTDOWN_GRACE_MS = 2000;
export const MAX_SIDECAR_RESPAWNS = 2;
// Consecutive unanswered requests of one method after which the child counts as crashed
// (killed, then respawned lazily).
export const TIMEOUT_CRASH_THRESHOLD = 3;

// Per-request deadlines (ms). The sidecar enforces the real budgets (auto-context
// 300 ms, shutdown flush 15 s); these only keep pi from hanging on a stuck child.
// session_start's is how long the start may take in the background: pi never waits
// for it.
export const TIMEOUT_MS: Record<string, number> = {
	session_start: 30_000,
	before_agent_start: 5_000,
	agent_settled: 10_000,
	session_compact: 10_000,
	session_shutdown: 20_000,
	tool: 300_000,
};
export const DEFAULT_TIMEOUT_MS = 30_000;
// How long each event waits for a start still under way (a cold engine takes seconds)
// before it goes on without memory: the event's own deadline, except a tool's (and
// /memory's), whose call may take minutes but whose wait for the start should not:
// past it the tool answers that memory is starting.
export const START_WAIT_MS: Record<string, number> = {
	before_agent_start: TIMEOUT_MS.before_agent_start,
	agent_settled: TIMEOUT_MS.agent_settled,
	session_compact: TIMEOUT_MS.session_compact,
	tool: 10_000,
};
// The engine's notification that it no longer wants an llm.complete answer.
export const CANCEL_METHOD = "llm.cancel";
// /dream's plan (`dream.plan`): the LLM restates every topic it changes (memlane gives it
// at least 180 s, llm.timeout_s when longer, and cancels its llm.complete then); past this
// pi stops waiting.
export const DREAM_TIMEOUT_MS = 600_000;
// /dream's apply (`dream.apply`): the files written, then the index brought up to date.
export const DREAM_APPLY_TIMEOUT_MS = 120_000;
export const LLM_COMPLETE_MAX_TOKENS = 1024;
// A command's run in a one-shot mode (`pi -p`): how long pi may stay idle, before the
// run starts or after it ends without settling, until the command stops waiting for it.
export const RUN_IDLE_MS = 5_000;
// The modes in which pi exits as soon as a command returns.
export const ONE_SHOT_MODES: ReadonlySet<string> = new Set(["print", "json"]);

export const INSTALL_HINT =
	"memlane is not on PyPI: install it from a memlane checkout with `pip install .` (or `pipx install <checkout or git URL>`), then run `memlane install pi` (it records which memlane pi should run).";
export const STATUS_HINT = "Run `memlane status` in the project for what is wrong, then restart pi.";
export const STARTING_TEXT =
	"memlane is still starting in this pi session (its engine is loading), so memory could not answer this call yet. Nothing is lost: try again in a moment.";
export const CONTEXT_MESSAGE_TYPE = "memlane-context";
export const LOG_PREFIX = "[memlane]";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface RpcError {
	code: number;
	message: string;
	data?: Json;
}

export function asObject(value: Json): JsonObject {
	return value && typeof value === "object" && !Array.isArray(value) ? value : {};
}
