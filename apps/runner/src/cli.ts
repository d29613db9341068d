#!/usr/bin/env node
import { COMMANDS } from './commands.js';
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2), COMMANDS, { stdout: process.stdout, stderr: process.stderr, env: process.env });
