// Text from files (tensor names, metadata, paths) reaches a terminal only through here: control
// characters (C0 and C1, DEL: escape sequences that retitle the window, clear the screen or move
// the cursor; CR and LF that start a forged line), Unicode line separators and the BiDi controls
// that reorder what is shown (Trojan Source) are written as visible escapes, so what a user reads
// is what the bytes say. JSON output needs none of this: JSON.stringify escapes control characters.

// C0 but LF, DEL, C1; U+061C, U+200E/F (marks), U+202A–202E (embeddings, overrides), U+2066–2069
// (isolates); U+2028/2029 (line and paragraph separators).
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

function escape(c: string): string {
  const code = c.codePointAt(0)!;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
}

/** One line for a terminal: every unsafe character, the line feed included, as a visible escape. */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, escape).replace(/\n/g, '\\n');
}

/**
 * Several lines for a terminal: each line made safe, and every line after the first indented with
 * `  | `, so no text inside can begin a line of its own (a forged `error CODE:` line).
 */
export function terminalSafeLines(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(UNSAFE, escape))
    .join('\n  | ');
}
