export { H3_DEFAULTS, H3_PATCH, type H3Config, patchDim, rotDim, validateH3Config } from './h3-config.js';
export { H3_PRESETS, type H3Preset, type H3PresetName, h3Preset } from './presets.js';
export { type H3LinearLayer, type H3Parameter, h3BlockLinears, h3Linears, h3Parameters, h3UnusedKeys } from './h3-tensors.js';
export {
  type DetectedArchitecture,
  type KnownArchitecture,
  type TensorShapeInfo,
  type UnknownArchitecture,
  detectArchitecture,
} from './detect-architecture.js';
export { flowSigmas } from './sigma-schedule.js';
export { h3RopeAngles, h3VideoPositions } from './video-grid.js';
export { timestepFeatures } from './timestep-embedding.js';
export { type LatentDims, latentDims, patchify, unpatchify } from './patchify.js';
