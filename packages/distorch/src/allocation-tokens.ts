import { AllocationError } from './allocation-error.js';

export type TokenKind = 'word' | 'number' | 'sign' | 'percent' | 'star' | 'comma' | 'semi' | 'hash' | 'end';

export interface Token {
  readonly kind: TokenKind;
  readonly text: string;
  /** 1-based column of the first character. */
  readonly column: number;
}

const isLetter = (c: string): boolean => /[A-Za-z_]/.test(c);
const isDigit = (c: string): boolean => c >= '0' && c <= '9';
const PUNCT: Record<string, TokenKind> = { '%': 'percent', '*': 'star', ',': 'comma', ';': 'semi', '#': 'hash', '-': 'sign', '+': 'sign' };

/**
 * Splits an allocation string into tokens with their columns. Words are device ids or units
 * (`cuda:0`, `mlu:0`, `gb`); a word may carry one `:suffix` so `cuda:0` stays one token.
 * Numbers are `12`, `2.5`, `2.` or `.5` (signs are separate tokens so `-1gb` can be named as negative).
 */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const start = i;
    if (isLetter(c)) {
      while (i < text.length && /[A-Za-z0-9_]/.test(text[i] as string)) i++;
      if (text[i] === ':') {
        i++;
        while (i < text.length && /[A-Za-z0-9_]/.test(text[i] as string)) i++;
      }
      tokens.push({ kind: 'word', text: text.slice(start, i), column: start + 1 });
    } else if (isDigit(c) || (c === '.' && isDigit(text[i + 1] ?? ''))) {
      while (i < text.length && isDigit(text[i] as string)) i++;
      if (text[i] === '.') {
        i++;
        while (i < text.length && isDigit(text[i] as string)) i++;
      }
      tokens.push({ kind: 'number', text: text.slice(start, i), column: start + 1 });
    } else if (PUNCT[c] !== undefined) {
      tokens.push({ kind: PUNCT[c], text: c, column: start + 1 });
      i++;
    } else {
      throw new AllocationError('ALLOC_SYNTAX', text, start + 1, `unexpected character '${c}'`, {
        value: c,
        hint: "entries are '<device>,<amount>' separated by ';', e.g. 'cuda:0,2.5gb;cpu,*' (amounts: 2.5gb, 25%, 0.5 or *)",
      });
    }
  }
  tokens.push({ kind: 'end', text: '', column: text.length + 1 });
  return tokens;
}
