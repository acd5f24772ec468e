// The pi extension's own logic under a fake pi, with node's test runner (`node --test`):
// degradation when memlane is missing or broken, the respawn cap, request deadlines and
// the kill after repeated misses, a session_start that never waits for memlane, and
// llm.cancel aborting the model request pi runs for memlane. Run by tests/e2e/test_pi_shim.py with the e2e cache's
// Node 22 and `--import ./resolve_pi.mjs` (pi's packages from the cached pi install).
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

import memlane from "../../../integrations/pi/extensions/memlane.ts";
import { SidecarConnection } from "../../../integrations/pi/extensions/memlane/connection.ts";
import { STARTING_TEXT, TIMEOUT_MS } from "../../../integrations/pi/extensions/memlane/protocol.ts";
import { Sidecar, SidecarError } from "../../../integrations/pi/extensions/memlane/sidecar.ts";

const FAKE_SIDECAR = fileURLToPath(new URL("./fake_sidecar.mjs", import.meta.url));

let dir;
let wrapper;
let startLog;
const home = process.cwd();

beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), "memlane-shim-test-"));
	process.chdir(dir); // pi runs in its session's directory: the extension starts its sidecar there
	wrapper = join(dir, "memlane");
	startLog = join(dir, "starts.log");
	writeFileSync(wrapper, `#!/bin/sh\nexec "${process.execPath}" "${FAKE_SIDECAR}" "$@"\n`);
	chmodSync(wrapper, 0o755);
	writeFileSync(startLog, "");
	process.env.FAKE_SIDECAR_LOG = startLog;
	process.env.PI_CODING_AGENT_DIR = join(dir, "agent");
});

afterEach(() => {
	process.chdir(home);
	delete process.env.MEMLANE_COMMAND;
	delete process.env.FAKE_SIDECAR_MODE;
	delete process.env.FAKE_SIDECAR_GATE;
	delete process.env.FAKE_SIDECAR_SEEN;
	rmSync(dir, { recursive: true, force: true });
});

const starts = () => readFileSync(startLog, "utf8").split("\n").filter(Boolean).length;

/** The extension loaded into a fake pi that keeps what it registers. */
function loadShim() {
	const handlers = new Map();
	const tools = new Map();
	const commands = new Map();
	const sent = [];
	const api = {
		on: (event, handler) => handlers.set(event, handler),
		registerTool: (tool) => tools.set(tool.name, tool),
		registerCommand: (name, command) => commands.set(name, command),
		// pi starts the run on its own: busy a moment, then agent_settled
		sendUserMessage: (text) => {
			sent.push(text);
			setTimeout(() => {
				idle = false;
				setTimeout(async () => {
					idle = true;
					await handlers.get("agent_settled")({ type: "agent_settled", aborted: false }, ctx);
				}, 200);
			}, 20);
		},
	};
	let idle = true;
	memlane(api);
	const ctx = {
		cwd: dir,
		mode: "print",
		hasUI: false,
		isIdle: () => idle,
		ui: { notify: () => {} },
		sessionManager: {
			getSessionId: () => "session-1",
			getSessionFile: () => undefined,
			getBranch: () => [],
			getLeafId: () => null,
		},
	};
	return {
		handlers,
		sent,
		command: (name, args) => commands.get(name).handler(args, ctx),
		sessionStart: () => handlers.get("session_start")({ type: "session_start", reason: "startup" }, ctx),
		beforeAgentStart: () =>
			handlers.get("before_agent_start")({ prompt: "hi", messageType: "user", systemPrompt: "SYSTEM" }, ctx),
		shutdown: () => handlers.get("session_shutdown")({}, ctx),
		callTool: async (name, params = {}) => {
			const result = await tools.get(name).execute("call-1", params, undefined, undefined, ctx);
			return { text: result.content[0].text, details: result.details };
		},
	};
}

/** Collect the shim's stderr log lines while `body(lines so far)` runs. */
async function capturingStderr(body) {
	const lines = [];
	const write = process.stderr.write;
	process.stderr.write = (chunk, ...rest) => {
		if (String(chunk).startsWith("[memlane]")) lines.push(String(chunk).trimEnd());
		else return write.call(process.stderr, chunk, ...rest);
		return true;
	};
	try {
		await body(lines);
	} finally {
		process.stderr.write = write;
	}
	return lines;
}

test("a missing memlane: search says it is unavailable, status how to install it, events pass through, nothing is retried", async () => {
	process.env.MEMLANE_COMMAND = join(dir, "no-such-memlane");
	const shim = loadShim();
	let first;
	let second;
	let hook;
	const log = await capturingStderr(async () => {
		await shim.sessionStart();
		hook = await shim.beforeAgentStart();
		first = await shim.callTool("memory_search", { query: "x" });
		second = await shim.callTool("memory_status");
		await shim.shutdown();
	});
	assert.equal(hook, undefined, "before_agent_start leaves pi's prompt alone (the project has no memory yet)");
	assert.match(first.text, /^memory_search is unavailable in this pi session: memlane is not running \(cannot run .*no-such-memlane: spawn .* ENOENT before answering session_start\)\./);
	assert.doesNotMatch(first.text, /PyPI|pip install/, "no install lecture on every call");
	assert.match(first.text, /`\/memory status` says how to fix it/);
	assert.equal(first.details.unavailable, true);
	assert.match(second.text, /^memlane is not available in this pi session: cannot run .*no-such-memlane: spawn .* ENOENT before answering session_start\.\n/);
	assert.match(second.text, /memlane is not on PyPI/);
	assert.doesNotMatch(second.text, /memlane status/);
	assert.match(second.text, /memory_write, capture +append to /);
	assert.equal(log.filter((line) => line.includes("memlane is unavailable")).length, 1, log.join("\n"));
});

test("a memlane that cannot start: its error is logged, tools point at memlane status, one attempt", async () => {
	process.env.MEMLANE_COMMAND = wrapper;
	process.env.FAKE_SIDECAR_MODE = "broken";
	const shim = loadShim();
	let answer;
	const log = await capturingStderr(async () => {
		await shim.sessionStart();
		await shim.beforeAgentStart();
		answer = await shim.callTool("memory_status");
		await shim.shutdown();
	});
	assert.match(answer.text, /^memlane is not available in this pi session: memlane sidecar exited \(code 1\) before answering session_start\.\n/);
	assert.match(answer.text, /Run `memlane status` in the project/);
	// memlane is installed and ran: how to install it is beside the point (a failing
	// store command, a broken config say what is wrong themselves).
	assert.doesNotMatch(answer.text, /PyPI|pip install/);
	assert.ok(log.includes("[memlane] memlane: error: the config is broken"), log.join("\n"));
	assert.equal(starts(), 1);
});

test("a sidecar that keeps dying is respawned twice, then memory is off until the next session", async () => {
	process.env.MEMLANE_COMMAND = wrapper;
	process.env.FAKE_SIDECAR_MODE = "crash";
	const shim = loadShim();
	let answer;
	const log = await capturingStderr(async () => {
		await shim.sessionStart();
		for (let i = 0; i < 4; i++) assert.equal(await shim.beforeAgentStart(), undefined);
		answer = await shim.callTool("memory_status");
	});
	assert.equal(starts(), 3, log.join("\n"));
	assert.ok(log.includes("[memlane] respawning the sidecar (1/2) after: memlane sidecar exited (code 3)"), log.join("\n"));
	assert.ok(log.includes("[memlane] respawning the sidecar (2/2) after: memlane sidecar exited (code 3)"), log.join("\n"));
	assert.match(answer.text, /the memlane sidecar died 3 times this session \(memlane sidecar exited \(code 3\)\)/);

	await capturingStderr(async () => {
		await shim.shutdown();
		await shim.sessionStart(); // a new session starts over
		await shim.shutdown();
	});
	assert.equal(starts(), 4);
});

test("a request past its deadline fails as timed out, and the child stays up", async () => {
	process.env.FAKE_SIDECAR_MODE = "mute";
	const log = [];
	const sidecar = new Sidecar(wrapper, ["sidecar", "-C", dir], dir, async () => null, (line) => log.push(line), {
		...TIMEOUT_MS,
		before_agent_start: 100,
	});
	await sidecar.request("session_start", { cwd: dir });
	const started = performance.now();
	await assert.rejects(sidecar.request("before_agent_start", { prompt: "hi" }), (err) => {
		assert.ok(err instanceof SidecarError);
		assert.equal(err.timedOut, true);
		assert.equal(err.message, "memlane sidecar did not answer before_agent_start within 100 ms");
		return true;
	});
	const waited = performance.now() - started;
	assert.ok(waited >= 95 && waited < 2000, `waited ${waited} ms`);
	assert.equal(sidecar.alive, true);
	await sidecar.close(2000);
	assert.equal(sidecar.alive, false);
});

test("three missed deadlines of one method in a row kill the child; the next event respawns it", async () => {
	process.env.FAKE_SIDECAR_MODE = "mute";
	const log = [];
	const connection = new SidecarConnection({
		spawn: (cwd) =>
			new Sidecar(wrapper, ["sidecar", "-C", cwd], cwd, async () => null, (line) => log.push(line), {
				...TIMEOUT_MS,
				before_agent_start: 100,
				session_shutdown: 100,
			}),
		log: (line) => log.push(line),
		notify: () => {},
	});
	await connection.begin({ cwd: dir, session_id: "s", transcript_path: null, host: "pi" });
	for (let i = 0; i < 3; i++) assert.equal(await connection.forward("before_agent_start", { prompt: "hi" }), null);
	assert.ok(log.includes("3 before_agent_start requests in a row went unanswered; restarting the sidecar"), log.join("\n"));
	await sleep(300); // the SIGKILL lands
	assert.equal(await connection.forward("before_agent_start", { prompt: "hi" }), null);
	assert.equal(starts(), 2, log.join("\n"));
	assert.ok(log.includes("respawning the sidecar (1/2) after: memlane sidecar exited (SIGKILL)"), log.join("\n"));
	assert.equal(await connection.end(), true);
});

test("/recall in print mode returns only after the run it asked for has settled", async () => {
	process.env.MEMLANE_COMMAND = join(dir, "no-such-memlane");
	const shim = loadShim();
	let settledSeen = false;
	shim.handlers.set("agent_settled", ((inner) => async (event, ctx) => {
		settledSeen = true;
		return inner(event, ctx);
	})(shim.handlers.get("agent_settled")));
	await capturingStderr(async () => {
		await shim.sessionStart();
		await shim.command("recall", "kafka pinning");
		assert.equal(settledSeen, true, "the command returned before its run settled");
		await shim.shutdown();
	});
	assert.equal(shim.sent.length, 1);
	assert.match(shim.sent[0], /^Recall from long-term memory: kafka pinning/);
});

test("session_start returns before memlane has started; the next event waits for it and its notices arrive", async () => {
	process.env.MEMLANE_COMMAND = wrapper;
	process.env.FAKE_SIDECAR_MODE = "slow"; // session_start is answered once the gate file exists
	const gate = join(dir, "gate");
	process.env.FAKE_SIDECAR_GATE = gate;
	const shim = loadShim();
	let before;
	let hook;
	const log = await capturingStderr(async (lines) => {
		await shim.sessionStart(); // returns while memlane still holds its answer
		before = [...lines];
		const waiting = shim.beforeAgentStart();
		await sleep(200);
		writeFileSync(gate, "");
		hook = await waiting;
		await shim.shutdown();
	});
	assert.ok(!before.includes("[memlane] memory is ready"), before.join("\n"));
	assert.ok(log.includes("[memlane] memory is ready"), log.join("\n"));
	assert.deepEqual(hook, {}, "before_agent_start got memlane's answer (undefined: it went on without memory)");
	assert.equal(starts(), 1);
});

test("a tool that outwaits a start still under way says memory is starting; the start goes on", async () => {
	process.env.FAKE_SIDECAR_MODE = "slow";
	const gate = join(dir, "gate");
	process.env.FAKE_SIDECAR_GATE = gate;
	const log = [];
	const connection = new SidecarConnection({
		spawn: (cwd) => new Sidecar(wrapper, ["sidecar", "-C", cwd], cwd, async () => null, (line) => log.push(line)),
		log: (line) => log.push(line),
		notify: () => {},
		startWaits: { tool: 100, before_agent_start: 100 },
	});
	connection.begin({ cwd: dir, session_id: "s", transcript_path: null, host: "pi" });
	assert.equal(await connection.ensure(connection.startWait("tool")), null);
	assert.equal(connection.isStarting, true);
	assert.equal(connection.unavailableText(), STARTING_TEXT);
	assert.equal(await connection.forward("before_agent_start", { prompt: "hi" }), null);
	assert.ok(log.includes("before_agent_start: memlane is still starting; this event goes on without memory"), log.join("\n"));
	writeFileSync(gate, "");
	const child = await connection.ensure(connection.startWait("tool") * 100);
	assert.ok(child, "the start went on and answered");
	assert.equal(connection.isStarting, false);
	assert.deepEqual(await connection.forward("before_agent_start", { prompt: "hi" }), { text: "answered before_agent_start" });
	assert.equal(starts(), 1, "one start, waited for by every call");
	assert.equal(await connection.end(), true);
});

test("a session that ends before memlane has started closes it without waiting for the start", async () => {
	process.env.FAKE_SIDECAR_MODE = "slow";
	process.env.FAKE_SIDECAR_GATE = join(dir, "never");
	const log = [];
	let spawned;
	const connection = new SidecarConnection({
		spawn: (cwd) => {
			spawned = new Sidecar(wrapper, ["sidecar", "-C", cwd], cwd, async () => null, (line) => log.push(line));
			return spawned;
		},
		log: (line) => log.push(line),
		notify: () => {},
	});
	connection.begin({ cwd: dir, session_id: "s", transcript_path: null, host: "pi" });
	assert.equal(await connection.end(), true);
	assert.ok(log.includes("the session ended before memlane finished starting"), log.join("\n"));
	assert.equal(spawned.alive, false, "the sidecar was closed (killed after the grace when it ignores EOF)");
});

test("llm.cancel aborts the model request pi runs for memlane, and closing aborts the rest", async () => {
	process.env.FAKE_SIDECAR_MODE = "ask";
	const seen = join(dir, "seen.jsonl");
	process.env.FAKE_SIDECAR_SEEN = seen;
	const calls = [];
	const handler = (method, params, signal) =>
		new Promise((_, reject) => {
			calls.push({ method, signal }); // a model that never answers
			signal.addEventListener("abort", () => reject(signal.reason), { once: true });
		});
	const sidecar = new Sidecar(wrapper, ["sidecar", "-C", dir], dir, handler, () => {});
	await sidecar.request("session_start", { cwd: dir });
	await sidecar.request("tool", { name: "memory_status", arguments: {} }); // memlane asks llm.complete first
	assert.equal(calls.length, 1);
	assert.equal(calls[0].method, "llm.complete");
	assert.equal(sidecar.hostCalls, 1);
	await sidecar.request("before_agent_start", { prompt: "hi" }); // llm.cancel {id: "memlane-1"} comes first
	assert.equal(calls[0].signal.aborted, true);
	assert.equal(sidecar.hostCalls, 0);
	await sidecar.request("tool", { name: "memory_status", arguments: {} });
	assert.equal(calls.length, 2);
	await sidecar.close(2000);
	assert.equal(calls[1].signal.aborted, true, "the session's end aborts what memlane still asked");
	await sleep(50);
	assert.equal(existsSync(seen) ? readFileSync(seen, "utf8") : "", "", "no answer is sent for a cancelled request");
});

test("the sidecar starts when the extension loads, and the session's start uses it", async () => {
	process.env.MEMLANE_COMMAND = wrapper;
	const shim = loadShim();
	const spawnedAtLoad = async () => {
		for (let i = 0; i < 200 && starts() === 0; i++) await sleep(20);
		return starts();
	};
	assert.equal(await spawnedAtLoad(), 1, "no sidecar was started at load");
	await capturingStderr(async () => {
		await shim.sessionStart();
		assert.deepEqual(await shim.beforeAgentStart(), {});
		await shim.shutdown();
	});
	assert.equal(starts(), 1, "the session started a second sidecar");
});
