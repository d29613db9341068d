// "did you mean": the closest known word by edit distance, when it is close enough to be a typo.

function distance(a: string, b: string): number {
  // Damerau (optimal string alignment): a swap of two neighbours (--stesp) counts as one edit.
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** The known word nearest to `word`, if within a third of its length (at least 1, at most 3 edits). */
export function closest(word: string, known: readonly string[]): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(word.length / 3)));
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const dd = k.startsWith(word) && word.length >= 2 ? 0.5 : distance(word, k);
    if (dd < bestD) {
      best = k;
      bestD = dd;
    }
  }
  return bestD <= limit ? best : undefined;
}
