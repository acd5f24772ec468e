/**
 * memlane for pi: a thin shim over the memlane Python sidecar.
 *
 * Every rule (capture gates, snapshot, auto-context, recall, redaction) lives in
 * Python. This file only starts `memlane sidecar` (JSON-RPC 2.0, one JSON object
 * per line over stdio), forwards pi's events and tool calls to it, and answers
 * the sidecar's `llm.complete` requests with pi's own model registry.
 *
 * The protocol is DESIGN.md §9 of memlane:
 *   session_start {cwd, session_id, transcript_path, host, reason?} -> {snapshot, notices[]}
 *   before_agent_start {prompt} -> {system_append, message: {content} | null}
 *   agent_settled {exchange: {..., tools: [names of the tools the run called]}} -> {queued, reason?}
 *   session_compact {} -> {snapshot}
 *   session_shutdown {} -> {flushed, pending}
 *   tool {name, arguments} -> {text, details}
 * and from the sidecar: llm.complete {system, prompt, model?, max_tokens?} -> {text}.
 *
 * `/dream` is not a sidecar call: it runs `memlane dream` itself, once to plan
 * (`--dry-run --save-plan`), and, after the user confirms the diff, once to apply
 * exactly that saved plan (`--apply-plan`), so the LLM is not asked twice.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Message, StringEnum } from "@earendil-works/pi-ai";
import {
	CONFIG_DIR_NAME,
	type ExtensionAPI,
	type ExtensionContext,
	getAgentDir,
} from "@earendil-works/pi-coding-agent";
import { type TSchema, Type } from "typebox";

const SHUTDOWN_GRACE_MS = 2000;
const MAX_SIDECAR_RESPAWNS = 2;
// Consecutive unanswered requests of one method after which the child counts as crashed
// (killed, then respawned lazily).
const TIMEOUT_CRASH_THRESHOLD = 3;

// Per-request deadlines (ms). The sidecar enforces the real budgets (auto-context
// 300 ms, shutdown flush 15 s); these only keep pi from hanging on a stuck child.
const TIMEOUT_MS: Record<string, number> = {
	session_start: 30_000,
	before_agent_start: 5_000,
	agent_settled: 10_000,
	session_compact: 10_000,
	session_shutdown: 20_000,
	tool: 300_000,
};
const DEFAULT_TIMEOUT_MS = 30_000;
// One `memlane dream` run: the LLM restates every topic it changes (memlane allows it
// at least 180 s); past this the child is killed.
const DREAM_TIMEOUT_MS = 600_000;
const LLM_COMPLETE_MAX_TOKENS = 1024;

const INSTALL_HINT =
	"memlane is not on PyPI: install it from a memlane checkout with `pip install .` (or `pipx install <checkout or git URL>`), then run `memlane install pi` (it records which memlane pi should run).";
const STATUS_HINT = "Run `memlane status` in the project for what is wrong, then restart pi.";
const CONTEXT_MESSAGE_TYPE = "memlane-context";
const LOG_PREFIX = "[memlane]";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface RpcError {
	code: number;
	message: string;
	data?: Json;
}

interface Pending {
	method: string;
	resolve: (value: Json) => void;
	reject: (error: Error) => void;
	timer: NodeJS.Timeout;
}

type RequestHandler = (method: string, params: JsonObject) => Promise<Json>;

class SidecarError extends Error {
	constructor(
		message: string,
		readonly code?: number,
		readonly timedOut = false,
	) {
		super(message);
		this.name = "SidecarError";
	}
}

/** One `memlane sidecar` child and a JSON-RPC 2.0 client over its stdio. */
class Sidecar {
	private readonly child: ChildProcess;
	private readonly pending = new Map<number, Pending>();
	private nextId = 1;
	private stdoutBuffer = "";
	private stderrBuffer = "";
	private exitReason: string | null = null;
	/** The executable could not be run at all (missing, not executable). */
	spawnFailed = false;
	readonly exited: Promise<void>;

	constructor(
		command: string,
		args: string[],
		cwd: string,
		private readonly onRequest: RequestHandler,
		private readonly log: (line: string) => void,
	) {
		this.child = spawn(command, args, { cwd, stdio: ["pipe", "pipe", "pipe"], env: process.env });
		this.exited = new Promise((resolve) => {
			this.child.once("error", (err) => {
				this.spawnFailed = true;
				this.markDead(`cannot run ${command}: ${err.message}`);
				resolve();
			});
			this.child.once("exit", (code, signal) => {
				this.markDead(`memlane sidecar exited (${signal ?? `code ${code}`})`);
				resolve();
			});
		});
		this.child.stdout?.setEncoding("utf8");
		this.child.stdout?.on("data", (chunk: string) => this.onStdout(chunk));
		this.child.stderr?.setEncoding("utf8");
		this.child.stderr?.on("data", (chunk: string) => this.onStderr(chunk));
		// A write after the child died raises EPIPE on stdin; the exit handler reports it.
		this.child.stdin?.on("error", () => {});
	}

	get alive(): boolean {
		return this.exitReason === null;
	}

	get deathReason(): string | null {
		return this.exitReason;
	}

	request(method: string, params: JsonObject, timeoutMs = TIMEOUT_MS[method] ?? DEFAULT_TIMEOUT_MS): Promise<Json> {
		if (!this.alive) return Promise.reject(new SidecarError(this.exitReason ?? "memlane sidecar is not running"));
		const id = this.nextId++;
		return new Promise<Json>((resolve, reject) => {
			const timer = setTimeout(() => {
				this.pending.delete(id);
				reject(new SidecarError(`memlane sidecar did not answer ${method} within ${timeoutMs} ms`, undefined, true));
			}, timeoutMs);
			this.pending.set(id, { method, resolve, reject, timer });
			this.send({ jsonrpc: "2.0", id, method, params });
		});
	}

	/** Close stdin (the sidecar exits on EOF) and kill it if it is still running after the grace. */
	async close(graceMs = SHUTDOWN_GRACE_MS): Promise<void> {
		if (this.alive) this.child.stdin?.end();
		let timer: NodeJS.Timeout | undefined;
		const grace = new Promise<"timeout">((resolve) => {
			timer = setTimeout(() => resolve("timeout"), graceMs);
		});
		const outcome = await Promise.race([this.exited.then(() => "exited" as const), grace]);
		clearTimeout(timer);
		if (outcome === "timeout" && this.alive) {
			this.log(`sidecar still running ${graceMs} ms after shutdown; killing it`);
			this.child.kill("SIGKILL");
			await this.exited;
		}
	}

	/** Kill now (an unhealthy child); pending requests fail. */
	kill(): void {
		if (this.alive) this.child.kill("SIGKILL");
	}

	private send(message: JsonObject): void {
		this.child.stdin?.write(`${JSON.stringify(message)}\n`);
	}

	private markDead(reason: string): void {
		if (this.exitReason !== null) return;
		this.exitReason = reason;
		for (const [id, pending] of this.pending) {
			clearTimeout(pending.timer);
			pending.reject(new SidecarError(`${reason} before answering ${pending.method}`));
			this.pending.delete(id);
		}
		if (this.stderrBuffer) this.log(this.stderrBuffer);
		this.stderrBuffer = "";
	}

	private onStderr(chunk: string): void {
		this.stderrBuffer += chunk;
		let newline = this.stderrBuffer.indexOf("\n");
		while (newline >= 0) {
			const line = this.stderrBuffer.slice(0, newline).replace(/\r$/, "");
			this.stderrBuffer = this.stderrBuffer.slice(newline + 1);
			if (line) this.log(line);
			newline = this.stderrBuffer.indexOf("\n");
		}
	}

	// Split on LF only: U+2028/U+2029 are valid inside JSON strings.
	private onStdout(chunk: string): void {
		this.stdoutBuffer += chunk;
		let newline = this.stdoutBuffer.indexOf("\n");
		while (newline >= 0) {
			const line = this.stdoutBuffer.slice(0, newline).replace(/\r$/, "");
			this.stdoutBuffer = this.stdoutBuffer.slice(newline + 1);
			if (line.trim()) this.onLine(line);
			newline = this.stdoutBuffer.indexOf("\n");
		}
	}

	private onLine(line: string): void {
		let message: JsonObject;
		try {
			message = JSON.parse(line) as JsonObject;
		} catch {
			this.log(`ignoring a non-JSON line from the sidecar: ${line.slice(0, 200)}`);
			return;
		}
		if (typeof message.method === "string") {
			this.onIncomingRequest(message);
			return;
		}
		const id = message.id;
		if (typeof id !== "number") return;
		const pending = this.pending.get(id);
		if (!pending) return; // answered after its deadline
		this.pending.delete(id);
		clearTimeout(pending.timer);
		if (message.error && typeof message.error === "object") {
			const error = message.error as unknown as RpcError;
			pending.reject(new SidecarError(error.message ?? "memlane sidecar error", error.code));
		} else {
			pending.resolve(message.result ?? null);
		}
	}

	private onIncomingRequest(message: JsonObject): void {
		const method = message.method as string;
		const params = (message.params && typeof message.params === "object" ? message.params : {}) as JsonObject;
		const id = message.id;
		const answer = id !== undefined && id !== null;
		this.onRequest(method, params).then(
			(result) => {
				if (answer && this.alive) this.send({ jsonrpc: "2.0", id, result });
			},
			(err: unknown) => {
				const text = err instanceof Error ? err.message : String(err);
				const code = err instanceof SidecarError && err.code !== undefined ? err.code : -32000;
				if (answer && this.alive) this.send({ jsonrpc: "2.0", id, error: { code, message: text } });
				else this.log(`${method} failed: ${text}`);
			},
		);
	}
}

/** Where `memlane install pi` recorded the memlane executable (project settings win). */
function resolveCommand(cwd: string): string {
	const fromEnv = process.env.MEMLANE_COMMAND;
	if (fromEnv) return fromEnv;
	const candidates = [join(cwd, CONFIG_DIR_NAME, "memlane.json"), join(getAgentDir(), "memlane.json")];
	for (const file of candidates) {
		try {
			if (!existsSync(file)) continue;
			const recorded = JSON.parse(readFileSync(file, "utf8")) as { command?: unknown };
			if (typeof recorded.command === "string" && existsSync(recorded.command)) return recorded.command;
		} catch {
			// A broken record falls through to the next candidate and then to PATH.
		}
	}
	return "memlane";
}

interface CliResult {
	code: number | null;
	stdout: string;
	stderr: string;
	/** The executable could not be run, or was killed at the deadline. */
	failure?: string;
}

/** Run the recorded memlane with `-C <cwd> <args>`; never rejects. */
function runMemlane(cwd: string, args: string[], timeoutMs: number): Promise<CliResult> {
	const command = resolveCommand(cwd);
	return new Promise((resolve) => {
		let stdout = "";
		let stderr = "";
		let failure: string | undefined;
		const child = spawn(command, ["-C", cwd, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"], env: process.env });
		const timer = setTimeout(() => {
			failure = `memlane ${args[0]} did not finish within ${timeoutMs / 1000} s`;
			child.kill("SIGKILL");
		}, timeoutMs);
		child.stdout?.setEncoding("utf8");
		child.stdout?.on("data", (chunk: string) => {
			stdout += chunk;
		});
		child.stderr?.setEncoding("utf8");
		child.stderr?.on("data", (chunk: string) => {
			stderr += chunk;
		});
		child.once("error", (err) => {
			failure ??= `cannot run ${command}: ${err.message}. ${INSTALL_HINT}`;
		});
		child.once("close", (code) => {
			clearTimeout(timer);
			resolve({ code, stdout, stderr, failure });
		});
	});
}

/** Why a memlane run failed, in memlane's own words (its `memlane: error:` lines and hint). */
function cliFailure(result: CliResult): string {
	if (result.failure) return result.failure;
	const lines = result.stderr.trim().split("\n");
	const from = lines.findIndex((line) => line.startsWith("memlane: error:"));
	const text = (from >= 0 ? lines.slice(from) : lines.slice(-10)).join("\n").trim();
	return text || `memlane exited with code ${result.code}`;
}

/** Show text to the user: a notification with a UI, else stderr (outside the TUI, pi
 * reroutes an extension's stdout to stderr anyway, keeping stdout for its own output). */
function tell(ctx: ExtensionContext, text: string, level: "info" | "warning" | "error"): void {
	if (ctx.hasUI) ctx.ui.notify(text, level);
	else process.stderr.write(`${text}\n`);
}

function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((part): part is { type: "text"; text: string } => part?.type === "text" && typeof part.text === "string")
		.map((part) => part.text)
		.join("\n");
}

function asObject(value: Json): JsonObject {
	return value && typeof value === "object" && !Array.isArray(value) ? value : {};
}

/** The names of the tools an assistant message calls. */
function toolNames(content: unknown): string[] {
	if (!Array.isArray(content)) return [];
	return content
		.filter((part): part is { type: "toolCall"; name: string } => part?.type === "toolCall" && typeof part.name === "string")
		.map((part) => part.name);
}

/** The user prompt, final assistant text and tools called of the run that just settled, from the active branch. */
function settledExchange(ctx: ExtensionContext): {
	user: string | null;
	assistant: string;
	entryId: string | null;
	tools: string[];
} {
	const branch = ctx.sessionManager.getBranch() as Array<{ type: string; id: string; message?: { role?: string; content?: unknown } }>;
	let assistant = "";
	let user: string | null = null;
	const tools: string[] = [];
	for (let i = branch.length - 1; i >= 0; i--) {
		const entry = branch[i];
		if (entry.type !== "message" || !entry.message) continue;
		const role = entry.message.role;
		if (role === "assistant") {
			if (!assistant) assistant = textOf(entry.message.content).trim();
			tools.unshift(...toolNames(entry.message.content));
		}
		if (role === "user") {
			user = textOf(entry.message.content);
			break;
		}
	}
	return { user, assistant, entryId: ctx.sessionManager.getLeafId() ?? null, tools };
}

function modelCost(model: { cost?: { input?: number; output?: number } }): number {
	return (model.cost?.input ?? 0) + (model.cost?.output ?? 0);
}

/** `model` as `<id>` or `<provider>/<id>`; else the session provider's cheapest model. */
function pickModel(ctx: ExtensionContext, wanted: string | undefined) {
	const registry = ctx.modelRegistry;
	const provider = ctx.model?.provider;
	if (wanted) {
		const slash = wanted.indexOf("/");
		if (slash > 0) {
			const found = registry.find(wanted.slice(0, slash), wanted.slice(slash + 1));
			if (found) return found;
		}
		const all = registry.getAvailable();
		const match =
			all.find((m) => m.id === wanted && m.provider === provider) ?? all.find((m) => m.id === wanted);
		if (match) return match;
		throw new Error(`model ${wanted} is not in pi's model registry`);
	}
	if (!ctx.model) throw new Error("pi has no active model to distil with");
	const sameProvider = registry.getAvailable().filter((m) => m.provider === provider);
	if (sameProvider.length === 0) return ctx.model;
	return sameProvider.reduce((best, m) => (modelCost(m) < modelCost(best) ? m : best));
}

export default function memlane(pi: ExtensionAPI): void {
	let sidecar: Sidecar | null = null;
	let starting: Promise<Sidecar | null> | null = null;
	let respawns = 0;
	let unavailable: string | null = null; // why memlane cannot run in this session
	let notInstalled = false; // the memlane executable itself is missing
	const consecutiveTimeouts = new Map<string, number>(); // per method
	let sessionParams: JsonObject | null = null;
	let currentCtx: ExtensionContext | null = null;
	let mode: string = "print";

	const log = (line: string) => {
		// The terminal UI owns the screen; elsewhere stderr is pi's diagnostic channel.
		if (mode !== "tui" || process.env.MEMLANE_PI_DEBUG) process.stderr.write(`${LOG_PREFIX} ${line}\n`);
	};

	async function llmComplete(params: JsonObject): Promise<Json> {
		const ctx = currentCtx;
		if (!ctx) throw new Error("no pi session is active");
		const model = pickModel(ctx, typeof params.model === "string" && params.model ? params.model : undefined);
		const prompt = typeof params.prompt === "string" ? params.prompt : "";
		const messages: Message[] = [{ role: "user", content: [{ type: "text", text: prompt }], timestamp: Date.now() }];
		const maxTokens = typeof params.max_tokens === "number" ? params.max_tokens : LLM_COMPLETE_MAX_TOKENS;
		const response = await ctx.modelRegistry.complete(
			model,
			{ systemPrompt: typeof params.system === "string" ? params.system : undefined, messages },
			{ maxTokens, cacheRetention: "none" } as Parameters<typeof ctx.modelRegistry.complete>[2],
		);
		if (response.stopReason === "error" || response.stopReason === "aborted") {
			throw new Error(`${model.provider}/${model.id}: ${response.errorMessage ?? response.stopReason}`);
		}
		return { text: textOf(response.content) };
	}

	async function onSidecarRequest(method: string, params: JsonObject): Promise<Json> {
		if (method === "llm.complete") return llmComplete(params);
		throw new SidecarError(`pi does not handle ${method}`, -32601);
	}

	function spawnSidecar(cwd: string): Sidecar {
		const command = resolveCommand(cwd);
		return new Sidecar(command, ["sidecar", "-C", cwd], cwd, onSidecarRequest, log);
	}

	/** The running sidecar, spawning (or lazily respawning, up to the cap) when needed. */
	async function ensureSidecar(): Promise<Sidecar | null> {
		if (sidecar?.alive) return sidecar;
		if (!sessionParams || unavailable) return null;
		if (starting) return starting;
		if (sidecar && !sidecar.alive) {
			if (respawns >= MAX_SIDECAR_RESPAWNS) {
				unavailable = `the memlane sidecar died ${respawns + 1} times this session (${sidecar.deathReason})`;
				log(`${unavailable}; memory is off until the next session`);
				return null;
			}
			respawns++;
			log(`respawning the sidecar (${respawns}/${MAX_SIDECAR_RESPAWNS}) after: ${sidecar.deathReason}`);
		}
		const params = sessionParams;
		starting = (async () => {
			const spawned = performance.now();
			const child = spawnSidecar(String(params.cwd));
			sidecar = child;
			try {
				const result = asObject(await child.request("session_start", params));
				recordTiming("session_start", performance.now() - spawned);
				const notices = Array.isArray(result.notices) ? result.notices : [];
				for (const notice of notices) {
					if (typeof notice !== "string") continue;
					log(notice);
					if (currentCtx?.hasUI) currentCtx.ui.notify(`memlane: ${notice}`, "info");
				}
				return child;
			} catch (err) {
				const reason = err instanceof Error ? err.message : String(err);
				child.kill();
				if (respawns === 0) {
					// Never started: memlane is missing or broken. Do not retry on every event.
					unavailable = reason;
					notInstalled = child.spawnFailed;
					log(`memlane is unavailable: ${reason}. ${notInstalled ? INSTALL_HINT : STATUS_HINT}`);
				} else {
					log(`sidecar respawn failed: ${reason}`);
				}
				return null;
			} finally {
				starting = null;
			}
		})();
		return starting;
	}

	/** Send one event; any failure degrades to "no answer" so pi keeps working. */
	async function forward(method: string, params: JsonObject): Promise<JsonObject | null> {
		const started = performance.now();
		const child = await ensureSidecar();
		if (!child) return null;
		try {
			const result = asObject(await child.request(method, params));
			consecutiveTimeouts.delete(method);
			return result;
		} catch (err) {
			log(`${method}: ${err instanceof Error ? err.message : String(err)}`);
			if (err instanceof SidecarError && err.timedOut) {
				const misses = (consecutiveTimeouts.get(method) ?? 0) + 1;
				consecutiveTimeouts.set(method, misses);
				if (misses >= TIMEOUT_CRASH_THRESHOLD) {
					log(`${misses} ${method} requests in a row went unanswered; restarting the sidecar`);
					consecutiveTimeouts.clear();
					child.kill();
				}
			}
			return null;
		} finally {
			recordTiming(method, performance.now() - started);
		}
	}

	/** Opt-in measurement: MEMLANE_PI_TIMINGS=<file> appends {method, ms} per forwarded event. */
	function recordTiming(method: string, ms: number): void {
		const file = process.env.MEMLANE_PI_TIMINGS;
		if (!file) return;
		try {
			appendFileSync(file, `${JSON.stringify({ method, ms: Math.round(ms * 1000) / 1000 })}\n`);
		} catch {
			// measurement must never disturb the session
		}
	}

	function unavailableText(): string {
		const why = unavailable ?? "the memlane sidecar is not running";
		return `memlane is not available in this pi session: ${why}.\n${notInstalled ? INSTALL_HINT : `${STATUS_HINT}\n${INSTALL_HINT}`}`;
	}

	// ---- events -------------------------------------------------------------

	pi.on("session_start", async (event, ctx) => {
		currentCtx = ctx;
		mode = ctx.mode;
		respawns = 0;
		unavailable = null;
		notInstalled = false;
		consecutiveTimeouts.clear();
		sidecar = null;
		const sm = ctx.sessionManager;
		sessionParams = {
			cwd: ctx.cwd,
			session_id: sm.getSessionId(),
			transcript_path: sm.getSessionFile() ?? null,
			host: "pi",
		};
		if (event.reason) sessionParams.reason = event.reason;
		await ensureSidecar();
	});

	pi.on("before_agent_start", async (event, ctx) => {
		currentCtx = ctx;
		const prompt = event.messageType === "user" ? event.prompt : "";
		const result = await forward("before_agent_start", { prompt });
		if (!result) return;
		const append = typeof result.system_append === "string" ? result.system_append : "";
		const message = asObject(result.message ?? null);
		const content = typeof message.content === "string" ? message.content : "";
		const out: { systemPrompt?: string; message?: { customType: string; content: string; display: boolean } } = {};
		if (append) out.systemPrompt = `${event.systemPrompt}\n\n${append}`;
		if (content && event.messageType === "user") {
			out.message = { customType: CONTEXT_MESSAGE_TYPE, content, display: false };
		}
		return out;
	});

	pi.on("agent_settled", async (event, ctx) => {
		currentCtx = ctx;
		const { user, assistant, entryId, tools } = settledExchange(ctx);
		if (user === null) return; // a run with no user prompt on the branch: nothing to capture
		await forward("agent_settled", {
			exchange: {
				user,
				assistant,
				aborted: event.aborted,
				entry_id: entryId,
				session_id: ctx.sessionManager.getSessionId(),
				transcript_path: ctx.sessionManager.getSessionFile() ?? null,
				tools,
			},
		});
	});

	pi.on("session_compact", async (_event, ctx) => {
		currentCtx = ctx;
		await forward("session_compact", {});
	});

	pi.on("session_shutdown", async () => {
		const child = sidecar;
		sessionParams = null;
		sidecar = null;
		if (!child) return;
		if (child.alive) {
			try {
				await child.request("session_shutdown", {});
			} catch (err) {
				log(`session_shutdown: ${err instanceof Error ? err.message : String(err)}`);
			}
		}
		await child.close(SHUTDOWN_GRACE_MS);
		currentCtx = null;
	});

	// ---- tools ----------------------------------------------------------------

	interface ToolSpec {
		name: string;
		label: string;
		description: string;
		parameters: TSchema;
		snippet: string;
	}

	const LADDER =
		"Recall climbs down and stops at the shallowest layer that answers: L1 memory_search (scored chunks, each with a chunk hash) → L2 memory_expand (the whole section behind a chunk hash, plus its session anchor) → L3 memory_transcript (the original turns around that anchor).";

	const tools: ToolSpec[] = [
		{
			name: "memory_search",
			label: "Memory search",
			snippet: "L1 recall: scored chunks of long-term memory for a query",
			description: `L1 of the recall ladder. Search long-term memory (past sessions' distilled notes, topics, transcripts) and return the top-k scored chunks, each with a chunk hash. Most questions end here. ${LADDER} Scores estimate relevance in [0, 1]; hits below min_score (default search.min_score) are left out, and an empty result means nothing relevant is stored. scope "all" widens to every project under the scan roots (each hit labeled with its origin project).`,
			parameters: Type.Object({
				query: Type.String({ description: "What to look for, in natural language or keywords" }),
				k: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: "How many chunks (default 5)" })),
				scope: Type.Optional(StringEnum(["project", "all"] as const, { description: "project (default) or all projects" })),
				kind: Type.Optional(
					StringEnum(["journal", "topic", "session", "all"] as const, {
						description:
							"journal (daily notes), topic (curated topic files), session (every past message of this project's sessions) or all; omit for notes and topics",
					}),
				),
				mode: Type.Optional(StringEnum(["hybrid", "lexical", "semantic"] as const, { description: "hybrid (default), lexical (BM25 only) or semantic (dense only)" })),
				after: Type.Optional(Type.String({ description: "Only memories on or after this date (YYYY-MM-DD)" })),
				before: Type.Optional(Type.String({ description: "Only memories before this date (YYYY-MM-DD), not including it" })),
				session: Type.Optional(Type.String({ description: "Only memories from this session id" })),
				min_score: Type.Optional(
					Type.Number({ minimum: 0, maximum: 1, description: "Only hits scoring at least this (relevance in [0, 1]); 0 returns every match" }),
				),
			}),
		},
		{
			name: "memory_expand",
			label: "Memory expand",
			snippet: "L2 recall: the full memory section behind a chunk hash, with its session anchor",
			description: `L2 of the recall ladder. Given a chunk hash from memory_search, return the whole section it came from plus its session anchor (session id, entry id, transcript path). Cheap, no embedder. Use it when a chunk is suggestive but clipped. ${LADDER} For a cross-repo hit pass its origin project as project.`,
			parameters: Type.Object({
				chunk_hash: Type.String({ description: "A chunk hash from memory_search" }),
				project: Type.Optional(Type.String({ description: "Origin project path of a cross-repo hit, verbatim" })),
			}),
		},
		{
			name: "memory_transcript",
			label: "Memory transcript",
			snippet: "L3 recall: the original conversation turns around an anchored memory",
			description: `L3 of the recall ladder. Given a session anchor (transcript path and entry id, from memory_expand), return the turns around that entry in the original transcript, following the branch the memory anchors to even past later forks. A pure file read. Use it only when the distilled note lost the reasoning you need. ${LADDER}`,
			parameters: Type.Object({
				transcript_path: Type.String({ description: "The transcript path from the session anchor" }),
				turn: Type.Optional(Type.String({ description: "The entry id from the session anchor (turn:<id>), or a unique prefix" })),
				project: Type.Optional(Type.String({ description: "Origin project path of a cross-repo hit, verbatim" })),
			}),
		},
		{
			name: "memory_write",
			label: "Memory write",
			snippet: "Persist a memory now (timestamped, anchored, in today's daily memory file)",
			description:
				"Persist a memory immediately when the user asks you to remember something: it is timestamped, anchored to this session and appended to today's daily memory file. Write one self-contained, third-person statement. Everyday exchanges are captured automatically; do not duplicate them.",
			parameters: Type.Object({
				text: Type.String({ description: "What to remember, self-contained" }),
			}),
		},
		{
			name: "memory_forget",
			label: "Memory forget",
			snippet: "Redact one memory entry by chunk hash or by (date, time)",
			description:
				"Remove exactly one memory entry (or one compact block) from the store and the index, addressed by chunk_hash or by date (YYYY-MM-DD) and time (HH:MM). No fuzzy matching, no recovery: the result echoing the removed text is the only record. Use only when the user asks to forget something.",
			parameters: Type.Object({
				chunk_hash: Type.Optional(Type.String({ description: "Chunk hash of the entry to remove" })),
				date: Type.Optional(Type.String({ description: "Date of the entry, YYYY-MM-DD" })),
				time: Type.Optional(Type.String({ description: "Heading time of the entry, HH:MM" })),
			}),
		},
		{
			name: "memory_compact",
			label: "Memory compact",
			snippet: "Condense the memory store into a summary (explicit request only)",
			description:
				"Memory compaction: an LLM condenses the memory store and appends the summary to today's daily memory file. Spends the configured LLM provider's budget, so call it only on the user's explicit request. Not pi's context compaction.",
			parameters: Type.Object({
				source: Type.Optional(Type.String({ description: "Only compact this source file" })),
			}),
		},
		{
			name: "memory_topic",
			label: "Memory topic",
			snippet: "Curated knowledge: add, remove, list or search topic files (MEMORY.md)",
			description:
				"Curated knowledge that outlives the daily journal: one topic file per subject, one '## title' entry per fact, indexed one line per topic in MEMORY.md, which every new session sees. add (content, topic, title, optional type) saves a durable learning such as a preference, convention, debugging insight or project fact; remove (entry = the exact title) deletes one entry; list shows topics and their entry titles; search (query, scope memory|sessions) returns whole entries, or matching messages from this project's past sessions.",
			parameters: Type.Object({
				action: StringEnum(["add", "remove", "list", "search"] as const, { description: "What to do" }),
				content: Type.Optional(Type.String({ description: "add: the knowledge to keep, in full sentences" })),
				topic: Type.Optional(Type.String({ description: 'add: the topic file, e.g. "debugging.md" or "Debugging Tips"' })),
				title: Type.Optional(
					Type.String({ description: "add: a self-contained title; only titles reach future prompts via MEMORY.md" }),
				),
				type: Type.Optional(
					StringEnum(["user", "feedback", "project", "reference"] as const, {
						description: "add: user, feedback (default), project or reference",
					}),
				),
				entry: Type.Optional(Type.String({ description: "remove: the exact title of the entry to delete" })),
				query: Type.Optional(Type.String({ description: "search: what to look for" })),
				scope: Type.Optional(
					StringEnum(["memory", "sessions"] as const, {
						description: "search: memory (topic files, default) or sessions (past conversations)",
					}),
				),
			}),
		},
		{
			name: "memory_similar",
			label: "Memory similar",
			snippet: "More like this: memories nearest in meaning to a chunk hash or session message id",
			description:
				"More like this: the memories nearest in meaning to one you already have (a chunk hash from memory_search, or a session message id from a kind session search), itself excluded.",
			parameters: Type.Object({
				chunk_hash: Type.String({ description: "A chunk hash, or the id of a session message" }),
				k: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: "How many (default 10)" })),
			}),
		},
		{
			name: "memory_status",
			label: "Memory status",
			snippet: "Doctor: memlane's scope, store, index state, capture and auto-context",
			description:
				"Doctor for long-term memory: what is missing and how to fix it, project scope, store, index state and chunk count, capture and auto-context state with counters. Reach for it first when recall is not behaving.",
			parameters: Type.Object({}),
		},
	];

	for (const spec of tools) {
		pi.registerTool({
			name: spec.name,
			label: spec.label,
			description: spec.description,
			promptSnippet: spec.snippet,
			parameters: spec.parameters,
			async execute(_toolCallId, params, signal, _onUpdate, ctx) {
				currentCtx = ctx;
				const child = await ensureSidecar();
				if (!child) return { content: [{ type: "text", text: unavailableText() }], details: { unavailable: true } };
				const call = child.request("tool", { name: spec.name, arguments: (params ?? {}) as JsonObject });
				const aborted = new Promise<never>((_, reject) => {
					if (signal?.aborted) reject(new Error("aborted"));
					signal?.addEventListener("abort", () => reject(new Error("aborted")), { once: true });
				});
				const result = asObject(await Promise.race([call, aborted]));
				const text = typeof result.text === "string" ? result.text : JSON.stringify(result);
				return { content: [{ type: "text", text }], details: result.details ?? null };
			},
		});
	}

	// ---- commands -------------------------------------------------------------

	pi.registerCommand("recall", {
		description: "Recall from long-term memory: /recall <query>, or /recall --all <query> across projects",
		handler: async (args, ctx) => {
			let query = (args ?? "").trim();
			let all = false;
			if (query.startsWith("--all")) {
				all = true;
				query = query.slice("--all".length).trim();
			}
			if (!query) {
				if (ctx.hasUI) ctx.ui.notify("Usage: /recall [--all] <query>", "warning");
				return;
			}
			const scope = all
				? 'Search every project (memory_search with scope "all"; pass a hit\'s origin project back as project).'
				: "Search this project's memory.";
			// memlane knows a /recall exchange by this opening (RECALL_PROMPT_PREFIX in
			// src/memlane/engine/echo.py): it is not captured again, nor indexed as a message.
			const request = `Recall from long-term memory: ${query}\n\nUse the recall skill: start with memory_search, go to memory_expand and then memory_transcript only if the shallower layer does not answer. ${scope} Answer from what memory says and cite the chunk hashes you used.`;
			if (ctx.isIdle()) pi.sendUserMessage(request);
			else pi.sendUserMessage(request, { deliverAs: "followUp" });
		},
	});

	// /memory [status|stats|search <query>|reindex|on|off]: status goes through the sidecar;
	// the sessions-layer and on/off subcommands are the CLI's (`memlane sessions …`,
	// `memlane memory on|off`), run as a child so pi shows exactly what the CLI prints.
	const MEMORY_CLI: Record<string, { args: string[]; timeoutMs: number }> = {
		stats: { args: ["sessions", "stats"], timeoutMs: 30_000 },
		reindex: { args: ["sessions", "reindex"], timeoutMs: 30 * 60_000 },
		on: { args: ["memory", "on"], timeoutMs: 30_000 },
		off: { args: ["memory", "off"], timeoutMs: 30_000 },
	};

	pi.registerCommand("memory", {
		description:
			"memlane: status (default), stats (sessions index), search <query> (past sessions), reindex (sessions), on|off (topic memory)",
		handler: async (args, ctx) => {
			currentCtx = ctx;
			const [sub = "status", ...rest] = String(args ?? "").trim().split(/\s+/).filter(Boolean);
			let text: string;
			const cli = MEMORY_CLI[sub];
			if (cli) {
				const result = await runMemlane(ctx.cwd, cli.args, cli.timeoutMs);
				text = result.code === 0 && !result.failure ? result.stdout.trim() : cliFailure(result);
			} else if (sub === "status" || sub === "search") {
				const child = await ensureSidecar();
				if (!child) text = unavailableText();
				else {
					const call =
						sub === "status"
							? { name: "memory_status", arguments: {} }
							: { name: "memory_search", arguments: { query: rest.join(" "), kind: "session" } };
					try {
						if (sub === "search" && rest.length === 0) throw new Error("usage: /memory search <query>");
						const result = asObject(await child.request("tool", call as JsonObject));
						text = typeof result.text === "string" ? result.text : JSON.stringify(result);
					} catch (err) {
						text = `/memory ${sub} failed: ${err instanceof Error ? err.message : String(err)}`;
					}
				}
			} else {
				text = `unknown /memory subcommand ${JSON.stringify(sub)}: use status, stats, search <query>, reindex, on or off`;
			}
			if (ctx.hasUI) ctx.ui.notify(text, "info");
			else if (ctx.mode === "print") process.stdout.write(`${text}\n`);
			else process.stderr.write(`${text}\n`); // json mode: stdout carries only events
		},
	});

	pi.registerCommand("dream", {
		description: "Consolidate topic memory (merge duplicates, settle contradictions); shows the diff and asks first",
		handler: async (_args, ctx) => {
			// The plan goes through a private temp dir: it holds the topic files' text.
			const dir = mkdtempSync(join(tmpdir(), "memlane-dream-"));
			const planFile = join(dir, "plan.json");
			try {
				if (ctx.hasUI) ctx.ui.notify("memlane dream: planning the consolidation with the LLM…", "info");
				const planned = await runMemlane(ctx.cwd, ["dream", "--dry-run", "--save-plan", planFile, "--json"], DREAM_TIMEOUT_MS);
				if (planned.code !== 0 || planned.failure) {
					tell(ctx, `memlane dream failed: ${cliFailure(planned)}`, "error");
					return;
				}
				let plan: JsonObject;
				try {
					plan = asObject(JSON.parse(planned.stdout) as Json);
				} catch {
					tell(ctx, `memlane dream printed no plan: ${planned.stdout.slice(0, 200)}`, "error");
					return;
				}
				const rendered = typeof plan.rendered === "string" ? plan.rendered.trimEnd() : "";
				const changes = Array.isArray(plan.changes) ? plan.changes.length : 0;
				if (changes === 0) {
					tell(ctx, rendered || "Nothing to consolidate.", "info");
					return;
				}
				if (!ctx.hasUI) {
					tell(
						ctx,
						`${rendered}\n\n/dream cannot ask for confirmation in ${ctx.mode} mode: nothing was changed. Run \`memlane dream\` in a terminal (or /dream in pi's interactive mode) to apply it.`,
						"warning",
					);
					return;
				}
				const confirmed = await ctx.ui.confirm("Apply this dream plan?", rendered);
				if (!confirmed) {
					ctx.ui.notify("memlane dream: declined, nothing was changed.", "info");
					return;
				}
				const applied = await runMemlane(ctx.cwd, ["dream", "--apply-plan", planFile, "--yes", "--json"], DREAM_TIMEOUT_MS);
				if (applied.code !== 0 || applied.failure) {
					ctx.ui.notify(`memlane dream did not apply: ${cliFailure(applied)}`, "error");
					return;
				}
				let notices: string[] = [];
				try {
					const done = asObject(JSON.parse(applied.stdout) as Json);
					if (Array.isArray(done.notices)) notices = done.notices.filter((n): n is string => typeof n === "string");
				} catch {
					// applied (exit 0); only the notices are lost
				}
				ctx.ui.notify([`memlane dream applied: ${changes} file(s) changed.`, ...notices].join("\n"), "info");
			} catch (err) {
				tell(ctx, `memlane dream failed: ${err instanceof Error ? err.message : String(err)}`, "error");
			} finally {
				rmSync(dir, { recursive: true, force: true });
			}
		},
	});
}
