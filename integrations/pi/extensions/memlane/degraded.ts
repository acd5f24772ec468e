/**
 * Memory without memlane: what the pi package does itself when the engine cannot answer.
 *
 * pi-memsearch's degradation, kept (its "Degradation" table): writing a memory entry
 * and reading a transcript are plain file operations, so they go on without the
 * backend; search needs the index, so it says plainly that it is unavailable.
 *
 * | surface                         | without memlane                                       |
 * |---------------------------------|-------------------------------------------------------|
 * | memory_write                    | appends a redacted, anchored entry to the daily file  |
 * | capture (agent_settled)         | appends the exchange as an undistilled digest entry   |
 * | memory_transcript               | reads this project's pi session itself (transcript.ts)|
 * | stable snapshot                 | today's and yesterday's notes, read from the files    |
 * | search, expand, similar, topic, | one plain line: unavailable, and why                  |
 * | forget, compact                 |                                                       |
 * | memory_status, /memory status   | why, how to fix it, what still works, this session's  |
 * |                                 | writes                                                |
 * | auto-context                    | no injection                                          |
 *
 * "Without memlane" is any call the sidecar never saw: memlane is missing or broken
 * (it never started), it died past MAX_SIDECAR_RESPAWNS, or it is still starting past
 * the call's wait. A write then goes to the file at once (the engine indexes it when it
 * runs again: it indexes whatever changed in the store); a search while memlane starts
 * says it is starting, as before. Capture applies the gates of memlane's Session that
 * need no model (docs/session.md): capture switched off, an aborted run, no user
 * message, no answer, a `/recall` run, and a run whose only tools were memlane's own
 * (ADR 0031). Without a model nothing is distilled: the entry is memlane's digest form,
 * under the marker `- [no distillation: memlane was unavailable]`.
 *
 * Node built-ins only (no pi import), so `node --test` runs it as it is.
 */

import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { SidecarConnection } from "./connection.ts";
import {
	type Anchor,
	DailyWriter,
	DIGEST_SOURCE_CHARS,
	dayBefore,
	digest,
	localNow,
	MemoryFileError,
	NO_TRANSCRIPT,
	newEntryId,
	pyStrip,
	readStoreFile,
	resolveStore,
	type StoreLocation,
	anchorField,
} from "./daily.ts";
import { type Json, type JsonObject, STARTING_TEXT } from "./protocol.ts";
import { redact } from "./redact.ts";
import { transcriptWithoutEngine } from "./transcript.ts";

/** The marker of a capture entry written without memlane (the engine's `[no distillation: …]` shape). */
export const NO_ENGINE_MARKER = "- [no distillation: memlane was unavailable]";
/** What pi's `/recall` sends as the prompt (commands.ts; memlane's RECALL_PROMPT_PREFIX). */
export const RECALL_PROMPT_PREFIX = "Recall from long-term memory:";
/** The stable snapshot's tails (memlane's SNAPSHOT_TODAY_CHARS, SNAPSHOT_YESTERDAY_CHARS). */
export const SNAPSHOT_TODAY_CHARS = 3000;
export const SNAPSHOT_YESTERDAY_CHARS = 2000;
const CUT_MARKER = "[… earlier entries of this day omitted]";
const ENTRY_CUT_MARKER = "[… entry cut]";
const CAPTURE_ENVS = ["MEMLANE_CAPTURE_ENABLED", "MEMLANE_CAPTURE", "PI_MEMSEARCH_CAPTURE"];
const ENGINE_ONLY = ["memory_search", "memory_expand", "memory_similar", "memory_topic", "memory_forget", "memory_compact"];

/** The pi session a call belongs to. */
export interface SessionInfo {
	cwd: string;
	sessionId: string;
	sessionFile: string | null;
}

export interface Exchange {
	user: string;
	assistant: string;
	aborted: boolean;
	entryId: string | null;
	tools: string[];
}

export interface Answer {
	text: string;
	details: Json;
}

export class Degraded {
	private readonly connection: SidecarConnection;
	private readonly log: (line: string) => void;
	private readonly memlaneTools: ReadonlySet<string>;
	private readonly writer = new DailyWriter();
	private readonly stores = new Map<string, StoreLocation>();
	private snapshotCache: { key: string; text: string } | null = null;
	/** This process's writes without the engine, for status. */
	readonly counts = { written: 0, captured: 0, skipped: 0, failed: 0 };
	lastError: string | null = null;
	lastPath: string | null = null;

	constructor(connection: SidecarConnection, log: (line: string) => void, memlaneTools: Iterable<string>) {
		this.connection = connection;
		this.log = log;
		this.memlaneTools = new Set(memlaneTools);
	}

	/** Why the sidecar cannot be asked, in a few words. */
	why(): string {
		if (this.connection.isStarting) return "memlane is still starting";
		return this.connection.unavailableReason ?? "the memlane sidecar is not running";
	}

	/** The store of the session's project, resolved once per directory (a store command runs once). */
	location(cwd: string): StoreLocation {
		let found = this.stores.get(cwd);
		if (!found) {
			found = resolveStore(cwd);
			this.stores.set(cwd, found);
		}
		return found;
	}

	/** A tool call the sidecar could not take; a write or read that fails throws, as memlane's do. */
	tool(name: string, args: JsonObject, session: SessionInfo): Answer {
		try {
			if (name === "memory_write") return this.write(args, session);
			if (name === "memory_transcript") return this.transcript(args, session);
		} catch (err) {
			throw new Error(failure(err));
		}
		if (this.connection.isStarting) return { text: STARTING_TEXT, details: { unavailable: true, starting: true } };
		if (name === "memory_status") return { text: this.statusText(session), details: { unavailable: true, degraded: true } };
		return {
			text: `${name} is unavailable in this pi session: memlane is not running (${this.why()}). memory_write still saves to today's daily file and memory_transcript still reads this project's sessions; \`/memory status\` says how to fix it.`,
			details: { unavailable: true, degraded: true, reason: this.why() },
		};
	}

	/** memory_write without the engine: redacted, anchored, appended. */
	write(args: JsonObject, session: SessionInfo): Answer {
		const text = args.text;
		if (typeof text !== "string") throw new MemoryFileError("memory_write: text is required", "pass the memory as text");
		const redaction = redact(text);
		if (redaction.kinds.length === 1 && redaction.kinds[0] === "unscannable") {
			throw new MemoryFileError("the text could not be scanned for secrets, so it was not written", "this is a bug of the memlane pi package; report it");
		}
		const anchor: Anchor = { session: session.sessionId, turn: newEntryId(), transcript: session.sessionFile ?? NO_TRANSCRIPT };
		const entry = this.append(redaction.text, anchor, session);
		this.counts.written++;
		const headline = `Saved to ${entry.path} at ${entry.time}`;
		const lines = [`${headline}:\n${entry.text.trimEnd()}`];
		if (redaction.count) lines.push(`${redaction.count} secret(s) were redacted before saving.`);
		if (typeof args.supersedes === "string" && args.supersedes) {
			lines.push(`It was not marked as replacing ${args.supersedes}: that needs memlane's index, which is unavailable.`);
		}
		lines.push(`(memlane is not running in this pi session, so the pi package wrote it itself; memlane indexes it when it runs again.)`);
		return { text: lines.join("\n"), details: { headline, path: entry.path, time: entry.time, degraded: true, redactions: redaction.count } };
	}

	transcript(args: JsonObject, session: SessionInfo): Answer {
		const project = typeof args.project === "string" ? args.project : "";
		const location = this.location(session.cwd);
		if (project && ![location.scope, location.repositoryDir].includes(project.replace(/\/+$/, ""))) {
			throw new MemoryFileError(
				`reading a transcript of another project (${project}) needs memlane, which is not running in this pi session (${this.why()})`,
				"`/memory status` says how to fix it",
			);
		}
		const text = transcriptWithoutEngine(
			{ transcript_path: String(args.transcript_path ?? ""), turn: typeof args.turn === "string" ? args.turn : undefined },
			location,
			session.sessionFile,
		);
		return { text, details: { degraded: true } };
	}

	/** A settled exchange the sidecar never saw: gated, redacted, written as a digest. */
	capture(exchange: Exchange, session: SessionInfo): void {
		const skip = this.gate(exchange, session);
		if (skip) {
			this.counts.skipped++;
			this.log(`capture without memlane: not written (${skip})`);
			return;
		}
		const user = redact(cut(exchange.user)).text;
		const assistant = redact(cut(exchange.assistant)).text;
		const anchor: Anchor = {
			session: session.sessionId,
			turn: anchorField(exchange.entryId ?? "", false) || newEntryId(),
			transcript: session.sessionFile ?? NO_TRANSCRIPT,
		};
		try {
			const entry = this.append([NO_ENGINE_MARKER, ...digest(user, assistant)].join("\n"), anchor, session);
			this.counts.captured++;
			this.log(`memlane is unavailable: the exchange was written to ${entry.path} as a digest`);
		} catch (err) {
			this.counts.failed++;
			this.lastError = failure(err);
			this.log(`capture without memlane failed: ${this.lastError}`);
		}
	}

	/** Why an exchange is not captured (memlane's gates that need no model), or null. */
	private gate(exchange: Exchange, session: SessionInfo): string | null {
		if (!captureEnabled(session.cwd, this.storeOrNull(session.cwd))) return "capture is off";
		if (exchange.aborted) return "the run was aborted";
		if (!pyStrip(exchange.user)) return "there is no user message";
		if (!pyStrip(exchange.assistant)) return "the assistant produced no text";
		if (exchange.user.startsWith(RECALL_PROMPT_PREFIX)) return "a /recall run only restates memory";
		if (exchange.tools.length > 0 && exchange.tools.every((name) => this.memlaneTools.has(name))) {
			return "the run only called memlane's own tools";
		}
		return null;
	}

	private storeOrNull(cwd: string): StoreLocation | null {
		try {
			return this.location(cwd);
		} catch {
			return null;
		}
	}

	private append(text: string, anchor: Anchor, session: SessionInfo) {
		const location = this.location(session.cwd);
		const entry = this.writer.append(location.store, text, anchor, localNow(), anchor.session);
		this.lastPath = entry.path;
		return entry;
	}

	/** The stable snapshot without memlane (none while the project has no store): byte-identical
	 * until the date or a compaction changes it. */
	snapshot(session: SessionInfo): string | null {
		let location: StoreLocation;
		try {
			location = this.location(session.cwd);
		} catch {
			return null;
		}
		// A project with no memory yet gets no block: the prompt stays as pi made it.
		if (!existsSync(location.store)) return null;
		const today = localNow().date;
		const key = `${location.store}\0${today}`;
		if (this.snapshotCache?.key !== key) this.snapshotCache = { key, text: buildSnapshot(location.store, today) };
		return this.snapshotCache.text;
	}

	/** Rebuild the snapshot at the next prompt (pi compacted its context). */
	compacted(): void {
		this.snapshotCache = null;
	}

	/** memory_status and `/memory status` without memlane. */
	statusText(session: SessionInfo): string {
		const lines = [this.connection.unavailableText(), "", "Without memlane, the pi package keeps what needs no engine:"];
		let where: string;
		try {
			where = `${this.location(session.cwd).store}/${localNow().date}.md`;
		} catch (err) {
			where = `(no store: ${failure(err)})`;
		}
		lines.push(
			`  memory_write, capture   append to ${where}: redacted and anchored; exchanges as undistilled digests`,
			"  memory_transcript       reads this project's pi sessions itself",
			"  stable snapshot         today's and yesterday's notes, read from the daily files",
			`  unavailable             ${ENGINE_ONLY.join(", ")}, auto-context`,
		);
		const { written, captured, skipped, failed } = this.counts;
		lines.push(
			"",
			`This pi process: ${written} memory_write(s) and ${captured} exchange(s) written without memlane, ${skipped} exchange(s) not captured, ${failed} failed.`,
		);
		if (this.lastError) lines.push(`Last failure: ${this.lastError}`);
		lines.push("memlane indexes these entries when it runs again: nothing written here is lost.");
		return lines.join("\n");
	}
}

function failure(err: unknown): string {
	if (err instanceof MemoryFileError) return `${err.message} (${err.hint})`;
	return err instanceof Error ? err.message : String(err);
}

/** The start of a text: only that much is redacted for the digest, which shows far less. */
function cut(text: string): string {
	return text.length <= DIGEST_SOURCE_CHARS ? text : text.slice(0, DIGEST_SOURCE_CHARS);
}

// -- capture.enabled without memlane's config resolver ---------------------------------------

const WORDS_ON = ["1", "true", "on", "yes"];
const WORDS_OFF = ["0", "false", "off", "no"];

/**
 * Whether capture is on: the environment decides when it says (MEMLANE_CAPTURE_ENABLED,
 * MEMLANE_CAPTURE, PI_MEMSEARCH_CAPTURE, in memlane's order); else `enabled = false` under
 * `[capture]` in the global config or the project's `.memlane.toml` switches it off. Read
 * only to switch capture off, a project file counts whether or not it is trusted.
 */
export function captureEnabled(cwd: string, location: StoreLocation | null, env: NodeJS.ProcessEnv = process.env): boolean {
	for (const name of CAPTURE_ENVS) {
		const value = env[name]?.trim().toLowerCase();
		if (!value) continue;
		if (WORDS_OFF.includes(value)) return false;
		if (WORDS_ON.includes(value)) return true;
		break;
	}
	const home = env.MEMLANE_HOME || join(env.HOME || homedir(), ".memlane");
	const files = [join(home.replace(/^~(?=$|\/)/, env.HOME || homedir()), "config.toml"), join(location?.repositoryDir ?? cwd, ".memlane.toml")];
	return !files.some((file) => tomlCaptureOff(file));
}

function tomlCaptureOff(file: string): boolean {
	let text: string;
	try {
		text = readFileSync(file, "utf8");
	} catch {
		return false;
	}
	let section = "";
	for (const raw of text.split("\n")) {
		const line = raw.replace(/#.*$/, "").trim();
		const header = /^\[\s*([^\]]+?)\s*\]$/.exec(line);
		if (header) {
			section = header[1];
			continue;
		}
		const m = /^([A-Za-z0-9_."-]+)\s*=\s*(true|false)$/.exec(line);
		if (!m) continue;
		const key = section ? `${section}.${m[1]}` : m[1];
		if (key.replace(/"/g, "") === "capture.enabled" && m[2] === "false") return true;
	}
	return false;
}

// -- the stable snapshot (engine/journal/snapshot.py) ----------------------------------------

const USAGE = `## Project memory (memlane)
Past sessions of this project are remembered as markdown notes. memlane is not running in
this pi session, so memory_search and memory_expand cannot answer; memory_write still
records a decision or fact in today's notes, and memory_transcript(transcript_path, turn)
still reads the conversation an anchor below names. Recent notes follow; they may be
incomplete.`;

/** The longest run of whole trailing entries that fits in `limit` characters. */
export function tailAtEntryBoundary(text: string, limit: number): string {
	text = text.replace(/^\n+|\n+$/g, "");
	if (limit <= 0 || !text) return "";
	if (text.length <= limit) return text;
	const starts = [...text.matchAll(/^#{2,3} /gm)].map((m) => m.index ?? 0);
	for (const start of starts) if (text.length - start <= limit) return `${CUT_MARKER}\n${text.slice(start)}`;
	const last = starts.length ? starts[starts.length - 1] : 0;
	const room = Math.max(0, limit - ENTRY_CUT_MARKER.length - 1);
	return `${CUT_MARKER}\n${text.slice(last, last + room).trimEnd()}\n${ENTRY_CUT_MARKER}`;
}

function dayBlock(store: string, day: string, label: string, limit: number): string | null {
	let text: string | null;
	try {
		text = readStoreFile(store, join(store, `${day}.md`));
	} catch (err) {
		return `### ${label} (${day})\n(could not be read: ${failure(err)})`;
	}
	if (text === null) return null;
	const tail = tailAtEntryBoundary(text.replace(/^\ufeff/, "").replace(/^# \d{4}-\d{2}-\d{2}\n/, ""), limit);
	return tail ? `### ${label} (${day})\n${tail}` : null;
}

export function buildSnapshot(store: string, today: string): string {
	const blocks = [USAGE];
	for (const block of [
		dayBlock(store, dayBefore(today), "Yesterday", SNAPSHOT_YESTERDAY_CHARS),
		dayBlock(store, today, "Today", SNAPSHOT_TODAY_CHARS),
	]) {
		if (block) blocks.push(block);
	}
	if (blocks.length === 1) blocks.push("(no notes yet today or yesterday)");
	return `${blocks.join("\n\n")}\n`;
}
