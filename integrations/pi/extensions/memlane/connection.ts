/**
 * The sidecar of one pi session: started at session_start without pi waiting for it,
 * respawned lazily after a crash (up to MAX_SIDECAR_RESPAWNS), killed after
 * TIMEOUT_CRASH_THRESHOLD unanswered requests of one method in a row, and given up on
 * for the session when memlane cannot start at all. Every failure degrades to "no
 * answer", so pi keeps working without memory.
 *
 * pi's session_start returns at once: the sidecar's start (its `session_start` answer,
 * seconds when the engine has to start) runs in the background, and its notices reach
 * the user when they arrive. Each later event waits for a start still under way within
 * its own deadline (TIMEOUT_MS), then goes on without memory for that event.
 *
 * Node built-ins only (no pi import), so `node --test` runs it as it is.
 */

import { appendFileSync } from "node:fs";
import {
	asObject,
	DEFAULT_TIMEOUT_MS,
	INSTALL_HINT,
	type JsonObject,
	MAX_SIDECAR_RESPAWNS,
	SHUTDOWN_GRACE_MS,
	START_WAIT_MS,
	STARTING_TEXT,
	STATUS_HINT,
	TIMEOUT_CRASH_THRESHOLD,
} from "./protocol.ts";
import { type Sidecar, SidecarError } from "./sidecar.ts";

export interface ConnectionHooks {
	/** Start one `memlane sidecar` for the project at cwd. */
	spawn: (cwd: string) => Sidecar;
	log: (line: string) => void;
	/** Show one of session_start's notices to the user. */
	notify: (notice: string) => void;
	/** How long each event may wait for a start under way (default: START_WAIT_MS). */
	startWaits?: Record<string, number>;
}

/** Resolves to `value`, or to `fallback` once `ms` have passed. */
function within<T, F>(value: Promise<T>, ms: number, fallback: F): Promise<T | F> {
	if (!Number.isFinite(ms)) return value;
	let timer: NodeJS.Timeout | undefined;
	const late = new Promise<F>((resolve) => {
		timer = setTimeout(() => resolve(fallback), Math.max(0, ms));
	});
	return Promise.race([value, late]).finally(() => clearTimeout(timer));
}

export class SidecarConnection {
	private readonly hooks: ConnectionHooks;
	private sidecar: Sidecar | null = null;
	private starting: Promise<Sidecar | null> | null = null;
	private startToken: object | null = null;
	private respawns = 0;
	private unavailable: string | null = null; // why memlane cannot run in this session
	private notInstalled = false; // the memlane executable itself is missing
	private readonly consecutiveTimeouts = new Map<string, number>(); // per method
	private sessionParams: JsonObject | null = null;
	private prestarted: { cwd: string; child: Sidecar } | null = null;

	constructor(hooks: ConnectionHooks) {
		this.hooks = hooks;
	}

	/**
	 * Start the sidecar now, while pi itself is still starting, so its process start
	 * (a Python interpreter) is not waited for later; the first session whose cwd is
	 * the same uses it. It connects to a running engine at once, but starts none
	 * until the session speaks, and exits if pi goes away first.
	 */
	prestart(cwd: string): void {
		if (this.prestarted || this.sidecar || this.sessionParams) return;
		this.prestarted = { cwd, child: this.hooks.spawn(cwd) };
	}

	/** The prestarted sidecar when it serves `cwd` and still runs; any other is closed. */
	private takePrestarted(cwd: string): Sidecar | null {
		const pre = this.prestarted;
		this.prestarted = null;
		if (!pre) return null;
		if (pre.cwd === cwd && pre.child.alive) return pre.child;
		void pre.child.close(0);
		return null;
	}

	/** A new pi session: forget the last one's failures and start its sidecar, without waiting. */
	begin(params: JsonObject): void {
		this.respawns = 0;
		this.unavailable = null;
		this.notInstalled = false;
		this.consecutiveTimeouts.clear();
		this.sidecar = null;
		this.starting = null;
		this.sessionParams = params;
		void this.ensure();
	}

	/** A start (spawn and session_start) is under way and has not answered yet. */
	get isStarting(): boolean {
		return this.starting !== null;
	}

	/** How long `method` may wait for a start under way. */
	startWait(method: string): number {
		return this.hooks.startWaits?.[method] ?? START_WAIT_MS[method] ?? DEFAULT_TIMEOUT_MS;
	}

	/**
	 * The started sidecar, spawning (or lazily respawning, up to the cap) when needed.
	 * Waits at most `waitMs` for a start under way: null then, with `isStarting` still
	 * true (the start goes on; a later event gets it).
	 */
	async ensure(waitMs = Number.POSITIVE_INFINITY): Promise<Sidecar | null> {
		const { log } = this.hooks;
		if (this.starting) return within(this.starting, waitMs, null);
		if (this.sidecar?.alive) return this.sidecar;
		if (!this.sessionParams || this.unavailable) return null;
		if (this.sidecar && !this.sidecar.alive) {
			if (this.respawns >= MAX_SIDECAR_RESPAWNS) {
				this.unavailable = `the memlane sidecar died ${this.respawns + 1} times this session (${this.sidecar.deathReason})`;
				log(`${this.unavailable}; memory is off until the next session`);
				return null;
			}
			this.respawns++;
			log(`respawning the sidecar (${this.respawns}/${MAX_SIDECAR_RESPAWNS}) after: ${this.sidecar.deathReason}`);
		}
		const params = this.sessionParams;
		const token = {}; // this start, as opposed to a later session's
		this.startToken = token;
		let settled = false;
		const starting = (async () => {
			const spawned = performance.now();
			const cwd = String(params.cwd);
			const child = this.takePrestarted(cwd) ?? this.hooks.spawn(cwd);
			this.sidecar = child;
			try {
				const result = asObject(await child.request("session_start", params));
				recordTiming("session_start", performance.now() - spawned);
				const notices = Array.isArray(result.notices) ? result.notices : [];
				for (const notice of notices) {
					if (typeof notice !== "string") continue;
					log(notice);
					this.hooks.notify(notice);
				}
				return child;
			} catch (err) {
				const reason = err instanceof Error ? err.message : String(err);
				child.kill();
				if (this.respawns === 0) {
					// Never started: memlane is missing or broken. Do not retry on every event.
					this.unavailable = reason;
					this.notInstalled = child.spawnFailed;
					log(`memlane is unavailable: ${reason}. ${this.notInstalled ? INSTALL_HINT : STATUS_HINT}`);
				} else {
					log(`sidecar respawn failed: ${reason}`);
				}
				return null;
			} finally {
				settled = true;
				if (this.startToken === token) this.starting = null;
			}
		})();
		if (!settled) this.starting = starting;
		return within(starting, waitMs, null);
	}

	/**
	 * Send one event; any failure degrades to "no answer" so pi keeps working. A start
	 * still under way is waited for within the event's own deadline.
	 */
	async forward(method: string, params: JsonObject): Promise<JsonObject | null> {
		return (await this.deliver(method, params)).result;
	}

	/**
	 * `forward`, also saying whether the sidecar was asked at all: an event it never saw
	 * (memlane unavailable, or still starting past the event's wait) is the pi package's
	 * own to handle without the engine (degraded.ts); one it saw and did not answer is not.
	 */
	async deliver(method: string, params: JsonObject): Promise<{ sent: boolean; result: JsonObject | null }> {
		const { log } = this.hooks;
		const started = performance.now();
		const child = await this.ensure(this.startWait(method));
		if (!child) {
			if (this.isStarting) log(`${method}: memlane is still starting; this event goes on without memory`);
			return { sent: false, result: null };
		}
		try {
			const result = asObject(await child.request(method, params));
			this.consecutiveTimeouts.delete(method);
			return { sent: true, result };
		} catch (err) {
			log(`${method}: ${err instanceof Error ? err.message : String(err)}`);
			if (err instanceof SidecarError && err.timedOut) {
				const misses = (this.consecutiveTimeouts.get(method) ?? 0) + 1;
				this.consecutiveTimeouts.set(method, misses);
				if (misses >= TIMEOUT_CRASH_THRESHOLD) {
					log(`${misses} ${method} requests in a row went unanswered; restarting the sidecar`);
					this.consecutiveTimeouts.clear();
					child.kill();
				}
			}
			return { sent: true, result: null };
		} finally {
			recordTiming(method, performance.now() - started);
		}
	}

	/**
	 * The session ends: ask the sidecar to flush, abort the model requests it still has
	 * pi running, then close it. A start still under way is not waited for: every event
	 * that could have queued a capture went on without memory, and closing the sidecar's
	 * input ends whatever session memlane opens. False when no sidecar was ever started.
	 */
	async end(): Promise<boolean> {
		const started = performance.now();
		this.takePrestarted("");
		const child: Sidecar | null = this.sidecar;
		const ready = this.starting === null && child !== null && child.alive;
		this.sessionParams = null; // no respawn from here on
		this.sidecar = null;
		this.starting = null;
		if (!child) return false;
		if (ready && child.alive) {
			try {
				await child.request("session_shutdown", {});
			} catch (err) {
				this.hooks.log(`session_shutdown: ${err instanceof Error ? err.message : String(err)}`);
			}
		} else if (child.alive) {
			// Never started: closing its input ends the session memlane may have opened.
			this.hooks.log("the session ended before memlane finished starting");
		}
		await child.close(SHUTDOWN_GRACE_MS);
		recordTiming("session_shutdown", performance.now() - started);
		return true;
	}

	/** Why memlane cannot run in this session (null: it can, or it is still starting). */
	get unavailableReason(): string | null {
		return this.unavailable;
	}

	/** What a tool or command answers when there is no sidecar to ask. */
	unavailableText(): string {
		if (this.isStarting) return STARTING_TEXT;
		const why = this.unavailable ?? "the memlane sidecar is not running";
		return `memlane is not available in this pi session: ${why}.\n${this.notInstalled ? INSTALL_HINT : STATUS_HINT}`;
	}
}

/** Opt-in measurement: MEMLANE_PI_TIMINGS=<file> appends {method, ms} per forwarded event. */
export function recordTiming(method: string, ms: number): void {
	const file = process.env.MEMLANE_PI_TIMINGS;
	if (!file) return;
	try {
		appendFileSync(file, `${JSON.stringify({ method, ms: Math.round(ms * 1000) / 1000 })}\n`);
	} catch {
		// measurement must never disturb the session
	}
}
