// ggml's CPU kernels on given blocks: for each input row, the row quantized as ggml does (Q8_0 for
// q8_0 / q4_0 weights, Q8_K for the k-quants), then ggml's vec_dot against each weight row.
// usage: ggml_dot <dtype> M K N x.f32 w.blocks y.f32 (raw little-endian files)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "ggml.h"
#include "quants.h"
typedef void (*quant_fn)(const float *, void *, int64_t);
typedef void (*dot_fn)(int, float *, size_t, const void *, size_t, const void *, size_t, int);
int main(int argc, char ** argv) {
  if (argc != 8) { fprintf(stderr, "usage\n"); return 2; }
  const char * t = argv[1];
  const long M = atol(argv[2]), K = atol(argv[3]), N = atol(argv[4]);
  quant_fn q; dot_fn d; size_t qb, wb; long be;
  if (!strcmp(t, "q8_0")) { q = quantize_row_q8_0; d = ggml_vec_dot_q8_0_q8_0; qb = 34; wb = 34; be = 32; }
  else if (!strcmp(t, "q4_0")) { q = quantize_row_q8_0; d = ggml_vec_dot_q4_0_q8_0; qb = 34; wb = 18; be = 32; }
  else if (!strcmp(t, "q4_k")) { q = quantize_row_q8_K; d = ggml_vec_dot_q4_K_q8_K; qb = sizeof(float) + 256 + 32; wb = 144; be = 256; }
  else if (!strcmp(t, "q5_k")) { q = quantize_row_q8_K; d = ggml_vec_dot_q5_K_q8_K; qb = sizeof(float) + 256 + 32; wb = 176; be = 256; }
  else if (!strcmp(t, "q6_k")) { q = quantize_row_q8_K; d = ggml_vec_dot_q6_K_q8_K; qb = sizeof(float) + 256 + 32; wb = 210; be = 256; }
  else { fprintf(stderr, "type\n"); return 2; }
  float * x = malloc(M * K * 4); uint8_t * w = malloc(N * (K / be) * wb); float * y = malloc(M * N * 4);
  void * xq = aligned_alloc(64, ((K / be) * qb + 63) / 64 * 64);
  FILE * f = fopen(argv[5], "rb"); if (fread(x, 4, M * K, f) != (size_t) (M * K)) return 3; fclose(f);
  f = fopen(argv[6], "rb"); if (fread(w, wb, N * (K / be), f) != (size_t) (N * (K / be))) return 3; fclose(f);
  for (long m = 0; m < M; m++) {
    q(x + m * K, xq, K);
    for (long n = 0; n < N; n++) d((int) K, y + m * N + n, 0, w + n * (K / be) * wb, 0, xq, 0, 1);
  }
  f = fopen(argv[7], "wb"); fwrite(y, 4, M * N, f); fclose(f);
  return 0;
}
