/**
 * Which checkout's memory a git worktree shares, as memlane decides it (core/worktree.py,
 * core/scope.py, ADR 0035), for the daily file written without memlane (daily.ts).
 *
 * A linked worktree's `.git` file says `gitdir: <repo>/.git/worktrees/<id>`; that directory's
 * `commondir` leads to the repository's git dir and its `gitdir` back to the worktree. The
 * main worktree is the common dir's parent when it is named `.git`, else `core.worktree`;
 * with neither (or `core.bare = true`) the repository is bare and its directory is shared.
 * Any link that cannot be followed keeps the worktree's own memory. `scope.worktrees`
 * (`MEMLANE_SCOPE_WORKTREES`, else a trusted project `.memlane.toml`, else the global
 * config) set to `separate` keeps it too.
 *
 * Node built-ins only (no pi import), so `node --test` runs it as it is.
 */

import { createHash } from "node:crypto";
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";

const POINTER_MAX_BYTES = 4096;
const CONFIG_MAX_BYTES = 1 << 20;
const TRUE_WORDS = ["true", "yes", "on", "1"];
export const WORKTREES_ENV = "MEMLANE_SCOPE_WORKTREES";
const WORKTREES_CHOICES = ["shared", "separate"];

/** realpath of what exists of `p`, the rest appended (Python's os.path.realpath). */
export function realpathLoose(p: string): string {
	const absolute = resolve(p);
	try {
		return realpathSync(absolute);
	} catch {
		const parent = dirname(absolute);
		return parent === absolute ? absolute : join(realpathLoose(parent), basename(absolute));
	}
}

/** The nearest ancestor holding `.git` (a directory, or a worktree's file). */
export function gitRoot(start: string): string | null {
	for (let current = start; ; current = dirname(current)) {
		if (existsSync(join(current, ".git"))) return current;
		if (dirname(current) === current) return null;
	}
}

function readSmall(path: string, limit = POINTER_MAX_BYTES): string | null {
	try {
		const st = statSync(path);
		if (!st.isFile() || st.size > limit) return null;
		return readFileSync(path, "utf8");
	} catch {
		return null;
	}
}

/** A `commondir` or `gitdir` file's path: trailing CR/LF stripped, as git does. */
export function parsePointer(text: string): string | null {
	const path = text.replace(/[\r\n]+$/, "");
	return path && !path.includes("\0") && !path.includes("\n") ? path : null;
}

/** The path a `.git` file names, or null when it is not a gitdir file. */
export function parseGitdirFile(text: string): string | null {
	return text.startsWith("gitdir: ") ? parsePointer(text.slice("gitdir: ".length)) : null;
}

/** `core.*` of a git config (keys lower-cased, last wins), as core/worktree.py reads it. */
export function parseCoreConfig(text: string): Record<string, string> {
	const found: Record<string, string> = Object.create(null);
	let inCore = false;
	for (const raw of text.split("\n")) {
		let line = strip(raw);
		if (line.startsWith("[")) {
			const end = line.indexOf("]");
			if (end < 0) {
				inCore = false;
				continue;
			}
			inCore = lower(strip(line.slice(1, end))) === "core";
			line = strip(line.slice(end + 1));
		}
		if (!inCore || !line || "#;".includes(line[0])) continue;
		const eq = line.indexOf("=");
		const key = lower(strip(eq < 0 ? line : line.slice(0, eq)));
		if (!/^[a-z0-9-]+$/.test(key) || !/[a-z0-9]/.test(key)) continue;
		found[key] = eq < 0 ? "true" : configValue(line.slice(eq + 1));
	}
	return found;
}

/** C's isspace() and ASCII case, as git's config parser uses them (core/worktree.py). */
const strip = (s: string) => s.replace(/^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g, "");
const lower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

function configValue(rest: string): string {
	let out = "";
	let quoted = false;
	const text = strip(rest);
	for (let i = 0; i < text.length; i++) {
		const c = text[i];
		if (c === "\\") {
			const next = text[++i] ?? "";
			out += ({ n: "\n", t: "\t", b: "\b" } as Record<string, string>)[next] ?? next;
		} else if (c === '"') quoted = !quoted;
		else if ("#;".includes(c) && !quoted) break;
		else out += c;
	}
	return quoted ? out : strip(out);
}

/** Where a checkout sits in git, as core/worktree.py's find_checkout says. */
export interface Checkout {
	/** A linked worktree (git worktree add), its link followed or not. */
	linked: boolean;
	/** The root it shares memory with: the main worktree, or a bare repository. */
	shared: string | null;
	/** The repository's git dir, when it could be found. */
	common: string | null;
}

/** The checkout whose top directory (holding `.git`) is `root`. */
export function checkoutOf(root: string): Checkout {
	const own: Checkout = { linked: false, shared: null, common: null };
	const broken: Checkout = { linked: true, shared: null, common: null };
	const dotgit = join(root, ".git");
	if (isDir(dotgit)) return { ...own, common: realpathLoose(dotgit) };
	if (!isFile(dotgit)) return own;
	const text = readSmall(dotgit);
	const pointed = text === null ? null : parseGitdirFile(text);
	if (pointed === null) return own;
	const gitdir = realpathLoose(resolve(root, pointed));
	if (!isDir(gitdir)) return broken; // the main checkout was moved or deleted
	if (!exists(join(gitdir, "commondir"))) return own; // a submodule: its own repository
	const commonText = readSmall(join(gitdir, "commondir"));
	const commonRel = commonText === null ? null : parsePointer(commonText);
	if (commonRel === null) return broken;
	const common = realpathLoose(resolve(gitdir, commonRel));
	if (!isDir(common)) return broken;
	const backText = readSmall(join(gitdir, "gitdir"));
	const back = backText === null ? null : parsePointer(backText);
	if (back === null || realpathLoose(resolve(gitdir, back)) !== realpathLoose(dotgit)) return broken;
	const config = readSmall(join(common, "config"), CONFIG_MAX_BYTES);
	const core = config === null ? {} : parseCoreConfig(config);
	let main: string | null = null;
	if (TRUE_WORDS.includes(lower(core.bare ?? ""))) main = null;
	else if (basename(common) === ".git") main = dirname(common);
	else if (core.worktree) main = realpathLoose(resolve(common, core.worktree));
	if (main === null) return { linked: true, shared: common, common }; // bare: the repository itself
	return isDir(main) ? { linked: true, shared: main, common } : broken;
}

/** The root a linked worktree shares memory with, or null (not linked, or a link is broken). */
export function sharedRoot(root: string): string | null {
	return checkoutOf(root).shared;
}

/** Every checkout of the repository `root` is a checkout of (core/worktree.py repository_checkouts). */
export function repositoryCheckouts(root: string): string[] {
	const checkout = checkoutOf(root);
	const common = checkout.common;
	if (common === null || !isDir(common)) return [];
	const found: string[] = [];
	const main = checkout.linked ? checkout.shared : root;
	if (main !== null && main !== common) found.push(main);
	let names: string[];
	try {
		names = readdirSync(join(common, "worktrees")).sort();
	} catch {
		return found;
	}
	for (const name of names) {
		const admin = join(common, "worktrees", name);
		const text = readSmall(join(admin, "gitdir"));
		const pointed = text === null ? null : parsePointer(text);
		if (pointed === null) continue;
		const linked = dirname(realpathLoose(resolve(admin, pointed)));
		if (isDir(linked) && !found.includes(linked)) found.push(linked);
	}
	return found;
}

/** Every checkout whose agents' sessions are this memory's (core/scope.py shared_checkouts). */
export function sharedCheckouts(repositoryDir: string, scope: string, env: NodeJS.ProcessEnv = process.env): string[] {
	const checkout = checkoutOf(repositoryDir);
	const shared = checkout.linked
		? checkout.shared !== null && scope === checkout.shared && worktreesSetting(repositoryDir, env) === "shared"
		: scope === repositoryDir && worktreesSetting(repositoryDir, env) === "shared";
	return shared ? repositoryCheckouts(repositoryDir) : [];
}

function isFile(path: string): boolean {
	try {
		return statSync(path).isFile();
	} catch {
		return false;
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

function isDir(path: string): boolean {
	try {
		return statSync(path).isDirectory();
	} catch {
		return false;
	}
}

/** `scope.worktrees` as memlane's layers give it: environment, trusted project file, global file. */
export function worktreesSetting(repositoryDir: string, env: NodeJS.ProcessEnv = process.env): string {
	const fromEnv = env[WORKTREES_ENV]?.trim();
	if (fromEnv && WORKTREES_CHOICES.includes(fromEnv)) return fromEnv;
	const home = (env.MEMLANE_HOME || "~/.memlane").replace(/^~(?=$|\/)/, env.HOME || homedir());
	const project = join(repositoryDir, ".memlane.toml");
	if (projectTrusted(home, repositoryDir, project)) {
		const value = tomlString(project, "scope", "worktrees");
		if (value !== null && WORKTREES_CHOICES.includes(value)) return value;
	}
	const value = tomlString(join(home, "config.toml"), "scope", "worktrees");
	return value !== null && WORKTREES_CHOICES.includes(value) ? value : "shared";
}

/** Trusted as core/config/trust.py says: the directory is listed with the file's sha256. */
function projectTrusted(home: string, repositoryDir: string, project: string): boolean {
	const listed = readSmall(join(home, "trusted.json"), CONFIG_MAX_BYTES);
	let data: unknown;
	try {
		data = listed === null ? null : JSON.parse(listed);
	} catch {
		return false;
	}
	if (data === null || typeof data !== "object" || Array.isArray(data)) return false;
	const digest = (data as Record<string, unknown>)[realpathLoose(repositoryDir)];
	try {
		return typeof digest === "string" && digest === createHash("sha256").update(readFileSync(project)).digest("hex");
	} catch {
		return false;
	}
}

/** A string value of `[section] key` in a flat TOML file, or null. */
function tomlString(file: string, section: string, key: string): string | null {
	const text = readSmall(file, CONFIG_MAX_BYTES);
	if (text === null) return null;
	let current = "";
	let found: string | null = null;
	for (const raw of text.split("\n")) {
		const line = raw.trim();
		const header = /^\[\s*([^\]]+?)\s*\]\s*(#.*)?$/.exec(line);
		if (header) {
			current = header[1].replace(/"/g, "");
			continue;
		}
		const m = /^([A-Za-z0-9_."-]+)\s*=\s*("([^"\\]*)"|'([^']*)')\s*(#.*)?$/.exec(line);
		if (!m) continue;
		const name = (current ? `${current}.${m[1]}` : m[1]).replace(/"/g, "");
		if (name === `${section}.${key}`) found = m[3] ?? m[4];
	}
	return found;
}
