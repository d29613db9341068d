import { describe, expect, it } from 'vitest';
import { NinodesError } from './errors.js';
import { terminalSafe, terminalSafeLines } from './terminal-safe.js';

describe('terminalSafe', () => {
  it('escapes escape sequences, line breaks, C1 controls and BiDi controls; keeps other text as is', () => {
    expect(terminalSafe('a\x1b]0;title\x07b')).toBe('a\\x1b]0;title\\x07b');
    expect(terminalSafe('x\r\ny')).toBe('x\\x0d\\ny');
    expect(terminalSafe('\x9b2J')).toBe('\\x9b2J');
    expect(terminalSafe('ab\u202ecd\u2066e\u2028')).toBe('ab\\u{202e}cd\\u{2066}e\\u{2028}');
    expect(terminalSafe('blocks.0.模型.wéight tab\there')).toBe('blocks.0.模型.wéight tab\\x09here');
    // Nothing unsafe survives any code point below U+00A0.
    const all = String.fromCharCode(...Array.from({ length: 0xa0 }, (_, i) => i));
    expect(terminalSafe(all)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it('keeps lines of a message but indents every one after the first, so none starts a forged line', () => {
    expect(terminalSafeLines('one\nerror FAKE: two\x1b[2J')).toBe('one\n  | error FAKE: two\\x1b[2J');
  });

  it('is how NinodesError formats itself: a name from a file cannot forge an error line', () => {
    const e = new NinodesError('TENSOR_NOT_FOUND', 'no tensor x\nerror FAKE_CODE: y', { where: 'f\x1b[2J', hint: 'h\r' });
    const text = e.format();
    expect(text.split('\n').filter((l) => l.startsWith('error ') || l.startsWith('FAKE'))).toEqual([]);
    expect(text).not.toMatch(/[\x1b\r]/);
    expect(text).toContain('(at f\\x1b[2J)');
  });
});
