/**
 * How the /memory subcommands reach memlane and the user: memlane's own commands run by the
 * engine through the session's sidecar (the `cli` request), the tools, and where an answer is
 * shown in each of pi's modes (memory-command.ts says why).
 */

import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { type Shim, sessionInfo } from "./host.ts";
import { cliFailure } from "./memlane-cli.ts";
import { asObject, type JsonObject, ONE_SHOT_MODES, TIMEOUT_MS } from "./protocol.ts";
import type { Sidecar } from "./sidecar.ts";

export type Level = "info" | "warning" | "error";

/** How long one of memlane's commands may take in the engine (a stats read is milliseconds). */
export const CLI_TIMEOUT_MS = 60_000;

/** What the engine answered a `cli` request: the command's output, or why there is none. */
export interface CliAnswer {
	ok: boolean;
	text: string;
	result: JsonObject;
}

/** Write to the real stdout: in `pi -p` pi reroutes `process.stdout.write` to stderr while it runs
 * (its output guard keeps stdout for the answer), and a command's output is its answer. This is
 * the stream's own write, as pi's final answer uses it, so pi's last flush covers it too. */
function writeStdout(text: string): void {
	const own = Object.getPrototypeOf(process.stdout) as { write: (chunk: string) => boolean };
	own.write.call(process.stdout, text);
}

/** Show a command's answer where this mode shows one (see the module's comment). */
export function show(ctx: ExtensionCommandContext, text: string, level: Level = "info"): void {
	if (ctx.hasUI) ctx.ui.notify(text, level);
	else if (ctx.mode === "print" && level === "info") writeStdout(`${text}\n`);
	else process.stderr.write(`${text}\n`); // an error in print mode; JSON mode: stdout carries events
}

/** The session's sidecar, waiting for a start under way: a tool's wait, but in a one-shot mode
 * (`pi -p "/memory stats"`) the whole start's, since there is no "try again in a moment". */
async function sidecarFor(shim: Shim, ctx: ExtensionCommandContext): Promise<Sidecar | null> {
	const wait = ONE_SHOT_MODES.has(ctx.mode) ? TIMEOUT_MS.session_start : shim.connection.startWait("tool");
	return shim.connection.ensure(wait);
}

/** Run `memlane <argv>` in the engine; `params` adds to the request (`detach`). */
export async function runCli(
	shim: Shim,
	ctx: ExtensionCommandContext,
	argv: string[],
	params: JsonObject = {},
): Promise<CliAnswer> {
	const child = await sidecarFor(shim, ctx);
	if (!child) return { ok: false, text: shim.connection.unavailableText(), result: {} };
	try {
		const result = asObject(await child.request("cli", { argv, ...params }, CLI_TIMEOUT_MS));
		return answered(result);
	} catch (err) {
		return { ok: false, text: `memlane ${argv.join(" ")} failed: ${err instanceof Error ? err.message : String(err)}`, result: {} };
	}
}

/** A command's result as the user reads it: what it printed (its notices too), or its error. */
export function answered(result: JsonObject): CliAnswer {
	const stdout = typeof result.stdout === "string" ? result.stdout : "";
	const stderr = typeof result.stderr === "string" ? result.stderr : "";
	const code = typeof result.code === "number" ? result.code : 0;
	if (code !== 0) return { ok: false, text: cliFailure({ code, stdout, stderr }), result };
	return { ok: true, text: [stdout.trim(), stderr.trim()].filter(Boolean).join("\n"), result };
}

export async function runTool(shim: Shim, ctx: ExtensionCommandContext, name: string, args: JsonObject): Promise<CliAnswer> {
	const child = await sidecarFor(shim, ctx);
	if (!child) {
		// Without memlane the package answers what it can itself (status says why memory is off).
		const degraded = shim.degraded.tool(name, args, sessionInfo(ctx));
		return { ok: name === "memory_status", text: degraded.text, result: {} };
	}
	try {
		const result = asObject(await child.request("tool", { name, arguments: args }));
		return { ok: true, text: typeof result.text === "string" ? result.text : JSON.stringify(result), result };
	} catch (err) {
		return { ok: false, text: `${name} failed: ${err instanceof Error ? err.message : String(err)}`, result: {} };
	}
}
