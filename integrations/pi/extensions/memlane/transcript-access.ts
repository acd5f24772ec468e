/**
 * Which transcripts an agent may read through memory_transcript without memlane
 * (src/memlane/engine/recall/transcript_access.py, transcripts/locate.py): the live
 * session's own; this project's pi sessions (`$PI_CODING_AGENT_DIR/sessions/<cwd>/`, or
 * `$PI_CODING_AGENT_SESSION_DIR` filtered by the header's cwd) and Claude Code sessions
 * (`$CLAUDE_CONFIG_DIR/projects/<cwd>/`), for the repository directory and the project
 * scope; a path an anchor in this project's store names. Paths compare after realpath,
 * and a session directory lists a link only when it points inside it: a link planted
 * there cannot make another project's transcript this project's.
 *
 * Node built-ins only (no pi import), so `node --test` runs it as it is.
 */

import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { checkStorePath, MemoryFileError, readStoreFile, type StoreLocation } from "./daily.ts";
import { sharedCheckouts } from "./worktree.ts";

const ANCHOR_RE = /<!--\s*session:(\S+)\s+turn:(\S*)(?:\s+\w+:\S+)*?\s+transcript:([^\n]+?)\s*-->/g;

function firstLineObject(text: string): Record<string, unknown> | null {
	try {
		const obj = JSON.parse(text) as unknown;
		return obj && typeof obj === "object" && !Array.isArray(obj) ? (obj as Record<string, unknown>) : null;
	} catch {
		return null;
	}
}

const canonical = (p: string): string => {
	const expanded = p === "~" || p.startsWith("~/") ? join(process.env.HOME || homedir(), p.slice(2)) : p;
	try {
		return realpathSync(resolve(expanded));
	} catch {
		return resolve(expanded);
	}
};

const piSessionDirName = (cwd: string) => `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
const claudeProjectDirName = (cwd: string) => cwd.replace(/[^A-Za-z0-9]/g, "-");

/** The `*.jsonl` files of `directory`; a link only when it points inside it (locate.py jsonl_files). */
function jsonlFiles(directory: string): string[] {
	try {
		const real = realpathSync(directory);
		return readdirSync(directory)
			.filter((name) => name.endsWith(".jsonl"))
			.map((name) => join(directory, name))
			.filter((path) => {
				try {
					if (!statSync(path).isFile()) return false;
					return !lstatSync(path).isSymbolicLink() || dirname(realpathSync(path)) === real;
				} catch {
					return false;
				}
			})
			.sort();
	} catch {
		return [];
	}
}

function piHeaderCwd(path: string): string | null {
	try {
		const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
		try {
			if (!fstatSync(fd).isFile()) return null;
			const head = Buffer.alloc(64 * 1024);
			const n = readSyncSafe(fd, head);
			const obj = firstLineObject(head.subarray(0, n).toString("utf8").split("\n")[0]);
			return obj?.type === "session" && typeof obj.cwd === "string" ? obj.cwd : null;
		} finally {
			closeSync(fd);
		}
	} catch {
		return null;
	}
}

function readSyncSafe(fd: number, buffer: Buffer): number {
	try {
		return readSync(fd, buffer, 0, buffer.length, 0);
	} catch {
		return 0;
	}
}

/** This project's pi and Claude Code session files (locate.py discover_sources), every
 * worktree's when they share its memory (core/scope.py shared_checkouts). */
function projectSessions(location: StoreLocation, env: NodeJS.ProcessEnv): string[] {
	const cwds: string[] = [];
	const worktrees = sharedCheckouts(location.repositoryDir, location.scope, env);
	for (const dir of [location.repositoryDir, location.scope, ...worktrees]) {
		for (const form of [resolve(dir), canonical(dir)]) if (!cwds.includes(form)) cwds.push(form);
	}
	const home = env.HOME || homedir();
	const expand = (raw: string) => (raw === "~" || raw.startsWith("~/") ? join(home, raw.slice(2)) : raw);
	const found: string[] = [];
	const flat = env.PI_CODING_AGENT_SESSION_DIR;
	if (flat) {
		for (const path of jsonlFiles(expand(flat))) if (cwds.includes(piHeaderCwd(path) ?? "")) found.push(path);
	} else {
		const agentDir = env.PI_CODING_AGENT_DIR ? expand(env.PI_CODING_AGENT_DIR) : join(home, ".pi", "agent");
		for (const cwd of cwds) found.push(...jsonlFiles(join(agentDir, "sessions", piSessionDirName(cwd))));
	}
	const claudeDir = env.CLAUDE_CONFIG_DIR ? expand(env.CLAUDE_CONFIG_DIR) : join(home, ".claude");
	for (const cwd of cwds) found.push(...jsonlFiles(join(claudeDir, "projects", claudeProjectDirName(cwd))));
	return found;
}

/** Every markdown file of the store (layout.py scan_markdown_files): no links, nothing hidden. */
function storeMarkdown(store: string): string[] {
	const out: string[] = [];
	const walk = (dir: string) => {
		let names: string[];
		try {
			names = readdirSync(dir).sort();
		} catch {
			return;
		}
		for (const name of names) {
			if (name.startsWith(".")) continue;
			const path = join(dir, name);
			let info;
			try {
				info = lstatSync(path);
			} catch {
				continue;
			}
			if (info.isDirectory()) walk(path);
			else if (info.isFile() && /\.(md|markdown)$/i.test(name) && !(name === "MEMORY.md" && dir === store)) out.push(path);
		}
	};
	try {
		checkStorePath(dirname(store), store);
	} catch {
		return out; // a store through a link is not read at all
	}
	walk(store);
	return out;
}

function anchoredIn(store: string, requested: string, wanted: string): boolean {
	const names = new Set([basename(wanted), basename(requested)]);
	for (const path of storeMarkdown(store)) {
		let text: string | null;
		try {
			text = readStoreFile(store, path);
		} catch {
			continue;
		}
		if (!text || ![...names].some((name) => text.includes(name))) continue;
		for (const m of text.matchAll(ANCHOR_RE)) {
			const transcript = m[3].trim();
			if (transcript && names.has(basename(transcript)) && !transcript.includes("\0") && canonical(transcript) === wanted) return true;
		}
	}
	return false;
}

/** The real path of `requested` when an agent may read it; else a MemoryFileError. */
export function checkTranscriptAllowed(
	requested: string,
	location: StoreLocation,
	sessionTranscript: string | null,
	env: NodeJS.ProcessEnv = process.env,
): string {
	if (requested.includes("\0")) {
		throw new MemoryFileError(
			`no transcript can be at the path given: it holds a NUL byte (at position ${requested.indexOf("\0") + 1}): ${JSON.stringify(requested.slice(0, 80))}`,
			"pass the transcript: path exactly as memory_expand shows it",
		);
	}
	const wanted = canonical(requested);
	if (sessionTranscript && canonical(sessionTranscript) === wanted) return wanted;
	if (projectSessions(location, env).some((path) => canonical(path) === wanted)) return wanted;
	if (anchoredIn(location.store, requested, wanted)) return wanted;
	throw new MemoryFileError(
		`transcript ${requested} is not a known session transcript of this project, so it is not shown: memory_transcript opens only this project's pi and Claude Code sessions and the transcripts its memory's anchors name`,
		"pass the transcript: path of an anchor from memory_expand (and, for a cross-repo hit, its project)",
	);
}

