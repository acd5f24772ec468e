/**
 * The sidecar of one pi session: started at session_start, respawned lazily after
 * a crash (up to MAX_SIDECAR_RESPAWNS), killed after TIMEOUT_CRASH_THRESHOLD
 * unanswered requests of one method in a row, and given up on for the session
 * when memlane cannot start at all. Every failure degrades to "no answer", so pi
 * keeps working without memory.
 *
 * Node built-ins only (no pi import), so `node --test` runs it as it is.
 */

import { appendFileSync } from "node:fs";
import {
	asObject,
	INSTALL_HINT,
	type JsonObject,
	MAX_SIDECAR_RESPAWNS,
	SHUTDOWN_GRACE_MS,
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
}

export class SidecarConnection {
	private readonly hooks: ConnectionHooks;
	private sidecar: Sidecar | null = null;
	private starting: Promise<Sidecar | null> | null = null;
	private respawns = 0;
	private unavailable: string | null = null; // why memlane cannot run in this session
	private notInstalled = false; // the memlane executable itself is missing
	private readonly consecutiveTimeouts = new Map<string, number>(); // per method
	private sessionParams: JsonObject | null = null;

	constructor(hooks: ConnectionHooks) {
		this.hooks = hooks;
	}

	/** A new pi session: forget the last one's failures and start its sidecar. */
	async begin(params: JsonObject): Promise<void> {
		this.respawns = 0;
		this.unavailable = null;
		this.notInstalled = false;
		this.consecutiveTimeouts.clear();
		this.sidecar = null;
		this.sessionParams = params;
		await this.ensure();
	}

	/** The running sidecar, spawning (or lazily respawning, up to the cap) when needed. */
	async ensure(): Promise<Sidecar | null> {
		const { log } = this.hooks;
		if (this.sidecar?.alive) return this.sidecar;
		if (!this.sessionParams || this.unavailable) return null;
		if (this.starting) return this.starting;
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
		this.starting = (async () => {
			const spawned = performance.now();
			const child = this.hooks.spawn(String(params.cwd));
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
				this.starting = null;
			}
		})();
		return this.starting;
	}

	/** Send one event; any failure degrades to "no answer" so pi keeps working. */
	async forward(method: string, params: JsonObject): Promise<JsonObject | null> {
		const { log } = this.hooks;
		const started = performance.now();
		const child = await this.ensure();
		if (!child) return null;
		try {
			const result = asObject(await child.request(method, params));
			this.consecutiveTimeouts.delete(method);
			return result;
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
			return null;
		} finally {
			recordTiming(method, performance.now() - started);
		}
	}

	/**
	 * The session ends: ask the sidecar to flush, then close it. False when no sidecar
	 * was ever started this session.
	 */
	async end(): Promise<boolean> {
		const child = this.sidecar;
		this.sessionParams = null;
		this.sidecar = null;
		if (!child) return false;
		if (child.alive) {
			try {
				await child.request("session_shutdown", {});
			} catch (err) {
				this.hooks.log(`session_shutdown: ${err instanceof Error ? err.message : String(err)}`);
			}
		}
		await child.close(SHUTDOWN_GRACE_MS);
		return true;
	}

	/** What a tool or command answers when there is no sidecar to ask. */
	unavailableText(): string {
		const why = this.unavailable ?? "the memlane sidecar is not running";
		return `memlane is not available in this pi session: ${why}.\n${this.notInstalled ? INSTALL_HINT : `${STATUS_HINT}\n${INSTALL_HINT}`}`;
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
