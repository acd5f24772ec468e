// Runs texts through the pi package's TypeScript redactor (redact.ts), for
// tests/e2e/test_pi_redaction.py: reads a JSON array of strings from the file named
// by argv[2] and writes the array of {text, count, kinds} to the file named by argv[3].
import { readFileSync, writeFileSync } from "node:fs";
import { redact } from "../../../integrations/pi/extensions/memlane/redact.ts";

const texts = JSON.parse(readFileSync(process.argv[2], "utf8"));
writeFileSync(process.argv[3], JSON.stringify(texts.map((text) => redact(text))));
