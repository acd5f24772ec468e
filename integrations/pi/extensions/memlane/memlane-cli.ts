/** Running memlane itself: which executable, and one-shot CLI runs (`/memory stats`). */

import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CONFIG_DIR_NAME, getAgentDir } from "@earendil-works/pi-coding-agent";
import { INSTALL_HINT } from "./protocol.ts";

/** Where `memlane install pi` recorded the memlane executable (project settings win). */
export function resolveCommand(cwd: string): string {
	const fromEnv = process.env.MEMLANE_COMMAND;
	if (fromEnv) return fromEnv;
	const candidates = [join(cwd, CONFIG_DIR_NAME, "memlane.json"), join(getAgentDir(), "memlane.json")];
	for (const file of candidates) {
		try {
			if (!existsSync(file)) continue;
			const recorded = JSON.parse(readFileSync(file, "utf8")) as { command?: unknown };
			if (typeof recorded.command === "string" && existsSync(recorded.command)) return recorded.command;
		} catch {
			// A broken record falls through to the next candidate and then to PATH.
		}
	}
	return "memlane";
}

export interface CliResult {
	code: number | null;
	stdout: string;
	stderr: string;
	/** The executable could not be run, or was killed at the deadline. */
	failure?: string;
}

/** Run the recorded memlane with `-C <cwd> <args>`; never rejects. */
export function runMemlane(cwd: string, args: string[], timeoutMs: number): Promise<CliResult> {
	const command = resolveCommand(cwd);
	return new Promise((resolve) => {
		let stdout = "";
		let stderr = "";
		let failure: string | undefined;
		const child = spawn(command, ["-C", cwd, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"], env: process.env });
		const timer = setTimeout(() => {
			failure = `memlane ${args[0]} did not finish within ${timeoutMs / 1000} s`;
			child.kill("SIGKILL");
		}, timeoutMs);
		child.stdout?.setEncoding("utf8");
		child.stdout?.on("data", (chunk: string) => {
			stdout += chunk;
		});
		child.stderr?.setEncoding("utf8");
		child.stderr?.on("data", (chunk: string) => {
			stderr += chunk;
		});
		child.once("error", (err) => {
			failure ??= `cannot run ${command}: ${err.message}. ${INSTALL_HINT}`;
		});
		child.once("close", (code) => {
			clearTimeout(timer);
			resolve({ code, stdout, stderr, failure });
		});
	});
}

/** Why a memlane run failed, in memlane's own words (its `memlane: error:` lines and hint). */
export function cliFailure(result: CliResult): string {
	if (result.failure) return result.failure;
	const lines = result.stderr.trim().split("\n");
	const from = lines.findIndex((line) => line.startsWith("memlane: error:"));
	const text = (from >= 0 ? lines.slice(from) : lines.slice(-10)).join("\n").trim();
	return text || `memlane exited with code ${result.code}`;
}
