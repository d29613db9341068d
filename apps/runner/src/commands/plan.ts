import { enumerateDevices } from '@ninodes/device';
import { computeAccount, computeLoadAccount, estimateActivationBytes, formatPlacement, latentTokens, machineDevices, planPlacement, type Placement } from '@ninodes/distorch';
import { layoutOf } from '@ninodes/models';
import { COMPUTE_MODES, type ComputeMode, openCheckpoint } from '@ninodes/quant';
import { z } from 'zod';
import { defineCommand } from '../command.js';

const positiveInt = z.coerce.number().int().positive();

export const planSchema = z.object({
  alloc: z.string().min(1),
  frames: positiveInt.default(3),
  height: positiveInt.default(32),
  width: positiveInt.default(32),
  /** Compute format the sizes are counted in; 'auto' = as stored in the file. */
  quant: z.enum(COMPUTE_MODES as [ComputeMode, ...ComputeMode[]]).default('auto'),
  machine: z.string().min(1).optional(),
  fill: z.enum(['head-first', 'tail-first']).default('head-first'),
  json: z.boolean().default(false),
  positionals: z.array(z.string()).length(1),
});

/** The placement of a checkpoint for an allocation, on this machine or a recorded one. */
export function planCheckpoint(path: string, args: z.infer<typeof planSchema>): Placement {
  const source = openCheckpoint(path);
  try {
    const layout = layoutOf(source);
    const devices = args.machine === undefined ? enumerateDevices({ includeDisk: false }).devices : machineDevices(args.machine);
    const compute = args.quant;
    return planPlacement({
      layout,
      allocation: args.alloc,
      devices,
      account: computeAccount(compute),
      loadAccount: computeLoadAccount(compute),
      activationBytes: estimateActivationBytes(layout, latentTokens(args)),
      fillOrder: args.fill,
    });
  } finally {
    source.close();
  }
}

export const plan = defineCommand({
  name: 'plan',
  summary: 'place a checkpoint on devices for an allocation string and say why',
  usage: 'ninodes plan <ckpt> --alloc "cuda:0,2.5gb;cpu,*" [--frames N --height N --width N] [--quant auto|fp32|bf16|int8_convrot|fp8] [--machine <dir>] [--fill head-first|tail-first] [--json]',
  options: {
    alloc: { type: 'string', value: '<alloc>', description: 'allocation string: bytes "cuda:0,2.5gb;cpu,*", ratio "cuda:0,25%;cpu,75%", fraction "cuda:0,0.5;cpu,1.0" or virtual VRAM "#cuda:0;4gb;cpu,disk"' },
    frames: { type: 'string', value: 'N', description: 'latent frames of the activation estimate' },
    height: { type: 'string', value: 'N', description: 'latent height of the activation estimate' },
    width: { type: 'string', value: 'N', description: 'latent width of the activation estimate' },
    quant: { type: 'string', value: '<mode>', description: 'compute format the sizes are counted in: auto (as stored), f32, bf16, int8_convrot or f8_e4m3fn' },
    machine: { type: 'string', value: '<dir>', description: "a recorded machine directory (as in @ninodes/device's fixtures) to plan for instead of this one" },
    fill: { type: 'string', value: '<order>', description: 'which groups fill the compute device first: head-first or tail-first' },
    json: { type: 'boolean', description: 'print the placement as JSON' },
  },
  examples: [
    'ninodes plan model.safetensors --alloc "cuda:0,2.5gb;cpu,*"',
    'ninodes plan model.safetensors --alloc "cpu,4gb;disk,*" --quant int8_convrot --frames 21 --height 60 --width 104',
    'ninodes plan model.safetensors --alloc "cuda:0,24gb;cuda:1,*" --machine packages/device/fixtures/machines/w7900x2-gfx1100 --json',
  ],
  positionals: [1, 1],
  schema: planSchema,
  async run(args, context) {
    const placement = planCheckpoint(args.positionals[0] as string, args);
    if (context.json) {
      const { tensorDevices: _omitted, ...rest } = placement;
      context.stdout.write(`${JSON.stringify(rest)}\n`);
    } else {
      context.stdout.write(`${formatPlacement(placement)}\n`);
    }
    return placement.fits ? 0 : 1;
  },
});
