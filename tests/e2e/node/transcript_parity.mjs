// Reads pi sessions with the pi package's own L3 reader (transcript.ts), for
// tests/e2e/test_pi_degraded_parity.py: argv[2] names a JSON array of {path, turn},
// argv[3] the file the rendered answers (or "error: <message>") are written to.
import { readFileSync, writeFileSync } from "node:fs";
import { readPiTranscript } from "../../../integrations/pi/extensions/memlane/transcript.ts";

const calls = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = calls.map(({ path, turn }) => {
	try {
		return readPiTranscript(path, path, turn ?? undefined);
	} catch (err) {
		return `error: ${err.message}`;
	}
});
writeFileSync(process.argv[3], JSON.stringify(out));
