/**
 * The daily memory file, written as memlane writes it, for when memlane cannot run.
 *
 * Each rule is the engine's, named after where it lives in memlane:
 * - where the store is (core/scope.py): the store command's `memory-dir` answer
 *   (`MEMLANE_STORE_CMD`, alias `PI_MEMSEARCH_STORE_CMD`; a failing command raises,
 *   never falls back), else `$MEMSEARCH_DIR/memory` (relative to the repository
 *   directory), else `<git root or cwd>/.memsearch/memory`, where a linked git worktree's
 *   git root is its main worktree's unless `scope.worktrees = separate` (worktree.ts);
 * - "now" (core/clock.py): the system's local time, or `MEMLANE_NOW`'s clock;
 * - the entry (store/daily.py): `\n## Session HH:MM\n` (the session's first entry in
 *   the file only: process state seeded by one read of the file), `### HH:MM`, the
 *   session anchor, each non-blank line a bullet; a new file starts with its
 *   `# YYYY-MM-DD` title, created whole (a temporary file hard-linked into place);
 *   each entry is one write on a descriptor opened `O_APPEND`, so entries of
 *   concurrent writers never interleave; a link anywhere on the path is refused;
 * - the digest of an exchange nobody distilled (engine/journal/distill.py).
 *
 * One departure: memlane's appenders also take the file's `flock` to cut back a
 * write a full disk left short; Node has no `flock`, so a short write is reported
 * and left for `memlane status --fix`, as pi-memsearch's `appendFileSync` does.
 *
 * Node built-ins only (no pi import), so `node --test` runs it as it is.
 */

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
	closeSync,
	constants,
	fstatSync,
	linkSync,
	lstatSync,
	mkdirSync,
	openSync,
	readFileSync,
	realpathSync,
	statSync,
	unlinkSync,
	writeSync,
} from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path";
import { gitRoot, realpathLoose, sharedRoot, worktreesSetting } from "./worktree.ts";

export const NO_TRANSCRIPT = "none";
export const STORE_CMD_ENVS = ["MEMLANE_STORE_CMD", "PI_MEMSEARCH_STORE_CMD"];
const STORE_CMD_TIMEOUT_MS = 30_000;
/** What the digest quotes of the user's message and of the start of the answer (distill.py). */
export const DIGEST_USER_CHARS = 300;
export const DIGEST_ANSWER_CHARS = 500;
/** How much of each text is redacted for a digest (engine/live/capture.py DIGEST_SOURCE_CHARS). */
export const DIGEST_SOURCE_CHARS = 4000;

/** A failure with what to do about it: the user sees both. */
export class MemoryFileError extends Error {
	readonly hint: string;
	constructor(message: string, hint: string) {
		super(message);
		this.name = "MemoryFileError";
		this.hint = hint;
	}
}

// -- where the store is ------------------------------------------------------------------

export interface StoreLocation {
	/** The git root of the session's directory, else that directory (real path). */
	repositoryDir: string;
	/** The project scope: what keys the project's memory. */
	scope: string;
	/** The memory store: the daily files live here. */
	store: string;
}

const expandHome = (p: string, env: NodeJS.ProcessEnv) =>
	p === "~" || p.startsWith("~/") ? join(env.HOME || homedir(), p.slice(2)) : p;

export { realpathLoose };

/** Split a command line as Python's shlex.split does (quotes and backslashes). */
export function shellSplit(command: string): string[] {
	const out: string[] = [];
	let word: string | null = null;
	let quote: string | null = null;
	for (let i = 0; i < command.length; i++) {
		const c = command[i];
		if (quote === "'") {
			if (c === "'") quote = null;
			else word += c;
		} else if (quote === '"') {
			if (c === '"') quote = null;
			else if (c === "\\" && i + 1 < command.length && '"\\$`\n'.includes(command[i + 1])) word += command[++i];
			else word += c;
		} else if (/\s/.test(c)) {
			if (word !== null) out.push(word);
			word = null;
		} else {
			word ??= "";
			if (c === "'" || c === '"') quote = c;
			else if (c === "\\" && i + 1 < command.length) word += command[++i];
			else word += c;
		}
	}
	if (quote) throw new MemoryFileError(`unbalanced ${quote} in the store command ${command}`, `fix ${STORE_CMD_ENVS[0]}`);
	if (word !== null) out.push(word);
	return out;
}

function storeCommandAnswer(command: string, directory: string): string {
	const where = `store command \`${command} memory-dir\` (run in ${directory})`;
	const hint = `fix the command or unset ${STORE_CMD_ENVS[0]}`;
	const [program, ...args] = shellSplit(command);
	if (!program) throw new MemoryFileError(`${where} is empty`, hint);
	const run = spawnSync(program, [...args, "memory-dir"], { cwd: directory, timeout: STORE_CMD_TIMEOUT_MS, encoding: "utf8" });
	if (run.error) throw new MemoryFileError(`${where} failed: ${run.error.message}`, hint);
	if (run.status !== 0) {
		const last = (run.stderr ?? "").trim().split("\n").pop() || "no message";
		throw new MemoryFileError(`${where} exited with status ${run.status}: ${last.slice(0, 200)}`, hint);
	}
	const answer = (run.stdout ?? "").trim();
	if (!answer) throw new MemoryFileError(`${where} printed nothing`, "it must print the memory dir");
	if (answer.includes("\n") || !isAbsolute(answer)) {
		throw new MemoryFileError(`${where} printed ${JSON.stringify(answer.slice(0, 200))}, not one absolute path`, "it must print one absolute path, on one line");
	}
	return answer;
}

/** Where this project's memory lives, from `cwd` (core/scope.py's resolve_scope). */
export function resolveStore(cwd: string, env: NodeJS.ProcessEnv = process.env): StoreLocation {
	let start: string;
	try {
		start = realpathSync(expandHome(cwd, env));
		if (!statSync(start).isDirectory()) throw new Error("not a directory");
	} catch {
		throw new MemoryFileError(`directory not found: ${cwd}`, "start pi in an existing directory");
	}
	const repositoryDir = gitRoot(start) ?? start;
	const command = STORE_CMD_ENVS.map((name) => env[name]?.trim()).find((value) => value);
	if (command) {
		const store = realpathLoose(storeCommandAnswer(command, start));
		return { repositoryDir, scope: basename(store) === "memory" ? dirname(store) : store, store };
	}
	const raw = env.MEMSEARCH_DIR?.trim();
	if (raw) {
		const scope = realpathLoose(resolve(repositoryDir, expandHome(raw, env)));
		return { repositoryDir, scope, store: join(scope, "memory") };
	}
	// The setting is read only in a linked worktree, the one place it matters (as core/scope.py).
	const linked = sharedRoot(repositoryDir);
	const scope = linked !== null && worktreesSetting(repositoryDir, env) === "shared" ? linked : repositoryDir;
	return { repositoryDir, scope, store: join(scope, ".memsearch", "memory") };
}

// -- now -----------------------------------------------------------------------------------

export interface LocalTime {
	/** The local date: names the daily file. */
	date: string;
	/** The local time, HH:MM: the headings. */
	hhmm: string;
}

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/;
const loadedAt = performance.now();
const pad = (n: number) => String(n).padStart(2, "0");

/**
 * The local date and time (core/clock.py): the system's, or, with `MEMLANE_NOW` (an
 * ISO 8601 time), a clock that started there when this module loaded and runs on; an
 * offset in it is the local time's, as it is for memlane.
 */
export function localNow(env: NodeJS.ProcessEnv = process.env): LocalTime {
	const raw = env.MEMLANE_NOW?.trim();
	const m = raw ? ISO_RE.exec(raw) : null;
	if (!m) {
		const d = new Date();
		return { date: `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`, hhmm: `${pad(d.getHours())}:${pad(d.getMinutes())}` };
	}
	const [y, mo, d, h, mi, s] = m.slice(1, 7).map((part) => Number(part ?? 0));
	const ms = Math.round(Number(`0.${m[7] ?? "0"}`) * 1000);
	const elapsed = performance.now() - loadedAt;
	if (m[8]) {
		// The wall time in the given offset, run on: read as if it were UTC.
		const local = new Date(Date.UTC(y, mo - 1, d, h, mi, s, ms) + elapsed);
		return {
			date: `${local.getUTCFullYear()}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())}`,
			hhmm: `${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}`,
		};
	}
	const local = new Date(new Date(y, mo - 1, d, h, mi, s, ms).getTime() + elapsed);
	return { date: `${local.getFullYear()}-${pad(local.getMonth() + 1)}-${pad(local.getDate())}`, hhmm: `${pad(local.getHours())}:${pad(local.getMinutes())}` };
}

/** The local date before `date` (YYYY-MM-DD). */
export function dayBefore(date: string): string {
	const [y, m, d] = date.split("-").map(Number);
	const prev = new Date(Date.UTC(y, m - 1, d - 1));
	return `${prev.getUTCFullYear()}-${pad(prev.getUTCMonth() + 1)}-${pad(prev.getUTCDate())}`;
}

// -- the entry -----------------------------------------------------------------------------

const LONE_SURROGATE_RE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** Lone surrogates (which UTF-8 cannot carry) as U+FFFD. */
export const wellFormed = (s: string) => s.replace(LONE_SURROGATE_RE, "\ufffd");
const isWellFormed = (s: string) => !new RegExp(LONE_SURROGATE_RE.source).test(s);

// Python's str.strip() / str.splitlines(): what it counts as whitespace and line breaks.
const PY_SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const STRIP_RE = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, "g");
const LSTRIP_RE = new RegExp(`^[${PY_SPACE}]+`);
const RSTRIP_RE = new RegExp(`[${PY_SPACE}]+$`);
const LINES_RE = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;
export const pyStrip = (s: string) => s.replace(STRIP_RE, "");
const COMMENT_LINE_RE = /^<!--(?:(?!-->)[^\n])*-->$/;
const TIME_RE = /^([01]\d|2[0-3]):[0-5]\d$/;

export interface Anchor {
	session: string;
	turn: string;
	transcript: string;
}

/** A value made safe for one field of an anchor comment (core/types.py anchor_field). */
export function anchorField(value: string, spaces: boolean): string {
	let text = wellFormed(String(value)).replace(/[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/g, " ");
	while (text.includes("-->")) text = text.replaceAll("-->", "");
	text = pyStrip(text);
	return spaces ? text : text.replace(/\s/g, "_");
}

export function renderAnchor(anchor: Anchor): string {
	const session = anchorField(anchor.session, false) || "none";
	const turn = anchorField(anchor.turn, false);
	const transcript = anchorField(anchor.transcript, true) || "none";
	return `<!-- session:${session} turn:${turn} transcript:${transcript} -->`;
}

/** A random entry id: 8 lowercase hex digits. */
export const newEntryId = () => randomBytes(4).toString("hex");

function bullets(text: string): string[] {
	const out: string[] = [];
	for (const line of text.split(LINES_RE)) {
		const stripped = pyStrip(line);
		if (!stripped) continue;
		if (COMMENT_LINE_RE.test(stripped)) out.push(stripped);
		else if (["- ", "* ", "+ "].some((p) => line.replace(LSTRIP_RE, "").startsWith(p))) out.push(line.replace(RSTRIP_RE, ""));
		else out.push(`- ${stripped}`);
	}
	return out;
}

/** `### HH:MM`, the anchor line, then `text` as bullets; ends with one line break. */
export function formatEntry(hhmm: string, anchor: Anchor | null, text: string): string {
	if (!TIME_RE.test(hhmm)) throw new MemoryFileError(`invalid entry time ${JSON.stringify(hhmm)}`, "use HH:MM, 24-hour, e.g. 09:05");
	const lines = bullets(text);
	if (lines.length === 0) throw new MemoryFileError("nothing to write: the entry text is empty", "pass some text");
	return [`### ${hhmm}`, ...(anchor ? [renderAnchor(anchor)] : []), ...lines].join("\n") + "\n";
}

// -- writing -------------------------------------------------------------------------------

const LINK_HINT =
	"memlane never follows a link in the memory store (a repository could commit one to make it read or write any file); remove the link";

/** The first component of the absolute `path` that is a symbolic link, if any. */
export function firstLink(path: string): string | null {
	let current = "";
	for (const part of resolve(path).split(sep).slice(1)) {
		if (!part) continue;
		current += sep + part;
		try {
			if (lstatSync(current).isSymbolicLink()) return current;
		} catch {
			return null; // nothing exists from here on
		}
	}
	return null;
}

/** `path` when it lies in `store` with no link on the way (store/safe_paths.py). */
export function checkStorePath(store: string, path: string): string {
	const root = resolve(store);
	const candidate = resolve(path);
	if (!candidate.startsWith(root.replace(/\/+$/, "") + sep)) {
		throw new MemoryFileError(`${path} is outside the memory store ${root}`, "memlane only reads and writes files inside its store");
	}
	const link = firstLink(candidate);
	if (link !== null) {
		if (link.length <= root.length) {
			throw new MemoryFileError(
				`the memory store ${root} goes through a symbolic link: ${link}`,
				"a repository could commit such a link to send memory elsewhere, so memlane does not follow it; remove the link, or set MEMSEARCH_DIR (or MEMLANE_STORE_CMD) to that place",
			);
		}
		throw new MemoryFileError(`${link} is a symbolic link`, LINK_HINT);
	}
	return candidate;
}

/** A store file's text, never through a link, regular files only; null when it is missing. */
export function readStoreFile(store: string, path: string): string | null {
	let fd: number;
	try {
		fd = openSync(checkStorePath(store, path), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
		if ((err as NodeJS.ErrnoException).code === "ELOOP") throw new MemoryFileError(`${path} is a symbolic link`, LINK_HINT);
		throw err;
	}
	try {
		if (!fstatSync(fd).isFile()) throw new MemoryFileError(`${path} is not a regular file`, "memory files are plain text files; remove or rename it");
		return readFileSync(fd, "utf8");
	} finally {
		closeSync(fd);
	}
}

function createWithTitle(path: string, date: string): void {
	const title = Buffer.from(`# ${date}\n`);
	const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
	const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
	try {
		try {
			writeWhole(fd, title, path, "the title");
		} finally {
			closeSync(fd);
		}
		try {
			linkSync(temp, path); // fails if the file exists: the title is written once, first
		} catch (err) {
			const code = (err as NodeJS.ErrnoException).code;
			if (code === "EPERM" || code === "EOPNOTSUPP" || code === "ENOTSUP") createExclusive(path, title);
			else if (code !== "EEXIST") throw err;
		}
	} finally {
		unlinkSync(temp);
	}
}

function createExclusive(path: string, title: Buffer): void {
	let fd: number;
	try {
		fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "EEXIST") return;
		throw err;
	}
	try {
		writeWhole(fd, title, path, "the title");
	} finally {
		closeSync(fd);
	}
}

/** One write of all of `data`; a short one is an error, never finished by a second write. */
function writeWhole(fd: number, data: Buffer, path: string, what: string): void {
	const written = writeSync(fd, data);
	if (written !== data.length) {
		throw new MemoryFileError(
			`${path}: ${what} was cut short after ${written} of ${data.length} bytes`,
			"free some space, then run `memlane status --fix` to set the torn lines aside",
		);
	}
}

export interface WrittenEntry {
	path: string;
	time: string;
	/** Exactly what was appended: a blank line, the session heading if any, the entry. */
	text: string;
	sessionHeading: boolean;
}

/** Appends entries; one per pi process, holding which (file, session) pairs have their heading. */
export class DailyWriter {
	private readonly headed = new Set<string>();

	append(store: string, text: string, anchor: Anchor | null, at: LocalTime, sessionId: string | null): WrittenEntry {
		if (!isWellFormed(text)) {
			throw new MemoryFileError("the text is not valid UTF-8, so it was not written", "re-encode the input as UTF-8 and try again");
		}
		const body = formatEntry(at.hhmm, anchor, text);
		const path = resolve(store, `${at.date}.md`);
		const key = sessionId === null ? null : `${path}\0${sessionId}`;
		let heading = false;
		let entryText = "";
		try {
			checkStorePath(store, path);
			mkdirSync(store, { recursive: true });
			if (!exists(path)) createWithTitle(path, at.date);
			heading = key !== null && !this.headed.has(key) && !this.seenInFile(store, path, sessionId as string);
			entryText = `\n${heading ? `## Session ${at.hhmm}\n` : ""}${body}`;
			const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o666);
			try {
				if (!fstatSync(fd).isFile()) throw new MemoryFileError(`${path} is not a regular file`, "memory files are plain text files; remove or rename it");
				writeWhole(fd, Buffer.from(entryText, "utf8"), path, "the entry");
			} finally {
				closeSync(fd);
			}
		} catch (err) {
			if (err instanceof MemoryFileError) throw err;
			const e = err as NodeJS.ErrnoException;
			if (e.code === "ELOOP") throw new MemoryFileError(`${path} is a symbolic link`, LINK_HINT);
			if (e.code === "ENOSPC" || e.code === "EDQUOT") throw new MemoryFileError(`the disk is full: ${path}: the entry was not written`, "free some space and try again");
			throw new MemoryFileError(`cannot write memory file ${path}: ${e.message}`, "check that the store directory is writable");
		}
		if (key !== null) this.headed.add(key);
		return { path, time: at.hhmm, text: entryText, sessionHeading: heading };
	}

	/** The one seeding read: does the file already anchor this session? */
	private seenInFile(store: string, path: string, sessionId: string): boolean {
		const text = readStoreFile(store, path) ?? "";
		const escaped = sessionId.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
		return new RegExp(`session:${escaped}[ \\t\\n\\r\\f\\v]`).test(text);
	}
}

function exists(path: string): boolean {
	try {
		lstatSync(path);
		return true;
	} catch {
		return false;
	}
}

// -- the digest of an exchange nobody distilled (engine/journal/distill.py) -----------------

/** Safe after `- ` on one line: no line breaks, no control characters, no `<!--`/`-->`. */
export function oneLine(text: string): string {
	let flat = wellFormed(text)
		.replace(/[\p{Cc}\p{Zl}\p{Zp}]/gu, " ")
		.replace(/\s+/g, " ");
	flat = pyStrip(flat);
	while (/<!--|-->/.test(flat)) flat = flat.replace(/<!--|-->/g, (m) => (m === "<!--" ? "<! --" : "-- >"));
	return flat;
}

function clipLine(text: string, limit: number): string {
	const cs = Array.from(text);
	return cs.length <= limit ? text : `${cs.slice(0, limit - 1).join("").replace(RSTRIP_RE, "")}…`;
}

function firstLines(text: string, limit: number): string {
	const lines: string[] = [];
	let size = 0;
	for (const raw of text.split(LINES_RE)) {
		const line = pyStrip(raw);
		if (!line || /^(?:```|~~~)/.test(line)) continue;
		lines.push(line);
		size += Array.from(line).length + 1;
		if (size > limit) break;
	}
	return clipLine(oneLine(lines.join(" ")), limit);
}

/** `- user asked: …` and `- agent answered: …`: a verbatim record of an undistilled exchange. */
export function digest(user: string, assistant: string): string[] {
	const asked = clipLine(oneLine(Array.from(user).slice(0, DIGEST_USER_CHARS * 8).join("")), DIGEST_USER_CHARS);
	const answered = firstLines(Array.from(assistant).slice(0, DIGEST_ANSWER_CHARS * 8).join(""), DIGEST_ANSWER_CHARS);
	return [`- user asked: ${asked || "(empty)"}`, `- agent answered: ${answered || "(empty)"}`];
}
