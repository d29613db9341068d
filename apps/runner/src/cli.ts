#!/usr/bin/env node
import { COMMANDS } from './commands.js';
import { removeTempsOnSignals } from '@ninodes/kernels';
import { main } from './main.js';

removeTempsOnSignals(process.stderr);
process.exitCode = await main(process.argv.slice(2), COMMANDS, { stdout: process.stdout, stderr: process.stderr, env: process.env });
