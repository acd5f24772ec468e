/** Reading pi: the shim's shared state, message text, the settled exchange, and pi's models for `llm.complete`. */

import type { Message } from "@earendil-works/pi-ai";
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { SidecarConnection } from "./connection.ts";
import type { Degraded, SessionInfo } from "./degraded.ts";
import { type Json, type JsonObject, LLM_COMPLETE_MAX_TOKENS } from "./protocol.ts";

/** What the event handlers, tools and commands of one extension instance share. */
export interface Shim {
	readonly connection: SidecarConnection;
	/** What the package does itself when memlane cannot answer (degraded.ts). */
	readonly degraded: Degraded;
	/** The context of pi's latest event: `llm.complete` answers with its model registry. */
	ctx: ExtensionContext | null;
	/** pi's mode, which decides where log lines go. */
	mode: string;
	readonly log: (line: string) => void;
	/** Called once each time a run settles (after memlane has seen it): what a command waits on. */
	readonly settled: Set<() => void>;
}

/**
 * Wait until the run a command just asked for has settled. pi starts it on its own
 * (`sendUserMessage` returns at once) and, in `pi -p`, exits as soon as the command
 * returns, so a command that wants its run to happen waits here. Gives up when pi stays
 * idle for `idleMs` (the run could not start: pi says why itself).
 */
export function untilSettled(shim: Shim, ctx: { isIdle(): boolean }, idleMs: number): Promise<void> {
	return new Promise((resolve) => {
		let busyAt = Date.now();
		const done = () => {
			clearInterval(timer);
			shim.settled.delete(done);
			resolve();
		};
		shim.settled.add(done);
		const timer = setInterval(() => {
			if (!ctx.isIdle()) busyAt = Date.now();
			else if (Date.now() - busyAt > idleMs) done();
		}, 50);
	});
}

/** The pi session a call belongs to, for what the package does without memlane. */
export function sessionInfo(ctx: ExtensionContext): SessionInfo {
	return { cwd: ctx.cwd, sessionId: ctx.sessionManager.getSessionId(), sessionFile: ctx.sessionManager.getSessionFile() ?? null };
}

/** Show text to the user: a notification with a UI, else stderr (outside the TUI, pi
 * reroutes an extension's stdout to stderr anyway, keeping stdout for its own output). */
export function tell(ctx: ExtensionContext, text: string, level: "info" | "warning" | "error"): void {
	if (ctx.hasUI) ctx.ui.notify(text, level);
	else process.stderr.write(`${text}\n`);
}

export function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((part): part is { type: "text"; text: string } => part?.type === "text" && typeof part.text === "string")
		.map((part) => part.text)
		.join("\n");
}

/** The names of the tools an assistant message calls. */
export function toolNames(content: unknown): string[] {
	if (!Array.isArray(content)) return [];
	return content
		.filter((part): part is { type: "toolCall"; name: string } => part?.type === "toolCall" && typeof part.name === "string")
		.map((part) => part.name);
}

/** The user prompt, final assistant text and tools called of the run that just settled, from the active branch. */
export function settledExchange(ctx: ExtensionContext): {
	user: string | null;
	assistant: string;
	entryId: string | null;
	tools: string[];
} {
	const branch = ctx.sessionManager.getBranch() as Array<{ type: string; id: string; message?: { role?: string; content?: unknown } }>;
	let assistant = "";
	let user: string | null = null;
	const tools: string[] = [];
	for (let i = branch.length - 1; i >= 0; i--) {
		const entry = branch[i];
		if (entry.type !== "message" || !entry.message) continue;
		const role = entry.message.role;
		if (role === "assistant") {
			if (!assistant) assistant = textOf(entry.message.content).trim();
			tools.unshift(...toolNames(entry.message.content));
		}
		if (role === "user") {
			user = textOf(entry.message.content);
			break;
		}
	}
	return { user, assistant, entryId: ctx.sessionManager.getLeafId() ?? null, tools };
}

function modelCost(model: { cost?: { input?: number; output?: number } }): number {
	return (model.cost?.input ?? 0) + (model.cost?.output ?? 0);
}

/** `model` as `<id>` or `<provider>/<id>`; else with role "session" the session's own model
 * (a dream, as pi-memory's falls back to the parent model), else its provider's cheapest. */
export function pickModel(ctx: ExtensionContext, wanted: string | undefined, role?: string) {
	const registry = ctx.modelRegistry;
	const provider = ctx.model?.provider;
	if (wanted) {
		const slash = wanted.indexOf("/");
		if (slash > 0) {
			const found = registry.find(wanted.slice(0, slash), wanted.slice(slash + 1));
			if (found) return found;
		}
		const all = registry.getAvailable();
		const match =
			all.find((m) => m.id === wanted && m.provider === provider) ?? all.find((m) => m.id === wanted);
		if (match) return match;
		throw new Error(`model ${wanted} is not in pi's model registry`);
	}
	if (!ctx.model) throw new Error("pi has no active model to distil with");
	if (role === "session") return ctx.model;
	const sameProvider = registry.getAvailable().filter((m) => m.provider === provider);
	if (sameProvider.length === 0) return ctx.model;
	return sameProvider.reduce((best, m) => (modelCost(m) < modelCost(best) ? m : best));
}

/** Answer the sidecar's `llm.complete` with pi's own model registry (the session's provider).
 * `signal` aborts the model request (memlane sent `llm.cancel`, or the session ended). */
export async function llmComplete(ctx: ExtensionContext | null, params: JsonObject, signal?: AbortSignal): Promise<Json> {
	if (!ctx) throw new Error("no pi session is active");
	const wanted = typeof params.model === "string" && params.model ? params.model : undefined;
	const model = pickModel(ctx, wanted, typeof params.model_role === "string" ? params.model_role : undefined);
	const prompt = typeof params.prompt === "string" ? params.prompt : "";
	const messages: Message[] = [{ role: "user", content: [{ type: "text", text: prompt }], timestamp: Date.now() }];
	const maxTokens = typeof params.max_tokens === "number" ? params.max_tokens : LLM_COMPLETE_MAX_TOKENS;
	const response = await ctx.modelRegistry.complete(
		model,
		{ systemPrompt: typeof params.system === "string" ? params.system : undefined, messages },
		{ maxTokens, cacheRetention: "none", signal } as Parameters<typeof ctx.modelRegistry.complete>[2],
	);
	if (response.stopReason === "error" || response.stopReason === "aborted") {
		throw new Error(`${model.provider}/${model.id}: ${response.errorMessage ?? response.stopReason}`);
	}
	return { text: textOf(response.content) };
}
