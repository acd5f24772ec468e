/**
 * memory_transcript (L3) without memlane: a pure file read of a pi session.
 *
 * The rules are the engine's, named after where they live in memlane:
 * - which transcripts an agent may read: transcript-access.ts;
 * - reading it (transcripts/__init__.py, pi.py, tree.py, render.py, model.py): the
 *   entry tree from ids and parent links, the anchored entry by id or unique prefix, the
 *   branch through it to its latest descendant, TRANSCRIPT_CONTEXT turns either side
 *   (or the last TRANSCRIPT_LIMIT of the live branch), tool results folded, each turn
 *   clipped to TURN_CHAR_CAP, rendered as memlane renders it, and redacted.
 *
 * Only pi's format is read here; a Claude Code or Codex transcript needs memlane itself.
 *
 * Node built-ins only (no pi import), so `node --test` runs it as it is.
 */

import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";
import { MemoryFileError, NO_TRANSCRIPT, type StoreLocation } from "./daily.ts";
import { redact } from "./redact.ts";
import { checkTranscriptAllowed } from "./transcript-access.ts";

export const TRANSCRIPT_CONTEXT = 3;
export const TRANSCRIPT_LIMIT = 20;
export const TURN_CHAR_CAP = 2000;
const TRANSCRIPT_MAX_BYTES = 1 << 30;
const SNIFF_LINES = 50;
/** The line types of a Codex rollout (memlane/transcripts/codex.py TYPES). */
const CODEX_TYPES = new Set(["session_meta", "event_msg", "turn_context", "world_state", "token_usage_record", "response_item", "compacted"]);
const MAX_TOOL_ARGS = 3;
const TOOL_ARG_CHARS = 60;
const MARKER_CHARS = 200;

// -- reading a pi session ------------------------------------------------------------------

type Obj = Record<string, unknown>;
type Kind = "user" | "assistant" | "tool" | "marker" | "silent";

interface Entry {
	id: string;
	parent: string | null;
	order: number;
	obj: Obj;
	kind: Kind;
}

interface Turn {
	id: string;
	role: string;
	text: string;
	time: string | null;
	timestamp: string | null;
	calls: string[];
	folded: number;
	target: boolean;
}

function parseLine(line: string): Obj | null {
	try {
		const obj = JSON.parse(line) as unknown;
		return obj && typeof obj === "object" && !Array.isArray(obj) ? (obj as Obj) : null;
	} catch {
		return null;
	}
}

const ROLE_KINDS: Record<string, Kind> = {
	user: "user",
	assistant: "assistant",
	toolResult: "tool",
	bashExecution: "marker",
	custom: "marker",
	hookMessage: "marker",
	branchSummary: "marker",
	compactionSummary: "marker",
	system: "silent",
};
const TYPE_KINDS: Record<string, Kind> = {
	compaction: "marker",
	branch_summary: "marker",
	custom_message: "marker",
	model_change: "silent",
	thinking_level_change: "silent",
	custom: "silent",
	label: "silent",
	session_info: "silent",
};

function textOfBlocks(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((b): b is { type: string; text: string } => b?.type === "text" && typeof b.text === "string")
		.map((b) => b.text)
		.filter(Boolean)
		.join("\n");
}

const oneLineCap = (text: string, cap: number) => {
	const flat = text.split(/\s+/).filter(Boolean).join(" ");
	const cs = Array.from(flat);
	return cs.length <= cap ? flat : `${cs.slice(0, cap - 1).join("").trimEnd()}…`;
};

function clip(text: string, cap: number): [string, boolean] {
	const cs = Array.from(text);
	if (cap <= 0 || cs.length <= cap) return [text, false];
	return [`${cs.slice(0, cap).join("").trimEnd()}… [truncated ${cs.length - cap} more chars]`, true];
}

const pad = (n: number) => String(n).padStart(2, "0");

/** HH:MM (or the date) in the machine's local zone, from an ISO string or epoch ms. */
function localTime(stamp: unknown, what: "time" | "date"): string | null {
	let d: Date | null = null;
	if (typeof stamp === "string" && stamp) {
		const naive = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(stamp);
		d = new Date(naive ? stamp : stamp.replace(/Z$/, "+00:00"));
	} else if (typeof stamp === "number") d = new Date(stamp);
	if (!d || Number.isNaN(d.getTime())) return null;
	return what === "time" ? `${pad(d.getHours())}:${pad(d.getMinutes())}` : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** Python's json.dumps(value, ensure_ascii=False): ", " and ": " between items. */
function pyJson(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(pyJson).join(", ")}]`;
	if (value && typeof value === "object") {
		return `{${Object.entries(value as Obj).map(([k, v]) => `${JSON.stringify(k)}: ${pyJson(v)}`).join(", ")}}`;
	}
	return JSON.stringify(value) ?? "null";
}

/** One tool call, clipped and redacted: `name(key=value, …)`. */
function toolCall(name: string, args: unknown): string {
	const entries = args && typeof args === "object" && !Array.isArray(args) ? Object.entries(args as Obj) : [];
	const parts = entries.slice(0, MAX_TOOL_ARGS).map(([key, value]) => {
		const text = oneLineCap(typeof value === "string" ? value : pyJson(value), TOOL_ARG_CHARS);
		// Each value keyed: a keyword rule ("password=...") sees its key.
		return `${key}=${redact(`${key}=${text}`).text.split("=").slice(1).join("=")}`;
	});
	if (entries.length > MAX_TOOL_ARGS) parts.push("…");
	return `${oneLineCap(name, TOOL_ARG_CHARS)}(${parts.join(", ")})`;
}

interface Draft {
	role: string;
	text: string;
	calls: string[];
	stamp: unknown;
	marker: boolean;
}

function draft(obj: Obj): Draft {
	const stampOf = (message: Obj) => (typeof obj.timestamp === "string" ? obj.timestamp : message.timestamp);
	if (obj.type === "message") {
		const m = (obj.message && typeof obj.message === "object" ? obj.message : {}) as Obj;
		const content = m.content;
		const stamp = stampOf(m);
		switch (m.role) {
			case "user":
				return { role: "user", text: textOfBlocks(content), calls: [], stamp, marker: false };
			case "assistant": {
				const calls = Array.isArray(content)
					? content.filter((b) => b?.type === "toolCall").map((b) => toolCall(String(b.name ?? "?"), b.arguments))
					: [];
				return { role: "assistant", text: textOfBlocks(content), calls, stamp, marker: false };
			}
			case "toolResult":
				return { role: "event", text: `tool result of ${m.toolName} (${m.isError ? "error" : "ok"})`, calls: [], stamp, marker: true };
			case "bashExecution":
				return { role: "bash", text: `!${m.command} (exit ${m.exitCode})`, calls: [], stamp, marker: true };
			case "branchSummary":
			case "compactionSummary":
				return { role: m.role === "branchSummary" ? "branch_summary" : "compaction", text: String(m.summary ?? ""), calls: [], stamp, marker: true };
			default:
				return { role: "custom", text: `[${m.customType ?? m.role}] ${textOfBlocks(content)}`, calls: [], stamp, marker: true };
		}
	}
	const stamp = typeof obj.timestamp === "string" ? obj.timestamp : null;
	const event = (text: string): Draft => ({ role: "event", text, calls: [], stamp, marker: true });
	switch (obj.type) {
		case "compaction":
			return { role: "compaction", text: `${obj.tokensBefore ? `context compacted (${obj.tokensBefore} tokens before)` : "context compacted"}: ${obj.summary ?? ""}`, calls: [], stamp, marker: true };
		case "branch_summary":
			return { role: "branch_summary", text: `left branch summarized: ${obj.summary ?? ""}`, calls: [], stamp, marker: true };
		case "custom_message":
			return { role: "custom", text: `[${obj.customType}] ${textOfBlocks(obj.content)}`, calls: [], stamp, marker: true };
		case "model_change":
			return event(`model changed to ${obj.provider}/${obj.modelId}`);
		case "thinking_level_change":
			return event(`thinking level set to ${obj.thinkingLevel}`);
		case "label":
			return event(`label '${obj.label}' on ${obj.targetId}`);
		case "session_info":
			return event(`session named '${obj.name}'`);
		default:
			return event(`${obj.type} entry`);
	}
}

export interface TranscriptArgs {
	transcript_path: string;
	turn?: string;
}

/** The rendered window of a pi session around `turn` (or the live branch), redacted. */
export function readPiTranscript(path: string, shownPath: string, turnArg: string | undefined): string {
	const turn = turnArg?.trim() || null;
	let fd: number;
	try {
		fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
	} catch (err) {
		const code = (err as NodeJS.ErrnoException).code;
		if (code === "ENOENT") throw new MemoryFileError(`transcript not found: ${shownPath}`, "the session file may have been moved or deleted, or the anchor comes from another machine");
		throw new MemoryFileError(`cannot read transcript ${shownPath}: ${(err as Error).message}`, "check the file's permissions");
	}
	let data: string;
	try {
		const info = fstatSync(fd);
		if (info.isDirectory()) throw new MemoryFileError(`transcript path is a directory: ${shownPath}`, "pass the session's .jsonl file, as the anchor's transcript: field names it");
		if (!info.isFile()) throw new MemoryFileError(`${shownPath} is not a regular file`, "pass the session's .jsonl file");
		if (info.size > TRANSCRIPT_MAX_BYTES) throw new MemoryFileError(`transcript ${shownPath} is larger than memlane reads (1 GiB)`, "pass the session's .jsonl file");
		if (info.size === 0) throw new MemoryFileError(`transcript is empty: ${shownPath}`, "the session wrote nothing yet; try again once it has a turn");
		data = readFileSync(fd, "utf8");
	} finally {
		closeSync(fd);
	}
	const nodes = new Map<string, Entry>();
	const ordered: Entry[] = [];
	const unknown = new Map<string, number>();
	let garbage = 0;
	let duplicates = 0;
	let missing = 0;
	let format: "pi" | "claude" | "codex" | null = null;
	let sessionId: string | null = null;
	let parentSession: string | null = null;
	let version = 3;
	let previous: string | null = null;
	let lines = 0;
	const note = (key: string) => unknown.set(key, (unknown.get(key) ?? 0) + 1);
	for (const line of data.split("\n")) {
		if (!line.trim()) continue;
		const order = lines++;
		const obj = parseLine(line);
		if (!obj) {
			garbage++;
			if (format === null && lines >= SNIFF_LINES) break;
			continue;
		}
		if (format === null) {
			if (obj.type === "session" && typeof obj.id === "string") format = "pi";
			else if (typeof obj.uuid === "string" || typeof obj.sessionId === "string") format = "claude";
			else if (typeof obj.type === "string" && CODEX_TYPES.has(obj.type) && typeof obj.payload === "object" && obj.payload !== null) format = "codex";
			else if (lines >= SNIFF_LINES) break;
			else continue;
		}
		if (format === "claude" || format === "codex") break;
		if (obj.type === "session") {
			if (sessionId === null) {
				sessionId = typeof obj.id === "string" ? obj.id : null;
				parentSession = typeof obj.parentSession === "string" && obj.parentSession ? obj.parentSession : null;
				version = typeof obj.version === "number" ? obj.version : 1;
			}
			continue;
		}
		let id = obj.id;
		let parent: string | null;
		if (typeof id !== "string" || !id) {
			if (version >= 2) {
				missing++;
				continue;
			}
			id = `L${order}`;
			parent = previous;
		} else parent = typeof obj.parentId === "string" && obj.parentId ? obj.parentId : null;
		let kind: Kind;
		if (obj.type === "message") {
			const role = (obj.message as Obj | undefined)?.role;
			kind = (typeof role === "string" && ROLE_KINDS[role]) || "silent";
			if (!(typeof role === "string" && ROLE_KINDS[role])) note(`message/${role}`);
		} else {
			kind = (typeof obj.type === "string" && TYPE_KINDS[obj.type]) || "silent";
			if (!(typeof obj.type === "string" && TYPE_KINDS[obj.type])) note(String(obj.type));
		}
		const node: Entry = { id: id as string, parent, order, obj, kind };
		if (nodes.has(node.id)) duplicates++;
		else {
			nodes.set(node.id, node);
			ordered.push(node);
		}
		previous = node.id;
	}
	if (format === "claude" || format === "codex") {
		const agent = format === "claude" ? "Claude Code" : "Codex";
		throw new MemoryFileError(`${shownPath} is a ${agent} transcript, which only memlane itself reads`, "run memlane again (see /memory status), then ask again");
	}
	if (format === null) throw new MemoryFileError(`not a pi session, Claude Code or Codex transcript: ${shownPath}`, "pass the session .jsonl file the anchor's transcript: field names");
	const notes: string[] = [];
	const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
	if (garbage) notes.push(`skipped ${count(garbage, "unreadable line")} (not a JSON object, or truncated)`);
	if (unknown.size) {
		const total = [...unknown.values()].reduce((a, b) => a + b, 0);
		const kinds = [...unknown.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => `${k} ×${n}`).join(", ");
		notes.push(`skipped ${count(total, "entry", "entries")} of unknown type: ${kinds}`);
	}
	if (duplicates) notes.push(`ignored ${count(duplicates, "entry", "entries")} repeating an earlier id`);
	if (missing) notes.push(`skipped ${count(missing, "entry", "entries")} without an id`);

	let target: Entry | null = null;
	if (turn) {
		target = nodes.get(turn) ?? null;
		if (!target) {
			const matches = ordered.filter((n) => n.id.startsWith(turn));
			if (matches.length === 1) target = matches[0];
			else if (matches.length === 0) {
				let hint = "check the anchor's turn id, or omit turn to see the live branch";
				if (parentSession) hint += `; this session was forked from ${parentSession}, which may hold it`;
				throw new MemoryFileError(`no entry with id or id prefix '${turn}' in transcript ${shownPath}`, hint);
			} else {
				throw new MemoryFileError(`turn '${turn}' is ambiguous: ${matches.length} entries of transcript ${shownPath} start with it`, "pass more characters of the entry id");
			}
		}
	}
	// The tip: the target's latest descendant, or the live branch's last entry.
	let tip: Entry | null = target ?? ordered[ordered.length - 1] ?? null;
	if (target) {
		const children = new Map<string, Entry[]>();
		for (const n of ordered) if (n.parent !== null) children.set(n.parent, [...(children.get(n.parent) ?? []), n]);
		const seen = new Set([target.id]);
		const stack = [target];
		while (stack.length) {
			const n = stack.pop() as Entry;
			for (const child of children.get(n.id) ?? []) {
				if (seen.has(child.id)) continue;
				seen.add(child.id);
				stack.push(child);
				if (tip && child.order > tip.order) tip = child;
			}
		}
	}
	const branch: Entry[] = [];
	const seen = new Set<string>();
	for (let n: Entry | null | undefined = tip; n; ) {
		if (seen.has(n.id)) {
			notes.push(`parent links form a cycle at entry ${n.id}; the branch is shown from there`);
			break;
		}
		seen.add(n.id);
		branch.push(n);
		if (n.parent === null) break;
		const parent = nodes.get(n.parent);
		if (!parent) notes.push(`entry ${n.id} names parent ${n.parent}, which is not in this file; the branch is shown from there`);
		n = parent;
	}
	branch.reverse();
	const conversation = (n: Entry) => n.kind === "user" || n.kind === "assistant";
	const conv = branch.map((n, i) => (conversation(n) ? i : -1)).filter((i) => i >= 0);
	let window: Entry[];
	if (!target) {
		const start = conv.length ? conv[Math.max(0, conv.length - TRANSCRIPT_LIMIT)] : Math.max(0, branch.length - TRANSCRIPT_LIMIT);
		window = branch.slice(start);
	} else {
		const t = branch.indexOf(target);
		const before = conv.filter((i) => i < t).slice(-TRANSCRIPT_CONTEXT);
		const after = conv.filter((i) => i > t).slice(0, TRANSCRIPT_CONTEXT);
		window = branch.slice(before.length ? before[0] : t, (after.length ? after[after.length - 1] : t) + 1);
	}
	const turns: Turn[] = [];
	let lastAssistant: number | null = null;
	let folded = 0;
	const fold = () => {
		if (lastAssistant !== null && folded) turns[lastAssistant].folded += folded;
		folded = 0;
	};
	for (const n of window) {
		const hit = target !== null && n.id === target.id;
		if (!hit && (n.kind === "silent" || n.kind === "tool")) {
			if (n.kind === "tool" && lastAssistant !== null) folded++;
			continue;
		}
		fold();
		const d = draft(n.obj);
		const text = d.marker ? oneLineCap(d.text, MARKER_CHARS) : clip(d.text, TURN_CHAR_CAP)[0];
		turns.push({
			id: n.id,
			role: d.role,
			text: redact(text).text,
			time: localTime(d.stamp, "time"),
			timestamp: typeof d.stamp === "string" ? d.stamp : null,
			calls: d.calls,
			folded: 0,
			target: hit,
		});
		lastAssistant = n.kind === "assistant" ? turns.length - 1 : null;
	}
	fold();
	return render(shownPath, sessionId, parentSession, target?.id ?? null, turns, conv.length, notes);
}

/** Python's str.splitlines(): no empty piece after a final line break. */
function splitLines(text: string): string[] {
	if (!text) return [];
	const parts = text.split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/);
	if (parts[parts.length - 1] === "") parts.pop();
	return parts;
}

const LABELS: Record<string, string> = {
	user: "user",
	assistant: "assistant",
	compaction: "compaction",
	branch_summary: "branch summary",
	bash: "bash",
	custom: "extension",
	event: "entry",
};

function render(path: string, sessionId: string | null, parent: string | null, target: string | null, turns: Turn[], branchTurns: number, notes: string[]): string {
	const lines = [`Transcript ${path} (pi session ${sessionId ?? "?"})`];
	if (parent) lines.push(`Forked from ${parent}`);
	const shown = turns.filter((t) => t.role === "user" || t.role === "assistant").length;
	lines.push(target ? `Around entry ${target}: ${shown} of ${branchTurns} turns on its branch` : `Live branch: last ${shown} of ${branchTurns} turns`);
	const dates = [...new Set(turns.map((t) => localTime(t.timestamp, "date")).filter((d): d is string => d !== null))].sort();
	if (dates.length) lines.push(`Local date: ${dates[0]}${dates.length > 1 ? ` to ${dates[dates.length - 1]}` : ""}`);
	for (const n of notes) lines.push(`Note: ${n}`);
	if (!turns.length) lines.push("", "(no user or assistant turns on this branch)");
	for (const t of turns) {
		lines.push("");
		const when = t.time ? `[${t.time}] ` : "";
		const mark = t.target ? "  ◀ target" : "";
		const label = LABELS[t.role] ?? t.role;
		if (t.role !== "user" && t.role !== "assistant") {
			lines.push(`${when}── ${label}: ${t.text} (${t.id})${mark}`);
			continue;
		}
		lines.push(`${when}${label} (${t.id})${mark}`);
		for (const line of splitLines(t.text)) lines.push(`  ${line}`);
		if (!t.text && !t.calls.length) lines.push("  (no text)");
		for (const call of t.calls) lines.push(`  → ${call}`);
		if (t.folded) lines.push(`  (${t.folded} tool result${t.folded !== 1 ? "s" : ""} folded)`);
	}
	return lines.join("\n");
}

/** memory_transcript's answer without memlane: checked, read and redacted; errors thrown. */
export function transcriptWithoutEngine(args: TranscriptArgs, location: StoreLocation, sessionTranscript: string | null): string {
	const requested = typeof args.transcript_path === "string" ? args.transcript_path : "";
	if (!requested.trim() || requested.trim() === NO_TRANSCRIPT) {
		throw new MemoryFileError("this memory has no transcript: it was written outside an agent session", "memory_expand shows everything that was kept of it");
	}
	const path = checkTranscriptAllowed(requested, location, sessionTranscript);
	// Shown by the path that was checked (links resolved), as memlane shows it.
	return readPiTranscript(path, path, args.turn);
}
