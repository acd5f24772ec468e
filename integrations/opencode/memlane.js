// memlane for OpenCode: a plugin in OpenCode's process, a thin client of memlane's warm engine.
//
// `memlane install opencode` writes a small plugin file into OpenCode's configuration that
// imports this file and calls `memlanePlugin({ command })` with the memlane it should run.
// Each OpenCode session gets one `memlane sidecar` child (the byte relay pi uses too), over
// which the plugin speaks memlane's sidecar protocol (JSON-RPC 2.0, one object per line):
//
//   chat.message (each prompt)           session_start once (snapshot: primer + MEMORY.md),
//                                        then before_agent_start(prompt): auto-context,
//                                        surfacing, auto-recall
//   experimental.chat.system.transform   the snapshot and system_append into the system prompt
//   experimental.chat.messages.transform the prompt's hidden message, as a text part of the
//                                        request's last user message (never stored by OpenCode)
//   event session.idle (end of a turn)   opencode.turn_end {db}: the engine reads the turn from
//                                        OpenCode's database and captures it (anchored)
//   event session.compacted              session_compact: the snapshot rebuilt
//   event session.deleted                the sidecar's stdin closes: the engine ends the session
//
// The turn_end request is written before the handler awaits anything: `opencode run` exits
// right after session.idle without waiting for plugins, and the bytes already in the pipe
// still reach the engine, which answers requests in order before it ends the session.
// Failing open: any error, timeout or missing memlane leaves OpenCode running without memory.
// MEMLANE_OPENCODE_DEBUG=1 says on stderr what failed; MEMLANE_OPENCODE_TIMINGS=<file> appends
// {hook, ms} per hook call (benchmarks/bench_opencode.py). Node built-ins only.

import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

const HOST = "opencode";
const TIMEOUT_MS = {
	session_start: 30_000,
	before_agent_start: 5_000,
	session_compact: 10_000,
	"opencode.turn_end": 10_000,
};
const TITLE_PROMPT = "You are a title generator";
const SESSION_EVENTS = new Set(["session.created", "session.idle", "session.compacted", "session.deleted"]);

/** OpenCode's database: $OPENCODE_DB (a bare name lives in its data directory), else
 * $XDG_DATA_HOME/opencode/opencode.db (transcripts/locate.py's opencode_db). */
export function opencodeDb(env = process.env) {
	const data = join(env.XDG_DATA_HOME || join(env.HOME || homedir(), ".local", "share"), "opencode");
	const raw = env.OPENCODE_DB;
	if (raw) return isAbsolute(raw) ? raw : join(data, raw);
	return join(data, "opencode.db");
}

class Sidecar {
	constructor(command, cwd, env, log) {
		this.pending = new Map();
		this.nextId = 1;
		this.buffer = "";
		this.dead = null;
		this.log = log;
		this.child = spawn(command, ["sidecar"], { cwd, stdio: ["pipe", "pipe", "ignore"], env: { ...process.env, ...env } });
		this.spawnFailed = false;
		this.child.once("error", (err) => {
			this.spawnFailed = true; // memlane is missing: no retry for this session
			this.die(`cannot run ${command}: ${err.message}`);
		});
		this.child.once("exit", (code, signal) => this.die(`memlane sidecar exited (${signal ?? `code ${code}`})`));
		this.child.stdin.on("error", () => {});
		this.child.stdout.setEncoding("utf8");
		this.child.stdout.on("data", (chunk) => this.onData(chunk));
		// OpenCode may exit while the sidecar still relays (it ends on its own at EOF).
		this.child.unref();
		this.child.stdout.unref?.();
	}

	die(reason) {
		if (this.dead) return;
		this.dead = reason;
		for (const { reject, timer } of this.pending.values()) {
			clearTimeout(timer);
			reject(new Error(reason));
		}
		this.pending.clear();
	}

	onData(chunk) {
		this.buffer += chunk;
		let at = this.buffer.indexOf("\n");
		while (at >= 0) {
			const line = this.buffer.slice(0, at);
			this.buffer = this.buffer.slice(at + 1);
			at = this.buffer.indexOf("\n");
			let msg;
			try {
				msg = JSON.parse(line);
			} catch {
				continue;
			}
			if (msg.method !== undefined) {
				// The engine asks the host (llm.complete): OpenCode has no model to lend.
				if (msg.id !== undefined) {
					this.send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "OpenCode answers no llm.complete" } });
				}
				continue;
			}
			const waiting = this.pending.get(msg.id);
			if (!waiting) continue;
			this.pending.delete(msg.id);
			clearTimeout(waiting.timer);
			if (msg.error) waiting.reject(new Error(msg.error.message || "memlane error"));
			else waiting.resolve(msg.result);
		}
	}

	send(obj) {
		if (!this.dead) this.child.stdin.write(`${JSON.stringify(obj)}\n`);
	}

	/** Sends at once (synchronously); the promise settles with the answer. */
	request(method, params) {
		if (this.dead) return Promise.reject(new Error(this.dead));
		const id = this.nextId++;
		const answer = new Promise((resolve, reject) => {
			const timer = setTimeout(() => {
				this.pending.delete(id);
				reject(new Error(`memlane did not answer ${method} within ${TIMEOUT_MS[method] ?? 30_000} ms`));
			}, TIMEOUT_MS[method] ?? 30_000);
			timer.unref?.();
			this.pending.set(id, { resolve, reject, timer });
		});
		this.send({ jsonrpc: "2.0", id, method, params });
		return answer;
	}

	close() {
		if (!this.dead) this.child.stdin.end();
	}
}

/** The plugin OpenCode runs. `options.command`: the memlane executable (default: `memlane`);
 * `options.env`: the MEMLANE_* settings of the install (MEMLANE_HOME), over OpenCode's own. */
export function memlanePlugin(options = {}) {
	const command = options.command || "memlane";
	return async (ctx) => {
		if ((options.env?.MEMLANE_NO_HOOKS ?? process.env.MEMLANE_NO_HOOKS) === "1") return {};
		const directory = ctx.directory || process.cwd();
		const db = opencodeDb();
		const sessions = new Map();
		const children = new Set();
		const log = (line) => {
			if (process.env.MEMLANE_OPENCODE_DEBUG) process.stderr.write(`[memlane] ${line}\n`);
		};

		// One sidecar is started with the plugin, while OpenCode itself starts, for the first
		// session (the relay connects to a running engine at once and starts none before it
		// is spoken to); later sessions start their own.
		const newSidecar = () => new Sidecar(command, directory, options.env ?? {}, log);
		let spare = newSidecar();

		// A session's sidecar that died (its engine stopped or was killed) is replaced at the
		// next prompt: the new one reaches a new engine, and the session starts again there.
		const session = (id) => {
			let state = sessions.get(id);
			if (!state || (state.sidecar.dead && !state.sidecar.spawnFailed)) {
				const sidecar = spare && !spare.dead ? spare : newSidecar();
				spare = null;
				state = { sidecar, snapshot: "", systemAppend: "", message: "" };
				state.started = sidecar
					.request("session_start", { cwd: directory, session_id: id, host: HOST })
					.then((result) => {
						state.snapshot = typeof result?.snapshot === "string" ? result.snapshot : "";
						return true;
					})
					.catch((err) => {
						log(`session_start: ${err.message}`);
						return false;
					});
				sessions.set(id, state);
			}
			return state;
		};

		const timings = process.env.MEMLANE_OPENCODE_TIMINGS;
		const timed = (hook, fn) =>
			timings
				? async (...args) => {
						const start = performance.now();
						try {
							return await fn(...args);
						} finally {
							const ms = performance.now() - start;
							try {
								const name = typeof hook === "function" ? hook(...args) : hook;
								if (name) appendFileSync(timings, `${JSON.stringify({ hook: name, ms })}\n`);
							} catch {}
						}
					}
				: fn;

		return {
			// Only the events the plugin acts on are timed (the others return at once).
			event: timed((arg) => SESSION_EVENTS.has(arg?.event?.type) && `event ${arg.event.type}`, async ({ event }) => {
				const id = event?.properties?.sessionID ?? event?.properties?.info?.id;
				if (typeof id !== "string") return;
				if (event.type === "session.created") {
					// A subagent's session (the task tool) is part of its parent's turn, as
					// Claude Code's sidechains are: nothing of memlane runs for it.
					if (event.properties?.info?.parentID) children.add(id);
					else session(id); // the engine starts (or is reached) meanwhile
				} else if (event.type === "session.idle" && sessions.has(id)) {
					// Sent now, not awaited: the engine captures on its own threads, and OpenCode
					// need not wait for it (`opencode run` does not).
					sessions
						.get(id)
						.sidecar.request("opencode.turn_end", { db })
						.then(
							(result) => log(`turn_end: ${JSON.stringify(result)}`),
							(err) => log(`turn_end: ${err.message}`),
						);
				} else if (event.type === "session.compacted" && sessions.has(id)) {
					// OpenCode summarised the conversation: the snapshot is rebuilt, as after
					// pi's compaction and Claude Code's PreCompact.
					const state = sessions.get(id);
					state.sidecar.request("session_compact", {}).then(
						(result) => {
							if (typeof result?.snapshot === "string") state.snapshot = result.snapshot;
						},
						(err) => log(`session_compact: ${err.message}`),
					);
				} else if (event.type === "session.deleted" && sessions.has(id)) {
					sessions.get(id).sidecar.close();
					sessions.delete(id);
				}
			}),

			"chat.message": timed("chat.message", async (input, output) => {
				const id = input?.sessionID;
				if (typeof id !== "string" || children.has(id)) return;
				const state = session(id);
				state.systemAppend = "";
				state.message = "";
				if (!(await state.started)) return;
				const prompt = (output?.parts ?? [])
					.filter((p) => p?.type === "text" && !p.synthetic && !p.ignored && typeof p.text === "string")
					.map((p) => p.text)
					.join("\n");
				try {
					const result = await state.sidecar.request("before_agent_start", { prompt });
					state.systemAppend = typeof result?.system_append === "string" ? result.system_append : "";
					const content = result?.message?.content;
					state.message = typeof content === "string" ? content : "";
				} catch (err) {
					log(`before_agent_start: ${err.message}`);
				}
			}),

			"experimental.chat.system.transform": timed("system.transform", async (input, output) => {
				const state = sessions.get(input?.sessionID);
				if (!state || !Array.isArray(output?.system)) return;
				if (output.system.some((s) => typeof s === "string" && s.startsWith(TITLE_PROMPT))) return;
				for (const text of [state.snapshot, state.systemAppend]) if (text) output.system.push(text);
			}),

			"experimental.chat.messages.transform": timed("messages.transform", async (_input, output) => {
				const messages = output?.messages;
				if (!Array.isArray(messages) || messages.length === 0) return;
				// The turn's prompt: every step of the turn (after each tool call) sees the message.
				const last = messages.findLast((m) => m?.info?.role === "user");
				const state = sessions.get(last?.info?.sessionID);
				if (!state?.message || !Array.isArray(last.parts)) return;
				const template = last.parts.find((p) => p?.type === "text");
				if (!template) return;
				last.parts.push({ ...template, id: `${template.id}-memlane`, text: state.message, synthetic: true });
			}),
		};
	};
}
