export { TP_ERROR_CODES, type TpErrorCode, type TpThrownCode } from './error-codes.js';
export { shardPlan, type PlannedLinear, type RankBytes, type ShardPlan, type ShardPlanOptions } from './shard-plan.js';
export { gatheredLinear, parallelLinear, parallelLinearProvider, type ParallelProviderOptions } from './parallel-linear.js';
export { sequenceSplit } from './sequence-split.js';
