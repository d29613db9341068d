import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type DeviceInfo, absentHip, absentNvml, absentVulkan, enumerateDevices, recordedHip, recordedNvml } from '@ninodes/device';
import { DistorchError } from './error-codes.js';

/**
 * The devices of a recorded machine directory (`proc/`, `sys/`, and optionally `nvml.json` /
 * `hip.json` with recorded probe answers), as @ninodes/device's fixtures hold them: plan for the
 * W7900 pair or the Strix Halo box from any machine. The recorded environment is empty, so this
 * process's CUDA_/HIP_VISIBLE_DEVICES do not apply; `disk` is left out (it is never a limit).
 */
export function machineDevices(dir: string): DeviceInfo[] {
  if (!existsSync(join(dir, 'proc')) || !existsSync(join(dir, 'sys'))) {
    throw new DistorchError('MACHINE_DIR_INVALID', `'${dir}' is not a recorded machine directory (no proc/ and sys/)`, {
      value: dir,
      where: '--machine',
      hint: 'point at a directory with proc/ and sys/ trees, e.g. packages/device/fixtures/machines/w7900x2-gfx1100',
    });
  }
  const nvml = join(dir, 'nvml.json');
  const hip = join(dir, 'hip.json');
  return enumerateDevices({
    procRoot: join(dir, 'proc'),
    sysRoot: join(dir, 'sys'),
    env: {},
    nvml: existsSync(nvml) ? recordedNvml(nvml) : absentNvml('no nvml.json recorded'),
    hip: existsSync(hip) ? recordedHip(hip) : absentHip('no hip.json recorded'),
    vulkan: absentVulkan('a recorded machine has no Vulkan answers'),
    includeDisk: false,
  }).devices;
}
