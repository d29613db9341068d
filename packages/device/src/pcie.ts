/** PCIe generation from a sysfs link speed (`16.0 GT/s PCIe`); undefined when unrecognized. */
export function pcieGenFromSpeed(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const m = /^\s*([0-9.]+)\s*GT\/s/.exec(text);
  if (m === null) return undefined;
  const gts = Number(m[1]);
  const table: [number, number][] = [[2.5, 1], [5, 2], [8, 3], [16, 4], [32, 5], [64, 6]];
  return table.find(([speed]) => Math.abs(speed - gts) < 0.01)?.[1];
}

// Usable bytes per second per lane and direction after line coding (8b/10b for gen 1-2,
// 128b/130b for gen 3-5, FLIT for gen 6 counted at its raw rate).
const LANE_GBS: Record<number, number> = { 1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.877 };

/** Theoretical one-direction PCIe bandwidth in GB/s (1e9 bytes), or null when gen or width is unknown. */
export function pcieBandwidthGBs(gen: number | null | undefined, width: number | null | undefined): number | null {
  if (gen === null || gen === undefined || width === null || width === undefined) return null;
  const lane = LANE_GBS[gen];
  return lane === undefined || !(width > 0) ? null : lane * width;
}
