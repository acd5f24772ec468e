/**
 * /memory settings: memlane's settings in pi.
 *
 * - `/memory settings` with a UI opens a panel (pi's select and input dialogs): a group, a
 *   setting, its new value, and which file to write (this project's `.memlane.toml` or the
 *   global `config.toml`). Without a UI (`pi -p`, JSON mode) it prints the panel's settings with
 *   their values and how to change them.
 * - `/memory settings <key>` describes one setting; `/memory settings <key> <value>` (or
 *   `--unset`) changes it, in the file the value comes from now unless `--project` or
 *   `--global` says otherwise.
 *
 * The settings and their declarations (type, what is allowed, help, whether a running session
 * follows a change) are memlane's (`memlane config describe --json`); a change is written by
 * `memlane config set`, which checks the value and says when it applies: a setting marked live
 * from the next prompt of this session, any other from the next session. Both run in the
 * engine through the sidecar (memory-io.ts).
 *
 * The groups mirror pi-lcm-memory's panel (embedding model, fusion weights such as rrfK, the
 * sweep, auto-recall and the primer) on memlane's keys, with auto-context, capture and the
 * topic memory beside them; "every setting" lists the rest by section.
 */

import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { Shim } from "./host.ts";
import { runCli, show } from "./memory-io.ts";
import { asObject, type Json, type JsonObject } from "./protocol.ts";

/** One setting as `memlane config describe --json` gives it. */
export interface Setting {
	key: string;
	value: Json;
	layer: string;
	default: Json;
	type: string;
	allowed: string;
	choices: string[];
	help: string;
	live: boolean;
}

interface Described {
	settings: Setting[];
	files: { global: string; project: string; projectExists: boolean; projectTrusted: boolean };
}

/** The panel's groups: pi-lcm-memory's settings mapped onto memlane's keys. */
export const GROUPS: ReadonlyArray<{ title: string; keys: readonly string[] }> = [
	{
		title: "Embedding model",
		keys: ["embedding.provider", "embedding.model", "embedding.base_url", "embedding.path", "embedding.batch_size"],
	},
	{ title: "Search and fusion", keys: ["search.top_k", "search.min_score", "index.fusion", "index.rrf_k", "index.alpha"] },
	{
		title: "Past sessions: indexing and recall weights",
		keys: [
			"sessions.enabled",
			"sessions.index_messages",
			"sessions.index_summaries",
			"sessions.skip_tool_io",
			"sessions.recall_default_top_k",
			"sessions.rrf_k",
			"sessions.lex_mult",
			"sessions.sem_mult",
		],
	},
	{ title: "Sweep", keys: ["sessions.sweep_interval_ms", "sessions.sweep_max_interval_ms"] },
	{
		title: "Auto-recall and primer",
		keys: [
			"sessions.auto_recall",
			"sessions.auto_recall_top_k",
			"sessions.auto_recall_token_budget",
			"sessions.primer",
			"sessions.primer_top_k",
			"sessions.primer_token_budget",
		],
	},
	{
		title: "Auto-context",
		keys: ["auto_context.enabled", "auto_context.top_k", "auto_context.score_floor", "auto_context.char_budget"],
	},
	{
		title: "Capture and topic memory",
		keys: ["capture.enabled", "capture.model", "topics.enabled", "auto_surfacing.enabled", "extract_memories.enabled"],
	},
	{ title: "Debugging", keys: ["sessions.debug"] },
];
const EVERY_SETTING = "Every setting, by section…";
const UNSET = "(unset: back to the default)";

/** A value as a config file spells it. */
export function shown(value: Json): string {
	if (value === null || value === undefined) return "(unset)";
	if (typeof value === "string") return JSON.stringify(value);
	return String(value);
}

function when(setting: Setting): string {
	return setting.live ? "applies at once" : "applies from the next session";
}

function line(setting: Setting): string {
	return `${setting.key} = ${shown(setting.value)}  (${setting.layer}; ${when(setting)})`;
}

async function describe(shim: Shim, ctx: ExtensionCommandContext, key?: string): Promise<Described | string> {
	const answer = await runCli(shim, ctx, ["config", "describe", ...(key ? [key] : []), "--json"]);
	if (!answer.ok) return answer.text;
	let data: JsonObject;
	try {
		data = asObject(JSON.parse(typeof answer.result.stdout === "string" ? answer.result.stdout : "") as Json);
	} catch {
		return `memlane config describe printed no settings: ${answer.text.slice(0, 200)}`;
	}
	const files = asObject(data.files ?? null);
	const settings = (Array.isArray(data.keys) ? data.keys : []).map((item) => {
		const raw = asObject(item);
		return {
			...raw,
			choices: Array.isArray(raw.choices) ? raw.choices.map(String) : [],
			live: raw.live === true,
		} as unknown as Setting;
	});
	return {
		settings,
		files: {
			global: String(files.global ?? "the global config.toml"),
			project: String(files.project ?? ".memlane.toml"),
			projectExists: files.project_exists === true,
			projectTrusted: files.project_trusted === true,
		},
	};
}

/** The /memory settings subcommand (`args`: what follows `settings`). */
export async function memorySettings(shim: Shim, ctx: ExtensionCommandContext, args: string[]): Promise<void> {
	const flags = new Set(args.filter((a) => a.startsWith("--")));
	const words = args.filter((a) => !a.startsWith("--"));
	const unknown = [...flags].filter((f) => !["--project", "--global", "--unset"].includes(f));
	if (unknown.length > 0 || (flags.has("--project") && flags.has("--global"))) {
		show(ctx, "usage: /memory settings [<key> [<value> | --unset] [--project | --global]]", "warning");
		return;
	}
	if (words.length === 0 && !flags.has("--unset")) {
		const described = await describe(shim, ctx);
		if (typeof described === "string") return show(ctx, described, "error");
		if (ctx.hasUI) await panel(shim, ctx, described);
		else show(ctx, listing(described));
		return;
	}
	const [key, ...value] = words;
	if (value.length === 0 && !flags.has("--unset")) {
		const answer = await runCli(shim, ctx, ["config", "describe", key]);
		return show(ctx, answer.text, answer.ok ? "info" : "error");
	}
	let where = flags.has("--project") ? "project" : flags.has("--global") ? "global" : null;
	if (where === null) {
		// The file the value comes from now: a global write under a project value would change nothing.
		const described = await describe(shim, ctx, key);
		if (typeof described === "string") return show(ctx, described, "error");
		where = described.settings[0]?.layer === "project" ? "project" : "global";
	}
	await change(shim, ctx, key, flags.has("--unset") ? null : value.join(" "), where);
}

async function change(
	shim: Shim,
	ctx: ExtensionCommandContext,
	key: string,
	value: string | null,
	where: string,
): Promise<boolean> {
	const argv = ["config", "set", key, ...(value === null ? ["--unset"] : [value]), `--${where}`];
	const answer = await runCli(shim, ctx, argv);
	show(ctx, answer.text, answer.ok ? "info" : "error");
	return answer.ok;
}

/** Without a UI: the panel's settings, their values, and how to change them. */
export function listing(described: Described): string {
	const byKey = new Map(described.settings.map((s) => [s.key, s]));
	const lines = ["memlane settings (value, where it comes from, when a change applies):"];
	for (const group of GROUPS) {
		const settings = group.keys.map((k) => byKey.get(k)).filter((s): s is Setting => s !== undefined);
		if (settings.length === 0) continue;
		lines.push("", `${group.title}:`);
		for (const setting of settings) lines.push(`  ${line(setting)}`);
	}
	const { files } = described;
	const project = files.projectExists ? (files.projectTrusted ? "trusted" : "not trusted, so not read") : "none yet";
	lines.push(
		"",
		"Change one: /memory settings <key> <value> (written where the value comes from now; --project: " +
			`${files.project} (${project}); --global: ${files.global}). /memory settings <key> describes one. ` +
			"A setting that applies at once reaches this session from its next prompt; the others apply from the next session. " +
			"Every setting: `memlane config describe`.",
	);
	return lines.join("\n");
}

// -- the panel -------------------------------------------------------------------------------

async function panel(shim: Shim, ctx: ExtensionCommandContext, first: Described): Promise<void> {
	let described: Described = first;
	for (;;) {
		const setting = await pickSetting(ctx, described);
		if (setting === undefined) return;
		const value = await askValue(ctx, setting);
		if (value === undefined) continue;
		const where = await askWhere(ctx, setting, described);
		if (where === undefined) continue;
		await change(shim, ctx, setting.key, value, where);
		const again = await describe(shim, ctx);
		if (typeof again === "string") return show(ctx, again, "error");
		described = again;
	}
}

/** A group, then one of its settings; undefined when the user closes the panel. */
async function pickSetting(ctx: ExtensionCommandContext, described: Described): Promise<Setting | undefined> {
	const byKey = new Map(described.settings.map((s) => [s.key, s]));
	for (;;) {
		const groups = GROUPS.map((g) => ({
			title: g.title,
			settings: g.keys.map((k) => byKey.get(k)).filter((s): s is Setting => s !== undefined),
		})).filter((g) => g.settings.length > 0);
		const titles = [...groups.map((g) => g.title), EVERY_SETTING];
		const chosen = await ctx.ui.select("memlane settings", titles);
		if (chosen === undefined) return undefined;
		let settings = groups.find((g) => g.title === chosen)?.settings;
		let title = chosen;
		if (settings === undefined) {
			const sections = [...new Set(described.settings.map((s) => s.key.split(".")[0]))];
			const section = await ctx.ui.select("memlane settings: section", sections);
			if (section === undefined) continue;
			settings = described.settings.filter((s) => s.key.split(".")[0] === section);
			title = `[${section}]`;
		}
		const labels = settings.map(line);
		const picked = await ctx.ui.select(`memlane settings: ${title}`, labels);
		if (picked === undefined) continue;
		return settings[labels.indexOf(picked)];
	}
}

/** The new value: a choice for a switch or a fixed set, typed otherwise; null: unset. */
async function askValue(ctx: ExtensionCommandContext, setting: Setting): Promise<string | null | undefined> {
	const title = `${setting.key} (${setting.help}; now ${shown(setting.value)}, default ${shown(setting.default)})`;
	const options = setting.type === "bool" ? ["true", "false"] : setting.choices;
	if (options.length > 0) {
		const chosen = await ctx.ui.select(title, [...options, UNSET]);
		return chosen === UNSET ? null : chosen;
	}
	const typed = await ctx.ui.input(`${title}; empty: back to the default`, setting.allowed);
	if (typed === undefined) return undefined;
	return typed.trim() === "" ? null : typed.trim();
}

/** Which file: where the value comes from now comes first. */
async function askWhere(
	ctx: ExtensionCommandContext,
	setting: Setting,
	described: Described,
): Promise<string | undefined> {
	const { files } = described;
	const trust = files.projectExists && !files.projectTrusted ? ", not trusted: not read until `memlane trust`" : "";
	const options = [
		{ label: `all projects (${files.global})`, where: "global" },
		{ label: `this project (${files.project}${trust})`, where: "project" },
	];
	if (setting.layer === "project") options.reverse();
	const chosen = await ctx.ui.select(`Write ${setting.key} to`, options.map((o) => o.label));
	return options.find((o) => o.label === chosen)?.where;
}
