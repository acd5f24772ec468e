// The pi package without memlane (degraded.ts), under a fake pi with node's test runner:
// memory_write and capture append well-formed, anchored, redacted entries to the daily
// file themselves (one session heading, digests for captures, memlane's gates that need
// no model), memory_transcript reads this project's pi session itself and refuses
// anything else, the stable snapshot reads the daily files, search says plainly that
// it is unavailable. Run by tests/e2e/test_pi_shim.py like shim.test.mjs.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";

import memlane from "../../../integrations/pi/extensions/memlane.ts";
import { buildSnapshot, tailAtEntryBoundary } from "../../../integrations/pi/extensions/memlane/degraded.ts";
import { digest, formatEntry, resolveStore, shellSplit } from "../../../integrations/pi/extensions/memlane/daily.ts";

// A fake secret assembled at run time: the repository holds no string a scanner flags.
const TOKEN = "gh" + "p_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";
const DAY = "2026-11-30";
const home = process.cwd();
let dir;

beforeEach(() => {
	dir = realpathSync(mkdtempSync(join(tmpdir(), "memlane-degraded-test-")));
	mkdirSync(join(dir, ".git"));
	process.chdir(dir);
	process.env.MEMLANE_COMMAND = join(dir, "no-such-memlane");
	process.env.PI_CODING_AGENT_DIR = join(dir, "agent");
	process.env.MEMLANE_HOME = join(dir, "memlane-home");
	process.env.MEMLANE_NOW = `${DAY}T10:00:00+00:00`;
});

afterEach(() => {
	process.chdir(home);
	for (const name of ["MEMLANE_COMMAND", "MEMLANE_NOW", "MEMLANE_CAPTURE", "MEMLANE_HOME", "MEMSEARCH_DIR"]) delete process.env[name];
	rmSync(dir, { recursive: true, force: true });
});

const daily = () => join(dir, ".memsearch", "memory", `${DAY}.md`);
const dailyText = () => (existsSync(daily()) ? readFileSync(daily(), "utf8") : "");

/** The extension in a fake pi; `branch` is what the settled run left on the session's branch. */
function loadShim({ sessionFile = null } = {}) {
	const handlers = new Map();
	const tools = new Map();
	const commands = new Map();
	let branch = [];
	memlane({
		on: (event, handler) => handlers.set(event, handler),
		registerTool: (tool) => tools.set(tool.name, tool),
		registerCommand: (name, command) => commands.set(name, command),
		sendUserMessage: () => {},
	});
	const ctx = {
		cwd: dir,
		mode: "print",
		hasUI: false,
		isIdle: () => true,
		ui: { notify: () => {} },
		sessionManager: {
			getSessionId: () => "session-1",
			getSessionFile: () => sessionFile ?? undefined,
			getBranch: () => branch,
			getLeafId: () => branch.at(-1)?.id ?? null,
		},
	};
	const quiet = async (body) => {
		const write = process.stderr.write;
		process.stderr.write = () => true;
		try {
			return await body();
		} finally {
			process.stderr.write = write;
		}
	};
	return {
		start: () => quiet(() => handlers.get("session_start")({ type: "session_start", reason: "startup" }, ctx)),
		prompt: () => quiet(() => handlers.get("before_agent_start")({ prompt: "hi", messageType: "user", systemPrompt: "SYSTEM" }, ctx)),
		settle: (entries, aborted = false) =>
			quiet(async () => {
				branch = entries;
				await handlers.get("agent_settled")({ type: "agent_settled", aborted }, ctx);
			}),
		tool: (name, params = {}) =>
			quiet(async () => {
				const result = await tools.get(name).execute("call-1", params, undefined, undefined, ctx);
				return { text: result.content[0].text, details: result.details };
			}),
		command: (name, args) =>
			quiet(async () => {
				// /memory writes its answer with the stream's own write (past pi's reroute of
				// process.stdout.write in `pi -p`): both are captured here.
				const out = [];
				const own = Object.getPrototypeOf(process.stdout);
				const write = process.stdout.write;
				const ownWrite = own.write;
				process.stdout.write = (chunk) => out.push(String(chunk)) > 0;
				own.write = (chunk) => out.push(String(chunk)) > 0;
				try {
					await commands.get(name).handler(args, ctx);
				} finally {
					process.stdout.write = write;
					own.write = ownWrite;
				}
				return out.join("");
			}),
		shutdown: () => quiet(() => handlers.get("session_shutdown")({}, ctx)),
	};
}

const message = (id, parentId, role, content, extra = {}) => ({
	type: "message",
	id,
	parentId,
	timestamp: "2026-11-30T09:00:00.000Z",
	message: { role, content, ...extra },
});
const text = (t) => [{ type: "text", text: t }];

test("memory_write appends a well-formed, anchored, redacted entry; the session heading comes once", async () => {
	const shim = loadShim({ sessionFile: "/sessions/s1.jsonl" });
	await shim.start();
	const first = await shim.tool("memory_write", { text: `Deploys go through the blue/green switch.\nThe CI token is ${TOKEN}` });
	const second = await shim.tool("memory_write", { text: "- already a bullet\n\n  indented line" });
	await shim.shutdown();
	assert.match(first.text, new RegExp(`^Saved to ${daily()} at 10:00:`));
	assert.match(first.text, /1 secret\(s\) were redacted before saving/);
	assert.match(first.text, /memlane indexes it when it runs again/);
	const written = dailyText();
	assert.doesNotMatch(written, new RegExp(TOKEN.slice(4, 20)), "the secret reached the file");
	const anchor = /<!-- session:session-1 turn:[0-9a-f]{8} transcript:\/sessions\/s1\.jsonl -->/;
	const lines = written.split("\n");
	assert.equal(lines[0], `# ${DAY}`);
	assert.equal(lines[1], "");
	assert.equal(lines[2], "## Session 10:00");
	assert.equal(lines[3], "### 10:00");
	assert.match(lines[4], anchor);
	assert.equal(lines[5], "- Deploys go through the blue/green switch.");
	assert.equal(lines[6], "- The CI token is [REDACTED:github-token]");
	assert.equal(lines[7], "");
	assert.equal(lines[8], "### 10:00", "no second session heading");
	assert.match(lines[9], anchor);
	assert.equal(lines[10], "- already a bullet");
	assert.equal(lines[11], "- indented line");
	assert.equal(written.match(/## Session/g).length, 1);
	assert.equal(second.details.degraded, true);
});

test("a new process seeds the heading decision with one read of the file", async () => {
	const one = loadShim();
	await one.tool("memory_write", { text: "first" });
	const two = loadShim(); // a resumed session in a new pi process
	await two.tool("memory_write", { text: "second" });
	assert.equal(dailyText().match(/## Session/g).length, 1);
});

test("capture writes the settled exchange as a digest; memlane's gates that need no model hold", async () => {
	const shim = loadShim({ sessionFile: "/sessions/s1.jsonl" });
	await shim.start();
	const asked = message("u1", null, "user", text(`Which cache? My key is ${TOKEN}`));
	const answer = message("a1", "u1", "assistant", text("Use Redis with 5 minute TTLs.\n\nMemcached lacks persistence."));
	await shim.settle([asked, answer]);
	const written = dailyText();
	assert.match(written, /### 10:00\n<!-- session:session-1 turn:a1 transcript:\/sessions\/s1\.jsonl -->\n- \[no distillation: memlane was unavailable\]\n/);
	assert.match(written, /- user asked: Which cache\? My key is \[REDACTED:github-token\]\n/);
	assert.match(written, /- agent answered: Use Redis with 5 minute TTLs\. Memcached lacks persistence\.\n/);

	const before = dailyText();
	await shim.settle([message("u2", "a1", "user", text("stop")), message("a2", "u2", "assistant", text("stopped"))], true);
	await shim.settle([message("u3", "a2", "user", text("Recall from long-term memory: kafka")), message("a3", "u3", "assistant", text("nothing"))]);
	const memoryOnly = message("a4", "u4", "assistant", [{ type: "toolCall", name: "memory_search", arguments: { query: "x" } }, ...text("memory is unavailable")]);
	await shim.settle([message("u4", "a3", "user", text("what did we decide?")), memoryOnly]);
	await shim.settle([message("u5", "a4", "user", text("hello")), message("a5", "u5", "assistant", [])]);
	process.env.MEMLANE_CAPTURE = "off";
	await shim.settle([message("u6", "a5", "user", text("hello")), message("a6", "u6", "assistant", text("hi"))]);
	assert.equal(dailyText(), before, "an aborted, /recall, memory-only, empty or switched-off run was written");

	delete process.env.MEMLANE_CAPTURE;
	const withTools = message("a7", "u7", "assistant", [{ type: "toolCall", name: "bash", arguments: { command: "ls" } }, ...text("Listed the files.")]);
	await shim.settle([message("u7", "a6", "user", text("list files")), withTools]);
	assert.match(dailyText(), /turn:a7 /);
	const status = await shim.tool("memory_status");
	assert.match(status.text, /2 exchange\(s\) written without memlane, 5 exchange\(s\) not captured/);
	await shim.shutdown();
});

test("capture.enabled = false in the project's .memlane.toml keeps capture off without memlane", async () => {
	writeFileSync(join(dir, ".memlane.toml"), "[capture]\nenabled = false # quiet project\n");
	const shim = loadShim();
	await shim.settle([message("u1", null, "user", text("hello")), message("a1", "u1", "assistant", text("hi"))]);
	assert.equal(dailyText(), "");
});

test("memory_transcript reads this project's pi session: the window, the target, redaction", async () => {
	const sessions = join(dir, "agent", "sessions", `--${dir.slice(1).replaceAll("/", "-")}--`);
	mkdirSync(sessions, { recursive: true });
	const file = join(sessions, "2026-11-30_s1.jsonl");
	const entries = [
		{ type: "session", version: 3, id: "sess-uuid", timestamp: "2026-11-30T09:00:00.000Z", cwd: dir },
		message("u1", null, "user", text("first question")),
		message("a1", "u1", "assistant", [{ type: "toolCall", name: "bash", arguments: { command: "ls", password: "Xk29fjQ0pLm3Zr8T" } }]),
		message("t1", "a1", "toolResult", text("files"), { toolName: "bash" }),
		message("a2", "t1", "assistant", text(`done; the token is ${TOKEN}`)),
		message("u2", "a2", "user", text("second question")),
		message("a3", "u2", "assistant", text("second answer")),
		{ type: "model_change", id: "m1", parentId: "a3", timestamp: "2026-11-30T09:05:00.000Z", provider: "x", modelId: "y" },
		message("b1", "a2", "user", text("a fork off a2")),
	];
	writeFileSync(file, `${entries.map((e) => JSON.stringify(e)).join("\n")}\n`);
	const shim = loadShim();
	const around = await shim.tool("memory_transcript", { transcript_path: file, turn: "a3" });
	const lines = around.text.split("\n");
	assert.equal(lines[0], `Transcript ${file} (pi session sess-uuid)`);
	assert.equal(lines[1], "Around entry a3: 4 of 5 turns on its branch", around.text);
	assert.match(around.text, /\[09:00\] assistant \(a2\)\n {2}done; the token is \[REDACTED:github-token\]/);
	assert.match(around.text, /→ bash\(command=ls, password=\[REDACTED:password\]\)/);
	assert.match(around.text, /\(1 tool result folded\)/);
	assert.match(around.text, /\(a3\)  ◀ target\n {2}second answer$/);
	assert.doesNotMatch(around.text, /a fork off a2/, "a later fork is not the anchored branch");
	assert.doesNotMatch(around.text, /first question/, "three turns before the target, not more");
	assert.doesNotMatch(around.text, new RegExp(TOKEN.slice(4, 20)));
	const forked = await shim.tool("memory_transcript", { transcript_path: file, turn: "a2" });
	assert.match(forked.text, /a fork off a2$/, "the branch goes on to the anchored entry's latest descendant");

	const live = await shim.tool("memory_transcript", { transcript_path: file });
	assert.match(live.text, /Live branch: last 4 of 4 turns/);
	assert.match(live.text, /a fork off a2/);

	// Not this project's: refused, also through a link planted in the session directory.
	const elsewhere = join(dir, "elsewhere.jsonl");
	writeFileSync(elsewhere, `${JSON.stringify(entries[0])}\n`);
	await assert.rejects(shim.tool("memory_transcript", { transcript_path: elsewhere }), /is not a known session transcript of this project/);
	symlinkSync(elsewhere, join(sessions, "planted.jsonl"));
	await assert.rejects(shim.tool("memory_transcript", { transcript_path: join(sessions, "planted.jsonl") }), /is not a known session transcript/);
	await assert.rejects(shim.tool("memory_transcript", { transcript_path: file, turn: "zz" }), /no entry with id or id prefix 'zz'/);
	await assert.rejects(shim.tool("memory_transcript", { transcript_path: "none" }), /this memory has no transcript/);
});

test("an anchor in the store makes its transcript readable; the snapshot reads the daily files", async () => {
	const file = join(dir, "old-session.jsonl");
	writeFileSync(file, `${JSON.stringify({ type: "session", version: 3, id: "old", timestamp: "2026-11-29T09:00:00.000Z", cwd: "/x" })}\n${JSON.stringify(message("q1", null, "user", text("old question")))}\n`);
	mkdirSync(join(dir, ".memsearch", "memory"), { recursive: true });
	writeFileSync(join(dir, ".memsearch", "memory", "2026-11-29.md"), `# 2026-11-29\n\n### 08:00\n<!-- session:old turn:q1 transcript:${file} -->\n- yesterday's note\n`);
	const shim = loadShim();
	const read = await shim.tool("memory_transcript", { transcript_path: file, turn: "q1" });
	assert.match(read.text, /old question/);
	await shim.tool("memory_write", { text: "today's note" });
	const hook = await shim.prompt();
	assert.match(hook.systemPrompt, /^SYSTEM\n\n## Project memory \(memlane\)\n/);
	assert.match(hook.systemPrompt, /### Yesterday \(2026-11-29\)\n### 08:00\n[^\n]+\n- yesterday's note/);
	assert.match(hook.systemPrompt, /### Today \(2026-11-30\)\n## Session 10:00\n### 10:00\n[^\n]+\n- today's note/);
	await shim.tool("memory_write", { text: "a later note" });
	assert.deepEqual(await shim.prompt(), hook, "byte-stable between checkpoints");
});

test("search, expand and compact say plainly that memory search is unavailable; /memory status says why", async () => {
	const shim = loadShim();
	await shim.start();
	for (const name of ["memory_search", "memory_expand", "memory_compact"]) {
		const answer = await shim.tool(name, { query: "x", chunk_hash: "abc" });
		assert.match(answer.text, new RegExp(`^${name} is unavailable in this pi session: memlane is not running \\(`));
		assert.equal(answer.text.split("\n").length, 1);
	}
	const status = await shim.command("memory", "status");
	assert.match(status, /^memlane is not available in this pi session: cannot run /);
	assert.match(status, /pip install \./);
	assert.match(status, /memory_write, capture +append to .*\.memsearch\/memory\/2026-11-30\.md/);
	await shim.shutdown();
});

test("the entry, digest and store rules match memlane's", () => {
	assert.equal(formatEntry("09:05", null, "a\r\nb\u2028c\n\n<!-- supersedes:x -->"), "### 09:05\n- a\n- b\n- c\n<!-- supersedes:x -->\n");
	assert.throws(() => formatEntry("9:05", null, "x"), /invalid entry time/);
	assert.throws(() => formatEntry("09:05", null, " \n\t"), /nothing to write/);
	assert.deepEqual(digest("a <!-- b --> c\u0007d", "```\ncode\n```\nfirst\n\nsecond"), [
		"- user asked: a <! -- b -- > c d",
		"- agent answered: code first second",
	]);
	assert.deepEqual(shellSplit(`resolve --root "a b" 'c d' e\\ f`), ["resolve", "--root", "a b", "c d", "e f"]);
	process.env.MEMSEARCH_DIR = "shared";
	assert.deepEqual(resolveStore(dir), { repositoryDir: dir, scope: join(dir, "shared"), store: join(dir, "shared", "memory") });
	assert.equal(tailAtEntryBoundary("### 1\naaaa\n### 2\nbb", 8), "[… earlier entries of this day omitted]\n### 2\nbb");
	assert.match(buildSnapshot(join(dir, "none"), DAY), /\(no notes yet today or yesterday\)\n$/);
});

test("a link in the store is refused, never written through", async () => {
	mkdirSync(join(dir, ".memsearch", "memory"), { recursive: true });
	writeFileSync(join(dir, "target.txt"), "");
	symlinkSync(join(dir, "target.txt"), daily());
	const shim = loadShim();
	await assert.rejects(shim.tool("memory_write", { text: "x" }), /is a symbolic link/);
	assert.equal(readFileSync(join(dir, "target.txt"), "utf8"), "");
});
