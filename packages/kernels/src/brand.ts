// A consumer that both imports and requires @ninodes/kernels loads its ESM and CJS builds as two
// module instances, so there are two Tensor classes and a plain instanceof rejects the other build's
// tensors. Classes whose instances cross that line carry a brand from the process-wide symbol
// registry (Symbol.for) and answer instanceof by it; their methods live on the instance's own
// prototype, so either build can use the other's objects.

/**
 * Marks instances of `cls` with `Symbol.for('ninodes.<name>')` and makes `x instanceof cls` true for
 * any object carrying that brand. Subclasses keep the ordinary prototype-chain test.
 */
export function brandInstances(cls: abstract new (...args: never[]) => object, name: string): void {
  const brand = Symbol.for(`ninodes.${name}`);
  Object.defineProperty(cls.prototype, brand, { value: true });
  Object.defineProperty(cls, Symbol.hasInstance, {
    value(this: unknown, value: unknown): boolean {
      if (this !== cls) return Function.prototype[Symbol.hasInstance].call(this, value);
      return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
    },
  });
}
