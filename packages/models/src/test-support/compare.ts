/** max |got − want| / max |want|: one error scale for the whole tensor. */
export function maxRelError(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < want.length; i++) {
    num = Math.max(num, Math.abs((got[i] as number) - (want[i] as number)));
    den = Math.max(den, Math.abs(want[i] as number));
  }
  return num / den;
}
