/**
 * Secret redaction for what the pi package writes itself, without memlane's engine.
 *
 * The rules are memlane's (src/memlane/store/redaction.py, redaction_rules.py,
 * private_keys.py, keyword_regexes.py): every regex, word list and threshold they use
 * is read from redaction-patterns.json, which memlane generates from those modules
 * (`python -m memlane.hosts.pi.redaction_js`; a test keeps the shipped file equal to
 * it). This module holds only the span logic around them, line for line the Python's,
 * so both redact the same secrets to the same `[REDACTED:<kind>]` markers (a test runs
 * the whole secret table through both). Only the secret value is replaced; a
 * `<private>` block becomes `[private]`; redacting twice changes nothing; on an
 * internal failure the whole text is withheld (`[REDACTED:unscannable]`).
 *
 * Node built-ins only (no pi import), so `node --test` runs it as it is.
 */

import { contextSpans, highEntropyLiterals, jwtFormallyValid, looksRandom } from "./redact-rules.ts";
import {
	ALNUM_BEFORE,
	chars,
	CODE_WORDS,
	compile,
	endOf,
	finditer,
	fullmatch,
	GENERIC_KINDS,
	group,
	groupSpan,
	isAlnumChar,
	isDigits,
	isIdentifier,
	lstripLength,
	type Match,
	matchAt,
	N,
	NON_SECRET_VALUES,
	R,
	rstrip,
	search,
	type Span,
	type Src,
	T,
	TYPE_NAMES,
} from "./redact-table.ts";

export interface Redaction {
	text: string;
	count: number;
	kinds: string[];
}

export const marker = (kind: string): string => `[REDACTED:${kind}]`;

/** Replace every secret in `text` by `[REDACTED:<kind>]` and drop `<private>` blocks. */
export function redact(text: string): Redaction {
	try {
		return redactRounds(text);
	} catch {
		// A scanner bug must not let the secret through, nor stop the write.
		return { text: marker(T.unscannable), count: 1, kinds: [T.unscannable] };
	}
}

function redactRounds(text: string): Redaction {
	const kinds: string[] = [];
	// A replacement can expose a secret a neighbour hid: rescan until nothing changes.
	for (let round = 0; round < N.max_rounds; round++) {
		const [next, found] = redactOnce(text);
		text = next;
		kinds.push(...found);
		if (found.length === 0) return { text, count: kinds.length, kinds: [...new Set(kinds)].sort() };
	}
	throw new Error("redaction did not settle");
}

function redactOnce(text: string): [string, string[]] {
	let dropped = 0;
	text = text.replace(compile(R("private"), "g"), () => {
		dropped++;
		return T.private_marker;
	});
	const kinds: string[] = Array(dropped).fill("private");
	let found: string[];
	[text, found] = replace(text, privateKeyBlocks(text));
	kinds.push(...found);
	[text, found] = replace(text, secretSpans(text));
	kinds.push(...found);
	return [text, kinds];
}

// -- spans --------------------------------------------------------------------------------

function replace(text: string, spans: Iterable<Span>): [string, string[]] {
	const merged = merge(spans);
	if (merged.length === 0) return [text, []];
	let out = "";
	let pos = 0;
	for (const span of merged) {
		out += text.slice(pos, span.start) + marker(span.kind);
		pos = span.end;
	}
	return [out + text.slice(pos), merged.map((s) => s.kind)];
}

/** Union of overlapping spans: a secret two patterns disagree about is never half-kept. */
function merge(spans: Iterable<Span>): Span[] {
	const sorted = [...spans].sort((a, b) => a.start - b.start || b.end - a.end);
	const merged: Span[] = [];
	for (const span of sorted) {
		if (span.end <= span.start) continue;
		const last = merged[merged.length - 1];
		if (last && span.start < last.end) {
			let kind = last.kind;
			if (GENERIC_KINDS.has(kind) && !GENERIC_KINDS.has(span.kind)) kind = span.kind;
			merged[merged.length - 1] = { start: last.start, end: Math.max(last.end, span.end), kind };
		} else merged.push(span);
	}
	return merged;
}

function* privateKeyBlocks(text: string): Generator<Span> {
	for (const header of T.private_key_headers) {
		for (const m of finditer(header, text)) {
			let start = m.index;
			while (start > 0 && text[start - 1] === "-") start--;
			yield { start, end: privateKeyEnd(text, endOf(m)), kind: "private-key" };
		}
	}
}

function privateKeyEnd(text: string, headerEnd: number): number {
	const end = search(R("pem_end"), text, headerEnd);
	if (end && !end[0].startsWith("BEGIN")) return endOf(end);
	let pos = endOf(matchAt(R("pem_header_tail"), text, headerEnd) as Match);
	pos = endOf(matchAt(R("pem_rest_of_line"), text, pos) as Match);
	for (;;) {
		const newline = matchAt(R("pem_newline"), text, pos);
		if (!newline) break;
		const line = matchAt(R("pem_body_line"), text, endOf(newline));
		if (!line) break;
		pos = endOf(line); // the line break after the key stays in the text
	}
	return pos;
}

function secretSpans(text: string): Span[] {
	const taken: [number, number][] = [...finditer(R("existing_marker"), text)].map((m) => [m.index, endOf(m)]);
	const spans = [
		...tokenSpans(text),
		...keywordSpans(text),
		...assignmentSpans(text),
		...headerSpans(text),
		...groupSpans(R("url_password"), text, "v", "password"),
		...contextSpans(text, looksSecret),
		...highEntropyLiterals(text, holdsSecret),
		// Last: of two spans alike, the first kept names the kind.
		...proseSpans(text),
	];
	return clearOf(spans, taken);
}

/** The spans that overlap none of `taken` (markers: in order, never overlapping). */
function clearOf(spans: Span[], taken: [number, number][]): Span[] {
	const ends = taken.map(([, end]) => end);
	return spans.filter((span) => {
		let lo = 0;
		let hi = ends.length;
		while (lo < hi) {
			const mid = (lo + hi) >> 1;
			if (ends[mid] <= span.start) lo = mid + 1;
			else hi = mid;
		}
		return lo === taken.length || taken[lo][0] >= span.end;
	});
}

function* tokenSpans(text: string): Generator<Span> {
	for (const pattern of T.tokens) {
		for (const m of finditer(pattern.re, text)) {
			let g = 0;
			for (let i = 1; i < m.length; i++) {
				if (m[i]) {
					g = i;
					break;
				}
			}
			let [start, end] = m.indices[g] as [number, number];
			if (g === 0) {
				// Some plugins match their delimiters too (artifactory: whitespace, quotes).
				const value = m[0];
				start += lstripLength(value, " \t\r\n\"'=:");
				end -= value.length - rstrip(value, " \t\r\n\"'").length;
			}
			if (pattern.word_start && start > 0 && ALNUM_BEFORE.has(text[start - 1])) continue;
			if (pattern.valid === "jwt" && !jwtFormallyValid(text.slice(start, end))) continue;
			if (pattern.valid === "bootstrap" && !/[0-9]/.test(text.slice(start, end))) continue;
			if (pattern.tail) end = endOf(matchAt(R(`${pattern.tail}_tail`), text, end) as Match);
			// A token has no blank in it.
			const blank = /\s/.exec(text.slice(start, end));
			if (blank) end = start + blank.index;
			yield { start, end, kind: pattern.kind };
		}
	}
}

function* keywordSpans(text: string): Generator<Span> {
	let lineStart = 0;
	const lines = text.split("\n");
	for (let i = 0; i < lines.length; i++) {
		const line = i < lines.length - 1 ? `${lines[i]}\n` : lines[i];
		const offset = lineStart;
		lineStart += line.length;
		if (!search(R("keyword_root"), line)) continue;
		for (const entry of T.keyword) {
			for (const m of keywordMatches(entry.re, entry.leading, line)) {
				const value = m[entry.group];
				if (value === undefined || !looksSecret(value)) continue;
				const [start, end] = m.indices[entry.group] as [number, number];
				const around = line.slice(m.index, start) + line.slice(end, endOf(m));
				const words = around.match(compile(R("word"), "g")) ?? [];
				if (words.some((w) => search(R("not_secret_suffix"), w))) continue;
				yield { start: offset + start, end: offset + end, kind: kindOf(around) };
			}
		}
	}
}

/** `regex.finditer(line)` in linear time: only the first keyword of a word run is tried. */
function* keywordMatches(regex: Src, leading: Src | null, line: string): Generator<Match> {
	if (!leading) {
		yield* finditer(regex, line);
		return;
	}
	let pos = 0;
	for (;;) {
		const hit = search(leading, line, pos);
		if (!hit) return;
		const m = matchAt(regex, line, hit.index);
		if (m) {
			yield m;
			pos = Math.max(endOf(m), hit.index + 1);
		} else {
			const run = matchAt(R("word"), line, hit.index);
			pos = run ? endOf(run) : endOf(hit);
		}
	}
}

function* assignmentSpans(text: string): Generator<Span> {
	for (const m of finditer(R("assign"), text)) {
		const name = group(m, "name") as string;
		const which = (["dq", "sq", "bare"] as const).find((g) => group(m, g) !== undefined) as string;
		let value = group(m, which) as string;
		let [start, end] = groupSpan(m, which);
		const strong = fullmatch(R("strong_name"), name) !== null;
		if (which === "bare") {
			if (isCode(value, text, end)) continue;
			if (isDigits(value) && name.toLowerCase().includes("token")) continue;
			if (group(m, "op") === ":" && !isConfigLine(text, m.index, end)) {
				if (name.toLowerCase() === "key" || name.toLowerCase() === "keys") continue;
				value = rstrip(value, T.sentence_end);
				end = start + value.length;
				if (!looksRandom(value, N.prose_min_chars)) continue;
			}
		}
		if (!looksSecret(value)) continue;
		if (!strong && (search(R("open_key_name"), name) || !looksRandom(rstrip(value, T.sentence_end), N.key_min_chars))) {
			continue;
		}
		yield { start, end, kind: kindOf(name) };
	}
}

function* proseSpans(text: string): Generator<Span> {
	for (const m of finditer(R("prose"), text)) {
		const value = rstrip(group(m, "v") as string, T.sentence_end);
		const [start, vEnd] = groupSpan(m, "v");
		if (isCode(value, text, vEnd) || !looksSecret(value)) continue;
		if (looksRandom(value, N.prose_min_chars)) yield { start, end: start + value.length, kind: kindOf(group(m, "name") as string) };
	}
}

function isConfigLine(text: string, start: number, end: number): boolean {
	const lineStart = (start > 0 ? text.lastIndexOf("\n", start - 1) : -1) + 1;
	return matchAt(R("line_start"), text.slice(lineStart, start), 0) !== null && matchAt(R("rest_of_line_blank"), text, end) !== null;
}

function isCode(value: string, text: string, end: number): boolean {
	if (end < text.length && "([".includes(text[end])) return true;
	if (fullmatch(R("dotted_path"), value)) return true;
	if (TYPE_NAMES.has(value.toLowerCase())) return true;
	if (CODE_WORDS.has(value) || fullmatch(R("words_identifier"), value)) return true;
	return isIdentifier(value) && search(R("secret_root"), value) !== null;
}

function looksSecret(value: string): boolean {
	if (!chars(value).some(isAlnumChar)) return false;
	if (NON_SECRET_VALUES.has(value.toLowerCase())) return false;
	if (fullmatch(R("header_name"), value) || fullmatch(R("short_word"), value)) return false;
	if (fullmatch(R("field_name"), value)) return false;
	return !["$", "{{", "%(", "<", "[", "env:"].some((p) => value.startsWith(p));
}

function holdsSecret(text: string): boolean {
	return redactOnce(text)[1].length > 0;
}

function* headerSpans(text: string): Generator<Span> {
	for (const name of ["auth_header", "bearer"]) {
		for (const span of groupSpans(R(name), text, "v", "bearer-token")) {
			const value = text.slice(span.start, span.end);
			if (/[0-9]/.test(value) && looksSecret(value)) yield span;
		}
	}
}

function* groupSpans(src: Src, text: string, name: string, kind: string): Generator<Span> {
	for (const m of finditer(src, text)) {
		if (!(group(m, name) as string).startsWith("[REDACTED:")) {
			const [start, end] = groupSpan(m, name);
			yield { start, end, kind };
		}
	}
}

function kindOf(name: string): string {
	const lowered = name.toLowerCase();
	if (lowered.includes("pass") || lowered.includes("pwd") || lowered.includes("contras")) return "password";
	if (lowered.includes("token")) return "token";
	if (lowered.includes("aws") && lowered.includes("secret")) return "aws-secret-key";
	if (lowered.includes("secret")) return "secret";
	if (lowered.includes("key")) return "api-key";
	return "secret";
}
