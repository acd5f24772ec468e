/**
 * /dream: memlane consolidates the topic files, pi shows the plan as a diff and applies it
 * once the user says yes.
 *
 * The dream runs in memlane's engine over the session's sidecar (`dream.plan`, then
 * `dream.apply` with the very plan that was shown, so the LLM is asked once). Its model is
 * memlane's own `[llm]` when one is configured, else pi's (the session's own model, or
 * `dream.model` from pi's registry): memlane asks it through `llm.complete`, as capture
 * does, and this command's context answers (it becomes `shim.ctx`). In print and json modes there is no one to ask: the plan is shown, memlane
 * keeps it in the store, and the message says how to apply it.
 */

import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { type Shim, tell } from "./host.ts";
import { show } from "./memory-io.ts";
import { asObject, DREAM_APPLY_TIMEOUT_MS, DREAM_TIMEOUT_MS, type JsonObject } from "./protocol.ts";

function errorText(err: unknown): string {
	return err instanceof Error ? err.message : String(err);
}

export async function runDream(shim: Shim, ctx: ExtensionCommandContext): Promise<void> {
	// memlane may ask pi's model (llm.complete): it answers with this context's registry.
	shim.ctx = ctx;
	const child = await shim.connection.ensure(shim.connection.startWait("tool"));
	if (!child) {
		tell(ctx, shim.connection.unavailableText(), "error");
		return;
	}
	let plan: JsonObject;
	try {
		if (ctx.hasUI) ctx.ui.notify("memlane dream: planning the consolidation with the LLM…", "info");
		plan = asObject(await child.request("dream.plan", { save: !ctx.hasUI }, DREAM_TIMEOUT_MS));
	} catch (err) {
		tell(ctx, `memlane dream failed: ${errorText(err)}`, "error");
		return;
	}
	const rendered = typeof plan.rendered === "string" ? plan.rendered.trimEnd() : "";
	const changes = Array.isArray(plan.changes) ? plan.changes.length : 0;
	if (plan.empty === true || changes === 0) {
		show(ctx, rendered || "Nothing to consolidate.", "info");
		return;
	}
	if (!ctx.hasUI) {
		const saved = typeof plan.saved_to === "string" ? plan.saved_to : null;
		const how = saved
			? `To apply exactly this plan (no LLM needed; refused if a topic file changed since): memlane -C ${JSON.stringify(ctx.cwd)} dream --apply-plan ${JSON.stringify(saved)}. Or run /dream in pi's interactive mode.`
			: "Run /dream in pi's interactive mode to apply it.";
		// The plan is the answer here: on stdout in `pi -p`, like /memory's.
		show(ctx, `${rendered}\n\n/dream cannot ask for confirmation in ${ctx.mode} mode: nothing was changed. ${how}`, "info");
		return;
	}
	const confirmed = await ctx.ui.confirm("Apply this dream plan?", rendered);
	if (!confirmed) {
		ctx.ui.notify("memlane dream: declined, nothing was changed.", "info");
		return;
	}
	// The sidecar may have been respawned while the user read the plan: ask whichever runs.
	const applier = await shim.connection.ensure(shim.connection.startWait("tool"));
	if (!applier) {
		ctx.ui.notify(`memlane dream did not apply: ${shim.connection.unavailableText()}`, "error");
		return;
	}
	try {
		const done = asObject(await applier.request("dream.apply", { plan }, DREAM_APPLY_TIMEOUT_MS));
		const notices = Array.isArray(done.notices) ? done.notices.filter((n): n is string => typeof n === "string") : [];
		ctx.ui.notify([`memlane dream applied: ${changes} file(s) changed.`, ...notices].join("\n"), "info");
	} catch (err) {
		ctx.ui.notify(`memlane dream did not apply: ${errorText(err)}`, "error");
	}
}
