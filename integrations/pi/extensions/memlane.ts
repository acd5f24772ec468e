/**
 * memlane for pi: a thin shim over the memlane Python sidecar.
 *
 * Every rule (capture gates, snapshot, auto-context, recall, redaction) lives in
 * Python. This extension starts `memlane sidecar` (JSON-RPC 2.0, one JSON
 * object per line over stdio), forwards pi's events and tool calls to it, and
 * answers the sidecar's `llm.complete` requests with pi's own model registry.
 * Without memlane (missing, broken, given up on) it keeps what needs no engine, as
 * pi-memsearch does without its backend: memory_write and capture append to the
 * daily file, memory_transcript reads the session, the snapshot reads the daily
 * files; those few rules are ports of memlane's, kept equal to it by tests
 * (degraded.ts).
 *
 * The protocol is the sidecar's (src/memlane/hosts/pi/sidecar.py in memlane):
 *   session_start {cwd, session_id, transcript_path, host, reason?} -> {snapshot, notices[]}
 *   before_agent_start {prompt} -> {system_append, message: {content} | null}
 *   agent_settled {exchange: {..., tools: [names of the tools the run called]}} -> {queued, reason?}
 *   session_compact {} -> {snapshot}
 *   session_shutdown {} -> {flushed, pending}
 *   tool {name, arguments} -> {text, details}
 *   cli {argv, detach?} -> {stdout, stderr, code} (or, detached, {job, running}); cli.job {job}:
 *     memlane's own commands run by the engine, for /memory (memory-command.ts)
 *   dream.plan {save?} -> the plan with its rendered diff; dream.apply {plan} -> {applied, changes, notices}
 * and from the sidecar: llm.complete {system, prompt, model?, model_role?, max_tokens?} -> {text}
 * (no model: the session provider's cheapest; model_role "session": the session's own), and the
 * notification llm.cancel {id}: memlane no longer wants that answer (its deadline passed, the
 * session ended), so pi aborts the model request (sidecar.ts).
 *
 * pi never waits for memlane to start: the sidecar is spawned when the extension loads (it
 * starts no engine until the session speaks), session_start sends it the session and returns; each
 * later event waits for the start within its own deadline and goes on without memory when
 * it is not done (connection.ts). At shutdown pi waits for the captures (distilled through
 * pi's model within memlane's SHUTDOWN_CAP_MS), never for a start still under way, and
 * aborts what memlane still asked of it.
 *
 * `/dream` asks the sidecar for a plan (`dream.plan {save?}`: memlane's own `[llm]`, else
 * pi's model through llm.complete), shows its diff and, once the user confirms, sends that
 * very plan back (`dream.apply {plan}`), so the LLM is not asked twice (dream-command.ts).
 *
 * This file wires the modules of ./memlane/ together, one concern each:
 *   sidecar.ts     the child process and its JSON-RPC client (deadlines)
 *   connection.ts  one session's sidecar: lazy respawn (capped), timeout crashes, degradation
 *   events.ts      pi's lifecycle events, forwarded
 *   tools.ts       the memory_* tools
 *   commands.ts    /recall, /memory, /dream
 *   memory-command.ts, settings-panel.ts, memory-io.ts
 *                  /memory's subcommands, its settings panel, memlane's commands run in the engine
 *   dream-command.ts /dream: plan, diff, confirm, apply
 *   memlane-cli.ts which memlane to run, one-shot CLI runs
 *   host.ts        reading pi: message text, the settled exchange, models for llm.complete
 *   protocol.ts    JSON shapes, deadlines, messages
 * and, for when memlane cannot answer:
 *   degraded.ts    what the package does itself: writes, capture digests, L3, snapshot, status
 *   daily.ts       the store, "now", the entry format and the O_APPEND writer
 *   transcript.ts  L3 over a pi session; transcript-access.ts: which ones an agent may read
 *   redact.ts      redaction (redact-table.ts: the rules' data, redact-rules.ts: context rules)
 */

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { registerCommands } from "./memlane/commands.ts";
import { SidecarConnection } from "./memlane/connection.ts";
import { Degraded } from "./memlane/degraded.ts";
import { registerEvents } from "./memlane/events.ts";
import { llmComplete, type Shim } from "./memlane/host.ts";
import { resolveCommand } from "./memlane/memlane-cli.ts";
import { type Json, type JsonObject, LOG_PREFIX } from "./memlane/protocol.ts";
import { Sidecar, SidecarError } from "./memlane/sidecar.ts";
import { registerTools, TOOLS } from "./memlane/tools.ts";

export default function memlane(pi: ExtensionAPI): void {
	const log = (line: string) => {
		// The terminal UI owns the screen; elsewhere stderr is pi's diagnostic channel.
		if (shim.mode !== "tui" || process.env.MEMLANE_PI_DEBUG) process.stderr.write(`${LOG_PREFIX} ${line}\n`);
	};

	async function onSidecarRequest(method: string, params: JsonObject, signal: AbortSignal): Promise<Json> {
		if (method === "llm.complete") return llmComplete(shim.ctx, params, signal);
		throw new SidecarError(`pi does not handle ${method}`, -32601);
	}

	const connection = new SidecarConnection({
		spawn: (cwd) => new Sidecar(resolveCommand(cwd), ["sidecar", "-C", cwd], cwd, onSidecarRequest, log),
		log,
		notify: (notice) => {
			if (shim.ctx?.hasUI) shim.ctx.ui.notify(`memlane: ${notice}`, "info");
		},
	});
	const degraded = new Degraded(connection, log, TOOLS.map((tool) => tool.name));
	const shim: Shim = { connection, degraded, ctx: null, mode: "print", log, settled: new Set() };
	// pi's session starts in pi's working directory: the sidecar's process start
	// overlaps pi's own (connection.ts).
	connection.prestart(process.cwd());

	registerEvents(pi, shim);
	registerTools(pi, shim);
	registerCommands(pi, shim);
}
