// Vulkan in fresh processes: a subset of the ops under VK_LAYER_KHRONOS_validation with zero
// messages, and a machine without a driver (the loader finds no ICD): vk:* absent, a coded error
// when one is asked for, and the addon still loads.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { vulkanTestDevice } from '../test-support/vulkan-device.js';

const run = promisify(execFile);
const dist = fileURLToPath(new URL('../../dist/index.js', import.meta.url));
const child = fileURLToPath(new URL('../test-support/vulkan-child.mjs', import.meta.url));
const device = vulkanTestDevice();
const validationLayer = '/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json';

async function inChild(mode: string, env: Record<string, string>): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [child], { env: { ...process.env, ...env, NINODES_VK_JOB: JSON.stringify({ dist, mode }) } });
  return JSON.parse(stdout.trim().split('\n').pop() as string) as Record<string, unknown>;
}

describe.skipIf(device === undefined)('Vulkan in a fresh process', () => {
  it.skipIf(!existsSync(validationLayer) && process.env.CI !== 'true')('runs linear, bf16, int8, norms, rope and attention under the validation layer with zero messages', async () => {
    const out = await inChild('validation', { NINODES_VK_VALIDATION: '1' });
    expect(out.error).toBeUndefined();
    expect(out.validation).toMatchObject({ enabled: true, messages: [], count: 0 });
  });

  it('without a driver: no vk device, VULKAN_UNAVAILABLE when one is opened', async () => {
    const out = await inChild('nodriver', { VK_ICD_FILENAMES: '/nonexistent/icd.json', VK_DRIVER_FILES: '/nonexistent/icd.json' });
    expect(out.probe).toMatchObject({ available: false });
    expect(out.code).toBe('VULKAN_UNAVAILABLE');
    expect(String(out.message)).toMatch(/no Vulkan driver|vkCreateInstance/);
  });
});
