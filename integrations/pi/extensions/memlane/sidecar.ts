/**
 * One `memlane sidecar` child and a JSON-RPC 2.0 client over its stdio.
 *
 * The sidecar may ask pi too (`llm.complete`): each such request runs with an
 * AbortSignal, aborted when the sidecar sends `llm.cancel {id}` (it no longer
 * wants the answer), when pi ends the session (`abortHostCalls`) and when the
 * child is gone, so no model request outlives what it was for.
 *
 * Node built-ins only (no pi import), so `node --test` runs it as it is.
 */

import { type ChildProcess, spawn } from "node:child_process";
import {
	CANCEL_METHOD,
	DEFAULT_TIMEOUT_MS,
	type Json,
	type JsonObject,
	type RpcError,
	SHUTDOWN_GRACE_MS,
	TIMEOUT_MS,
} from "./protocol.ts";

interface Pending {
	method: string;
	resolve: (value: Json) => void;
	reject: (error: Error) => void;
	timer: NodeJS.Timeout;
}

/** Answers a request the sidecar sends to pi (`llm.complete`); `signal` aborts when the answer is no longer wanted. */
export type RequestHandler = (method: string, params: JsonObject, signal: AbortSignal) => Promise<Json>;

export class SidecarError extends Error {
	readonly code?: number;
	readonly timedOut: boolean;

	// Fields assigned by hand, not parameter properties: node's type stripping runs this file.
	constructor(message: string, code?: number, timedOut = false) {
		super(message);
		this.name = "SidecarError";
		this.code = code;
		this.timedOut = timedOut;
	}
}

export class Sidecar {
	private readonly child: ChildProcess;
	private readonly pending = new Map<number, Pending>();
	/** The sidecar's requests pi is still working on, by their id. */
	private readonly incoming = new Map<string, AbortController>();
	private readonly onRequest: RequestHandler;
	private readonly log: (line: string) => void;
	private readonly timeouts: Record<string, number>;
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
		onRequest: RequestHandler,
		log: (line: string) => void,
		timeouts: Record<string, number> = TIMEOUT_MS,
	) {
		this.onRequest = onRequest;
		this.log = log;
		this.timeouts = timeouts;
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

	request(method: string, params: JsonObject, timeoutMs = this.timeouts[method] ?? DEFAULT_TIMEOUT_MS): Promise<Json> {
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

	/** Close stdin (the sidecar exits on EOF) and kill it if it is still running after the grace.
	 * Model requests pi still runs for the sidecar are aborted first: pi exits without waiting for them. */
	async close(graceMs = SHUTDOWN_GRACE_MS): Promise<void> {
		const aborted = this.abortHostCalls("the session ended");
		if (aborted) this.log(`aborted ${aborted} model request(s) memlane no longer needs`);
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

	/** Abort every request of the sidecar pi is still working on (the session ends). */
	abortHostCalls(reason: string): number {
		const calls = [...this.incoming.values()];
		this.incoming.clear();
		for (const controller of calls) controller.abort(new Error(reason));
		return calls.length;
	}

	/** How many of the sidecar's requests pi is working on now. */
	get hostCalls(): number {
		return this.incoming.size;
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
		// Nobody can take the answers any more.
		this.abortHostCalls(reason);
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
		if (method === CANCEL_METHOD && !answer) {
			this.cancelIncoming(params.id);
			return;
		}
		const controller = new AbortController();
		const key = answer ? JSON.stringify(id) : null;
		if (key !== null) this.incoming.set(key, controller);
		const done = () => {
			if (key !== null && this.incoming.get(key) === controller) this.incoming.delete(key);
		};
		this.onRequest(method, params, controller.signal).then(
			(result) => {
				done();
				if (answer && this.alive && !controller.signal.aborted) this.send({ jsonrpc: "2.0", id, result });
			},
			(err: unknown) => {
				done();
				const text = err instanceof Error ? err.message : String(err);
				const code = err instanceof SidecarError && err.code !== undefined ? err.code : -32000;
				if (controller.signal.aborted) return; // the sidecar gave it up: nobody waits for an answer
				if (answer && this.alive) this.send({ jsonrpc: "2.0", id, error: { code, message: text } });
				else this.log(`${method} failed: ${text}`);
			},
		);
	}

	/** `llm.cancel {id}`: the sidecar no longer wants that answer; stop the work. */
	private cancelIncoming(id: Json | undefined): void {
		if (id === undefined || id === null) return;
		const key = JSON.stringify(id);
		const controller = this.incoming.get(key);
		if (!controller) return; // answered already
		this.incoming.delete(key);
		controller.abort(new Error("memlane cancelled the request"));
	}
}
