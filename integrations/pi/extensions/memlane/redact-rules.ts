/**
 * memlane's own secret rules beyond the token and keyword patterns
 * (src/memlane/store/redaction_rules.py): secrets known by where they stand (.netrc,
 * Docker auth, base64 PEM, passwords on command lines), quoted high-entropy literals,
 * values that look generated, and base64 and JWT checks as Python reads them. The
 * callers pass what judges a value (`looksSecret`) and whether a decoded text holds a
 * secret (`holdsSecret`), as the Python's do. See redact.ts.
 *
 * Node built-ins only (no pi import), so `node --test` runs it as it is.
 */

import {
	chars,
	compile,
	endOf,
	finditer,
	fullmatch,
	group,
	groupSpan,
	isAlpha,
	isAlphaChar,
	isDigitChar,
	isLower,
	isLowerChar,
	isTitleWord,
	isUpper,
	isUpperChar,
	type Match,
	matchAt,
	N,
	R,
	rstrip,
	search,
	type Span,
	T,
} from "./redact-table.ts";

// -- context rules (redaction_rules.context_spans) ----------------------------------------

export function* contextSpans(text: string, looksSecret: (value: string) => boolean): Generator<Span> {
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
		for (const m of finditer(R(name), text)) yield* valueSpan(m, "password", looksSecret);
	}
	for (const m of finditer(R("telegram_url"), text)) yield spanOf(m, "v", "telegram-token");
	for (const m of finditer(R("sas_sig"), text)) yield spanOf(m, "v", "azure-sas");
	for (const m of finditer(R("long_flag"), text)) {
		yield* valueSpan(m, T.flag_kinds[group(m, "flag") as string] ?? "password", looksSecret);
	}
}

function spanOf(m: Match, name: string, kind: string): Span {
	const [start, end] = groupSpan(m, name);
	return { start, end, kind };
}

function* valueSpan(m: Match, kind: string, looksSecret: (value: string) => boolean): Generator<Span> {
	for (const name of ["sq", "dq", "bare"]) {
		const value = group(m, name);
		if (value === undefined) continue;
		if (name === "bare" && value.startsWith("-")) return; // the next flag: a prompt asks for it
		if (looksSecret(value)) yield spanOf(m, name, kind);
		return;
	}
}

// -- high-entropy literals and generated-looking values -----------------------------------

export function* highEntropyLiterals(text: string, holdsSecret: (text: string) => boolean): Generator<Span> {
	for (const m of finditer(R("literal"), text)) {
		if (isRandomLooking(group(m, "v") as string, holdsSecret)) yield spanOf(m, "v", "high-entropy");
	}
}

function isRandomLooking(value: string, holdsSecret: (text: string) => boolean): boolean {
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
export function jwtFormallyValid(token: string): boolean {
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

