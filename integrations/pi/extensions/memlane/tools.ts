/** The memory_* tools: each one a `tool` request to the sidecar. */

import { readFileSync } from "node:fs";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import type { TSchema } from "typebox";
import { recordTiming } from "./connection.ts";
import { type Shim, sessionInfo } from "./host.ts";
import { asObject, type JsonObject } from "./protocol.ts";

/**
 * One tool as memlane's catalog declares it (engine/shared/tool_catalog.py), exported by
 * hosts/pi/tools_js.py into tool-specs.json beside this module: pi's model reads the
 * same name, description and argument schema as an MCP client. `parameters` is a plain
 * JSON Schema, which pi validates a call against as it does a TypeBox one.
 */
interface ToolSpec {
	name: string;
	label: string;
	snippet: string;
	description: string;
	parameters: TSchema;
}

export const SPECS_FILE = new URL("./tool-specs.json", import.meta.url);
export const TOOLS: ToolSpec[] = (JSON.parse(readFileSync(SPECS_FILE, "utf8")) as { tools: ToolSpec[] }).tools;

export function registerTools(pi: ExtensionAPI, shim: Shim): void {
	for (const spec of TOOLS) {
		pi.registerTool({
			name: spec.name,
			label: spec.label,
			description: spec.description,
			promptSnippet: spec.snippet,
			parameters: spec.parameters,
			async execute(_toolCallId, params, signal, _onUpdate, ctx) {
				shim.ctx = ctx;
				const started = performance.now();
				// A start still under way is waited for a while; then the tool says memory is starting.
				const child = await shim.connection.ensure(shim.connection.startWait("tool"));
				if (!child) {
					// Without memlane: writes and transcripts go on, the rest says why not (degraded.ts).
					const answer = shim.degraded.tool(spec.name, (params ?? {}) as JsonObject, sessionInfo(ctx));
					return { content: [{ type: "text", text: answer.text }], details: answer.details };
				}
				const call = child.request("tool", { name: spec.name, arguments: (params ?? {}) as JsonObject });
				const aborted = new Promise<never>((_, reject) => {
					if (signal?.aborted) reject(new Error("aborted"));
					signal?.addEventListener("abort", () => reject(new Error("aborted")), { once: true });
				});
				const result = asObject(await Promise.race([call, aborted]));
				recordTiming(`tool:${spec.name}`, performance.now() - started);
				const text = typeof result.text === "string" ? result.text : JSON.stringify(result);
				return { content: [{ type: "text", text }], details: result.details ?? null };
			},
		});
	}
}
