/** The slash commands: /recall (a prompt for the agent), /memory (the sidecar: memory-command.ts), /dream (dream-command.ts). */

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { runDream } from "./dream-command.ts";
import { type Shim, tell, untilSettled } from "./host.ts";
import { memoryCommand } from "./memory-command.ts";
import { ONE_SHOT_MODES, RUN_IDLE_MS } from "./protocol.ts";

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

	// /memory [status|stats|search <query>|reindex|on|off|settings …]: every subcommand through
	// the session's sidecar, run by the warm engine (memory-command.ts).
	pi.registerCommand("memory", {
		description:
			"memlane: status (default), stats (sessions index), search <query> (past sessions), reindex (sessions), on|off (topic memory), settings [<key> [<value>]]",
		handler: (args, ctx) => memoryCommand(shim, String(args ?? ""), ctx),
	});

	pi.registerCommand("dream", {
		description: "Consolidate topic memory (merge duplicates, settle contradictions); shows the diff and asks first",
		handler: async (_args, ctx) => runDream(shim, ctx),
	});
}
