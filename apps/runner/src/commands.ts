import type { Command } from './command.js';
import { devices } from './commands/devices.js';

/** Every subcommand of `ninodes`, in the order `ninodes --help` lists them. */
export const COMMANDS: readonly Command[] = [devices] as readonly Command[];
