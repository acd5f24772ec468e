/** The slash commands: /recall (a prompt for the agent), /memory (the sidecar: memory-command.ts), /dream (the CLI, confirmed). */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { type Shim, sessionInfo, tell, untilSettled } from "./host.ts";
import { cliFailure, runMemlane } from "./memlane-cli.ts";
import { memoryCommand } from "./memory-command.ts";
import {
	asObject,
	DREAM_TIMEOUT_MS,
	type Json,
	type JsonObject,
	ONE_SHOT_MODES,
	RUN_IDLE_MS,
} from "./protocol.ts";

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
		handler: async (_args, ctx) => {
			// The plan goes through a private temp dir: it holds the topic files' text.
			const dir = mkdtempSync(join(tmpdir(), "memlane-dream-"));
			const planFile = join(dir, "plan.json");
			try {
				if (ctx.hasUI) ctx.ui.notify("memlane dream: planning the consolidation with the LLM…", "info");
				const planned = await runMemlane(ctx.cwd, ["dream", "--dry-run", "--save-plan", planFile, "--json"], DREAM_TIMEOUT_MS);
				if (planned.code !== 0 || planned.failure) {
					tell(ctx, `memlane dream failed: ${cliFailure(planned)}`, "error");
					return;
				}
				let plan: JsonObject;
				try {
					plan = asObject(JSON.parse(planned.stdout) as Json);
				} catch {
					tell(ctx, `memlane dream printed no plan: ${planned.stdout.slice(0, 200)}`, "error");
					return;
				}
				const rendered = typeof plan.rendered === "string" ? plan.rendered.trimEnd() : "";
				const changes = Array.isArray(plan.changes) ? plan.changes.length : 0;
				if (changes === 0) {
					tell(ctx, rendered || "Nothing to consolidate.", "info");
					return;
				}
				if (!ctx.hasUI) {
					tell(
						ctx,
						`${rendered}\n\n/dream cannot ask for confirmation in ${ctx.mode} mode: nothing was changed. Run \`memlane dream\` in a terminal (or /dream in pi's interactive mode) to apply it.`,
						"warning",
					);
					return;
				}
				const confirmed = await ctx.ui.confirm("Apply this dream plan?", rendered);
				if (!confirmed) {
					ctx.ui.notify("memlane dream: declined, nothing was changed.", "info");
					return;
				}
				const applied = await runMemlane(ctx.cwd, ["dream", "--apply-plan", planFile, "--yes", "--json"], DREAM_TIMEOUT_MS);
				if (applied.code !== 0 || applied.failure) {
					ctx.ui.notify(`memlane dream did not apply: ${cliFailure(applied)}`, "error");
					return;
				}
				let notices: string[] = [];
				try {
					const done = asObject(JSON.parse(applied.stdout) as Json);
					if (Array.isArray(done.notices)) notices = done.notices.filter((n): n is string => typeof n === "string");
				} catch {
					// applied (exit 0); only the notices are lost
				}
				ctx.ui.notify([`memlane dream applied: ${changes} file(s) changed.`, ...notices].join("\n"), "info");
			} catch (err) {
				tell(ctx, `memlane dream failed: ${err instanceof Error ? err.message : String(err)}`, "error");
			} finally {
				rmSync(dir, { recursive: true, force: true });
			}
		},
	});
}
