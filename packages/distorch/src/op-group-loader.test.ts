import { describe, expect, it } from 'vitest';
import { opGroupLoader, type PreparableOp } from './op-group-loader.js';
import { StreamingExecutor } from './streaming-executor.js';
import { H3_SMALL, h3Layout } from './test-support/h3-layout.js';

class FakeOp implements PreparableOp {
  prepared = 0;
  releases = 0;
  held = 0;
  constructor(
    readonly spec: { name: string },
    private readonly bytes: number,
  ) {}
  async prepare(): Promise<void> {
    if (this.held === 0) this.prepared++;
    this.held = this.bytes;
  }
  heldBytes(): number {
    return this.held;
  }
  release(): void {
    this.releases++;
    this.held = 0;
  }
}

describe('opGroupLoader', () => {
  const layout = h3Layout({ ...H3_SMALL, layers: 4 });
  const ops = layout.groups.flatMap((g) => g.linears.map((l) => new FakeOp({ name: l.name }, 4 * l.inFeatures * l.outFeatures)));

  it('prepares a group’s ops on load and releases them on eviction, under the executor', async () => {
    const placement = { compute: 'cpu', groups: layout.groups.map((g) => ({ name: g.name, device: g.kind === 'block' ? 'disk' : 'cpu' })) };
    const block = layout.groups[3]?.linears.reduce((a, l) => a + 4 * l.inFeatures * l.outFeatures, 0) as number;
    const exec = new StreamingExecutor({ layout, placement, loader: opGroupLoader(layout, ops), budgetBytes: 2 * block, prefetch: 1, measure: false });
    for (let step = 0; step < 2; step++) {
      for (const g of layout.groups) {
        await exec.beforeGroup(g.name);
        for (const l of g.linears) expect(ops.find((o) => o.spec.name === l.name)?.held).toBeGreaterThan(0);
        await exec.afterGroup(g.name);
      }
    }
    const fc1 = (i: number): FakeOp => ops.find((o) => o.spec.name === `blocks.${i}.mlp.fc1`) as FakeOp;
    // Streamed blocks were prepared again in the second step; the embedders once.
    expect(fc1(1).prepared).toBe(2);
    expect(ops.find((o) => o.spec.name === 'time_embedder.proj_in')?.prepared).toBe(1);
    expect(exec.stats()[1]?.bytesStreamed).toBeGreaterThanOrEqual(3 * block);
  });

  it('a layout linear without an op is an error', () => {
    expect(() => opGroupLoader(layout, ops.slice(1))).toThrowError(/no op for linear 'time_embedder.proj_in'/);
  });
});
