/** The memory_* tools: each one a `tool` request to the sidecar. */

import { StringEnum } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { type TSchema, Type } from "typebox";
import { recordTiming } from "./connection.ts";
import { type Shim, sessionInfo } from "./host.ts";
import { asObject, type JsonObject } from "./protocol.ts";

interface ToolSpec {
	name: string;
	label: string;
	description: string;
	parameters: TSchema;
	snippet: string;
}

const LADDER =
	"Recall climbs down and stops at the shallowest layer that answers: L1 memory_search (scored chunks, each with a chunk hash) → L2 memory_expand (the whole section behind a chunk hash, plus its session anchor) → L3 memory_transcript (the original turns around that anchor).";

export const TOOLS: ToolSpec[] = [
	{
		name: "memory_search",
		label: "Memory search",
		snippet: "L1 recall: scored chunks of long-term memory for a query",
		description: `L1 of the recall ladder. Search long-term memory (past sessions' distilled notes, topics, transcripts) and return the top-k scored chunks, each with a chunk hash. Most questions end here. ${LADDER} Scores estimate relevance in [0, 1], each hit labelled strong, possible or weak and dated; a hit marked OUTDATED was replaced by a newer memory. Hits below min_score (default search.min_score) are left out, and an empty result means nothing relevant is stored. scope "all" widens to every project under the scan roots (each hit labeled with its origin project).`,
		parameters: Type.Object({
			query: Type.String({ description: "What to look for, in natural language or keywords" }),
			k: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: "How many chunks (default 5)" })),
			scope: Type.Optional(StringEnum(["project", "all"] as const, { description: "project (default) or all projects" })),
			kind: Type.Optional(
				StringEnum(["journal", "topic", "session", "all"] as const, {
					description:
						"journal (daily notes), topic (curated topic files), session (every past message of this project's sessions) or all; omit for notes and topics",
				}),
			),
			mode: Type.Optional(StringEnum(["hybrid", "lexical", "semantic"] as const, { description: "hybrid (default), lexical (BM25 only) or semantic (dense only)" })),
			after: Type.Optional(
				Type.String({
					description:
						"Only memories at or after this ISO 8601 date or time: 2026-12-03 (from that local day's start), 2026-12-03T14:12 (local time), 2026-12-03T14:12:30Z or 2026-12-03T14:12:30+01:00",
				}),
			),
			before: Type.Optional(
				Type.String({
					description:
						"Only memories before this ISO 8601 date or time, not including it: 2026-12-03 (up to that local day's start), 2026-12-03T14:12 (local time), 2026-12-03T14:12:30Z or 2026-12-03T14:12:30+01:00",
				}),
			),
			session: Type.Optional(Type.String({ description: "Only memories from this session id" })),
			min_score: Type.Optional(
				Type.Number({ minimum: 0, maximum: 1, description: "Only hits scoring at least this (relevance in [0, 1]); 0 returns every match" }),
			),
			order: Type.Optional(StringEnum(["relevance", "newest"] as const, { description: "relevance (default: best match first) or newest (newest memories first)" })),
		}),
	},
	{
		name: "memory_expand",
		label: "Memory expand",
		snippet: "L2 recall: the full memory section behind a chunk hash, with its session anchor",
		description: `L2 of the recall ladder. Given a chunk hash from memory_search, return the whole section it came from plus its session anchor (session id, entry id, transcript path). Cheap, no embedder. Use it when a chunk is suggestive but clipped. ${LADDER} For a cross-repo hit pass its origin project as project.`,
		parameters: Type.Object({
			chunk_hash: Type.String({ description: "A chunk hash from memory_search" }),
			project: Type.Optional(Type.String({ description: "Origin project path of a cross-repo hit, verbatim" })),
		}),
	},
	{
		name: "memory_transcript",
		label: "Memory transcript",
		snippet: "L3 recall: the original conversation turns around an anchored memory",
		description: `L3 of the recall ladder. Given a session anchor (transcript path and entry id, from memory_expand), return the turns around that entry in the original transcript, following the branch the memory anchors to even past later forks. A pure file read. Use it only when the distilled note lost the reasoning you need. ${LADDER}`,
		parameters: Type.Object({
			transcript_path: Type.String({ description: "The transcript path from the session anchor" }),
			turn: Type.Optional(Type.String({ description: "The entry id from the session anchor (turn:<id>), or a unique prefix" })),
			project: Type.Optional(Type.String({ description: "Origin project path of a cross-repo hit, verbatim" })),
		}),
	},
	{
		name: "memory_write",
		label: "Memory write",
		snippet: "Persist a memory now (timestamped, anchored, in today's daily memory file)",
		description:
			"Persist a memory immediately when the user asks you to remember something: it is timestamped, anchored to this session and appended to today's daily memory file. Write one self-contained, third-person statement. Everyday exchanges are captured automatically; do not duplicate them.",
		parameters: Type.Object({
			text: Type.String({ description: "What to remember, self-contained" }),
			supersedes: Type.Optional(
				Type.String({ description: "The chunk hash (from memory_search) of an earlier memory this one corrects; that one is then marked outdated" }),
			),
		}),
	},
	{
		name: "memory_forget",
		label: "Memory forget",
		snippet: "Redact one memory entry by chunk hash or by (date, time)",
		description:
			"Remove exactly one memory entry (or one compact block) from the store and the index, addressed by chunk_hash or by date (YYYY-MM-DD) and time (HH:MM). No fuzzy matching, no recovery: the result echoing the removed text is the only record. Use only when the user asks to forget something.",
		parameters: Type.Object({
			chunk_hash: Type.Optional(Type.String({ description: "Chunk hash of the entry to remove" })),
			date: Type.Optional(Type.String({ description: "Date of the entry, YYYY-MM-DD" })),
			time: Type.Optional(Type.String({ description: "Heading time of the entry, HH:MM" })),
		}),
	},
	{
		name: "memory_compact",
		label: "Memory compact",
		snippet: "Condense the memory store into a summary (explicit request only)",
		description:
			"Memory compaction: an LLM condenses the memory store and appends the summary to today's daily memory file. Spends the configured LLM provider's budget, so call it only on the user's explicit request. Not pi's context compaction.",
		parameters: Type.Object({
			source: Type.Optional(Type.String({ description: "Only compact this source file" })),
		}),
	},
	{
		name: "memory_topic",
		label: "Memory topic",
		snippet: "Curated knowledge: add, remove, list or search topic files (MEMORY.md)",
		description:
			"Curated knowledge that outlives the daily journal: one topic file per subject, one '## title' entry per fact, indexed one line per topic in MEMORY.md, which every new session sees. add (content, topic, title, optional type) saves a durable learning such as a preference, convention, debugging insight or project fact; remove (entry = the exact title) deletes one entry; list shows topics and their entry titles; search (query, scope memory|sessions) returns whole entries, or matching messages from this project's past sessions.",
		parameters: Type.Object({
			action: StringEnum(["add", "remove", "list", "search"] as const, { description: "What to do" }),
			content: Type.Optional(Type.String({ description: "add: the knowledge to keep, in full sentences" })),
			topic: Type.Optional(Type.String({ description: 'add: the topic file, e.g. "debugging.md" or "Debugging Tips"' })),
			title: Type.Optional(
				Type.String({ description: "add: a self-contained title; only titles reach future prompts via MEMORY.md" }),
			),
			type: Type.Optional(
				StringEnum(["user", "feedback", "project", "reference"] as const, {
					description: "add: user, feedback (default), project or reference",
				}),
			),
			entry: Type.Optional(Type.String({ description: "remove: the exact title of the entry to delete" })),
			query: Type.Optional(Type.String({ description: "search: what to look for" })),
			scope: Type.Optional(
				StringEnum(["memory", "sessions"] as const, {
					description: "search: memory (topic files, default) or sessions (past conversations)",
				}),
			),
		}),
	},
	{
		name: "memory_similar",
		label: "Memory similar",
		snippet: "More like this: memories nearest in meaning to a chunk hash or session message id",
		description:
			"More like this: the memories nearest in meaning to one you already have (a chunk hash from memory_search, or a session message id from a kind session search), itself excluded.",
		parameters: Type.Object({
			chunk_hash: Type.String({ description: "A chunk hash, or the id of a session message" }),
			k: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: "How many (default 10)" })),
		}),
	},
	{
		name: "memory_status",
		label: "Memory status",
		snippet: "Doctor: memlane's scope, store, index state, capture and auto-context",
		description:
			"Doctor for long-term memory: what is missing and how to fix it, project scope, store, index state and chunk count, capture and auto-context state with counters. Reach for it first when recall is not behaving.",
		parameters: Type.Object({}),
	},
];

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
