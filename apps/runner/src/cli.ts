#!/usr/bin/env node
import { COMMANDS } from './commands.js';
import { main } from './main.js';
import { removeTempsOnSignals } from './signals.js';

removeTempsOnSignals(process.stderr);
process.exitCode = await main(process.argv.slice(2), COMMANDS, { stdout: process.stdout, stderr: process.stderr, env: process.env });
