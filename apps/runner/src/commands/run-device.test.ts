// `ninodes run --device vk:0`: h3-tiny at a 1×16×16 latent with every linear on the Vulkan device
// (lavapipe in CI) against the same run on the CPU; and the coded errors without a device.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { vulkanProbe } from '@ninodes/kernels';
import { openSafetensors } from '@ninodes/memory';
import { maxRelError } from '@ninodes/quant';
import { afterAll, describe, expect, it } from 'vitest';
import { inProcessCli } from '../test-support/in-process-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-cli-device-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const cli = inProcessCli(dir);
const probe = vulkanProbe();
const hasVulkan = probe.available && probe.devices.length > 0;
if (!hasVulkan && process.env.CI === 'true') throw new Error(`CI=true but no Vulkan device: ${probe.available ? 'no physical device' : probe.reason}`);

function latent(out: string): Float32Array {
  const s = openSafetensors(join(out, 'latent.safetensors'));
  try {
    return Float32Array.from(s.tensor('latent').data as Float32Array);
  } finally {
    s.close();
  }
}

const tiny = ['run', '--preset', 'h3-tiny', '--frames', '1', '--height', '16', '--width', '16', '--steps', '1'];

describe.skipIf(!hasVulkan)('ninodes run --device vk:0', () => {
  it('h3-tiny 1×16×16 in f32: the latent within 1e-5 of the CPU run, the report names the device', async () => {
    const cpu = join(dir, 'cpu');
    const vk = join(dir, 'vk');
    expect((await cli(...tiny, '--quant', 'f32', '--out', cpu)).status).toBe(0);
    const r = await cli(...tiny, '--quant', 'f32', '--device', 'vk:0', '--out', vk);
    expect(r.stderr).not.toContain('Error');
    expect(r.status).toBe(0);
    expect(maxRelError(latent(vk), latent(cpu))).toBeLessThan(1e-5);
    expect(JSON.parse(readFileSync(join(vk, 'report.json'), 'utf8')).config.device).toBe('vk:0');
  });
});

describe('ninodes run --device errors', () => {
  it('a device this machine lacks is DEVICE_NOT_FOUND listing the ones it has', async () => {
    const r = await cli(...tiny, '--device', 'vk:7', '--out', join(dir, 'none'));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('DEVICE_NOT_FOUND');
    expect(r.stderr).toContain('vk:7');
  });

  it('--device with --budget is refused up front', async () => {
    const r = await cli(...tiny, '--device', 'vk:0', '--budget', '1gb', '--out', join(dir, 'budget'));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/--device/);
  });

  it('without a Vulkan driver, --device vk:0 is a coded error naming the device, not a crash', async () => {
    const cliPath = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
    const run = promisify(execFile);
    const env = { ...process.env, VK_ICD_FILENAMES: '/nonexistent/icd.json', VK_DRIVER_FILES: '/nonexistent/icd.json', NINODES_CACHE: join(dir, 'cache') };
    const failed = await run(process.execPath, [cliPath, ...tiny, '--device', 'vk:0', '--out', join(dir, 'nodriver')], { env }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).not.toBe(0);
    expect(failed?.stderr).toContain('DEVICE_NOT_FOUND');
    expect(failed?.stderr).toContain('vk:0');
  });
});
