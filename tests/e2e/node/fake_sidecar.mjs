// A stand-in for `memlane sidecar` (run as `<wrapper> sidecar -C <cwd>`), for shim.test.mjs.
// FAKE_SIDECAR_LOG gets one line per start; FAKE_SIDECAR_MODE picks the behaviour:
//   crash  answers session_start, then exits (code 3) on any other request
//   mute   answers session_start only: every other request goes unanswered
//   broken exits (code 1) before reading anything, as a memlane with a bad config does
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const mode = process.env.FAKE_SIDECAR_MODE ?? "";
if (process.env.FAKE_SIDECAR_LOG) appendFileSync(process.env.FAKE_SIDECAR_LOG, `start ${process.pid}\n`);
if (mode === "broken") {
	process.stderr.write("memlane: error: the config is broken\n");
	process.exit(1);
}

const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
for await (const line of createInterface({ input: process.stdin })) {
	if (!line.trim()) continue;
	const request = JSON.parse(line);
	if (request.method === "session_start") {
		send({ jsonrpc: "2.0", id: request.id, result: { snapshot: "", notices: [] } });
	} else if (mode === "crash") {
		process.exit(3);
	} else if (mode !== "mute") {
		send({ jsonrpc: "2.0", id: request.id, result: { text: `answered ${request.method}` } });
	}
}
