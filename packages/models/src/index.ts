export { MODELS_ERROR_CODES, type ModelsErrorCode, type ModelsThrownCode } from './error-codes.js';
export { H3_AUDIO_STEREO, H3_DEFAULTS, H3_PATCH, H3_SIGMA_SHIFTS, type H3Config, patchDim, pddHeads, rotDim, validateH3Config } from './h3-config.js';
export { type H3ActivationBytes, type H3StreamSizes, h3ActivationBytes } from './activation-bytes.js';
export { H3_PRESETS, type H3Preset, type H3PresetName, h3Preset } from './presets.js';
export { H3_LINEAR_SIDECARS, type H3LinearLayer, type H3Parameter, type H3TensorSpec, h3BlockLinears, h3Linears, h3Parameters, h3RefinerLinears, h3TensorSpecs, h3UnusedKeys } from './h3-tensors.js';
export {
  type DetectedArchitecture,
  type KnownArchitecture,
  type TensorShapeInfo,
  type UnknownArchitecture,
  detectArchitecture,
} from './detect-architecture.js';
export { flowSigmas } from './sigma-schedule.js';
export { h3PackedPositions, h3RopeAngles, h3VideoPositions } from './video-grid.js';
export { H3_MODALITY, type ModSegment, combinePddHeads, curveTimeEmbedding, packAudio, pddHeadWeights, timeShiftSigma, unpackAudio } from './h3-streams.js';
export { H3RefinerBlock } from './h3-refiner.js';
export { timestepFeatures } from './timestep-embedding.js';
export { type LatentDims, latentDims, patchify, unpatchify } from './patchify.js';
export { H3Block, type BlockTrace, type ParameterReader } from './h3-block.js';
export { H3VideoModel, type H3ModelOptions, type H3StreamsInput, type H3StreamsOutput, type VelocityModel } from './h3-model.js';
export type { LinearOp, LinearProvider, LinearSpec } from './linear-provider.js';
export {
  type CaptureComparison,
  type CaptureDifference,
  type CaptureSink,
  captureFromEnv,
  compareCaptures,
  createCaptureSink,
} from './capture.js';
export { GaussianStream, gaussianNoise, hashSeed } from './noise.js';
export { SAMPLER_DEFAULTS, SAMPLER_LIMITS, type SamplerOptions, type SamplerResult, type StepInfo, runSampler } from './sampler.js';
export { type SyntheticCheckpointOptions, type SyntheticCheckpointResult, writeSyntheticH3Checkpoint } from './synthetic-checkpoint.js';
export { type CachedCheckpoint, ensureSyntheticCheckpoint } from './synthetic-cache.js';
export { OP_FAMILIES, type OpFamily, type OpProfiler, createOpProfiler } from './op-profile.js';
export { bytesByGroup, tensorGroup } from './tensor-group.js';
export { type OpenH3ModelOptions, type OpenedH3Model, islandAwareProvider, openH3Model } from './open-h3-model.js';
export {
  H3_ARCHITECTURE,
  H3_POST_GROUPS,
  H3_PRE_GROUPS,
  h3PreGroups,
  type H3Layout,
  type H3LayoutOptions,
  checkH3Shard,
  h3Layout,
  h3LinearSpec,
  h3ParallelRole,
  layoutOf,
} from './h3-layout.js';
export { type CleanShapeVerdict, SHAPE_SCORE_PASS, SHAPE_SCORE_RADIUS, SHAPES_PALETTE, cleanShape, cleanShapeScore, paletteFraction, paletteScore } from './shape-score.js';
export { SHAPES_MODEL_NAME, type SamplerHints, samplerHints, shapesModelPath } from './shapes-model.js';
export { QWEN3_H3, type Qwen3Config, type Qwen3Naming, type Qwen3Resolved, type Qwen3ResolveOptions, qwen3EmbedName, qwen3LayerNames, resolveQwen3Config, validateQwen3Config } from './qwen3-config.js';
export { QWEN3_ARCHITECTURE, QWEN3_EMBED_GROUP, type Qwen3Layout, type Qwen3LayoutOptions, qwen3Layout, qwen3LayerGroup, qwen3ParallelRole } from './qwen3-layout.js';
export { type OpenQwen3EncoderOptions, type OpenedQwen3Encoder, type Qwen3EncoderOptions, Qwen3TextEncoder, openQwen3Encoder, qwen3RopeAngles } from './qwen3-encoder.js';
export { type Qwen3Tokenizer, loadQwen3Tokenizer } from './qwen3-tokenizer.js';
export {
  H3_LATENTS_MEAN,
  H3_LATENTS_STD,
  H3_PIXEL_MEAN,
  H3_PIXEL_STD,
  H3_VAE_LATENT_CHANNELS,
  H3_VAE_PATCH,
  H3VideoDecoder,
  type H3VideoDecoderConfig,
  type H3VideoDecoderOptions,
  type OpenedH3VideoDecoder,
  h3LatentFrames,
  h3PixelFrames,
  h3VaeRopeAngles,
  h3VideoDecoderGroups,
  h3VideoDecoderLayout,
  openH3VideoDecoder,
  resolveH3VideoDecoder,
} from './h3-video-vae.js';
export { type SyntheticPartSizes, type SyntheticParts, ensureSyntheticParts, syntheticPartSizes, writeSyntheticAudioDecoder, writeSyntheticQwen3, writeSyntheticVideoDecoder } from './synthetic-parts.js';
export { H3_AUDIO_HOP, H3_AUDIO_LATENT_CHANNELS, H3_AUDIO_SAMPLE_RATE, H3AudioDecoder, type OpenedH3AudioDecoder, h3AudioDecoderTensors, h3AudioLatentFrames, openH3AudioDecoder } from './h3-audio-vae.js';
export { withGuidance } from './guidance.js';
