/** pi's lifecycle events, forwarded to the sidecar. */

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { recordTiming } from "./connection.ts";
import { type Shim, sessionInfo, settledExchange } from "./host.ts";
import { asObject, CONTEXT_MESSAGE_TYPE, type JsonObject } from "./protocol.ts";

export function registerEvents(pi: ExtensionAPI, shim: Shim): void {
	const { connection } = shim;

	// pi waits for this handler before its first prompt: it only starts the sidecar
	// (connection.ts), whose answer later events wait for within their own deadlines.
	pi.on("session_start", async (event, ctx) => {
		const started = performance.now();
		shim.ctx = ctx;
		shim.mode = ctx.mode;
		const sm = ctx.sessionManager;
		const sessionParams: JsonObject = {
			cwd: ctx.cwd,
			session_id: sm.getSessionId(),
			transcript_path: sm.getSessionFile() ?? null,
			host: "pi",
		};
		if (event.reason) sessionParams.reason = event.reason;
		connection.begin(sessionParams);
		recordTiming("session_start_wait", performance.now() - started);
	});

	pi.on("before_agent_start", async (event, ctx) => {
		shim.ctx = ctx;
		const prompt = event.messageType === "user" ? event.prompt : "";
		const { sent, result } = await connection.deliver("before_agent_start", { prompt });
		if (!sent && !connection.isStarting) {
			// Without memlane: the snapshot of the daily files, no auto-context (degraded.ts).
			const snapshot = shim.degraded.snapshot(sessionInfo(ctx));
			return snapshot ? { systemPrompt: `${event.systemPrompt}\n\n${snapshot}` } : undefined;
		}
		if (!result) return;
		const append = typeof result.system_append === "string" ? result.system_append : "";
		const message = asObject(result.message ?? null);
		const content = typeof message.content === "string" ? message.content : "";
		const out: { systemPrompt?: string; message?: { customType: string; content: string; display: boolean } } = {};
		if (append) out.systemPrompt = `${event.systemPrompt}\n\n${append}`;
		if (content && event.messageType === "user") {
			out.message = { customType: CONTEXT_MESSAGE_TYPE, content, display: false };
		}
		return out;
	});

	pi.on("agent_settled", async (event, ctx) => {
		shim.ctx = ctx;
		try {
			const { user, assistant, entryId, tools } = settledExchange(ctx);
			if (user === null) return; // a run with no user prompt on the branch: nothing to capture
			const { sent } = await connection.deliver("agent_settled", {
				exchange: {
					user,
					assistant,
					aborted: event.aborted,
					entry_id: entryId,
					session_id: ctx.sessionManager.getSessionId(),
					transcript_path: ctx.sessionManager.getSessionFile() ?? null,
					tools,
				},
			});
			// memlane never saw it: the package writes it itself, as a digest (degraded.ts).
			if (!sent) shim.degraded.capture({ user, assistant, aborted: event.aborted, entryId, tools }, sessionInfo(ctx));
		} finally {
			for (const waiter of [...shim.settled]) waiter();
		}
	});

	pi.on("session_compact", async (_event, ctx) => {
		shim.ctx = ctx;
		if (!(await connection.deliver("session_compact", {})).sent) shim.degraded.compacted();
	});

	pi.on("session_shutdown", async () => {
		// The context stays set while the sidecar flushes: its distillation asks llm.complete.
		// memlane answers within its SHUTDOWN_CAP_MS (captures it could not distil by then are
		// written as digests); what it still asked of pi's model is then aborted, so pi exits.
		if (await connection.end()) shim.ctx = null;
	});
}
