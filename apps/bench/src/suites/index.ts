/**
 * Every suite the CLI knows, in run order. Adding a suite: one file in this folder exporting a
 * `Suite` (see ../suite.ts), and one line here.
 */
import type { Suite } from '../suite.js';
import { gpuSuite } from './gpu.js';
import { ioSuite } from './io.js';
import { kernelsSuite } from './kernels.js';
import { modelSuite } from './model.js';
import { offloadSuite } from './offload.js';
import { quantSuite } from './quant.js';
import { tpSuite } from './tp.js';

export const SUITES: readonly Suite[] = [kernelsSuite, ioSuite, quantSuite, modelSuite, offloadSuite, tpSuite, gpuSuite];
