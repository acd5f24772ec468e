/** The slash commands: /recall (a prompt for the agent), /memory (sidecar or CLI), /dream (dream-command.ts). */

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { runDream } from "./dream-command.ts";
import { type Shim, tell, untilSettled } from "./host.ts";
import { cliFailure, runMemlane } from "./memlane-cli.ts";
import { asObject, type JsonObject, ONE_SHOT_MODES, RUN_IDLE_MS } from "./protocol.ts";

// /memory [status|stats|search <query>|reindex|on|off]: status goes through the sidecar;
// the sessions-layer and on/off subcommands are the CLI's (`memlane sessions …`,
// `memlane memory on|off`), run as a child so pi shows exactly what the CLI prints.
const MEMORY_CLI: Record<string, { args: string[]; timeoutMs: number }> = {
	stats: { args: ["sessions", "stats"], timeoutMs: 30_000 },
	reindex: { args: ["sessions", "reindex"], timeoutMs: 30 * 60_000 },
	on: { args: ["memory", "on"], timeoutMs: 30_000 },
	off: { args: ["memory", "off"], timeoutMs: 30_000 },
};

export function registerCommands(pi: ExtensionAPI, shim: Shim): void {
	pi.registerCommand("recall", {
		description: "Recall from long-term memory: /recall <query>, or /recall --all <query> across projects",
		handler: async (args, ctx) => {
			let query = (args ?? "").trim();
			let all = false;
			if (query.startsWith("--all")) {
				all = true;
				query = query.slice("--all".length).trim();
			}
			if (!query) {
				tell(ctx, "Usage: /recall [--all] <query>", "warning");
				return;
			}
			const scope = all
				? 'Search every project (memory_search with scope "all"; pass a hit\'s origin project back as project).'
				: "Search this project's memory.";
			// memlane knows a /recall exchange by this opening (RECALL_PROMPT_PREFIX in
			// src/memlane/engine/journal/echo.py): it is not captured again, nor indexed as a message.
			const request = `Recall from long-term memory: ${query}\n\nUse the recall skill: start with memory_search, go to memory_expand and then memory_transcript only if the shallower layer does not answer. ${scope} Answer from what memory says and cite the chunk hashes you used.`;
			// In `pi -p` pi exits when this handler returns: wait for the run, so the recall
			// happens and pi prints its answer.
			const wait = ONE_SHOT_MODES.has(ctx.mode) ? untilSettled(shim, ctx, RUN_IDLE_MS) : null;
			if (ctx.isIdle()) pi.sendUserMessage(request);
			else pi.sendUserMessage(request, { deliverAs: "followUp" });
			await wait;
		},
	});

	// /memory [status|stats|search <query>|reindex|on|off]: status goes through the sidecar;
	// the sessions-layer and on/off subcommands are the CLI's (`memlane sessions …`,

	pi.registerCommand("memory", {
		description:
			"memlane: status (default), stats (sessions index), search <query> (past sessions), reindex (sessions), on|off (topic memory)",
		handler: async (args, ctx) => {
			shim.ctx = ctx;
			const [sub = "status", ...rest] = String(args ?? "").trim().split(/\s+/).filter(Boolean);
			let text: string;
			const cli = MEMORY_CLI[sub];
			if (cli) {
				const result = await runMemlane(ctx.cwd, cli.args, cli.timeoutMs);
				text = result.code === 0 && !result.failure ? result.stdout.trim() : cliFailure(result);
			} else if (sub === "status" || sub === "search") {
				const child = await shim.connection.ensure(shim.connection.startWait("tool"));
				if (!child) text = shim.connection.unavailableText();
				else {
					const call =
						sub === "status"
							? { name: "memory_status", arguments: {} }
							: { name: "memory_search", arguments: { query: rest.join(" "), kind: "session" } };
					try {
						if (sub === "search" && rest.length === 0) throw new Error("usage: /memory search <query>");
						const result = asObject(await child.request("tool", call as JsonObject));
						text = typeof result.text === "string" ? result.text : JSON.stringify(result);
					} catch (err) {
						text = `/memory ${sub} failed: ${err instanceof Error ? err.message : String(err)}`;
					}
				}
			} else {
				text = `unknown /memory subcommand ${JSON.stringify(sub)}: use status, stats, search <query>, reindex, on or off`;
			}
			if (ctx.hasUI) ctx.ui.notify(text, "info");
			else if (ctx.mode === "print") process.stdout.write(`${text}\n`);
			else process.stderr.write(`${text}\n`); // json mode: stdout carries only events
		},
	});

	pi.registerCommand("dream", {
		description: "Consolidate topic memory (merge duplicates, settle contradictions); shows the diff and asks first",
		handler: async (_args, ctx) => runDream(shim, ctx),
	});
}
