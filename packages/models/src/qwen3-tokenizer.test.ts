import { readFileSync } from 'node:fs';
import { fixturePath } from '@ninodes/test-safetensors';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Qwen3Tokenizer, loadQwen3Tokenizer } from './qwen3-tokenizer.js';

// Ids made by Hugging Face `tokenizers` (Rust) over the same tokenizer.json (tools/qwen3-ref).
const fixture = JSON.parse(readFileSync(fixturePath('qwen3', 'tokens.json'), 'utf8')) as { cases: { text: string; ids: number[] }[] };

describe('Qwen3 tokenizer', () => {
  let tok: Qwen3Tokenizer;
  beforeAll(async () => {
    tok = await loadQwen3Tokenizer();
  });

  it.each(fixture.cases.map((c, i) => [i, c] as const))('prompt %i: the ids Hugging Face tokenizers gives', (_i, c) => {
    expect(tok.encode(c.text)).toEqual(c.ids);
  });

  it('the corpus covers special tokens, digits split one by one, and non-Latin scripts', () => {
    const all = fixture.cases.flatMap((c) => c.ids);
    expect(all).toContain(151644); // <|im_start|>
    expect(all).toContain(151643); // <|endoftext|>
    expect(fixture.cases.some((c) => /[\u4e00-\u9fff]/u.test(c.text))).toBe(true);
  });

  it('refuses what is not a string with a typed error', () => {
    expect(() => tok.encode(42 as unknown as string)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
