import type { Command } from './command.js';
import { demo } from './commands/demo.js';
import { devices } from './commands/devices.js';
import { generate } from './commands/generate.js';
import { inspect } from './commands/inspect.js';
import { merge } from './commands/merge.js';
import { plan } from './commands/plan.js';
import { quantize } from './commands/quantize.js';
import { run } from './commands/run.js';

/** Every subcommand of `ninodes`, in the order `ninodes --help` lists them. */
export const COMMANDS: readonly Command[] = [devices, inspect, plan, quantize, merge, run, generate, demo] as readonly Command[];
