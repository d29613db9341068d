// quantizeWeightInt8Async: the offline weight quantization of quantizeRowsInt8 (per-row absmax scales,
// optional regular Hadamard rotation) on a worker thread, so a streamed weight converts to the int8
// run format while the model computes. It calls the same quantize_rows_int8 as quantizeRowsInt8: the
// same bits.
#include <napi.h>

#include <string>

#include "core/async.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "ops/hadamard.h"
#include "ops/int8_quantize.h"
#include "ops/span_args.h"

namespace ninodes {
namespace {

// quantizeWeightInt8Async(w f32, q i8, scale f32, rows, cols, group): Promise<void>.
Napi::Value quantize_weight_async(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const args::Bytes xb = args::bytes(info, 0, "quantizeWeightInt8Async input");
    const args::Bytes qb = args::bytes(info, 1, "quantizeWeightInt8Async output");
    const args::Bytes sb = args::bytes(info, 2, "quantizeWeightInt8Async scale");
    const size_t rows = args::dim(info, 3, "rows");
    const size_t cols = args::dim(info, 4, "columns");
    const size_t group = args::dim(info, 5, "rotation group");
    if (group != 0) check_hadamard_group(cols, group, true);
    const size_t n = args::mul(rows, cols, "quantizeWeightInt8Async");
    const float* x = args::as<float>(xb, n, "quantizeWeightInt8Async input");
    int8_t* q = args::as<int8_t>(qb, n, "quantizeWeightInt8Async output");
    float* scale = args::as<float>(sb, rows, "quantizeWeightInt8Async scale");
    return AsyncOp::start(
        info.Env(), "ninodes.quantizeWeightInt8",
        [=]() { quantize_rows_int8(x, rows, cols, group, true, nullptr, q, scale, parallel_for, nullptr); },
        [](Napi::Env env) { return env.Undefined(); }, {info[0], info[1], info[2]});
  });
}

}  // namespace
}  // namespace ninodes

NINODES_MODULE(int8_quantize_async) {
  exports.Set("quantizeWeightInt8Async", Napi::Function::New(env, ninodes::quantize_weight_async, "quantizeWeightInt8Async"));
}
