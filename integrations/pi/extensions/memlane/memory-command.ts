/**
 * /memory [status|stats|search <query>|reindex|on|off|settings …]: every subcommand through the
 * session's sidecar, answered by the warm engine that already holds the project's memory.
 *
 * status and search are tools (`memory_status`, `memory_search` with kind "session"); stats,
 * on|off, reindex and settings are memlane's own commands (`memlane sessions stats`,
 * `memlane memory on|off`, `memlane sessions reindex`, `memlane config describe|set`), sent as
 * the sidecar's `cli` request and run by the engine, so they print exactly what the CLI prints,
 * and no process starts. A reindex is started there and followed (`cli.job`): it re-embeds
 * every past message, minutes for a long history.
 *
 * Where the answer goes: a notification with a UI; in `pi -p` stdout (pi keeps stdout for the
 * answer and reroutes an extension's writes to stderr, so this writes past that); in JSON mode
 * stderr (stdout carries only pi's events).
 */

import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { Shim } from "./host.ts";
import { answered, CLI_TIMEOUT_MS, type CliAnswer, runCli, runTool, show } from "./memory-io.ts";
import { asObject, type Json, type JsonObject, ONE_SHOT_MODES } from "./protocol.ts";
import { memorySettings } from "./settings-panel.ts";

/** How often a reindex under way is asked how far it got. */
export const JOB_POLL_MS = 1_000;
/** The footer entry that shows a reindex under way. */
const STATUS_KEY = "memlane";

export const USAGE =
	"use status, stats, search <query>, reindex, on, off or settings [<key> [<value>|--unset] [--project|--global]]";

/** The /memory command's handler. */
export async function memoryCommand(shim: Shim, args: string, ctx: ExtensionCommandContext): Promise<void> {
	shim.ctx = ctx;
	const [sub = "status", ...rest] = args.trim().split(/\s+/).filter(Boolean);
	let answer: CliAnswer;
	switch (sub) {
		case "status":
			answer = await runTool(shim, ctx, "memory_status", {});
			break;
		case "search":
			if (rest.length === 0) {
				show(ctx, "usage: /memory search <query> (past sessions' messages)", "warning");
				return;
			}
			answer = await runTool(shim, ctx, "memory_search", { query: rest.join(" "), kind: "session" });
			break;
		case "stats":
			answer = await runCli(shim, ctx, ["sessions", "stats"]);
			break;
		case "on":
		case "off":
			answer = await runCli(shim, ctx, ["memory", sub]);
			break;
		case "reindex":
			await reindex(shim, ctx);
			return;
		case "settings":
			await memorySettings(shim, ctx, rest);
			return;
		default:
			show(ctx, `unknown /memory subcommand ${JSON.stringify(sub)}: ${USAGE}`, "warning");
			return;
	}
	show(ctx, answer.text, answer.ok ? "info" : "error");
}

// -- reindex: started in the engine, followed -------------------------------------------------

/** The jobs this pi process follows already (a second /memory reindex only reports). */
const following = new Set<string>();

function progressText(job: JsonObject): string {
	const progress = asObject(job.progress ?? null);
	const seconds = typeof job.seconds === "number" ? job.seconds : 0;
	if (typeof progress.done !== "number" || typeof progress.total !== "number") {
		return `reading the transcripts (${Math.round(seconds)} s)`;
	}
	return `${progress.phase ?? "messages"} ${progress.done}/${progress.total} (${Math.round(seconds)} s)`;
}

async function jobState(shim: Shim, id: string): Promise<JsonObject | string> {
	const child = await shim.connection.ensure(0);
	if (!child) return shim.connection.unavailableText();
	try {
		return asObject((await child.request("cli.job", { job: id }, CLI_TIMEOUT_MS)) as Json);
	} catch (err) {
		return `memlane lost track of the reindex: ${err instanceof Error ? err.message : String(err)}`;
	}
}

async function reindex(shim: Shim, ctx: ExtensionCommandContext): Promise<void> {
	const started = await runCli(shim, ctx, ["sessions", "reindex"], { detach: true });
	const id = typeof started.result.job === "string" ? started.result.job : null;
	if (!started.ok || !id) {
		show(ctx, started.ok ? "memlane did not start the reindex" : started.text, "error");
		return;
	}
	if (ONE_SHOT_MODES.has(ctx.mode)) {
		// pi exits when this returns: wait for the reindex here, its progress on stderr.
		process.stderr.write("memlane: rebuilding the sessions index (every past message is embedded again)…\n");
		let last = "";
		for (;;) {
			const state = await jobState(shim, id);
			if (typeof state === "string") return show(ctx, state, "error");
			if (state.running !== true) {
				const done = answered(state);
				return show(ctx, done.text, done.ok ? "info" : "error");
			}
			const now = progressText(state);
			if (now !== last) process.stderr.write(`memlane: sessions reindex: ${now}\n`);
			last = now;
			await new Promise((resolve) => setTimeout(resolve, JOB_POLL_MS));
		}
	}
	if (started.result.already === true || following.has(id)) {
		ctx.ui.notify(`memlane: a sessions reindex is already running: ${progressText(started.result)}`, "info");
		return;
	}
	ctx.ui.notify(
		"memlane: rebuilding the sessions index in the background: every past message is embedded again (minutes for a long history). Search goes on meanwhile; the footer shows how far it got, and you are told when it is done.",
		"info",
	);
	following.add(id);
	const poll = async (): Promise<void> => {
		const state = await jobState(shim, id);
		try {
			if (typeof state !== "string" && state.running === true) {
				ctx.ui.setStatus(STATUS_KEY, `memlane reindex: ${progressText(state)}`);
				setTimeout(() => void poll(), JOB_POLL_MS).unref();
				return;
			}
			following.delete(id);
			ctx.ui.setStatus(STATUS_KEY, undefined);
			if (typeof state === "string") ctx.ui.notify(state, "error");
			else {
				const done = answered(state);
				ctx.ui.notify(`memlane: ${done.text}`, done.ok ? "info" : "error");
			}
		} catch (err) {
			following.delete(id); // the session this command ran in is gone: nobody to tell
			shim.log(`reindex follow-up: ${err instanceof Error ? err.message : String(err)}`);
		}
	};
	setTimeout(() => void poll(), JOB_POLL_MS).unref();
}
