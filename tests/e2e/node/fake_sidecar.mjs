// A stand-in for `memlane sidecar` (run as `<wrapper> sidecar -C <cwd>`), for shim.test.mjs.
// FAKE_SIDECAR_LOG gets one line per start; FAKE_SIDECAR_MODE picks the behaviour:
//   crash  answers session_start, then exits (code 3) on any other request
//   mute   answers session_start only: every other request goes unanswered
//   broken exits (code 1) before reading anything, as a memlane with a bad config does
//   slow   answers session_start (with a notice) only when the file FAKE_SIDECAR_GATE
//          exists: an engine still starting
//   ask    on `tool`, asks pi llm.complete (id "memlane-1") and answers the tool; on
//          `before_agent_start`, sends llm.cancel {id: "memlane-1"} and answers
// FAKE_SIDECAR_SEEN (when set) gets every answer pi sends back, one JSON line each.
import { appendFileSync, existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";

const mode = process.env.FAKE_SIDECAR_MODE ?? "";
if (process.env.FAKE_SIDECAR_LOG) appendFileSync(process.env.FAKE_SIDECAR_LOG, `start ${process.pid}\n`);
if (mode === "broken") {
	process.stderr.write("memlane: error: the config is broken\n");
	process.exit(1);
}

const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const answer = (request, result) => send({ jsonrpc: "2.0", id: request.id, result });
for await (const line of createInterface({ input: process.stdin })) {
	if (!line.trim()) continue;
	const request = JSON.parse(line);
	if (request.method === undefined) {
		if (process.env.FAKE_SIDECAR_SEEN) appendFileSync(process.env.FAKE_SIDECAR_SEEN, `${line}\n`);
		continue;
	}
	if (request.method === "session_start") {
		if (mode === "slow") {
			while (!existsSync(process.env.FAKE_SIDECAR_GATE)) await sleep(20);
			answer(request, { snapshot: "", notices: ["memory is ready"] });
		} else {
			answer(request, { snapshot: "", notices: [] });
		}
	} else if (mode === "ask" && request.method === "tool") {
		send({ jsonrpc: "2.0", id: "memlane-1", method: "llm.complete", params: { system: "s", prompt: "p" } });
		answer(request, { text: "asked the model" });
	} else if (mode === "ask" && request.method === "before_agent_start") {
		send({ jsonrpc: "2.0", method: "llm.cancel", params: { id: "memlane-1" } });
		answer(request, { system_append: "", message: null });
	} else if (mode === "crash") {
		process.exit(3);
	} else if (mode !== "mute") {
		send({ jsonrpc: "2.0", id: request.id, result: { text: `answered ${request.method}` } });
	}
}
