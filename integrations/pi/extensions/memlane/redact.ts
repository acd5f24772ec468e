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

import { readFileSync } from "node:fs";

type Src = [string, string];

interface Table {
	tokens: { kind: string; re: Src; tail: "token" | "jwt" | null; word_start: boolean; valid: "jwt" | "bootstrap" | null }[];
	private_key_headers: Src[];
	keyword: { re: Src; group: number; leading: Src | null }[];
	regex: Record<string, Src>;
	words: { type_names: string[]; non_secret_values: string[]; code_words: string[]; generic_kinds: string[] };
	flag_kinds: Record<string, string>;
	numbers: Record<string, number>;
	sentence_end: string;
	alnum_before: string;
	file_magic: number[][];
	private_marker: string;
	unscannable: string;
}

export const PATTERNS_FILE = new URL("./redaction-patterns.json", import.meta.url);
const T = JSON.parse(readFileSync(PATTERNS_FILE, "utf8")) as Table;
const N = T.numbers;
const TYPE_NAMES = new Set(T.words.type_names);
const NON_SECRET_VALUES = new Set(T.words.non_secret_values);
const CODE_WORDS = new Set(T.words.code_words);
const GENERIC_KINDS = new Set(T.words.generic_kinds);
const ALNUM_BEFORE = new Set(T.alnum_before);
const R = (name: string): Src => {
	const src = T.regex[name];
	if (!src) throw new Error(`redaction-patterns.json has no regex ${name}`);
	return src;
};

export interface Redaction {
	text: string;
	count: number;
	kinds: string[];
}

interface Span {
	start: number;
	end: number;
	kind: string;
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

// -- regex plumbing ---------------------------------------------------------------------

const compiled = new Map<string, RegExp>();

function compile(src: Src, extra: string, wrap = false): RegExp {
	const key = `${wrap ? "^" : ""}${extra}/${src[1]}/${src[0]}`;
	let re = compiled.get(key);
	if (!re) {
		re = new RegExp(wrap ? `^(?:${src[0]})$` : src[0], src[1] + extra);
		compiled.set(key, re);
	}
	return re;
}

type Match = RegExpExecArray & { indices: NonNullable<RegExpExecArray["indices"]> };

/** Every match, as Python's finditer: an empty match moves on by one. */
function* finditer(src: Src, text: string): Generator<Match> {
	// A copy of its own: a generator pauses between matches, and the rules nest
	// (a base64 literal is redacted in turn) over the same patterns.
	const re = new RegExp(compile(src, "gd"));
	for (;;) {
		const m = re.exec(text) as Match | null;
		if (!m) return;
		if (m[0] === "") re.lastIndex++;
		yield m;
	}
}

/** Python's `regex.match(text, pos)`: a match starting exactly at `pos`. */
function matchAt(src: Src, text: string, pos: number): Match | null {
	const re = compile(src, "yd");
	re.lastIndex = pos;
	return re.exec(text) as Match | null;
}

/** Python's `regex.search(text, pos)`. */
function search(src: Src, text: string, pos = 0): Match | null {
	const re = compile(src, "gd");
	re.lastIndex = pos;
	return re.exec(text) as Match | null;
}

function fullmatch(src: Src, text: string): Match | null {
	return compile(src, "d", true).exec(text) as Match | null;
}

const endOf = (m: Match): number => m.index + m[0].length;

function group(m: Match, name: string): string | undefined {
	return m.groups?.[name];
}

function groupSpan(m: Match, name: string): [number, number] {
	const span = m.indices.groups?.[name];
	if (!span) throw new Error(`group ${name} did not take part in the match`);
	return span;
}

// -- Python's str predicates, for the characters these rules judge ----------------------

const isAlnumChar = (c: string) => /[\p{L}\p{N}]/u.test(c);
const isDigitChar = (c: string) => /\p{Nd}/u.test(c);
const isAlphaChar = (c: string) => /\p{L}/u.test(c);
const isLowerChar = (c: string) => /\p{Ll}/u.test(c);
const isUpperChar = (c: string) => /\p{Lu}/u.test(c);
const chars = (s: string): string[] => Array.from(s);
const isDigits = (s: string) => s.length > 0 && chars(s).every(isDigitChar);
const isAlpha = (s: string) => s.length > 0 && chars(s).every(isAlphaChar);
const isLower = (s: string) => chars(s).some(isLowerChar) && !chars(s).some(isUpperChar);
const isUpper = (s: string) => chars(s).some(isUpperChar) && !chars(s).some(isLowerChar);
// For a string of letters only (the one use): an upper-case letter, then lower-case ones.
const isTitleWord = (s: string) => /^\p{Lu}\p{Ll}*$/u.test(s);
const isIdentifier = (s: string) => /^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$/u.test(s);

function rstrip(s: string, set: string): string {
	let end = s.length;
	while (end > 0 && set.includes(s[end - 1])) end--;
	return s.slice(0, end);
}

function lstripLength(s: string, set: string): number {
	let start = 0;
	while (start < s.length && set.includes(s[start])) start++;
	return start;
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
		...contextSpans(text),
		...highEntropyLiterals(text),
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

// -- context rules (redaction_rules.context_spans) ----------------------------------------

function* contextSpans(text: string): Generator<Span> {
	for (const m of finditer(R("netrc"), text)) {
		const value = group(m, "v") as string;
		if (!looksSecret(value)) continue;
		if (!search(R("netrc_host"), group(m, "lead") as string)) {
			if (!fullmatch(R("netrc_rest"), group(m, "rest") as string)) continue;
			if (isAlpha(value) && (isLower(value) || isUpper(value) || isTitleWord(value))) continue;
		}
		yield spanOf(m, "v", "password");
	}
	for (const m of finditer(R("netrc_inline"), text)) {
		if (looksSecret(group(m, "v") as string)) yield spanOf(m, "v", "password");
	}
	for (const m of finditer(R("docker_auth"), text)) {
		const value = group(m, "v") as string;
		if ((group(m, "key") as string).toLowerCase() === "auth") {
			const decoded = b64decode(value);
			if (decoded === null || !decoded.includes(0x3a)) continue;
		} else if (!(looksSecret(value) && /[0-9]/.test(value))) continue;
		yield spanOf(m, "v", "docker-auth");
	}
	for (const m of finditer(R("b64_pem"), text)) {
		const decoded = b64decode(m[0].slice(0, Math.floor(m[0].length / 4) * 4));
		if (decoded !== null && latin1(decoded.subarray(0, 80)).includes("PRIVATE KEY")) {
			yield { start: m.index, end: endOf(m), kind: "private-key" };
		}
	}
	for (const name of ["mysql", "cli_p", "redis_cli"]) {
		for (const m of finditer(R(name), text)) yield* valueSpan(m, "password");
	}
	for (const m of finditer(R("telegram_url"), text)) yield spanOf(m, "v", "telegram-token");
	for (const m of finditer(R("sas_sig"), text)) yield spanOf(m, "v", "azure-sas");
	for (const m of finditer(R("long_flag"), text)) {
		yield* valueSpan(m, T.flag_kinds[group(m, "flag") as string] ?? "password");
	}
}

function spanOf(m: Match, name: string, kind: string): Span {
	const [start, end] = groupSpan(m, name);
	return { start, end, kind };
}

function* valueSpan(m: Match, kind: string): Generator<Span> {
	for (const name of ["sq", "dq", "bare"]) {
		const value = group(m, name);
		if (value === undefined) continue;
		if (name === "bare" && value.startsWith("-")) return; // the next flag: a prompt asks for it
		if (looksSecret(value)) yield spanOf(m, name, kind);
		return;
	}
}

// -- high-entropy literals and generated-looking values -----------------------------------

function* highEntropyLiterals(text: string): Generator<Span> {
	for (const m of finditer(R("literal"), text)) {
		if (isRandomLooking(group(m, "v") as string)) yield spanOf(m, "v", "high-entropy");
	}
}

function isRandomLooking(value: string): boolean {
	if (value.length < N.min_literal_chars || matchAt(R("digest_prefix"), value, 0)) return false;
	const cs = chars(value);
	if (!(cs.some(isLowerChar) && cs.some(isUpperChar) && cs.some(isDigitChar))) return false;
	if (entropy(value) < N.entropy_share * Math.log2(Math.min(cs.length, 64))) return false;
	if (wordShare(value) >= N.word_share) return false;
	const head = b64decode(value.slice(0, 16));
	if (head !== null && T.file_magic.some((magic) => magic.every((byte, i) => head[i] === byte))) return false;
	const decoded = b64decode(rstrip(value, "="));
	if (decoded !== null && isText(decoded)) return holdsSecret(latin1(decoded));
	return true;
}

function entropy(value: string): number {
	const counts = new Map<string, number>();
	const cs = chars(value);
	for (const c of cs) counts.set(c, (counts.get(c) ?? 0) + 1);
	let sum = 0;
	for (const count of counts.values()) sum -= (count / cs.length) * Math.log2(count / cs.length);
	return sum;
}

/** Share of the lowercase letters that sit in runs of three or more. */
function wordShare(value: string): number {
	const runs = (value.match(compile(R("lower_run"), "g")) ?? []).map((run) => run.length);
	const all = runs.reduce((a, b) => a + b, 0);
	return runs.filter((n) => n >= 3).reduce((a, b) => a + b, 0) / Math.max(all, 1);
}

function isText(data: Uint8Array): boolean {
	return data.length > 0 && data.every((b) => (b >= 32 && b < 127) || b === 9 || b === 10 || b === 13);
}

/** Whether `value` (one token) looks generated rather than written. */
export function looksRandom(value: string, minChars: number): boolean {
	const m = fullmatch(R("random_value"), value);
	if (!m) return false;
	const body = rstrip(group(m, "body") as string, "=");
	const cs = chars(body);
	if (cs.length < minChars) return false;
	if (!(cs.some(isDigitChar) && cs.some(isAlphaChar))) return false;
	let alphabet = 64;
	if (fullmatch(R("hex"), body)) alphabet = 16;
	else if (body.toLowerCase() === body || body.toUpperCase() === body) alphabet = 36;
	if (entropy(body) < N.named_entropy_share * Math.log2(Math.min(cs.length, alphabet))) return false;
	return alphabet === 16 || !isWords(body);
}

function isWords(value: string): boolean {
	const letters = chars(value).filter(isAlphaChar);
	const vowels = letters.filter((c) => "aeiouAEIOU".includes(c)).length / letters.length;
	if (value.toLowerCase() === value || value.toUpperCase() === value) return vowels >= N.word_vowel_share;
	return wordShare(value) >= N.word_share && vowels >= N.word_vowel_share;
}

// -- base64, as Python's binascii reads it --------------------------------------------------

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** `binascii.a2b_base64(s, strict_mode=strict)`: the bytes, or null where Python raises. */
function a2b(s: string, strict: boolean): Uint8Array | null {
	const out: number[] = [];
	let quad = 0;
	let pads = 0;
	let leftChar = 0;
	let paddingStarted = false;
	for (let i = 0; i < s.length; i++) {
		const ch = s[i];
		if (ch === "=") {
			paddingStarted = true;
			if (strict && i === 0) return null; // leading padding
			pads++;
			if (quad >= 2 && quad + pads >= 4) {
				if (strict && i + 1 < s.length) return null; // excess data after padding
				return Uint8Array.from(out);
			}
			continue;
		}
		const value = B64.indexOf(ch);
		if (value < 0) {
			if (strict) return null;
			continue;
		}
		if (strict && paddingStarted) return null; // discontinuous padding
		pads = 0;
		switch (quad) {
			case 0:
				quad = 1;
				leftChar = value;
				break;
			case 1:
				quad = 2;
				out.push((leftChar << 2) | (value >> 4));
				leftChar = value & 0x0f;
				break;
			case 2:
				quad = 3;
				out.push((leftChar << 4) | (value >> 2));
				leftChar = value & 0x03;
				break;
			default:
				quad = 0;
				out.push((leftChar << 6) | value);
				leftChar = 0;
		}
	}
	return quad === 0 ? Uint8Array.from(out) : null;
}

/** redaction_rules._b64decode: padded, strict, standard then URL-safe alphabet. */
function b64decode(value: string): Uint8Array | null {
	const padded = value + "=".repeat((4 - (value.length % 4)) % 4);
	return a2b(padded, true) ?? a2b(padded.replace(/-/g, "+").replace(/_/g, "/"), true);
}

const latin1 = (data: Uint8Array): string => String.fromCharCode(...data);

/** detect-secrets' JwtTokenDetector.is_formally_valid. */
function jwtFormallyValid(token: string): boolean {
	const parts = token.split(".");
	for (let idx = 0; idx < parts.length; idx++) {
		let part = parts[idx];
		if (/[^\x00-\x7f]/.test(part)) return false;
		const m = part.length % 4;
		if (m === 1) return false;
		if (m === 2) part += "==";
		else if (m === 3) part += "===";
		const decoded = a2b(part.replace(/-/g, "+").replace(/_/g, "/"), false);
		if (decoded === null) return false;
		if (idx < 2) {
			try {
				JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(decoded));
			} catch {
				return false;
			}
		}
	}
	return true;
}
