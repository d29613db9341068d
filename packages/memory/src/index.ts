export type { CheckpointSource, TensorEntry } from './checkpoint-source.js';
