/**
 * The redaction rules' data (redaction-patterns.json, generated from memlane's Python
 * rules by `python -m memlane.hosts.pi.redaction_js`) and the regex plumbing the
 * redactor runs them with: Python's finditer, match-at, search and fullmatch, and the
 * str predicates its rules judge characters by. See redact.ts.
 *
 * Node built-ins only (no pi import), so `node --test` runs it as it is.
 */

import { readFileSync } from "node:fs";

export type Src = [string, string];

export interface Table {
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
export const T = JSON.parse(readFileSync(PATTERNS_FILE, "utf8")) as Table;
export const N = T.numbers;
export const TYPE_NAMES = new Set(T.words.type_names);
export const NON_SECRET_VALUES = new Set(T.words.non_secret_values);
export const CODE_WORDS = new Set(T.words.code_words);
export const GENERIC_KINDS = new Set(T.words.generic_kinds);
export const ALNUM_BEFORE = new Set(T.alnum_before);
export const R = (name: string): Src => {
	const src = T.regex[name];
	if (!src) throw new Error(`redaction-patterns.json has no regex ${name}`);
	return src;
};

export interface Span {
	start: number;
	end: number;
	kind: string;
}

// -- regex plumbing ---------------------------------------------------------------------

const compiled = new Map<string, RegExp>();

export function compile(src: Src, extra: string, wrap = false): RegExp {
	const key = `${wrap ? "^" : ""}${extra}/${src[1]}/${src[0]}`;
	let re = compiled.get(key);
	if (!re) {
		re = new RegExp(wrap ? `^(?:${src[0]})$` : src[0], src[1] + extra);
		compiled.set(key, re);
	}
	return re;
}

export type Match = RegExpExecArray & { indices: NonNullable<RegExpExecArray["indices"]> };

/** Every match, as Python's finditer: an empty match moves on by one. */
export function* finditer(src: Src, text: string): Generator<Match> {
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
export function matchAt(src: Src, text: string, pos: number): Match | null {
	const re = compile(src, "yd");
	re.lastIndex = pos;
	return re.exec(text) as Match | null;
}

/** Python's `regex.search(text, pos)`. */
export function search(src: Src, text: string, pos = 0): Match | null {
	const re = compile(src, "gd");
	re.lastIndex = pos;
	return re.exec(text) as Match | null;
}

export function fullmatch(src: Src, text: string): Match | null {
	return compile(src, "d", true).exec(text) as Match | null;
}

export const endOf = (m: Match): number => m.index + m[0].length;

export function group(m: Match, name: string): string | undefined {
	return m.groups?.[name];
}

export function groupSpan(m: Match, name: string): [number, number] {
	const span = m.indices.groups?.[name];
	if (!span) throw new Error(`group ${name} did not take part in the match`);
	return span;
}

// -- Python's str predicates, for the characters these rules judge ----------------------

export const isAlnumChar = (c: string) => /[\p{L}\p{N}]/u.test(c);
export const isDigitChar = (c: string) => /\p{Nd}/u.test(c);
export const isAlphaChar = (c: string) => /\p{L}/u.test(c);
export const isLowerChar = (c: string) => /\p{Ll}/u.test(c);
export const isUpperChar = (c: string) => /\p{Lu}/u.test(c);
export const chars = (s: string): string[] => Array.from(s);
export const isDigits = (s: string) => s.length > 0 && chars(s).every(isDigitChar);
export const isAlpha = (s: string) => s.length > 0 && chars(s).every(isAlphaChar);
export const isLower = (s: string) => chars(s).some(isLowerChar) && !chars(s).some(isUpperChar);
export const isUpper = (s: string) => chars(s).some(isUpperChar) && !chars(s).some(isLowerChar);
// For a string of letters only (the one use): an upper-case letter, then lower-case ones.
export const isTitleWord = (s: string) => /^\p{Lu}\p{Ll}*$/u.test(s);
export const isIdentifier = (s: string) => /^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$/u.test(s);

export function rstrip(s: string, set: string): string {
	let end = s.length;
	while (end > 0 && set.includes(s[end - 1])) end--;
	return s.slice(0, end);
}

export function lstripLength(s: string, set: string): number {
	let start = 0;
	while (start < s.length && set.includes(s[start])) start++;
	return start;
}
